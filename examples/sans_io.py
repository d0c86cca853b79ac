"""The sans-I/O core driven by the standard library's http.client: no shell at all.

streamfn builds the request bytes and turns the response bytes into events; this
program does the I/O. Run: OPENAI_API_KEY=... python examples/sans_io.py
Without a key nothing is sent: `with_credentials` raises `MissingCredentials`
naming the variable. A failed call raises `StreamError`. Either way the program
says why in one line and exits non-zero.
"""

import http.client
import os
from urllib.parse import urlsplit

from streamfn.core import (
    Context,
    Options,
    StreamfnError,
    accumulate,
    get_model,
    open_call,
    raise_for_error,
    with_credentials,
)


def main() -> None:
    model = get_model("openai:gpt-4o-mini")
    # OPENAI_API_KEY (and OPENAI_BASE_URL) read as the shells read them
    options = with_credentials(model, Options(), os.environ)
    call = open_call(model, Context.of("Hi"), options)
    request = call.request  # method, url, headers, body bytes
    url = urlsplit(request.url)
    https = url.scheme == "https"
    connection = (http.client.HTTPSConnection if https else http.client.HTTPConnection)(url.netloc)
    target = url.path + (f"?{url.query}" if url.query else "")
    try:
        connection.request(request.method, target, body=request.body, headers=dict(request.headers))
        response = connection.getresponse()
        events = call.receive_response(response.status, response.getheaders())
        while chunk := response.read1(65536):
            events += call.receive_data(chunk)
        events += call.receive_eof()
    finally:
        connection.close()
    raise_for_error(events)  # a 401 or a cut stream raises StreamError
    print(accumulate(events).text)


if __name__ == "__main__":
    try:
        main()
    except StreamfnError as exc:  # MissingCredentials, or the call's StreamError
        raise SystemExit(f"failed: {exc}") from None
