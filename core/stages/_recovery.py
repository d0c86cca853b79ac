"""Streams that survive a cut: ``Options(recover="resume" | "continue")``.

Without it, a stream whose connection drops after output began ends in an
`Error` and the caller starts over. With it, the shells go on where the cut
left off, and the caller sees one stream: one `Start`, continuous block
indexes, no text twice, one terminal event, and ``Done.recovered`` counting
the cuts survived (unset when there was none).

- ``"resume"`` (OpenAI Responses, ``openai`` and ``azure``): the request asks
  for a background response (``background: true``, ``store: true``); after a
  cut, ``GET {base}/responses/{id}?stream=true&starting_after=N`` streams the
  same response from the event after the last one read (its
  ``sequence_number``). The same decoder reads on, so the joined stream is the
  uncut one, and it checks that join: a resumed stream whose events are not
  numbered on from there (the server ignored ``starting_after``, numbered
  afresh, skipped or repeated one) ends in an ``Error(kind=protocol)``, never a
  `Done` over text said twice. Each resume is one more request and costs no
  tokens: ``usage`` is the response's own.
- ``"continue"`` (Anthropic without thinking, before Claude 4.6, which refuses
  a prefill; vLLM and llama.cpp through ``continue_final_message``): the same
  request again, with the answer so far as the last assistant message for the
  model to go on from. Each continuation is a new request billed in full (the
  prompt again, plus the prefix as input), and ``usage``/``cost`` sum every request.
  ``max_tokens`` bounds the whole answer: each continuation asks for what is
  left after the output already produced (as reported, or counted from the text
  where nothing was reported), and none is made once nothing is left. Only text is
  continued: a cut inside a tool call or thinking block, or an answer that
  holds anything but text, ends with the `Error` as before.

Only a ``network`` error after output began is recovered (a drop, a reset, a
stall past ``idle_timeout``, a body that ended early); never ``auth``,
``context_overflow``, a provider's in-stream error or the caller's cancel.
At most ``Options.max_recoveries`` cuts are recovered per stream.

`Splice` is the pure bookkeeping (what the caller has seen, how the next
request's events join it); `streamfn.client._recovery.recovering` is the clients'
stage around one model's requests, made of `next_request` and `Splice`. Recovery is
the one way of trying again that acts after output began; the others and the order
of all of them: `streamfn.core.stages._try_again`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Final
from urllib.parse import quote, urlencode, urlsplit, urlunsplit

import msgspec

from streamfn.core.dialects._claude_thinking import thinking_asked

from .._call import Call
from .._events import (
    Cost,
    Done,
    Error,
    ErrorKind,
    Event,
    OpaqueBlock,
    Start,
    StopReason,
    TextDelta,
    TextEnd,
    TextStart,
    ThinkingEnd,
    ThinkingStart,
    ToolCallEnd,
    ToolCallStart,
    Usage,
)
from .._messages import AssistantMessage, Context, TextContent
from .._options import Options, RecoverMode
from .._wire_formats import wire_format
from ..catalogue._capabilities import capabilities_for
from ..catalogue._model_spec import compute_cost
from ..catalogue._models import Model
from ..providers._base import ProviderCall
from ..providers._request import HTTPRequest, merge_extra_body
from ._pause_turn import summed

__all__ = [
    "CHARS_PER_TOKEN",
    "Splice",
    "background",
    "continue_request",
    "next_request",
    "recovery_mode",
    "resumable",
    "resume_request",
]

log = logging.getLogger("streamfn")


def recovery_mode(model: Model, options: Options) -> RecoverMode | None:
    """The recovery ``options`` ask for, if ``model`` can have it; a warning says when not."""
    mode = options.recover
    if mode is None or options.max_recoveries <= 0:
        return None
    room = wire_format(model.api)
    if mode == "resume":
        if room.resumes is not None and room.resumes(model):
            return mode
        why = "only OpenAI's Responses API (openai, azure) resumes a response"
    elif thinking_asked(options):
        why = "a prefill is refused with thinking on (Anthropic, llama.cpp)"
    elif not capabilities_for(model).prefill:
        why = "this model refuses a prefilled answer (Claude 4.6 and later)"
    elif room.continues is not None and room.continues(model):
        return mode
    else:
        why = "only Anthropic and vLLM/llama.cpp servers continue a partial answer"
    log.warning("recover=%r is off for %s: %s; a cut stream ends in an Error", mode, model.key, why)
    return None


def background(options: Options) -> Options:
    """``options`` asking for a stored background response, which can be streamed again."""
    extra = merge_extra_body(dict(options.extra_body or {}), {"background": True, "store": True})
    return msgspec.structs.replace(options, extra_body=extra)


def resumable(call: Call) -> bool:
    """Whether ``call`` has read enough of a Responses stream to resume it."""
    return (
        getattr(call, "response_id", None) is not None
        and getattr(call, "last_sequence", None) is not None
    )


def resume_request(request: HTTPRequest, response_id: str, after: int) -> HTTPRequest:
    """``GET {url}/{response_id}?stream=true&starting_after={after}`` with ``request``'s
    headers: the rest of a background response, from the event after ``after``.

    ``include`` comes along (reasoning's encrypted content is asked for per
    request, the retrieve endpoint takes the same list).
    """
    query: list[tuple[str, str]] = [("stream", "true"), ("starting_after", str(after))]
    body = msgspec.json.decode(request.body) if request.body else {}
    if isinstance(body, dict):
        query += [("include[]", str(item)) for item in body.get("include") or ()]
    headers = [(k, v) for k, v in request.headers if k.lower() != "content-type"]
    url = urlsplit(request.url)  # a gateway's own query (Azure's api-version) stays
    path = f"{url.path.rstrip('/')}/{quote(response_id, safe='')}"
    full = "&".join(q for q in (url.query, urlencode(query)) if q)
    return HTTPRequest(
        method="GET",
        url=urlunsplit((url.scheme, url.netloc, path, full, "")),
        headers=headers,
        body=b"",
    )


def continue_request(
    model: Model, context: Context, options: Options, prefix: str
) -> tuple[Context, Options, str]:
    """The context and options that ask ``model`` to go on from ``prefix``, and the
    whitespace held back from it (Anthropic refuses a prefill that ends in
    whitespace; the continuation usually says it again, `Splice` drops it)."""
    held = ""
    if not prefix.strip():  # nothing to go on from: the same request, nothing said twice
        return context, options, prefix
    if wire_format(model.api).prefill:
        kept = prefix.rstrip()
        prefix, held = kept, prefix[len(kept) :]
    else:
        extra = dict(wire_format(model.api).continuation_body)
        merged = merge_extra_body(dict(options.extra_body or {}), extra)
        options = msgspec.structs.replace(options, extra_body=merged)
    partial = AssistantMessage(
        content=[TextContent(text=prefix)], api=model.api, provider=model.provider, model=model.id
    )
    return (
        Context(
            messages=[*context.messages, partial],
            system_prompt=context.system_prompt,
            tools=context.tools,
        ),
        options,
        held,
    )


#: how many characters of text count as one token where no request reported its usage
#: (a rough English average; it errs towards stopping early, never towards billing more)
CHARS_PER_TOKEN: Final = 4

_STARTS: Final = {TextStart: "text", ThinkingStart: "thinking", ToolCallStart: "tool"}


class Splice:
    """What the caller has seen of one stream, and how the next request's events join it.

    Feed every event of every request to `admit` (after `resume` or
    `continue_from` for each new request); it returns what the caller sees.
    """

    def __init__(self, model: Model, mode: RecoverMode, max_recoveries: int) -> None:
        self.model = model
        self.mode = mode
        self.max_recoveries = max_recoveries
        #: cuts recovered so far (``Done.recovered``)
        self.recovered = 0
        self._started = False
        self._began = False  # output reached the caller
        self._next = 0  # the caller's next block index
        self._open: dict[int, str] = {}  # caller's open blocks -> kind
        self._kinds: list[str] = []  # every block's kind, by caller index
        self._texts: dict[int, list[str]] = {}  # text blocks' pieces, by caller index
        self._map: dict[int, int] = {}  # this request's index -> caller's index
        self._merge: int | None = None  # the caller's open text block a continuation extends
        self._held = ""  # whitespace the continuation may say again
        self._usage = Usage()  # what the cut requests billed (continue)
        self._cost = Cost()

    @property
    def billed_output(self) -> int:
        """The output tokens the cut requests reported so far (continue)."""
        return self._usage.output

    # -- decisions ---------------------------------------------------------------
    def recovers(self, error: Error) -> bool:
        """Whether this `Error` is a cut to recover: network, after output, attempts left."""
        return (
            error.kind == ErrorKind.NETWORK
            and error.stop_reason != StopReason.ABORTED
            and self._began
            and self.recovered < self.max_recoveries
        )

    def prefix(self) -> str | None:
        """The answer so far as text to continue from, or None where it cannot be
        (a tool call, thinking or opaque block in it: prefill carries text only)."""
        if any(kind != "text" for kind in self._kinds):
            return None
        return "".join("".join(self._texts.get(i, ())) for i in range(len(self._kinds)))

    # -- the next request ----------------------------------------------------------
    def resume(self) -> None:
        """The next events continue the same response: its indexes are the caller's."""
        self.recovered += 1
        self._map = {i: i for i in range(self._next)}

    def continue_from(self, cut: Error, held: str) -> None:
        """The next events are a continuation of the text so far (a new response)."""
        self.recovered += 1
        if cut.usage is not None:
            self._usage = summed(self._usage, cut.usage)
            self._cost = summed(self._cost, compute_cost(self.model, cut.usage))
        self._map = {}
        open_text = [i for i, kind in self._open.items() if kind == "text"]
        self._merge = open_text[-1] if open_text else None
        self._held = held

    # -- events ------------------------------------------------------------------------
    def admit(self, event: Event) -> list[Event]:
        """What the caller sees of ``event``."""
        if isinstance(event, Start):
            if self._started:
                return []
            self._started = True
            return [event]
        if isinstance(event, Done | Error):
            return self._terminal(event)
        self._began = True
        index: int = event.index
        kind = _STARTS.get(type(event))
        if kind is not None or isinstance(event, OpaqueBlock):
            return self._opened(event, kind or "opaque")
        mapped = self._map.get(index, index)
        if isinstance(event, TextDelta):
            delta = self._unsaid(event.delta)
            if not delta:
                return []
            if self.mode == "continue":  # the prefill, should a cut come
                self._texts.setdefault(mapped, []).append(delta)
            return [TextDelta(mapped, delta)]
        if isinstance(event, TextEnd | ThinkingEnd | ToolCallEnd):
            self._open.pop(mapped, None)
        return [msgspec.structs.replace(event, index=mapped)]

    def _opened(self, event: Event, kind: str) -> list[Event]:
        out: list[Event] = []
        index: int = event.index  # type: ignore[union-attr]
        if self._merge is not None and kind == "text":
            self._map[index], self._merge = self._merge, None
            return out  # the caller's text block goes on: no second TextStart
        mapped = self._new_block(index, kind, out)
        out.append(msgspec.structs.replace(event, index=mapped))
        if kind == "opaque":
            self._open.pop(mapped, None)
        return out

    def _new_block(self, index: int, kind: str, out: list[Event]) -> int:
        if self._merge is not None:  # the continuation opened something else first
            out.append(TextEnd(self._merge))
            self._open.pop(self._merge, None)
            self._merge = None
        mapped, self._next = self._next, self._next + 1
        self._map[index] = mapped
        self._kinds.append(kind)
        self._open[mapped] = kind
        return mapped

    def _unsaid(self, delta: str) -> str:
        """``delta`` without the held-back whitespace the continuation says again."""
        if not self._held:
            return delta
        n = 0
        while n < min(len(delta), len(self._held)) and delta[n] == self._held[n]:
            n += 1
        if n == len(delta):
            self._held = self._held[n:]
            return ""
        self._held = ""
        return delta[n:]

    def _terminal(self, event: Done | Error) -> list[Event]:
        out: list[Event] = []
        if self._merge is not None and isinstance(event, Done):
            out.append(TextEnd(self._merge))
            self._merge = None
        if isinstance(event, Done):
            event = msgspec.structs.replace(
                event,
                usage=summed(self._usage, event.usage),
                cost=summed(self._cost, event.cost),
                recovered=self.recovered or msgspec.UNSET,
            )
        elif self._usage.total:
            usage = self._usage if event.usage is None else summed(self._usage, event.usage)
            event = msgspec.structs.replace(event, usage=usage)
        out.append(event)
        return out


