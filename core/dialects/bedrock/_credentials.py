"""Bedrock's credentials from the environment: the AWS keys and the region."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Final

import msgspec

from streamfn.core._credentials import aws_credentials
from streamfn.core._options import Options
from streamfn.core.catalogue._models import Model

__all__ = ["bedrock_credentials"]

#: the standard regional endpoint, which AWS_REGION may point elsewhere
_BEDROCK_ENDPOINT: Final = re.compile(r"^https://bedrock-runtime\.[a-z0-9-]+\.amazonaws\.com/?$")


def bedrock_credentials(model: Model, options: Options, environ: Mapping[str, str]) -> Options:
    """``options`` with the AWS variables as ``aws_credentials`` (the keys the request is
    signed with) unless the caller gave a key, and ``AWS_REGION`` (or
    ``AWS_DEFAULT_REGION``) picking the regional endpoint unless the model names its
    region or the caller chose a base URL."""
    changes: dict[str, object] = {}
    if not options.api_key and options.aws_credentials is None:
        changes["aws_credentials"] = aws_credentials(environ)
    region = environ.get("AWS_REGION") or environ.get("AWS_DEFAULT_REGION")
    standard = not model.base_url or _BEDROCK_ENDPOINT.match(model.base_url) is not None
    if region and standard and not options.base_url and not (model.extra or {}).get("region"):
        changes["base_url"] = f"https://bedrock-runtime.{region}.amazonaws.com"
    return msgspec.structs.replace(options, **changes) if changes else options
