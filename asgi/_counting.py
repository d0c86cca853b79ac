"""The token counting routes' answer: the backend's count in the route's own shape."""

from __future__ import annotations

from streamfn.core import Error, Start, StreamError
from streamfn.core.dialects._request_fields import ClientRequest
from streamfn.core.serve._served import COUNT_HEADER, Served
from streamfn.core.serve._status import early_error, for_the_client, shutting_down_refusal

from ._answer_ids import note_start
from ._contract import Backend, count_tokens
from ._failures import backend_failure
from ._messages import Send, send_json
from ._runtime import Slots

__all__ = ["answer_count"]


async def answer_count(
    backend: Backend, slots: Slots, served: Served, request: ClientRequest, send: Send
) -> None:
    """Count ``request``'s input tokens (the provider's endpoint, the local tokenizer, or
    an estimate, said in the ``x-streamfn-token-count`` header) and answer it. A count
    asks the upstream like a completion does, so it takes one of the server's slots."""
    assert served.answer_count is not None
    if not await slots.acquire():
        raise shutting_down_refusal()
    try:
        counted = await count_tokens(backend, request)
    except StreamError as exc:  # the count call failed, as a stream would have
        error = for_the_client(exc.error, request.model)
        assert isinstance(error, Error)
        raise early_error(served.dialect, error) from None
    except Exception as exc:  # no key, an unknown model ...: the client's Error
        raise early_error(served.dialect, backend_failure(exc, request.model)) from None
    finally:
        slots.release()
    # the provider's request id and rate limits, for the answer's headers as a stream's
    note_start(Start(request_id=counted.request_id, rate_limits=counted.rate_limits))
    headers = [(COUNT_HEADER, b"estimated" if counted.estimated else b"counted")]
    await send_json(send, 200, served.answer_count(counted), headers)
