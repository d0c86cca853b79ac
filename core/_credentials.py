"""Which environment variable holds each provider's key, in one table.

The core never reads the environment itself (it is pure); shells and the
command line call `resolve_api_key(model, options, os.environ)`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

import msgspec

from ._errors import MissingCredentials
from ._events import Error, Event, Start
from ._options import AWSCredentials, Options
from ._wire_formats import wire_format
from .catalogue._models import Model

__all__ = [
    "ENV_BASE_URLS",
    "ENV_KEYS",
    "MissingCredentials",
    "aws_credentials",
    "missing_key_events",
    "resolve_api_key",
    "with_credentials",
]

#: provider -> environment variables tried in order
ENV_KEYS: Final[dict[str, tuple[str, ...]]] = {
    "openai": ("OPENAI_API_KEY",),
    "azure": ("AZURE_OPENAI_API_KEY",),
    "anthropic": ("ANTHROPIC_API_KEY",),
    "google": ("GEMINI_API_KEY", "GOOGLE_API_KEY"),
    "gemini": ("GEMINI_API_KEY", "GOOGLE_API_KEY"),
    "vertex": ("GOOGLE_CLOUD_ACCESS_TOKEN",),
    "mistral": ("MISTRAL_API_KEY",),
    "xai": ("XAI_API_KEY",),
    "groq": ("GROQ_API_KEY",),
    "deepseek": ("DEEPSEEK_API_KEY",),
    "openrouter": ("OPENROUTER_API_KEY",),
    "zai": ("ZAI_API_KEY",),
    "proxy": ("STREAMFN_PROXY_TOKEN",),
    "bedrock": ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"),
}


#: provider -> (the variable its official SDK reads a base URL from, the default it
#: replaces): honoured the same way, and only for a model at the default address
ENV_BASE_URLS: Final[dict[str, tuple[str, str]]] = {
    "openai": ("OPENAI_BASE_URL", "https://api.openai.com/v1"),
    "anthropic": ("ANTHROPIC_BASE_URL", "https://api.anthropic.com"),
}

#: providers whose key is optional: a `streamfn serve` started without
#: ``--api-key`` needs no token, so none is sent when none is set
OPTIONAL_KEYS: Final = frozenset({"proxy"})


def resolve_api_key(model: Model, options: Options, environ: Mapping[str, str]) -> str | None:
    """The key to use: ``options.api_key`` first, then the provider's variable.

    Returns None for keyless providers; raises `MissingCredentials` naming the
    variable to set otherwise. Bedrock's credentials are a set of variables
    and are resolved by `aws_credentials`.
    """
    if options.api_key:
        return options.api_key
    if model.provider not in ENV_KEYS:  # the keyless local servers among them
        return None
    if model.provider == "bedrock":
        if options.aws_credentials is None:
            aws_credentials(environ)
        return None
    names = ENV_KEYS[model.provider]
    for name in names:
        value = environ.get(name)
        if value:
            return value
    if model.provider in OPTIONAL_KEYS:
        return None
    raise MissingCredentials(
        f"no API key for {model.provider}: set {' or '.join(names)} in the environment "
        "or pass Options(api_key=...)",
        model.provider,
        names,
    )


def aws_credentials(environ: Mapping[str, str]) -> AWSCredentials:
    """The SigV4 keys from ``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY`` and ``AWS_SESSION_TOKEN``."""
    access = environ.get("AWS_ACCESS_KEY_ID")
    secret = environ.get("AWS_SECRET_ACCESS_KEY")
    if not access or not secret:
        raise MissingCredentials(
            "no AWS credentials for bedrock: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY "
            "(and AWS_SESSION_TOKEN for temporary credentials, AWS_REGION for the region)",
            "bedrock",
            ENV_KEYS["bedrock"],
        )
    return AWSCredentials(
        access_key_id=access,
        secret_access_key=secret,
        session_token=environ.get("AWS_SESSION_TOKEN") or None,
    )


def with_credentials(model: Model, options: Options, environ: Mapping[str, str]) -> Options:
    """``options`` with the credentials filled from ``environ`` when the caller gave none.

    Like the official SDKs, ``OPENAI_BASE_URL`` / ``ANTHROPIC_BASE_URL`` set the
    base URL of those providers' models, unless the caller chose one: a model
    whose ``base_url`` is not the provider's default, or ``options.base_url``.

    Raises `MissingCredentials` (naming the variable) before any connection is
    made. A wire format with credentials of its own kind fills them itself (its
    `WireFormat`'s ``credentials``: Bedrock's AWS variables and region).
    """
    own = wire_format(model.api).credentials
    if own is not None:
        return own(model, options, environ)
    key = resolve_api_key(model, options, environ)
    updates: dict[str, str] = {}
    if key is not None and key != options.api_key:
        updates["api_key"] = key
    base_env, default = ENV_BASE_URLS.get(model.provider, ("", ""))
    at_default = model.base_url.rstrip("/") in ("", default)
    if base_env and at_default and not options.base_url and environ.get(base_env):
        # an address the caller chose (Model.base_url, Options.base_url) wins
        updates["base_url"] = environ[base_env]
    return msgspec.structs.replace(options, **updates) if updates else options


def missing_key_events(model: Model, exc: MissingCredentials) -> list[Event]:
    """A missing key as the stream the shells give for it: `Start`, then
    ``Error(kind="auth")`` whose message names the variable to set.

    The same failure path as a 401 (a bad key): a loop that handles `Error`, a
    ``stream(..., raise_on_error=True)`` (`StreamError`) and ``complete()``
    (`CompletionError`) each see a missing key where they see a rejected one,
    and nothing has been sent.
    """
    start = Start(api=model.api, provider=model.provider, model=model.id)
    return [start, Error.auth(str(exc))]
