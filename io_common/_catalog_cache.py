"""A newer model catalogue than the built-in one: fetched, cached, and found again.

The pure core reads no files and no environment; this module does, for the
command line and for applications that want the same behaviour:

- `refresh` fetches models.dev's current data (``https://models.dev/api.json``,
  or a mirror) and `save` writes it, converted and checked, to the user cache
  atomically. Nothing here touches the network unless `refresh` is called
  (``streamfn models --refresh``); `_catalog_fetch` bounds that fetch (its size,
  its total time, where a redirect may lead) and `streamfn.core._catalog_json`
  the bytes it brings (what they inflate to, how deep they nest).
- `read_catalog_file` reads a catalogue offline: a copy of models.dev's
  ``api.json`` or a file this module wrote.
- `load_user_catalog` makes the registry use ``STREAMFN_MODELS_FILE`` when it is
  set, else the cached catalogue when its data is newer than the built-in one,
  and returns which one it uses (`streamfn.core.catalogue._models.CatalogInfo`). The
  command line calls it at start; the shells call `install_loader` when
  imported, so the registry calls it before its first lookup.
"""

from __future__ import annotations

import logging
import os
import tempfile
from collections.abc import Callable, Mapping
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from streamfn._user_cache import user_cache_dir
from streamfn.core import CatalogError, catalog_info, use_catalog
from streamfn.core._catalog_json import MAX_CATALOG_BYTES, catalog_json
from streamfn.core.catalogue._catalog_build import (
    CATALOG_FORMAT,
    build_catalog,
    check_catalog,
    dump_catalog,
    with_lifecycle_tables,
)
from streamfn.core.catalogue._models import BUILTIN, CatalogInfo, set_catalog_loader

if TYPE_CHECKING:
    from ._resolver import Resolver

__all__ = [
    "DEADLINE",
    "DEFAULT_URL",
    "ENV_FILE",
    "ENV_URL",
    "MAX_BYTES",
    "CatalogError",
    "cache_path",
    "install_loader",
    "load_user_catalog",
    "read_catalog_file",
    "refresh",
    "save",
]

#: models.dev's live data
DEFAULT_URL: Final = "https://models.dev/api.json"
#: a catalogue file to use instead of the built-in and cached ones
ENV_FILE: Final = "STREAMFN_MODELS_FILE"
#: where ``--refresh`` fetches from instead of models.dev (a mirror)
ENV_URL: Final = "STREAMFN_MODELS_URL"
#: the most a fetched catalogue may weigh, or inflate to (models.dev's is a few megabytes)
MAX_BYTES: Final = MAX_CATALOG_BYTES
#: the longest a whole ``--refresh`` may take, seconds (each read also waits 30 s at most)
DEADLINE: Final = 120.0

log = logging.getLogger("streamfn")


def cache_path(environ: Mapping[str, str] | None = None) -> Path:
    """``$XDG_CACHE_HOME/streamfn/catalog.json``, else ``~/.cache/streamfn/catalog.json``."""
    return user_cache_dir(environ) / "catalog.json"


def _document(raw: bytes, version: str) -> dict[str, Any]:
    """A checked catalogue from a file's bytes: ours as is, models.dev's converted."""
    data = catalog_json(raw, max_bytes=MAX_BYTES)
    from streamfn.core.catalogue._catalog import BUILTIN_DOCUMENT

    if isinstance(data, dict) and data.get("format") == CATALOG_FORMAT:
        check_catalog(data)  # a file `save` wrote, perhaps by an older release:
        return with_lifecycle_tables(  # it learns this release's end-of-life facts
            data, BUILTIN_DOCUMENT.get("end_of_life"), BUILTIN_DOCUMENT.get("retired")
        )
    # models.dev has no end-of-life or retirement dates: the built-in tables carry over
    return build_catalog(
        data,
        version=version,
        end_of_life=BUILTIN_DOCUMENT.get("end_of_life"),
        retired=BUILTIN_DOCUMENT.get("retired"),
    )


