"""What each OpenAI reasoning model accepts in a request, on either OpenAI format (Chat
Completions, the Responses API): the rules both rooms start with (first match wins)."""

from __future__ import annotations

from typing import Final

from streamfn.core.catalogue._capability_spec import Capabilities, CapabilityRule

__all__ = ["OPENAI_RULES"]

_OPENAI_APIS: Final = ("openai-chat", "openai-responses")
#: OpenAI reasoning models take no temperature/top_p/stop.
#: https://platform.openai.com/docs/guides/reasoning
_OPENAI_REASONING_SAMPLING = ("seed",)


# fmt: off
OPENAI_RULES: Final[tuple[CapabilityRule, ...]] = (
    # -- OpenAI ------------------------------------------------------------------------
    # Effort levels per model (the openai SDK's ReasoningEffort names them all:
    # none/minimal/low/medium/high/xhigh/max): gpt-5 takes minimal..high; gpt-5.1 replaced
    # minimal with none (its default); xhigh came with gpt-5.1-codex-max and every model
    # after it; the codex models take no none; gpt-5-pro takes high only, the later pro
    # models medium..xhigh. o-series: low/medium/high. None of them takes temperature,
    # top_p or stop.
    # https://developers.openai.com/api/docs/guides/reasoning
    # https://platform.openai.com/docs/api-reference/chat/create#chat-create-reasoning_effort
    CapabilityRule(apis=_OPENAI_APIS, family=r"^gpt-5-pro", providers=("openai", "azure"),
                   capabilities=Capabilities(sampling=_OPENAI_REASONING_SAMPLING,
                                             thinking_sampling=_OPENAI_REASONING_SAMPLING,
                                             efforts=("high",), thinking_off=False)),
    CapabilityRule(apis=_OPENAI_APIS, family=r"^gpt-5\.\d+-pro", providers=("openai", "azure"),
                   capabilities=Capabilities(sampling=_OPENAI_REASONING_SAMPLING,
                                             thinking_sampling=_OPENAI_REASONING_SAMPLING,
                                             efforts=("medium", "high", "xhigh"),
                                             thinking_off=False)),
    CapabilityRule(apis=_OPENAI_APIS, family=r"^gpt-5\.1-codex(?!-max)",
                   providers=("openai", "azure"),
                   capabilities=Capabilities(sampling=_OPENAI_REASONING_SAMPLING,
                                             thinking_sampling=_OPENAI_REASONING_SAMPLING,
                                             efforts=("low", "medium", "high"),
                                             thinking_off=False)),
    CapabilityRule(apis=_OPENAI_APIS, family=r"^gpt-5\.\d+-codex", providers=("openai", "azure"),
                   capabilities=Capabilities(sampling=_OPENAI_REASONING_SAMPLING,
                                             thinking_sampling=_OPENAI_REASONING_SAMPLING,
                                             efforts=("low", "medium", "high", "xhigh"),
                                             thinking_off=False)),
    CapabilityRule(apis=_OPENAI_APIS, family=r"^gpt-5\.1(?!\d|-chat)",
                   providers=("openai", "azure"),
                   capabilities=Capabilities(sampling=_OPENAI_REASONING_SAMPLING,
                                             thinking_sampling=_OPENAI_REASONING_SAMPLING,
                                             efforts=("none", "low", "medium", "high"))),
    CapabilityRule(apis=_OPENAI_APIS, family=r"^gpt-5\.\d+(?!.*chat)",
                   providers=("openai", "azure"),
                   capabilities=Capabilities(sampling=_OPENAI_REASONING_SAMPLING,
                                             thinking_sampling=_OPENAI_REASONING_SAMPLING,
                                             efforts=("none", "low", "medium", "high", "xhigh"))),
    CapabilityRule(apis=_OPENAI_APIS, family=r"^gpt-5(?!.*chat)", providers=("openai", "azure"),
                   capabilities=Capabilities(sampling=_OPENAI_REASONING_SAMPLING,
                                             thinking_sampling=_OPENAI_REASONING_SAMPLING,
                                             efforts=("minimal", "low", "medium", "high"),
                                             thinking_off=False)),
    CapabilityRule(apis=_OPENAI_APIS, family=r"^o\d", providers=("openai", "azure"),
                   capabilities=Capabilities(sampling=_OPENAI_REASONING_SAMPLING,
                                             thinking_sampling=_OPENAI_REASONING_SAMPLING,
                                             efforts=("low", "medium", "high"),
                                             thinking_off=False)),
)
# fmt: on
