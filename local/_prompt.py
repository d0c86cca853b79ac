"""A `Context` -> the prompt text a chat model was trained on, via its own template.

Chat templates are Jinja programs shipped with the model (in the GGUF metadata,
``chat_template.jinja`` or ``tokenizer_config.json``), so they render in a
sandbox: a template cannot reach Python objects or the file system.

Templates that know nothing about tools (SmolLM2's) still get tools: the tool
list and the ``<tool_call>`` convention are appended to the system prompt,
earlier calls are replayed as that markup and results come back in
``<tool_response>`` tags, the Hermes convention `streamfn.core._tagged` parses.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import Any, Final

from streamfn.core import (
    AssistantMessage,
    Context,
    Options,
    StreamfnError,
    TextContent,
    ThinkingLevel,
    ToolResultMessage,
    UserMessage,
)

from ._cache import TEMPLATE_FILE

__all__ = ["ChatTemplate", "TemplateError"]

log = logging.getLogger("streamfn")

#: used when a model directory has no template at all: plain ChatML
CHATML: Final = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)

_TOOLS_PREAMBLE: Final = (
    "You can call functions to help answer. Their signatures, as JSON Schema, are "
    "listed between <tools></tools> tags:\n<tools>\n{tools}\n</tools>\n\n"
    "To call one, answer with a JSON object holding the function name and its "
    "arguments between <tool_call></tool_call> tags, like this:\n"
    '<tool_call>\n{{"name": "function_name", "arguments": {{"argument": "value"}}}}\n</tool_call>'
)


class TemplateError(StreamfnError):
    """The chat template failed to render (it raised or is not valid Jinja)."""


def _raise(message: str) -> None:
    raise TemplateError(message)


def _tojson(value: Any, indent: int | None = None, **_: Any) -> str:
    # Jinja's own tojson escapes <>&' for HTML; prompts want the JSON a model saw in training.
    return json.dumps(value, ensure_ascii=False, indent=indent)


def _strftime_now(fmt: str) -> str:
    return datetime.now().strftime(fmt)


def _load_template_source(model_dir: Path, tokenizer_config: Mapping[str, Any] | None) -> str:
    jinja_file = model_dir / TEMPLATE_FILE
    if jinja_file.is_file():
        return jinja_file.read_text(encoding="utf-8")
    config = tokenizer_config
    if config is None:
        config_file = model_dir / "tokenizer_config.json"
        config = (
            json.loads(config_file.read_text(encoding="utf-8")) if config_file.is_file() else {}
        )
    template = config.get("chat_template")
    if isinstance(template, list):  # named templates: take "default"
        named = {t.get("name"): t.get("template") for t in template if isinstance(t, dict)}
        template = named.get("default") or next(iter(named.values()), None)
    if isinstance(template, str) and template:
        return template
    log.debug("no chat template in %s: using ChatML", model_dir)
    return CHATML


class ChatTemplate:
    """One model's chat template, compiled once, rendering contexts into prompts."""

    def __init__(self, source: str, *, bos_token: str = "", eos_token: str = "") -> None:
        from jinja2 import TemplateError as JinjaError
        from jinja2.sandbox import ImmutableSandboxedEnvironment

        env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
        env.filters["tojson"] = _tojson
        env.globals["raise_exception"] = _raise
        env.globals["strftime_now"] = _strftime_now
        try:
            self._template = env.from_string(source)
        except JinjaError as exc:
            raise TemplateError(f"the chat template is not valid Jinja: {exc}") from exc
        self.source = source
        self.bos_token = bos_token
        self.eos_token = eos_token
        #: the template renders ``tools`` and structured tool calls itself
        self.knows_tools = "tools" in source and "tool_calls" in source

    @classmethod
    def from_model_dir(
        cls,
        model_dir: str | Path,
        *,
        bos_token: str = "",
        eos_token: str = "",
        tokenizer_config: Mapping[str, Any] | None = None,
    ) -> ChatTemplate:
        """``tokenizer_config``: the directory's ``tokenizer_config.json`` when the caller
        has parsed it already (it is read from the directory otherwise)."""
        source = _load_template_source(Path(model_dir), tokenizer_config)
        return cls(source, bos_token=bos_token, eos_token=eos_token)

    def render(self, context: Context, options: Options | None = None) -> str:
        options = options or Options()
        messages = self._messages(context)
        variables: dict[str, Any] = {
            "messages": messages,
            "add_generation_prompt": True,
            "bos_token": self.bos_token,
            "eos_token": self.eos_token,
            "enable_thinking": options.thinking not in (None, ThinkingLevel.OFF),
        }
        if context.server_tools:
            raise ValueError(
                f"the local model runs no server tools ({context.server_tools[0].type!r}); "
                "give it a function tool instead"
            )
        if context.function_tools and self.knows_tools:
            variables["tools"] = [_tool_schema(t) for t in context.function_tools]
        try:
            return str(self._template.render(**variables))
        except TemplateError:
            raise
        except Exception as exc:  # the template is foreign code; report, don't crash
            raise TemplateError(f"the chat template failed: {type(exc).__name__}: {exc}") from exc

    # -- messages ---------------------------------------------------------
    def _messages(self, context: Context) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        system = context.system_prompt or ""
        if context.function_tools and not self.knows_tools:
            tools = "\n".join(_tojson(_tool_schema(t)) for t in context.function_tools)
            system = (system + "\n\n" + _TOOLS_PREAMBLE.format(tools=tools)).strip()
        if system:
            out.append({"role": "system", "content": system})
        for message in context.messages:
            if isinstance(message, UserMessage):
                out.append({"role": "user", "content": _user_text(message)})
            elif isinstance(message, AssistantMessage):
                out.append(self._assistant(message))
            elif isinstance(message, ToolResultMessage):
                out.append(self._tool_result(message))
        return out

    def _assistant(self, message: AssistantMessage) -> dict[str, Any]:
        # Earlier reasoning is not replayed: chat templates drop it too.
        text = message.text
        calls = message.tool_calls
        entry: dict[str, Any] = {"role": "assistant", "content": text}
        if calls and self.knows_tools:
            entry["tool_calls"] = [
                {
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.name, "arguments": c.arguments},
                }
                for c in calls
            ]
        elif calls:
            markup = "".join(
                "<tool_call>\n"
                + _tojson({"name": c.name, "arguments": c.arguments})
                + "\n</tool_call>"
                for c in calls
            )
            entry["content"] = (text + "\n" + markup) if text else markup
        return entry

    def _tool_result(self, message: ToolResultMessage) -> dict[str, Any]:
        text = "".join(p.text for p in message.content if isinstance(p, TextContent))
        if self.knows_tools:
            return {
                "role": "tool",
                "content": text,
                "name": message.tool_name,
                "tool_call_id": message.tool_call_id,
            }
        return {"role": "tool", "content": f"<tool_response>\n{text}\n</tool_response>"}


def _user_text(message: UserMessage) -> str:
    if isinstance(message.content, str):
        return message.content
    parts = []
    for part in message.content:
        if isinstance(part, TextContent):
            parts.append(part.text)
        else:
            log.debug("local models read text only: an image was left out of the prompt")
    return "\n".join(parts)


def _tool_schema(tool: Any) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": tool.name,
            "description": tool.description,
            "parameters": tool.parameters,
        },
    }