def next_request(
    splice: Splice,
    cut: Error,
    last: tuple[Call, HTTPRequest] | None,
    context: Context,
    options: Options,
) -> tuple[Context, Options, Callable[[Model, Context, Options], Call] | None] | None:
    """The request that recovers ``cut`` (with `splice` told of it), or None where none
    can: its context, options and, to resume, the opener of the resumed call.
    ``last`` is the last new call and the request it was made for."""
    call = last[0] if last else None
    if splice.mode == "resume":
        if last is None or not isinstance(call, ProviderCall) or not resumable(call):
            log.warning("recover=resume: the response id or position was not read yet")
            return None
        splice.resume()
        return context, options, _resumer(call, last[1])
    prefix = splice.prefix()
    if prefix is None:
        log.warning(
            "recover=continue: the cut came inside a tool call or thinking block, or the "
            "answer holds more than text; prefill continues text only, so the Error stands"
        )
        return None
    if isinstance(call, ProviderCall):
        cut = call.reported(cut)  # what it reported before the cut
    left = _tokens_left(splice, cut, options.max_tokens, prefix)
    if left is not None and left <= 0:
        log.warning(
            "recover=continue: the answer already produced its max_tokens (%d) before the "
            "cut, so it is not continued and the Error stands",
            options.max_tokens,
        )
        return None
    if left is not None:  # the whole answer keeps one max_tokens, not one per request
        options = msgspec.structs.replace(options, max_tokens=left)
    next_context, next_options, held = continue_request(splice.model, context, options, prefix)
    splice.continue_from(cut, held)
    return next_context, next_options, None


