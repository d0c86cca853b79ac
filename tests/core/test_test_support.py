"""The suite's own rules about what it needs: where the corpus is found, and a skip
that is a failure under CI (tests/missing.py, tests/corpus_support.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from corpus_support import find_corpus
from missing import fail_a_skip_under_ci, under_ci


def _corpus(folder: Path) -> Path:
    corpus = folder / "shared" / "corpus"
    corpus.mkdir(parents=True)
    (corpus / "index.json").write_text("[]")
    return corpus


def test_the_corpus_is_found_beside_the_checkout_from_the_checkout_not_the_cwd(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    corpus = _corpus(tmp_path / "work")
    monkeypatch.chdir(tmp_path / "work" / "shared")  # the cwd plays no part
    assert find_corpus({}, tmp_path / "work" / "repo") == corpus
    assert find_corpus({}, tmp_path / "work" / "deep" / "down" / "repo") == corpus
    assert find_corpus({}, tmp_path / "elsewhere" / "repo") is None


def test_a_worktree_finds_the_corpus_beside_its_main_checkout(tmp_path: Path) -> None:
    corpus = _corpus(tmp_path / "work")
    main = tmp_path / "work" / "main"
    (main / ".git" / "worktrees" / "wt").mkdir(parents=True)
    worktree = tmp_path / "elsewhere" / "wt"
    worktree.mkdir(parents=True)
    (worktree / ".git").write_text(f"gitdir: {main / '.git' / 'worktrees' / 'wt'}\n")
    assert find_corpus({}, worktree) == corpus


def test_streamfn_corpus_names_it_and_a_wrong_one_is_an_error(tmp_path: Path) -> None:
    corpus = _corpus(tmp_path / "anywhere")
    assert find_corpus({"STREAMFN_CORPUS": str(corpus)}, tmp_path / "repo") == corpus
    with pytest.raises(RuntimeError, match=r"STREAMFN_CORPUS=.* holds no index\.json"):
        find_corpus({"STREAMFN_CORPUS": str(tmp_path)}, tmp_path / "repo")


def _skipped() -> pytest.TestReport:
    return pytest.TestReport(
        nodeid="t.py::test",
        location=("t.py", 1, "test"),
        keywords={},
        outcome="skipped",
        longrepr=("t.py", 1, "Skipped: the program curl is missing: apt-get install curl"),
        when="call",
    )


def test_under_ci_a_skip_fails_naming_what_is_missing() -> None:
    report = _skipped()
    fail_a_skip_under_ci(report, {"CI": "true"})
    assert report.failed and "the program curl is missing" in str(report.longrepr)


def test_elsewhere_a_skip_stays_a_skip() -> None:
    for environ in ({}, {"CI": ""}, {"CI": "false"}):
        report = _skipped()
        fail_a_skip_under_ci(report, environ)
        assert report.skipped and not under_ci(environ)
