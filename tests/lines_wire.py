"""A wire format from outside streamfn: NDJSON lines ``{"delta": ...}``, then ``{"done": ...}``."""

from __future__ import annotations

import msgspec

from streamfn.core import Context, Error, Model, Options, StopReason, Usage
from streamfn.core.providers import NDJSONCall, bearer, json_request, request_headers


class LinesCall(NDJSONCall):
    """Decodes the response; the base class handles HTTP errors, caps and early EOF."""

    api = "lines"

    def on_line(self, line: bytes) -> None:
        obj = msgspec.json.decode(line)
        if "delta" in obj:
            self.emit.text("answer", obj["delta"])
        elif "error" in obj:
            self.fail(Error.network(obj["error"]))
        elif obj.get("done"):
            self.usage = Usage(input=obj["input_tokens"], output=obj["output_tokens"])
            self.finish(StopReason.LENGTH if obj.get("truncated") else StopReason.STOP)


def open_call(model: Model, context: Context, options: Options) -> LinesCall:
    """Build the request (pure: no socket, no clock) and the call that decodes the answer."""
    prompt = "\n".join(m.content for m in context.messages if isinstance(m.content, str))
    body = {"model": model.id, "prompt": prompt, "max_tokens": options.max_tokens}
    auth = bearer(options.api_key)
    headers = request_headers(model, options, accept="application/x-ndjson", auth=auth)
    base = (options.base_url or model.base_url).rstrip("/")
    request = json_request(f"{base}/generate", headers, body, options)
    return LinesCall(model, context, options, request)


if __name__ == "__main__":  # plug it in and read a recorded answer
    import sys

    from streamfn.core import register_api, replay

    register_api("lines", sys.modules[__name__])
    body = b'{"delta": "Hello"}\n{"delta": ", world"}\n{"done": true, "input_tokens": 3, "output_tokens": 2}\n'
    for event in replay("lines", body, headers=[("content-type", "application/x-ndjson")]):
        print(event)
