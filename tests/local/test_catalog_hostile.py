"""``streamfn models --refresh`` against a mirror that misbehaves on purpose, and
``--from`` against a hostile file: every way ends in one clear line naming the
cause, the catalogue in use unchanged, never "unexpected ..., please report it".

The mirrors are real loopback HTTP servers, each scripted for one misbehaviour:
a gzip bomb, control bytes in a model's id or date, numbers out of range, deep
nesting, a malformed ``Content-Length``, redirects to internal addresses, a
body (or headers) dripped a byte at a time.
"""

from __future__ import annotations

import copy
import http.server
import json
import socket
import threading
import time
import tracemalloc
import zlib
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from test_catalog_refresh import NEW_ID, _newer_copy, _our_document, isolated

from streamfn import cli
from streamfn.cli._command import EXIT_RUNTIME
from streamfn.core.catalogue._catalog_build import CatalogError, check_catalog
from streamfn.core.catalogue._models import catalog_info, get_model
from streamfn.io_common import _catalog_cache as catalog_cache
from streamfn.io_common._catalog_fetch import redirect_problem, shown_url

__all__ = ["isolated"]  # the autouse fixture: a private cache, the built-in data after

#: one scripted answer: gets the handler, writes whatever it likes to the socket
Script = Callable[[http.server.BaseHTTPRequestHandler], None]


