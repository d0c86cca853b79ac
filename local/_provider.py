"""The local model as a provider: a ``Model(api="local")`` becomes a loaded `LocalModel`.

Every shell's ``stream``/``complete``/``Client`` reaches ``model("local")``
through here (see `ClientBase._local_stream` and each shell's override): the
shell asks `load_local` for the model (once per directory and process; the
weights take seconds to load and hundreds of megabytes to hold) and then
streams with `LocalModel.stream_sync` or its event loop's adapter of
`LocalModel.generate` (`streamfn.io_trio._local`, `streamfn.io_asyncio._local`). The
token bytes feed the same pure state machine as ever (`TaggedDecoder`).

This module imports no CTranslate2 at import time: a missing ``[local]``
extra is reported when a local model is first used, as `LocalModelError`
naming the extra to install.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Final
from urllib.parse import unquote, urlsplit

from streamfn._extras import extra_hint
from streamfn.core import Model, StreamfnError

if TYPE_CHECKING:
    from ._cache import Progress
    from ._model import LocalModel

__all__ = [
    "LOCAL_EXTRA_HINT",
    "MODEL_DIR_ENV",
    "LocalModelError",
    "check_prepared",
    "close_loaded",
    "load_local",
    "model_directory",
]

#: where the default local model is looked for before the user cache
MODEL_DIR_ENV: Final = "STREAMFN_LOCAL_MODEL_DIR"

#: how to get the local model's dependencies, said wherever they are missing
LOCAL_EXTRA_HINT: Final = extra_hint("local")


class LocalModelError(StreamfnError):
    """The local model cannot be used: the ``[local]`` extra is missing, or its directory
    holds no usable model. The message says which, and what to do."""


#: loaded models by resolved directory, shared by every client of the process
_LOADED: dict[Path | None, LocalModel] = {}
_LOADING: Final = threading.Lock()


def model_directory(model: Model, environ: Mapping[str, str]) -> Path | None:
    """Where ``model``'s weights are: its ``base_url`` (a path or ``file://`` URI), else
    ``$STREAMFN_LOCAL_MODEL_DIR`` in ``environ``, else None (the default model's cache)."""
    where = model.base_url or environ.get(MODEL_DIR_ENV, "")
    if not where:
        return None
    if where.startswith("file:"):
        where = unquote(urlsplit(where).path)
    return Path(where).expanduser()


def load_local(
    model: Model, environ: Mapping[str, str], *, progress: Progress | None = None
) -> LocalModel:
    """The `LocalModel` for ``model``, loaded (and, for the default model, prepared) once.

    Blocking (seconds; minutes when the default model is downloaded on first
    use, reported to ``progress``): the async shells call it in a worker thread.
    Raises `LocalModelError`.
    """
    directory = model_directory(model, environ)
    with _LOADING:
        loaded = _LOADED.get(directory)
        if loaded is None or loaded._generator is None:  # closed meanwhile: load again
            loaded = _LOADED[directory] = _load(directory, progress)
        return loaded


def close_loaded() -> None:
    """Free every model `load_local` holds (a later stream loads its model again)."""
    with _LOADING:
        models = list(_LOADED.values())
        _LOADED.clear()
    for loaded in models:
        loaded.close()


def check_prepared(directory: Path | None) -> None:
    """Only the default directory is prepared on first use; any other must hold a
    model already. Raises `LocalModelError` saying how to prepare it."""
    from ._fetch import default_model_dir, is_prepared

    if directory is not None and directory != default_model_dir() and not is_prepared(directory):
        raise LocalModelError(
            f"{directory} holds no prepared model; run `streamfn local prepare "
            f"--model-dir {directory}` or point at a CTranslate2 model directory"
        )


def _load(directory: Path | None, progress: Progress | None) -> LocalModel:
    try:  # what loading needs, checked before any work (prepare checks its own)
        import ctranslate2  # noqa: F401
        import jinja2  # noqa: F401
        import tokenizers  # noqa: F401

        from ._fetch import PrepareError, default_model_dir
        from ._model import LocalModel
    except ImportError as exc:
        raise LocalModelError(
            f"the local model needs packages that are not installed ({exc}); {LOCAL_EXTRA_HINT}"
        ) from exc
    check_prepared(directory)
    try:
        return LocalModel.default(directory, progress=progress)
    except PrepareError as exc:
        raise LocalModelError(str(exc)) from exc
    except (OSError, ValueError, RuntimeError) as exc:
        where = directory or default_model_dir()
        raise LocalModelError(
            f"cannot load the local model in {where}: {exc}; check it with `streamfn local info` "
            "and convert it again with `streamfn local prepare --force`"
        ) from exc
