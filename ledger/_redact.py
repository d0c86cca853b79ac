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
    """``message`` (a driver's error, say) on one line, with every password ``url``
    holds removed wherever it appears."""
    message = redact(" ".join(message.split()))
    for password in sorted(_passwords(url), key=len, reverse=True):
        message = message.replace(password, "***")
    return message


def _passwords(url: str) -> set[str]:
    """The passwords in ``url`` (its user part, ``password=`` parameters), as written
    and decoded."""
    found = {m[2].strip("'") for m in _PASSWORD_PARAM.finditer(url)}
    if "://" in url:
        try:
            found.add(urlsplit(url).password or "")
        except ValueError:  # malformed: take what sits between the user and the host
            found.add(url.partition("://")[2].rpartition("@")[0].partition(":")[2])
    return {form for p in found if p for form in (p, unquote(p))}
