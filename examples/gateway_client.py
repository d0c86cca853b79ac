"""The official openai SDK talking to a `streamfn serve` gateway.

Start the gateway first: streamfn serve  (needs the [serve] extra; it serves the
local model as "local" and every provider whose key it holds). The SDK raises its
usual exceptions on an error, so a failed call is never a quiet empty answer.
Run: python examples/gateway_client.py
"""

from openai import APIError, OpenAI


def main() -> None:
    client = OpenAI(base_url="http://127.0.0.1:8000/v1", api_key="unused")
    for chunk in client.chat.completions.create(
        model="local", messages=[{"role": "user", "content": "Hi"}], stream=True, max_tokens=32
    ):
        if chunk.choices:
            print(chunk.choices[0].delta.content or "", end="", flush=True)
    print()


if __name__ == "__main__":
    try:
        main()
    except APIError as exc:  # no gateway at that address, a refused token ...
        raise SystemExit(f"failed: {exc} (is `streamfn serve` running?)") from None
