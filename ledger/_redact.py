"""A store URL as errors, logs and reprs may show it: its password replaced by ``***``."""

from __future__ import annotations

import re
from urllib.parse import unquote, urlsplit, urlunsplit

__all__ = ["redact", "without_password"]

#: ``password=…`` in a libpq key/value string or a URL's query
_PASSWORD_PARAM = re.compile(r"(password\s*=\s*)('(?:[^'\\]|\\.)*'|[^\s&]*)", re.IGNORECASE)


def redact(url: str) -> str:
    """``url`` with any password replaced by ``***``."""
    url = _PASSWORD_PARAM.sub(r"\1***", url)
    if "://" not in url:
        return url
    try:
        parts = urlsplit(url)
        password = parts.password
    except ValueError:  # a malformed URL: show its scheme alone
        return url.partition("://")[0] + "://***"
    if password is None:
        return url
    host = parts.netloc.rpartition("@")[2]
    return urlunsplit(parts._replace(netloc=f"{parts.username or ''}:***@{host}"))


def without_password(message: str, url: str) -> str:
    """``message`` (a driver's error, say) on one line, with ``url``'s password removed
    wherever it is."""
    message = redact(" ".join(message.split()))
    try:
        password = urlsplit(url).password if "://" in url else None
    except ValueError:
        password = None
    for form in {password, unquote(password)} if password else ():
        message = message.replace(form, "***")
    return message
