"""`scrub` and `secret_values`: the one implementation that takes known secrets out of text."""

from __future__ import annotations

from streamfn.core._redact import MIN_SECRET_CHARS, scrub, secret_values


def test_every_occurrence_goes_and_a_longer_value_goes_whole() -> None:
    key = "sk-PLANTED-0123456789"
    text = f"Authorization: Bearer {key}; again {key}; prefix sk-PLANTED"
    assert scrub(text, {key, "sk-PLANTED"}) == "Authorization: Bearer ***; again ***; prefix ***"


def test_short_or_missing_values_are_not_secrets() -> None:
    short = "x" * (MIN_SECRET_CHARS - 1)
    assert secret_values([None, "", "1", short, "  long-enough-value  "]) == {"long-enough-value"}
    assert scrub("nothing to hide", set()) == "nothing to hide"


def test_a_value_of_exactly_the_minimum_length_is_a_secret() -> None:
    """The boundary itself: `MIN_SECRET_CHARS` characters (padding stripped) is a
    secret and is scrubbed; one fewer is not."""
    exact = "k" * (MIN_SECRET_CHARS - 1) + "Z"
    assert len(exact) == MIN_SECRET_CHARS
    found = secret_values([f"  {exact}\n", exact[1:]])
    assert found == {exact}
    assert scrub(f"key={exact}; short={exact[1:]}x", found) == f"key=***; short={exact[1:]}x"