def read_catalog_file(path: Path) -> dict[str, Any]:
    """The catalogue in ``path`` (models.dev's ``api.json`` or ours, gzipped or not).

    Raises `CatalogError` naming the file and what is wrong with it (a file of
    more than `MAX_BYTES`, or one that inflates to more, is refused unread).
    """
    try:
        with path.open("rb") as file:
            raw = file.read(MAX_BYTES + 1)
    except OSError as exc:
        raise CatalogError(f"cannot read {path}: {exc.strerror or exc}") from None
    try:
        if len(raw) > MAX_BYTES:
            raise CatalogError(f"more than {MAX_BYTES:,} bytes (the limit for a catalogue)")
        return _document(raw, f"models.dev data from {path.name}")
    except CatalogError as exc:
        raise CatalogError(f"{path}: {exc}") from None


def refresh(
    url: str,
    *,
    now: datetime,
    deadline: float = DEADLINE,
    progress: Callable[[str, int, int], None] | None = None,
    resolver: Resolver | None = None,
) -> dict[str, Any]:
    """Fetch models.dev's data from ``url`` and return it as a checked catalogue.

    At most `MAX_BYTES` are read, or inflated from gzip; the whole fetch takes at
    most ``deadline`` seconds, and a redirect is followed only within ``url``'s
    origin or to a public address (``resolver``, the system's unless a test says
    otherwise, resolves its host name; see `_catalog_fetch`, imported only here). ``progress(stage, done, total)`` hears each chunk. ``now``
    dates the fetch in the catalogue's version. Raises `CatalogError` for a failed
    fetch or unusable data; nothing is written.
    """
    from ._catalog_fetch import fetch, shown_url
    from ._resolver import system_resolver

    raw = fetch(
        url,
        max_bytes=MAX_BYTES,
        deadline=deadline,
        progress=progress,
        resolver=resolver or system_resolver,
    )
    shown = shown_url(url)
    try:
        return _document(raw, f"{shown} fetched {now:%Y-%m-%d %H:%M} UTC")
    except CatalogError as exc:
        raise CatalogError(f"{shown} sent unusable data: {exc}") from None


def save(document: Mapping[str, Any], path: Path) -> Path:
    """Write ``document`` to ``path`` atomically (a temporary file renamed over it)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temp = tempfile.mkstemp(dir=path.parent, prefix=".catalog-", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(dump_catalog(document))
            out.flush()
            os.fsync(out.fileno())
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
    return path


def load_user_catalog(environ: Mapping[str, str] | None = None) -> CatalogInfo:
    """Use ``$STREAMFN_MODELS_FILE`` if set, else the cached catalogue if its data is newer.

    A broken ``STREAMFN_MODELS_FILE`` raises `CatalogError` (the user asked for
    it); a broken cache is reported in one warning and the built-in data is used.
    Returns the catalogue in use.
    """
    global _chosen
    _chosen = True
    env = os.environ if environ is None else environ
    if catalog_info().origin != BUILTIN:  # an earlier call's choice: start again from ours
        from streamfn.core.catalogue._catalog import BUILTIN_DOCUMENT

        use_catalog(BUILTIN_DOCUMENT, origin=BUILTIN)
    named = env.get(ENV_FILE)
    if named:
        path = Path(named)
        return use_catalog(read_catalog_file(path), origin=f"{path} (${ENV_FILE})")
    cached = cache_path(env)
    if not cached.is_file():
        return catalog_info()
    try:
        return use_catalog(read_catalog_file(cached), origin=str(cached), only_if_newer=True)
    except CatalogError as exc:
        log.warning(
            "the cached model catalogue is unusable (%s); using the built-in one. "
            "Run `streamfn models --refresh` to fetch it again",
            exc,
        )
        return catalog_info()


_chosen = False


def install_loader() -> None:
    """Let the registry run `load_user_catalog` before its next lookup (once), unless it
    already ran; the shells call this when imported. Reads nothing now."""
    if not _chosen:
        set_catalog_loader(load_user_catalog)
