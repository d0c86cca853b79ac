"""The repetition guard: CTranslate2's knobs against a small model's loops.

Small models decoding greedily fall into loops ("The dragon flew. The dragon
flew. ..."). ``repetition_penalty`` > 1 lowers the score of tokens already
generated; ``no_repeat_ngram_size`` n > 0 forbids generating any n tokens
twice; 1.0 and 0 switch them off. A model sets them for all its streams
(`LocalModel`), a request in ``Options.extra_body`` (as for vLLM).

A guarded stream never yields its lane mid-answer (`streamfn.local._batching`):
CTranslate2 counts only the tokens of the current call, so a resume would
change what it guards against.
"""

from __future__ import annotations

from typing import Any, Final

__all__ = ["GUARD_KNOBS", "model_guard", "repetition_guard"]

#: the knobs a request may set in ``Options.extra_body`` (CTranslate2's names)
GUARD_KNOBS: Final = ("repetition_penalty", "no_repeat_ngram_size")


def repetition_guard(asked: dict[str, Any], defaults: dict[str, Any]) -> dict[str, Any] | str:
    """The repetition guard's CTranslate2 arguments (`GUARD_KNOBS`): ``asked`` over
    ``defaults``, only those that are on; or what is wrong with ``asked``."""
    unknown = sorted(set(asked) - set(GUARD_KNOBS))
    if unknown:
        return (
            f"the local model takes no {', '.join(unknown)} in extra_body; "
            f"it knows {', '.join(GUARD_KNOBS)}"
        )
    merged = {**defaults, **asked}
    penalty = merged.get("repetition_penalty", 1.0)
    ngram = merged.get("no_repeat_ngram_size", 0)
    if isinstance(penalty, bool) or not isinstance(penalty, (int, float)) or not penalty > 0:
        return f"repetition_penalty must be a number above 0 (1.0: off), not {penalty!r}"
    if isinstance(ngram, bool) or not isinstance(ngram, int) or ngram < 0:
        return f"no_repeat_ngram_size must be a whole number, 0 (off) or more, not {ngram!r}"
    on: dict[str, Any] = {}
    if penalty != 1.0:
        on["repetition_penalty"] = float(penalty)
    if ngram:
        on["no_repeat_ngram_size"] = ngram
    return on


def model_guard(repetition_penalty: float, no_repeat_ngram_size: int) -> dict[str, Any]:
    """A model's own guard (`LocalModel`'s arguments); raises ValueError when invalid."""
    asked = {"repetition_penalty": repetition_penalty, "no_repeat_ngram_size": no_repeat_ngram_size}
    guard = repetition_guard(asked, {})
    if isinstance(guard, str):
        raise ValueError(guard)
    return guard
