"""The models the examples name are current: a user copies an example, and an example
naming a model its provider has deprecated (or retired) teaches an id that fails.

Checked: every ``provider:id`` in the ``--help`` texts of ``streamfn`` and all
its subcommands, in every fenced block of the README and the docs, and in
examples/.
The only exemption is an example about the lifecycle itself (its code reads
``.deprecated`` or ``.retired``): it must name such a model to show the warning.
"""

from __future__ import annotations

import argparse
import logging
import re
from collections.abc import Iterator

import pytest
from test_readme import BLOCKS, example_programs

from streamfn.cli._main import build_parser
from streamfn.core.catalogue import _models as models
from streamfn.core.catalogue._models import UnknownModel, model, provider_names


def _help_texts(parser: argparse.ArgumentParser) -> Iterator[tuple[str, str]]:
    """Each parser's ``--help`` text, by its ``prog``, subcommands' parsers included."""
    yield parser.prog, parser.format_help()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in action.choices.values():
                yield from _help_texts(child)


def _texts() -> Iterator[tuple[str, str]]:
    yield from _help_texts(build_parser())
    for block in [*BLOCKS, *example_programs()]:
        if not re.search(r"\.(deprecated|retired)\b", block.code):
            yield block.id, block.code


def named_models(text: str) -> set[str]:
    """The ``provider:id`` names in ``text``, for every provider `model` accepts."""
    providers = "|".join(map(re.escape, sorted(provider_names(), key=len, reverse=True)))
    pattern = rf"(?<![\w./-])(?:{providers}):[A-Za-z0-9][\w.@/~:-]*\w"
    return set(re.findall(pattern, text))


def outdated(name: str) -> str | None:
    """ "deprecated"/"retired" when the catalogue says so of ``name``, else None."""
    try:
        found = model(name)
    except UnknownModel:  # an address is needed: not a catalogued model
        return None
    if found.retired:
        return "retired"
    return "deprecated" if found.deprecated else None


def test_the_checker_sees_an_outdated_model_in_a_help_text() -> None:
    """The check itself: the id the top-level --help used to teach is caught."""
    text = 'streamfn chat -m anthropic:claude-sonnet-4-5 --thinking low "Why?"'
    assert named_models(text) == {"anthropic:claude-sonnet-4-5"}
    assert outdated("anthropic:claude-sonnet-4-5") == "deprecated"
    assert outdated("anthropic:claude-3-opus-20240229") == "retired"
    assert outdated("anthropic:claude-sonnet-4-6") is None


def test_every_model_an_example_names_is_current(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    caplog.set_level(logging.CRITICAL, logger="streamfn")  # the ids assumed by family
    # their once-per-process warnings stay unspent for the tests that expect them
    monkeypatch.setattr(models, "_ASSUMED", set(models._ASSUMED))
    monkeypatch.setattr(models, "_PENDING", dict(models._PENDING))
    seen: set[str] = set()
    found = []
    for where, text in _texts():
        for name in sorted(named_models(text)):
            seen.add(name)
            status = outdated(name)
            if status is not None:
                found.append(f"{where}: {name} is {status}")
    assert not found, "examples name outdated models:\n" + "\n".join(found)
    # the scan reaches the --help texts and the docs (it found something to check)
    assert {"anthropic:claude-sonnet-4-6", "openai:gpt-4o-mini"} <= seen
