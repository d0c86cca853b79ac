"""Where credentials and addresses come from: options, then the environment."""

from __future__ import annotations

from streamfn.core import Model, Options, get_model
from streamfn.core._credentials import with_credentials


def test_sdk_base_url_variables_move_only_models_at_the_default_address() -> None:
    """OPENAI_BASE_URL redirects the catalogue's OpenAI models, as the SDK does, but
    never a model whose address the caller chose (it would send the key elsewhere)."""
    environ = {"OPENAI_API_KEY": "k", "OPENAI_BASE_URL": "http://gateway.test/v1"}
    default = with_credentials(get_model("openai:gpt-4o-mini"), Options(), environ)
    assert default.base_url == "http://gateway.test/v1"
    chosen = Model(id="m", provider="openai", api="openai-chat", base_url="http://vllm.test/v1")
    assert with_credentials(chosen, Options(), environ).base_url is None
    explicit = Options(base_url="http://mine.test/v1")
    assert with_credentials(get_model("openai:gpt-4o-mini"), explicit, environ).base_url == (
        "http://mine.test/v1"
    )
