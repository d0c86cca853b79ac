"""The command line's small print: the examples its errors give, the usage an unknown
argument shows, an empty prompt, and a ``streamfn models`` listing that fits a
terminal, hides retired models, sorts and filters, and puts each fact in its column."""

from __future__ import annotations

import logging
import os
import subprocess
import sys

import pytest

from streamfn import cli
from streamfn.cli._command import EXIT_USAGE
from streamfn.cli._flags import check_base_url
from streamfn.core.catalogue._models import list_models


def _err_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    return err


@pytest.mark.parametrize(
    ("value", "example"),
    [
        ("ftp://x", "e.g. http://x"),
        ("gpu box", "e.g. http://localhost:8000/v1"),
        ("http://gpu box:8000", "e.g. http://localhost:8000/v1"),
        ("gpu-box:8000", "e.g. http://gpu-box:8000"),
        ("http://gpu\tbox:8000", "e.g. http://localhost:8000/v1"),
    ],
)
def test_a_bad_base_url_suggests_a_url_that_would_be_accepted(
    value: str, example: str, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["chat", "-m", "openai:gpt-4o-mini", "--base-url", value, "Hi"]
    assert cli.main(args) == EXIT_USAGE
    err = _err_line(capsys)
    assert err.rstrip().endswith(example)
    suggested = err.rsplit("e.g. ", 1)[1].strip()
    assert check_base_url("--base-url", suggested) == suggested  # it would be accepted


def test_a_base_url_with_credentials_is_not_echoed_with_them(
    capsys: pytest.CaptureFixture[str],
) -> None:
    args = ["chat", "-m", "openai:gpt-4o-mini", "--base-url", "ftp://me:s3cret@box", "Hi"]
    assert cli.main(args) == EXIT_USAGE
    assert "s3cret" not in _err_line(capsys)


@pytest.mark.parametrize("prompt", ["", "   ", "\n"])
def test_an_empty_prompt_is_refused_in_one_line(
    prompt: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["chat", "-m", "openai:gpt-4o-mini", prompt]) == EXIT_USAGE
    assert "the prompt is empty" in _err_line(capsys)


@pytest.mark.parametrize(
    "args",
    [["chat", "--bogus", "Hi"], ["models", "--bogus"], ["local", "prepare", "--bogus"]],
)
def test_an_unknown_argument_shows_its_own_subcommands_usage(
    args: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        cli.main(args)
    assert exited.value.code == EXIT_USAGE
    err = capsys.readouterr().err
    command = " ".join(a for a in args if not a.startswith("-") and a != "Hi")
    assert err.startswith(f"usage: streamfn {command} ")
    assert f"streamfn {command}: error: unrecognized arguments: --bogus" in err


def test_an_unknown_provider_lists_each_known_one_once_sorted(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert cli.main(["models", "--provider", "nosuch"]) == EXIT_USAGE
    named = _err_line(capsys).split("known providers: ")[1].strip().split(", ")
    assert named == sorted(set(named)) and "local" in named and "openai" in named


def _listing(capsys: pytest.CaptureFixture[str], *args: str) -> list[str]:
    assert cli.main(["models", *args]) == 0
    return capsys.readouterr().out.splitlines()


def _keys(lines: list[str]) -> list[str]:
    """The model names of a listing (a long name's row takes two lines)."""
    return [line.split()[0] for line in lines[1:] if line[:1] not in (" ", "")]


@pytest.mark.parametrize("columns", [60, 80, 120])
def test_the_listing_fits_the_terminal(
    columns: int, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", str(columns))
    lines = _listing(capsys, "--all")
    longest_name = max(len(m.key) for m in list_models())
    assert all(len(line) <= max(columns, longest_name) for line in lines)
    # nothing lost that the width allowed: every model is named, whole
    assert set(_keys(lines)) >= {m.key for m in list_models()}


def test_a_pipe_gets_80_columns_and_wide_gets_every_column(
    capsys: pytest.CaptureFixture[str],
) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    done = subprocess.run(
        [sys.executable, "-m", "streamfn", "models", "--provider", "anthropic"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=True,
    )
    assert max(len(line) for line in done.stdout.splitlines()) <= 80
    assert "released" not in done.stdout.splitlines()[0]  # dropped to fit
    [header, *_] = _listing(capsys, "--wide", "--provider", "anthropic")
    assert header.split() == [
        "model", "context", "output", "$/M", "in", "$/M", "out", "reasoning", "released", "status"
    ]  # fmt: skip


def test_retired_models_are_hidden_unless_asked(capsys: pytest.CaptureFixture[str]) -> None:
    retired = {m.key for m in list_models("anthropic") if m.retired}
    deprecated = {m.key for m in list_models("anthropic") if m.deprecated and not m.retired}
    assert retired and deprecated
    default = set(_keys(_listing(capsys, "--provider", "anthropic")))
    assert not default & retired and deprecated <= default
    assert retired <= set(_keys(_listing(capsys, "--provider", "anthropic", "--all")))
    current = set(_keys(_listing(capsys, "--provider", "anthropic", "--current")))
    assert current and not current & (retired | deprecated)


def test_a_search_text_and_a_sort_narrow_and_order_the_listing(
    capsys: pytest.CaptureFixture[str],
) -> None:
    found = _keys(_listing(capsys, "SONNET", "--provider", "anthropic", "--sort", "released"))
    assert found and all("sonnet" in key for key in found)
    dates = {m.key: m.release_date for m in list_models("anthropic")}
    assert [dates[k] for k in found] == sorted((dates[k] for k in found), reverse=True)
    by_price = _keys(_listing(capsys, "--provider", "anthropic", "--sort", "price", "--wide"))
    prices = {m.key: m.price_output for m in list_models("anthropic")}
    assert [prices[k] for k in by_price] == sorted(prices[k] for k in by_price)
    none = _listing(capsys, "no-such-model-anywhere")
    assert none == ["no model matching 'no-such-model-anywhere' (--all includes retired ones)"]
    # a catalogued provider whose rows the filters removed is not "without entries"
    assert _listing(capsys, "--provider", "anthropic", "--current", "zzz") == [
        "no current model of anthropic matching 'zzz' (--current leaves out deprecated ones)"
    ]


def test_the_local_models_state_is_in_the_status_column(
    capsys: pytest.CaptureFixture[str],
) -> None:
    header, row = _listing(capsys, "--provider", "local", "--wide")
    status = header.index("status")
    assert row[status:].startswith("prepared")  # "prepared" or "prepared on first use"
    out = header.index("$/M out")
    assert row[out : out + len("$/M out")].strip() == "free"


def test_the_unknown_model_warning_gives_command_line_advice(
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    caplog.set_level(logging.WARNING, logger="streamfn")
    cli.main(["chat", "-m", "openai:gpt-unlisted-for-this-test", "Hi"])
    [warning] = [r.getMessage() for r in caplog.records if "gpt-unlisted" in r.getMessage()]
    assert "Model(" not in warning
    assert "streamfn models --refresh" in warning and "--max-tokens" in warning
    # a program that ran the command line keeps the Python API's words afterwards
    assert not logging.getLogger("streamfn").filters


@pytest.mark.parametrize(
    "name", ["anthropic:claude-sonnet-4-5", "anthropic:claude-3-opus-20240229"]
)
def test_the_listing_a_lifecycle_warning_suggests_shows_only_current_models(
    name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from streamfn.core.catalogue._lifecycle import deprecation_warning
    from streamfn.core.catalogue._models import get_model

    found = get_model(name)
    suggested = deprecation_warning(found).split("(streamfn ", 1)[1].split(" lists them")[0]
    shown = set(_keys(_listing(capsys, *suggested.split()[1:])))
    assert shown and name not in shown
    assert not any(get_model(key).deprecated for key in shown)


def test_parsed_arguments_stay_picklable_for_serve_workers() -> None:
    """`serve --workers` sends its arguments to spawned processes: the parser that
    reports unknown arguments must not travel in them."""
    import pickle

    from streamfn.cli._main import build_parser, parse

    args = parse(build_parser(), ["serve", "--workers", "2", "--no-local"])
    assert pickle.loads(pickle.dumps(args)).workers == 2
