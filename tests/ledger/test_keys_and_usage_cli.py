"""``streamfn keys`` and ``streamfn usage`` against a real store: secrets shown once, never
listed, errors in one line naming the fix, usage totals equal to the store's report."""

from __future__ import annotations

import datetime as dt
import json
import time
from pathlib import Path

import pytest

from streamfn import cli
from streamfn.cli._command import EXIT_OK, EXIT_RUNTIME, EXIT_USAGE
from streamfn.ledger import Refused, SQLiteStore, UsageRecord

Capture = pytest.CaptureFixture[str]


@pytest.fixture
def store_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("COLUMNS", "200")
    return tmp_path / "gateway.db"


def run(capsys: Capture, *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_create_shows_the_secret_once_and_list_never(store_path: Path, capsys: Capture) -> None:
    code, out, _ = run(
        capsys, "keys", "create", "ci", "--models", "a, b", "--budget", "10", "--period", "week",
        "--rpm", "20", "--tpm", "5000", "--expires", "30d", "--store", str(store_path),
    )  # fmt: skip
    assert code == EXIT_OK
    secret = next(w for w in out.split() if w.startswith("sfn-"))
    assert "will not be shown again" in out
    code, out, _ = run(capsys, "keys", "create", "intern", "--json", "--store", str(store_path))
    made = json.loads(out)
    assert made["secret"].startswith("sfn-") and "not be shown again" in made["note"]
    store = SQLiteStore(store_path)
    key = store.key_for_secret(secret)
    assert key is not None and key.models == ("a", "b") and key.budget == 10.0
    assert (key.period, key.rpm, key.tpm) == ("week", 20, 5000)
    assert key.expires_at is not None
    assert abs(key.expires_at - (time.time() + 30 * 86400)) < 3600
    hashes = [row[0] for row in store._query("SELECT secret_hash FROM ledger_keys")]
    store.close()
    for argv in (("keys", "list"), ("keys", "list", "--json")):
        code, out, _ = run(capsys, *argv, "--store", str(store_path))
        assert code == EXIT_OK and key.id in out and made["id"] in out
        assert "sfn-" not in out and not any(h in out for h in hashes)
    code, out, _ = run(capsys, "keys", "list", "--store", str(store_path))
    assert "$10.00/week" in out and "20 rpm, 5000 tpm" in out
    listed = json.loads(run(capsys, "keys", "list", "--json", "--store", str(store_path))[1])
    assert [k["name"] for k in listed] == ["ci", "intern"] and listed[0]["spent"] == 0.0


def test_rotate_and_revoke(store_path: Path, capsys: Capture) -> None:
    out = run(capsys, "keys", "create", "ci", "--json", "--store", str(store_path))[1]
    made = json.loads(out)
    code, out, _ = run(capsys, "keys", "rotate", made["id"], "--json", "--store", str(store_path))
    new = json.loads(out)["secret"]
    assert code == EXIT_OK and new != made["secret"]
    store = SQLiteStore(store_path)
    assert store.key_for_secret(made["secret"]) is None
    key = store.key_for_secret(new)
    assert key is not None
    code, out, _ = run(capsys, "keys", "revoke", made["id"], "--store", str(store_path))
    assert code == EXIT_OK and "revoked" in out
    verdict = store.admit(key, "m", now=time.time(), estimate=None)
    assert isinstance(verdict, Refused) and verdict.status == 401
    store.close()
    out = run(capsys, "keys", "list", "--store", str(store_path))[1]
    assert dt.datetime.now(dt.UTC).strftime("%Y-%m-%d") in out.splitlines()[1]


@pytest.mark.parametrize(
    ("argv", "code", "words"),
    [
        (("keys", "revoke", "key_nope"), EXIT_USAGE, "no client key has the id 'key_nope'"),
        (("keys", "rotate", "key_nope"), EXIT_USAGE, "`streamfn keys list` shows"),
        (("usage", "--key", "key_nope"), EXIT_USAGE, "no client key has the id 'key_nope'"),
        (("keys", "create", "x", "--expires", "2020-01-01"), EXIT_USAGE, "not in the future"),
        (("keys", "create", "x", "--expires", "soon"), EXIT_USAGE, "such as 30d"),
        (("usage", "--since", "1d", "--until", "2d"), EXIT_USAGE, "--until is not after"),
    ],
)
def test_errors_are_one_line_naming_the_fix(
    store_path: Path, capsys: Capture, argv: tuple[str, ...], code: int, words: str
) -> None:
    SQLiteStore(store_path).close()
    got, out, err = run(capsys, *argv, "--store", str(store_path))
    assert (got, out) == (code, "")
    assert err.count("\n") == 1 and words in err


def test_an_unreachable_or_unusable_store_says_so_without_its_password(
    tmp_path: Path, capsys: Capture
) -> None:
    url = f"postgresql://ops:hunter2@/ledger?host={tmp_path}&port=1"
    code, _, err = run(capsys, "keys", "list", "--store", url)
    assert code == EXIT_RUNTIME and err.count("\n") == 1
    assert "cannot reach the PostgreSQL store" in err and "hunter2" not in err
    (tmp_path / "file").write_text("")
    code, _, err = run(capsys, "keys", "create", "x", "--store", str(tmp_path / "file" / "x.db"))
    assert code == EXIT_RUNTIME and "cannot open the usage store" in err


@pytest.mark.parametrize(
    "argv",
    [
        ("keys", "list"),
        ("keys", "revoke", "key_1a2b3c4d5e6f"),
        ("keys", "rotate", "key_1a2b3c4d5e6f"),
        ("usage",),
        ("usage", "--prune-before", "90d"),
    ],
)
def test_only_create_makes_a_store_the_others_say_there_is_none(
    store_path: Path, capsys: Capture, argv: tuple[str, ...]
) -> None:
    """A mistyped --store, or the default of another user than the server's, is not
    answered "no keys" or "no usage" from a new empty store made there."""
    code, out, err = run(capsys, *argv, "--store", str(store_path))
    assert (code, out) == (EXIT_RUNTIME, "") and err.count("\n") == 1
    assert f"there is no usage store at {store_path}" in err and "--store" in err
    assert not store_path.exists()
    store_path.touch()  # an empty file (a `touch`, a failed copy) is not a store either
    code, out, err = run(capsys, *argv, "--store", str(store_path))
    assert code == EXIT_RUNTIME and f"there is no usage store at {store_path}" in err
    assert store_path.stat().st_size == 0


def test_answers_name_the_store_and_create_says_how_the_server_checks_it(
    store_path: Path, capsys: Capture
) -> None:
    code, out, _ = run(capsys, "keys", "create", "ci", "--store", str(store_path))
    assert code == EXIT_OK and store_path.exists()
    assert f"in {store_path}" in out.splitlines()[0]
    assert f"streamfn serve --store {store_path}" in out
    store_path.unlink()
    SQLiteStore(store_path).close()
    out = run(capsys, "keys", "list", "--store", str(store_path))[1]
    assert out == f"no client keys in {store_path} yet: `streamfn keys create NAME` makes one\n"
    out = run(capsys, "usage", "--store", str(store_path))[1]
    assert out == f"no usage recorded in {store_path} in this range\n"


@pytest.mark.parametrize(("given", "dollars"), [("10", 10.0), ("$2.50", 2.5), (" $1", 1.0)])
def test_a_budget_is_dollars_with_or_without_the_sign(
    store_path: Path, capsys: Capture, given: str, dollars: float
) -> None:
    out = run(
        capsys, "keys", "create", "ci", "--budget", given, "--json", "--store", str(store_path)
    )[1]
    assert json.loads(out)["budget"] == dollars


@pytest.mark.parametrize("name", ["", "  "])
def test_a_key_without_a_name_is_refused(store_path: Path, capsys: Capture, name: str) -> None:
    with pytest.raises(SystemExit):
        cli.main(["keys", "create", name, "--store", str(store_path)])
    assert "a key needs a name" in capsys.readouterr().err and not store_path.exists()


@pytest.mark.parametrize("given", ["10USD", "ten", "0", "$-1", "inf"])
def test_a_budget_in_another_unit_is_refused_saying_dollars(
    store_path: Path, capsys: Capture, given: str
) -> None:
    with pytest.raises(SystemExit):
        cli.main(["keys", "create", "ci", "--budget", given, "--store", str(store_path)])
    err = capsys.readouterr().err
    assert "--budget" in err and "dollars" in err
    assert not store_path.exists()


def test_usage_equals_the_store_report_with_a_total(store_path: Path, capsys: Capture) -> None:
    store = SQLiteStore(store_path)
    key, _ = store.create_key("ci", now=time.time())
    day = dt.datetime(2026, 5, 1, tzinfo=dt.UTC).timestamp()
    for at, model, cost in [(day, "a", 0.5), (day + 86400, "b", None), (day + 90000, "a", 2.25)]:
        store.settle(
            None,
            UsageRecord(
                at=at, key_id=key.id, route="/v1/messages", model=model, input_tokens=1000,
                output_tokens=10, cost=cost,
            ),
        )  # fmt: skip
    store.settle(None, UsageRecord(at=day, key_id=None, route="/v1/messages", model="a"))
    window = ("--since", "2026-05-01", "--until", "2026-05-10", "--store", str(store_path))
    code, out, _ = run(capsys, "usage", "--by", "model,day", "--json", *window)
    report = json.loads(out)
    expected = store.report(["model", "day"], since=day, until=day + 9 * 86400)
    assert code == EXIT_OK and report["rows"] == expected
    assert report["total"]["requests"] == 4 and report["total"]["cost"] == 2.75
    mine = json.loads(run(capsys, "usage", "--key", key.id, "--json", *window)[1])
    assert mine["total"]["requests"] == 3 and mine["total"]["unpriced"] == 1
    code, out, _ = run(capsys, "usage", "--by", "key", *window)
    lines = out.splitlines()
    assert lines[0].split()[:3] == ["key", "requests", "input"]
    assert f"{key.id} (ci)" in out and "(no key)" in out
    assert lines[-2].startswith("total") and "3,000" in lines[-2] and "$2.75" in lines[-2]
    assert "no known prices" in lines[-1]
    store.close()


@pytest.mark.parametrize("argv", [("keys", "--help"), ("keys", "create", "--help"), ("usage", "--help")])  # fmt: skip
def test_help_teaches_with_examples(argv: tuple[str, ...], capsys: Capture) -> None:
    with pytest.raises(SystemExit):
        cli.main(list(argv))
    out = capsys.readouterr().out
    assert "--store" in out or "create" in out
    if argv[-2] != "create":
        assert "examples:" in out and "streamfn " + argv[0] in out


def test_prune_before_forgets_old_records_and_keeps_the_periods_spend(
    store_path: Path, capsys: Capture
) -> None:
    now = time.time()
    store = SQLiteStore(store_path)
    key, _ = store.create_key("ci", now=now - 400 * 86400, budget=100.0, period="total")
    for at in (now - 200 * 86400, now - 100 * 86400, now - 3600):
        store.settle(None, UsageRecord(at=at, key_id=key.id, route="/r", model="a", cost=1.0))
    code, out, _ = run(capsys, "usage", "--prune-before", "90d", "--store", str(store_path))
    assert code == EXIT_OK and out.startswith("2 usage records from before ")
    assert [r.at for r in store.records(since=0, until=now + 1)] == [now - 3600]
    assert store.spent(key.id, now=now) == 3.0  # the budget's period keeps its spend
    code, _, err = run(capsys, "usage", "--prune-before", "12h", "--store", str(store_path))
    assert code == EXIT_USAGE and "less than a day ago" in err and err.count("\n") == 1
    store.close()


def test_usage_says_how_much_is_estimated_and_where_attempts_failed_over(
    store_path: Path, capsys: Capture
) -> None:
    store = SQLiteStore(store_path)
    day = dt.datetime(2026, 5, 1, tzinfo=dt.UTC).timestamp()
    for deployment, cost, estimated, tried in [
        ("east", 0.5, False, ()),
        ("east", 0.25, True, ("west",)),  # west failed first; east answered, no usage
        ("west", 2.0, False, ()),
    ]:
        store.settle(
            None,
            UsageRecord(
                at=day, key_id=None, route="/v1/messages", model="a", deployment=deployment,
                input_tokens=100, output_tokens=20, cost=cost, estimated=estimated,
                attempts=1 + len(tried), tried=tried,
            ),
        )  # fmt: skip
    store.close()
    window = ("--since", "2026-05-01", "--until", "2026-05-10", "--store", str(store_path))
    report = json.loads(run(capsys, "usage", "--by", "deployment", "--json", *window)[1])
    rows = {row["deployment"]: row for row in report["rows"]}
    assert (rows["east"]["estimated"], rows["east"]["estimated_cost"]) == (1, 0.25)
    assert (rows["west"]["requests"], rows["west"]["failovers"]) == (1, 1)
    total = report["total"]
    assert (total["estimated"], total["estimated_tokens"], total["estimated_cost"]) == (
        1,
        120,
        0.25,
    )
    assert total["failovers"] == 1 and total["cost"] == 2.75
    out = run(capsys, "usage", "--by", "deployment", *window)[1]
    header = out.splitlines()[0].split()
    assert header[-2:] == ["estimated", "failovers"]
    assert "1 requests were billed an estimate" in out and "120 tokens and $0.2500" in out


def test_a_narrow_list_says_what_it_hides_and_which_keys_expired(
    store_path: Path, capsys: Capture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """At 80 columns the models, limits and expiry do not fit: the list says they are
    left out, and an expired key is marked where it is always seen, by its name."""
    store = SQLiteStore(store_path)
    now = time.time()
    store.create_key("ci", now=now - 86400, models=("local", "openai:gpt-4o-mini"), rpm=20)
    store.create_key("intern", now=now - 86400, budget=2.0, expires_at=now - 60)
    store.close()
    monkeypatch.setenv("COLUMNS", "80")
    lines = run(capsys, "keys", "list", "--store", str(store_path))[1].splitlines()
    assert all(len(line) <= 80 for line in lines[:-1])
    assert "expires" not in lines[0]
    assert lines[-1].startswith("(hidden at this width: models, limits, expires;")
    assert lines[1].split()[1:3] == ["ci", "-"] and lines[2].split()[1:3] == ["intern", "(expired)"]
    monkeypatch.setenv("COLUMNS", "200")
    lines = run(capsys, "keys", "list", "--store", str(store_path))[1].splitlines()
    assert "expires" in lines[0] and not lines[-1].startswith("(hidden")


@pytest.mark.parametrize(
    ("command", "says"),
    [
        ("list", "what it spent this period"),
        ("revoke", "refuses it within a second"),
        ("rotate", "the old secret stops working"),
    ],
)
def test_each_keys_command_says_what_it_does(command: str, says: str, capsys: Capture) -> None:
    with pytest.raises(SystemExit):
        cli.main(["keys", command, "--help"])
    assert says in " ".join(capsys.readouterr().out.split())


@pytest.mark.parametrize("argv", [("keys", "revoke", "ci"), ("keys", "rotate", "ci"), ("usage", "--key", "ci")])  # fmt: skip
def test_a_keys_name_where_its_id_belongs_is_answered_with_the_id(
    store_path: Path, capsys: Capture, argv: tuple[str, ...]
) -> None:
    store = SQLiteStore(store_path)
    key, _ = store.create_key("ci", now=time.time())
    store.close()
    code, out, err = run(capsys, *argv, "--store", str(store_path))
    assert (code, out) == (EXIT_USAGE, "") and err.count("\n") == 1
    assert f"'ci' is the name of {key.id}: give the id" in err
