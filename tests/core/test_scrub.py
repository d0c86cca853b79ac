"""`scrub`, `secret_values` and `shorten`: the one implementation that takes known secrets
out of text, and cuts it without leaving part of one."""

from __future__ import annotations

import msgspec
from hypothesis import given, settings
from hypothesis import strategies as st

from streamfn.core._classify import extract_error_message
from streamfn.core._redact import MIN_SECRET_CHARS, scrub, secret_values, shorten


def test_every_occurrence_goes_and_a_longer_value_goes_whole() -> None:
    key = "sk-PLANTED-0123456789"
    text = f"Authorization: Bearer {key}; again {key}; prefix sk-PLANTED"
    assert scrub(text, {key, "sk-PLANTED"}) == "Authorization: Bearer ***; again ***; prefix ***"


def test_short_or_missing_values_are_not_secrets() -> None:
    short = "x" * (MIN_SECRET_CHARS - 1)
    assert secret_values([None, "", "1", short, "  long-enough-value  "]) == {"long-enough-value"}
    assert scrub("nothing to hide", set()) == "nothing to hide"


KEY = "sk-ant-PLANTED-0123456789abcdefXYZ"


def _runs_of(key: str, text: str, length: int = MIN_SECRET_CHARS) -> list[str]:
    return [
        key[i : i + length] for i in range(len(key) - length + 1) if key[i : i + length] in text
    ]


@settings(max_examples=300, deadline=None)
@given(
    before=st.integers(min_value=0, max_value=2200),
    words=st.sampled_from(["p", "word ", "a b"]),
    shape=st.sampled_from(["json", "text"]),
    cap=st.one_of(st.none(), st.integers(min_value=1, max_value=2400)),
    known=st.booleans(),
)
def test_no_part_of_a_planted_key_survives_a_cut_error_text(
    before: int, words: str, shape: str, cap: int | None, known: bool
) -> None:
    """Wherever the key falls in an error body, and wherever the text or the body is cut:
    a key the request holds never shows, and one it does not (the server's other keys,
    scrubbed later by value) shows whole or not at all, never part of it."""
    prompt = (words * (before // len(words) + 1))[:before]
    said = f"refused {prompt} Authorization: Bearer {KEY} and more"
    body = msgspec.json.encode({"error": {"message": said}}) if shape == "json" else said.encode()
    cut = cap is not None and cap < len(body)
    if cap is not None:
        body = body[:cap]
    secrets = {KEY} if known else set()
    shown = extract_error_message(body, secrets=secrets, cut=cut)
    assert not _runs_of(KEY, scrub(shown, {KEY})), shown[-120:]
    if known:
        assert not _runs_of(KEY, shown), shown[-120:]


def test_a_cut_never_ends_inside_a_word() -> None:
    assert shorten("first second third", 10) == "first…"
    assert shorten("first second third", 12) == "first second…"
    assert shorten("first second", 40, cut=True) == "first…"
    assert shorten("one-long-word", 5) == "…"
    assert shorten("  short  ", 40) == "short"


def test_a_value_of_exactly_the_minimum_length_is_a_secret() -> None:
    """The boundary itself: `MIN_SECRET_CHARS` characters (padding stripped) is a
    secret and is scrubbed; one fewer is not."""
    exact = "k" * (MIN_SECRET_CHARS - 1) + "Z"
    assert len(exact) == MIN_SECRET_CHARS
    found = secret_values([f"  {exact}\n", exact[1:]])
    assert found == {exact}
    assert scrub(f"key={exact}; short={exact[1:]}x", found) == f"key=***; short={exact[1:]}x"
