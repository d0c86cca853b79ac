"""The stream pipeline: what happens to a call between `ClientBase.stream` and the wire,
as ONE ordered list of stages.

Each stage wraps the one after it: it takes the opener of the inner streams
(``(model, context, options, call_opener) -> Batches``) and returns an opener of
the same shape, so a stage sees each request of the stages inside it and the
pipeline reads top to bottom, outermost first:

0. `missing_keys`: a key missing from the options and the environment ends the stream
   at once, before any connection, as ``Error(kind="auth")`` naming the variable to
   set: the same path as a key the provider rejects (`missing_key_events`).
   Outermost, so the stages inside it may raise `MissingCredentials` and `fallback`
   still skips a model without a key.
1. `fallback`: a `FallbackModel` is tried model by model; everything below runs
   once per model of the chain (so a model's own credentials, upgrade, recovery and
   span are its own).
2. `credentials`: the model's key, resolved before any connection; raises
   `MissingCredentials` at once (which `fallback` turns into "skip this model", and
   `missing_keys` into the `Error`).
3. `tool_checks`: every complete tool call checked against its tool's schema. Outside
   `text_tools`, so calls read from text are checked too; outside the per-request
   stages, so it sees the whole answer once.
4. `text_tools`: tool calls written as text turned into tool-call events, over the
   whole answer (a continued paused turn is one text).
5. `pause_turn`: a paused turn continued by more requests, joined into one stream.
   Each continuation is a request of its own, so it goes through the stages below.
6. `responses_upgrade`: a request the provider says belongs on the Responses API is
   sent there (and remembered per client). Outside `recovery`, so a recovered
   request is made on the API that answers.
7. `recovery`: a cut after output recovered by more requests joined into one stream
   (``Options.recover``); it passes its own call opener down to resume a response.
8. `tracing`: each request (each recovery attempt too) in its own OpenTelemetry span,
   innermost so a span measures one request on the wire.

Below the last stage is the client's own request (`ClientBase._events`): the steps of
`streamfn.core.http.drive` performed on the shell's sockets, or the local model.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import NamedTuple

from streamfn.core import Context, MissingCredentials, Model, Options, with_credentials
from streamfn.core.stages._fallback import FallbackModel, check_chain
from streamfn.core.stages._responses_upgrade import UpgradeKey

from ..core._call import Call
from ..core._credentials import missing_key_events
from ._batches import Batches, one_batch
from ._fallback import fall_back
from ._pause_turn import continue_paused_turns
from ._recovery import recovering
from ._responses_upgrade import upgrade_to_responses
from ._text_tools import with_text_tool_calls
from ._tool_checks import with_checked_tool_calls
from ._tracing import traced

__all__ = ["STAGES", "CallOpener", "Host", "OpenStream", "Stage", "pipeline"]

#: how one request makes its `Call` (`open_call`, or recovery's resumed call)
CallOpener = Callable[[Model, Context, Options], Call]
#: a stream's opener, the shape every stage takes and returns
OpenStream = Callable[[Model, Context, Options, CallOpener], Batches]


class Host(NamedTuple):
    """What the stages take from their client."""

    #: where keys are read (`ClientSettings.environ`)
    environ: Mapping[str, str]
    #: the client's memory of models upgraded to the Responses API
    responses_upgraded: set[UpgradeKey]
    #: the shell's clock, asked for per request (an event loop's is its running loop's)
    clock: Callable[[], Callable[[], float]]
    #: lets the shell's other work run (a zero sleep) between slices of long checks
    pause: Callable[[], Awaitable[None]]


#: a stage: (the client, the opener of the streams inside it) -> its own opener
Stage = Callable[[Host, OpenStream], OpenStream]


def missing_keys(host: Host, inner: OpenStream) -> OpenStream:
    def open_stream(m: Model, c: Context, o: Options, call: CallOpener) -> Batches:
        try:
            return inner(m, c, o, call)
        except MissingCredentials as exc:
            return one_batch(missing_key_events(m, exc))

    return open_stream


def fallback(host: Host, inner: OpenStream) -> OpenStream:
    def open_stream(m: Model, c: Context, o: Options, call: CallOpener) -> Batches:
        if not isinstance(m, FallbackModel):
            return inner(m, c, o, call)
        check_chain(m, o, host.environ)
        return fall_back(lambda m1, c1, o1: inner(m1, c1, o1, call), m, c, o)

    return open_stream


def credentials(host: Host, inner: OpenStream) -> OpenStream:
    def open_stream(m: Model, c: Context, o: Options, call: CallOpener) -> Batches:
        return inner(m, c, with_credentials(m, o, host.environ), call)

    return open_stream


def tool_checks(host: Host, inner: OpenStream) -> OpenStream:
    """Tools declared or not (a call of an undeclared tool is flagged); the checks pause
    for the shell's other work between slices (`Host.pause`)."""

    def open_stream(m: Model, c: Context, o: Options, call: CallOpener) -> Batches:
        return with_checked_tool_calls(inner(m, c, o, call), c, o, host.pause)

    return open_stream


def text_tools(host: Host, inner: OpenStream) -> OpenStream:
    def open_stream(m: Model, c: Context, o: Options, call: CallOpener) -> Batches:
        return with_text_tool_calls(inner(m, c, o, call), m, c, o)

    return open_stream


def pause_turn(host: Host, inner: OpenStream) -> OpenStream:
    def open_stream(m: Model, c: Context, o: Options, call: CallOpener) -> Batches:
        return continue_paused_turns(lambda m1, c1, o1: inner(m1, c1, o1, call), m, c, o)

    return open_stream


def responses_upgrade(host: Host, inner: OpenStream) -> OpenStream:
    def open_stream(m: Model, c: Context, o: Options, call: CallOpener) -> Batches:
        def one(m1: Model, c1: Context, o1: Options) -> Batches:
            return inner(m1, c1, o1, call)

        return upgrade_to_responses(one, host.responses_upgraded, m, c, o)

    return open_stream


def recovery(host: Host, inner: OpenStream) -> OpenStream:
    def open_stream(m: Model, c: Context, o: Options, call: CallOpener) -> Batches:
        return recovering(inner, m, c, o)  # recovery chooses each request's call opener

    return open_stream


def tracing(host: Host, inner: OpenStream) -> OpenStream:
    def open_stream(m: Model, c: Context, o: Options, call: CallOpener) -> Batches:
        return traced(inner(m, c, o, call), m, o, host.clock())

    return open_stream


#: the stages, outermost first (the module docstring says why in this order)
STAGES: tuple[Stage, ...] = (
    missing_keys,
    fallback,
    credentials,
    tool_checks,
    text_tools,
    pause_turn,
    responses_upgrade,
    recovery,
    tracing,
)


def pipeline(host: Host, request: OpenStream, stages: tuple[Stage, ...] = STAGES) -> OpenStream:
    """``request`` (one request's stream) inside ``stages``, the first outermost."""
    for stage in reversed(stages):
        request = stage(host, request)
    return request