def _tokens_left(splice: Splice, cut: Error, max_tokens: int | None, prefix: str) -> int | None:
    """What is left of ``max_tokens`` after the output the cut requests produced (None:
    no limit was asked). The output is what they reported, but never less than the
    prefix's characters counted `CHARS_PER_TOKEN` to a token (a warning says when
    that count is used): a cut stream's reported usage is often a count from its
    start (Anthropic's ``message_start`` says 1 output token), not what it said."""
    if max_tokens is None:
        return None
    reported = splice.billed_output + (cut.usage.output if cut.usage is not None else 0)
    counted = -(-len(prefix) // CHARS_PER_TOKEN)
    produced = max(reported, counted)
    if counted > reported:
        log.warning(
            "recover=continue: %d output tokens were reported before the cut; counted the "
            "%d characters said so far as %d output tokens (%d characters a token)",
            reported,
            len(prefix),
            counted,
            CHARS_PER_TOKEN,
        )
    return max_tokens - produced


def _resumer(call: ProviderCall, posted: HTTPRequest) -> Callable[[Model, Context, Options], Call]:
    """Each attempt's call for resuming ``call`` (first sent as ``posted``): the same
    decoder, asked for the events after the last one it read (a resumed attempt cut
    again moves that on)."""
    response_id = call.response_id

    def resumed(model: Model, context: Context, options: Options) -> Call:
        after = getattr(call, "last_sequence", None)
        assert response_id is not None and isinstance(after, int)  # `resumable`
        return call.resume(resume_request(posted, response_id, after))

    return resumed
