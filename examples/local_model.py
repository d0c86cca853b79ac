"""The local model (SmolLM2-135M-Instruct on CTranslate2): no provider, no key.

Run: python examples/local_model.py  (needs the [local] extra; the first run
downloads and converts the model, about 93 MB)
"""

from streamfn.core import Context, Options, TextDelta, raise_for_error
from streamfn.local import LocalModel


def main() -> None:
    with LocalModel.default() as model:
        question = Context.of("What is the capital of France?")
        for event in model.stream_sync(question, Options(max_tokens=64)):
            raise_for_error(event)  # a failure raises StreamError
            if isinstance(event, TextDelta):
                print(event.delta, end="", flush=True)
    print()


if __name__ == "__main__":
    main()