class _Scripted(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    script: Script
    hits: list[str]

    def do_GET(self) -> None:
        self.hits.append(self.path)
        try:
            self.script(self)
        except OSError:  # the client hung up (a deadline, a refusal): nothing to do
            self.close_connection = True

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def serve() -> Iterator[Callable[[Script], tuple[str, list[str]]]]:
    """Start loopback mirrors: ``serve(script)`` -> (its URL, the paths it was asked)."""
    servers: list[http.server.ThreadingHTTPServer] = []

    def start(script: Script) -> tuple[str, list[str]]:
        hits: list[str] = []
        handler = type("Mirror", (_Scripted,), {"script": staticmethod(script), "hits": hits})
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return f"http://127.0.0.1:{server.server_address[1]}/api.json", hits

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


@pytest.fixture(autouse=True)
def no_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    """Straight to the loopback mirrors: no proxy from the environment."""
    for name in ("http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.upper(), raising=False)


def _body(data: bytes, *, headers: dict[str, str] | None = None) -> Script:
    def answer(handler: http.server.BaseHTTPRequestHandler) -> None:
        handler.send_response(200)
        sent = {"Content-Type": "application/json", "Content-Length": str(len(data))}
        for name, value in {**sent, **(headers or {})}.items():
            handler.send_header(name, value)
        handler.end_headers()
        handler.wfile.write(data)

    return answer


def _refused(url: str, capsys: pytest.CaptureFixture[str], *extra: str) -> str:
    """Run ``--refresh`` from ``url``; it must fail with one clear last line."""
    assert cli.main(["models", "--refresh", "--url", url, *extra]) == EXIT_RUNTIME
    err = capsys.readouterr().err
    last = err.splitlines()[-1]
    assert last.startswith("streamfn: ") and last.endswith("the catalogue in use is unchanged")
    assert "unexpected" not in err and "please report" not in err and "\x1b" not in err
    assert catalog_info().origin == "built-in"
    return last


# -- what the bytes may cost --------------------------------------------------------


def _gzip_bomb(size: int) -> bytes:
    """A gzip member of ``size`` spaces: a few kilobytes that inflate to ``size``."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    chunk = b" " * (1 << 20)
    out = [packer.compress(chunk) for _ in range(size >> 20)]
    return b"".join(out) + packer.flush()


def test_a_gzip_bomb_is_inflated_only_up_to_the_cap(
    serve: Callable[[Script], tuple[str, list[str]]],
    isolated: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    cap = 1 << 20
    monkeypatch.setattr(catalog_cache, "MAX_BYTES", cap)
    bomb = _gzip_bomb(64 * cap)  # 64 MiB of spaces in about 64 KiB
    assert len(bomb) < cap
    url, _ = serve(_body(bomb))
    tracemalloc.start()
    try:
        last = _refused(url, capsys)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert f"inflates to more than {cap:,} bytes" in last
    assert peak < 8 * cap  # the pieces up to the cap, never the 64 MiB
    assert not isolated.exists()


def test_a_gzip_bomb_in_a_file_is_refused_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(catalog_cache, "MAX_BYTES", 1 << 20)
    bomb = tmp_path / "api.json.gz"
    bomb.write_bytes(_gzip_bomb(16 << 20))
    with pytest.raises(CatalogError, match="inflates to more than 1,048,576 bytes"):
        catalog_cache.read_catalog_file(bomb)


def test_a_gzipped_catalogue_within_the_cap_is_read(
    serve: Callable[[Script], tuple[str, list[str]]], isolated: Path
) -> None:
    """The cap is not a refusal of gzip: a real catalogue, gzipped, still loads."""
    packer = zlib.compressobj(6, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    data = json.dumps(_newer_copy()).encode()
    url, _ = serve(_body(packer.compress(data) + packer.flush()))
    assert cli.main(["models", "--refresh", "--url", url]) == 0
    assert get_model(f"openai:{NEW_ID}").max_output == 256_000


def test_deep_nesting_is_refused_before_parsing(
    serve: Callable[[Script], tuple[str, list[str]]], capsys: pytest.CaptureFixture[str]
) -> None:
    url, _ = serve(_body(b"[" * 100_000 + b"]" * 100_000))
    assert "nests deeper than 32 levels" in _refused(url, capsys)


def test_millions_of_tiny_values_are_refused_before_parsing(
    serve: Callable[[Script], tuple[str, list[str]]], capsys: pytest.CaptureFixture[str]
) -> None:
    """6 MiB of empty objects would cost the parser about 150 MiB: counted first."""
    url, _ = serve(_body(b"[" + b"{}," * 2_100_000 + b"{}]"))
    assert "holds 2,100,002 JSON values, more than a catalogue may (2,000,000)" in _refused(
        url, capsys
    )


# -- what the fields may say ----------------------------------------------------------

#: terminal control a hostile catalogue may try to print: a screen clear, a title (OSC)
_CONTROL = ("\x1b[2J\x1b[31mowned", "x\x1b]0;owned\x07", "a\nstreamfn: all good")


def _sonnet(document: dict[str, Any]) -> dict[str, Any]:
    entry: dict[str, Any] = next(m for m in document["models"] if m["id"] == "claude-sonnet-4-5")
    return entry


@pytest.mark.parametrize("text", _CONTROL)
@pytest.mark.parametrize("field", ["id", "release_date", "name", "provider", "api", "origin"])
def test_control_bytes_in_any_text_field_are_refused(
    serve: Callable[[Script], tuple[str, list[str]]],
    isolated: Path,
    capsys: pytest.CaptureFixture[str],
    field: str,
    text: str,
) -> None:
    document = _our_document()
    _sonnet(document)[field] = "claude" + text if field != "release_date" else "2026" + text
    url, _ = serve(_body(json.dumps(document).encode()))
    last = _refused(url, capsys)
    assert f".{field}:" in last and not isolated.exists()


@pytest.mark.parametrize("field", ["id", "release_date"])
def test_control_bytes_from_models_dev_data_are_refused(
    serve: Callable[[Script], tuple[str, list[str]]],
    capsys: pytest.CaptureFixture[str],
    field: str,
) -> None:
    """The same through models.dev's own format, converted by the refresh."""
    data = _newer_copy()
    data["openai"]["models"][NEW_ID][field] = "2099-01-01\x1b]0;owned\x07"
    url, _ = serve(_body(json.dumps(data).encode()))
    assert f".{field}:" in _refused(url, capsys)


def test_a_saved_cache_with_control_bytes_is_not_listed(
    isolated: Path, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    """A cache written by an earlier release from a hostile mirror is refused on load."""
    document = _our_document()
    _sonnet(document)["id"] = "claude\x1b]0;owned\x07"
    document["source"]["date"] = "2099-01-01"  # newer than the built-in data
    isolated.parent.mkdir(parents=True)
    isolated.write_text(json.dumps(document))
    info = catalog_cache.load_user_catalog({"XDG_CACHE_HOME": str(isolated.parents[1])})
    assert info.origin == "built-in"
    assert any("cached model catalogue is unusable" in r.getMessage() for r in caplog.records)
    assert cli.main(["models", "--provider", "anthropic"]) == 0
    assert "\x1b" not in capsys.readouterr().out


def _ours() -> tuple[dict[str, Any], dict[str, Any]]:
    """Our format: (the document, the entry a value goes into)."""
    document = _our_document()
    return document, _sonnet(document)


def _models_dev_format() -> tuple[dict[str, Any], dict[str, Any]]:
    """models.dev's format: (its data, the model a value goes into)."""
    data = _newer_copy()
    return data, data["openai"]["models"][NEW_ID]


#: a value put as raw JSON text into one field of one model: (format, field, text, expected)
_NUMBERS = [
    (_ours, "max_output", "1e400", "out of range"),
    (_ours, "context_window", "-1e400", "out of range"),
    (_ours, "max_output", "1" + "0" * 30, "is not a number from 1 to 1,000,000,000"),
    (_ours, "price_input", "NaN", "NaN is not a number"),
    (_ours, "price_output", "Infinity", "Infinity is not a number"),
    (_ours, "price_input", "-5", "is not a number from 0 to 1,000,000"),
    (_ours, "price_cache_read", "-0.01", "is not a number from 0 to 1,000,000"),
    (_ours, "context_window", "-1", "is not a number from 0 to 1,000,000,000"),
    (_ours, "price_tiers", "[[200000, 6, -22.5, 0.6, 7.5]]", "(a price): -22.5 is not"),
    (_models_dev_format, "limit", '{"context": 1000, "output": 1e400}', "out of range"),
    (_models_dev_format, "limit", '{"context": 1000, "output": 10000000000000}', "max_output"),
    (_models_dev_format, "cost", '{"input": -5, "output": 1}', "price_input: -5.0 is not"),
    (_models_dev_format, "cost", '{"input": NaN, "output": 1}', "NaN is not a number"),
]


@pytest.mark.parametrize(("shape", "field", "raw", "expected"), _NUMBERS)
def test_numbers_out_of_range_are_refused(
    serve: Callable[[Script], tuple[str, list[str]]],
    capsys: pytest.CaptureFixture[str],
    shape: Callable[[], tuple[dict[str, Any], dict[str, Any]]],
    field: str,
    raw: str,
    expected: str,
) -> None:
    document, entry = shape()
    entry[field] = "@@VALUE@@"
    body = json.dumps(document).replace('"@@VALUE@@"', raw).encode()
    url, _ = serve(_body(body))
    assert expected in _refused(url, capsys)


# -- what the HTTP answer may do ------------------------------------------------------


@pytest.mark.parametrize("length", ["12abc", "-5", "12, 12", " "])
def test_a_malformed_content_length_is_one_clear_error(
    serve: Callable[[Script], tuple[str, list[str]]],
    capsys: pytest.CaptureFixture[str],
    length: str,
) -> None:
    url, _ = serve(_body(b"{}", headers={"Content-Length": length, "Connection": "close"}))
    assert "malformed Content-Length" in _refused(url, capsys)


def test_an_announced_oversized_body_is_refused_before_it_is_read(
    serve: Callable[[Script], tuple[str, list[str]]],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setattr(catalog_cache, "MAX_BYTES", 1000)
    url, _ = serve(_body(b"{}", headers={"Content-Length": str(1 << 40), "Connection": "close"}))
    assert "announces 1,099,511,627,776 bytes, more than 1,000 bytes" in _refused(url, capsys)


def test_a_body_without_a_length_is_cut_at_the_cap(
    serve: Callable[[Script], tuple[str, list[str]]],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """No Content-Length to refuse up front: the bytes are counted as they arrive."""
    monkeypatch.setattr(catalog_cache, "MAX_BYTES", 1000)

    def unannounced(handler: http.server.BaseHTTPRequestHandler) -> None:
        handler.close_connection = True
        handler.wfile.write(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n" + b" " * 5000)

    url, _ = serve(unannounced)
    assert "sent more than 1,000 bytes" in _refused(url, capsys)


def test_an_error_reason_cannot_reach_the_terminal(
    serve: Callable[[Script], tuple[str, list[str]]], capsys: pytest.CaptureFixture[str]
) -> None:
    def refuse(handler: http.server.BaseHTTPRequestHandler) -> None:
        handler.send_response(404, "Not Found\x1b]0;owned\x07\x1b[2J")
        handler.send_header("Content-Length", "0")
        handler.end_headers()

    url, _ = serve(refuse)
    last = _refused(url, capsys)
    assert "cannot fetch" in last and "Not Found\\x1b]0;owned" in last


def _redirect(location: str) -> Script:
    def answer(handler: http.server.BaseHTTPRequestHandler) -> None:
        handler.send_response(302)
        handler.send_header("Location", location)
        handler.send_header("Content-Length", "0")
        handler.end_headers()

    return answer


@pytest.mark.parametrize(
    "target",
    [
        "http://127.0.0.1:{port}/api.json",
        "http://[::1]:{port}/api.json",
        "http://localhost:{port}/api.json",
        "http://127.1:{port}/api.json",
        "http://0.0.0.0:{port}/api.json",
        "http://10.0.0.1/api.json",
        "http://192.168.1.1/api.json",
        "http://169.254.169.254/latest/meta-data/",
        "http://[fe80::1]/api.json",
        "http://metadata.google.internal/computeMetadata/v1/",
        "http://127.0.0.1.nip.io:{port}/api.json",
    ],
)
def test_a_redirect_to_an_internal_address_is_not_followed(
    serve: Callable[[Script], tuple[str, list[str]]],
    isolated: Path,
    capsys: pytest.CaptureFixture[str],
    target: str,
) -> None:
    inside, inside_hits = serve(_body(json.dumps(_newer_copy()).encode()))
    port = inside.split(":")[2].split("/")[0]
    url, hits = serve(_redirect(target.format(port=port)))
    last = _refused(url, capsys)
    assert "which is not followed" in last and hits == ["/api.json"] and inside_hits == []
    assert not isolated.exists()


def test_a_redirect_within_the_configured_origin_is_followed(
    serve: Callable[[Script], tuple[str, list[str]]],
) -> None:
    """A local mirror the user named may move its file: same scheme, host and port."""
    data = json.dumps(_newer_copy()).encode()

    def moved(handler: http.server.BaseHTTPRequestHandler) -> None:
        if handler.path == "/old.json":
            _redirect("/api.json")(handler)
        else:
            _body(data)(handler)

    url, hits = serve(moved)
    assert cli.main(["models", "--refresh", "--url", url.replace("api", "old")]) == 0
    assert hits == ["/old.json", "/api.json"] and get_model(f"openai:{NEW_ID}")


def test_a_redirect_to_a_name_that_resolves_inside_is_not_followed(
    serve: Callable[[Script], tuple[str, list[str]]],
) -> None:
    """The redirect's host name is resolved before it is followed."""
    inside, inside_hits = serve(_body(json.dumps(_newer_copy()).encode()))
    port = inside.split(":")[2].split("/")[0]
    url, _ = serve(_redirect(f"http://catalog.example.com:{port}/api.json"))
    asked: list[str] = []

    def resolver(name: str) -> list[str]:
        asked.append(name)
        return ["93.184.215.14", "127.0.0.1"]  # one public address is not enough

    with pytest.raises(CatalogError, match=r"resolves to 127\.0\.0\.1, which is not a public"):
        catalog_cache.refresh(url, now=datetime.now(UTC), resolver=resolver)
    assert asked == ["catalog.example.com"] and inside_hits == []


def test_a_redirect_whose_name_turns_inside_when_connecting_is_not_followed(
    serve: Callable[[Script], tuple[str, list[str]]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """DNS rebinding: the name resolves to a public address when the redirect is
    judged, to loopback when the connection is made; the address reached decides."""
    inside, inside_hits = serve(_body(json.dumps(_newer_copy()).encode()))
    port = inside.split(":")[2].split("/")[0]
    url, _ = serve(_redirect(f"http://catalog.example.com:{port}/api.json"))
    connect = socket.create_connection

    def rebound(address: tuple[str, int], *args: Any, **kwargs: Any) -> socket.socket:
        host, to = address
        return connect(
            ("127.0.0.1" if host == "catalog.example.com" else host, to), *args, **kwargs
        )

    monkeypatch.setattr(socket, "create_connection", rebound)
    with pytest.raises(CatalogError, match=r"connected to 127\.0\.0\.1, which is not a public"):
        catalog_cache.refresh(url, now=datetime.now(UTC), resolver=lambda name: ["93.184.215.14"])
    assert inside_hits == []


def test_the_redirect_rule() -> None:
    """Which redirects pass, judged without any network (the resolver is a table)."""
    public = {"mirror.example.com": ["93.184.215.14"], "cdn.example.net": ["2606:4700::1"]}

    def resolver(name: str) -> list[str]:
        return public.get(name, [])

    def problem(configured: str, target: str) -> str | None:
        return redirect_problem(configured, target, resolver)

    assert problem("https://models.dev/api.json", "https://mirror.example.com/a.json") is None
    assert problem("http://127.0.0.1:8/a", "http://127.0.0.1:8/b") is None  # same origin
    assert problem("https://models.dev/a", "https://cdn.example.net/a") is None
    assert "https to http" in (problem("https://models.dev/a", "http://mirror.example.com/a") or "")
    assert "does not resolve" in (
        problem("https://models.dev/a", "https://nowhere.example/a") or ""
    )
    assert problem("http://127.0.0.1:8/a", "http://127.0.0.1:9/a")  # another port: judged
    assert problem("https://models.dev/a", "ftp://mirror.example.com/a")


def test_the_shown_url_hides_a_token() -> None:
    shown = shown_url("https://user:pw@mirror.example.com/api.json?token=s3cret")
    assert shown == "https://mirror.example.com/api.json?***"


def _drip(where: str) -> Script:
    """Headers or a body sent a byte every 50 ms (each read waits far less than the
    per-read timeout, so only a deadline for the whole fetch ends it)."""

    def answer(handler: http.server.BaseHTTPRequestHandler) -> None:
        head = b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\nX-Slow: "
        handler.wfile.write(head if where == "headers" else head + b"1\r\n\r\n")
        for _ in range(100_000):  # 5,000 s at this pace
            handler.wfile.write(b"a")
            handler.wfile.flush()
            time.sleep(0.05)

    return answer


@pytest.mark.parametrize("where", ["headers", "body"])
def test_a_dripping_mirror_meets_the_total_deadline(
    serve: Callable[[Script], tuple[str, list[str]]],
    isolated: Path,
    capsys: pytest.CaptureFixture[str],
    where: str,
) -> None:
    url, _ = serve(_drip(where))
    started = time.monotonic()
    last = _refused(url, capsys, "--timeout", "1")
    assert time.monotonic() - started < 30  # the per-read timeout never fires here
    assert "took longer than 1 s, the deadline for the whole fetch" in last
    assert not isolated.exists()


def test_the_timeout_flag_goes_with_refresh(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["models", "--timeout", "5"]) != 0
    assert "--timeout goes with --refresh" in capsys.readouterr().err


def test_a_catalogue_with_a_token_in_its_url_does_not_keep_it(
    serve: Callable[[Script], tuple[str, list[str]]], capsys: pytest.CaptureFixture[str]
) -> None:
    url, hits = serve(_body(json.dumps(_newer_copy()).encode()))
    assert cli.main(["models", "--refresh", "--url", url + "?token=s3cret-t0ken"]) == 0
    assert hits == ["/api.json?token=s3cret-t0ken"]  # the mirror still gets it
    assert cli.main(["models", "--source"]) == 0
    out, err = capsys.readouterr()
    assert "s3cret" not in out + err and "api.json?***" in out


def test_an_unused_port_is_still_one_clear_error(capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    assert "cannot fetch" in _refused(f"http://127.0.0.1:{port}/", capsys)


def test_the_built_in_catalogue_passes_every_check() -> None:
    """The checks refuse what they should and nothing the real data holds."""
    document = copy.deepcopy(_our_document())
    assert check_catalog(document) is document
