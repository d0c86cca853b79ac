"""Vertex ``partialArgs`` (JSON path + value pieces) turned into JSON text as they stream.

A streamed function call (``streamFunctionCallArguments``) sends its
arguments as pieces addressed by RFC 9535 normalized paths; `PartialArgsWriter`
writes them out as the text of one JSON object, piece by piece, so the
argument deltas of a call concatenate to its complete arguments.
"""

from __future__ import annotations

import re
from typing import Any, Final

import msgspec

__all__ = ["PartialArgsWriter"]

_JSON: Final = msgspec.json.Encoder()

_PATH_STEP: Final = re.compile(
    r"\.([A-Za-z_$][\w$-]*)|\[(\d+)\]|\['((?:[^'\\]|\\.)*)'\]|\[\"((?:[^\"\\]|\\.)*)\"\]"
)


def _parse_path(path: str) -> list[str | int]:
    """RFC 9535 normalized-path steps (``$.a.b[0]['c']``) as keys and indices."""
    if not path.startswith("$"):
        raise ValueError(f"partialArgs jsonPath {path!r} does not start with $")
    steps: list[str | int] = []
    pos = 1
    while pos < len(path):
        match = _PATH_STEP.match(path, pos)
        if match is None:
            raise ValueError(f"unsupported partialArgs jsonPath {path!r}")
        name, index, single, double = match.groups()
        if index is not None:
            steps.append(int(index))
        else:
            steps.append(name if name is not None else (single if single is not None else double))
        pos = match.end()
    if not steps:
        raise ValueError("partialArgs jsonPath '$' names no argument")
    return steps


class _Container:
    __slots__ = ("count", "is_array", "keys", "step")

    def __init__(self, step: str | int | None, is_array: bool) -> None:
        self.step = step  # the key or index under which the parent holds it
        self.is_array = is_array
        self.count = 0
        self.keys: set[str] = set()


class PartialArgsWriter:
    """Turns Vertex ``partialArgs`` (JSON path + value pieces) into JSON text, piece by piece.

    Each `add` returns the text to append, so the argument deltas of a
    streamed call concatenate to the complete JSON object, and a partial JSON
    parser shows the arguments growing. Strings with ``willContinue`` stay
    open and later pieces for the same path append to them.
    """

    def __init__(self) -> None:
        self._stack: list[_Container] = []
        self._open_string: list[str | int] | None = None
        self._started = False
        # A long string arrives as many pieces under one path: parse it once.
        self._last_path: str | None = None
        self._last_steps: list[str | int] = []

    def add(self, path: str, value: tuple[str, Any], will_continue: bool) -> str:
        """``value`` is (``"string"``, text) or (``"json"``, raw JSON text of a scalar)."""
        if path == self._last_path:
            steps = self._last_steps
        else:
            steps = _parse_path(path)
            self._last_path, self._last_steps = path, steps
        out: list[str] = []
        kind, payload = value
        if self._open_string is not None:
            if steps == self._open_string and kind == "string":
                out.append(_escape(payload))
                if not will_continue:
                    out.append('"')
                    self._open_string = None
                return "".join(out)
            out.append('"')
            self._open_string = None
        if not self._started:
            self._started = True
            self._stack.append(_Container(None, False))
            out.append("{")
        # Close containers that are not ancestors of this path.
        parents = steps[:-1]
        common = 0
        while (
            common < len(parents)
            and common + 1 < len(self._stack)
            and self._stack[common + 1].step == parents[common]
        ):
            common += 1
        while len(self._stack) > common + 1:
            out.append("]" if self._stack.pop().is_array else "}")
        for depth in range(common, len(steps)):
            step = steps[depth]
            out.append(self._member(step))
            if depth < len(steps) - 1:
                is_array = isinstance(steps[depth + 1], int)
                self._stack.append(_Container(step, is_array))
                out.append("[" if is_array else "{")
        if kind == "string":
            out.append('"' + _escape(payload))
            if will_continue:
                self._open_string = steps
            else:
                out.append('"')
        else:
            out.append(payload)
        return "".join(out)

    def _member(self, step: str | int) -> str:
        container = self._stack[-1]
        if container.is_array:
            if step != container.count:
                raise ValueError(
                    f"partialArgs index {step} out of order (expected {container.count})"
                )
            prefix = "," if container.count else ""
        else:
            if not isinstance(step, str):
                raise ValueError(f"partialArgs index {step} inside an object")
            if step in container.keys:
                raise ValueError(f"partialArgs key {step!r} streamed again after it closed")
            prefix = "," if container.count else ""
            container.keys.add(step)
            prefix += _JSON.encode(step).decode() + ":"
        container.count += 1
        return prefix

    def close(self) -> str:
        """The text that completes the object (``{}`` when no argument came)."""
        if not self._started:
            return "{}"
        out = ['"'] if self._open_string is not None else []
        self._open_string = None
        while self._stack:
            out.append("]" if self._stack.pop().is_array else "}")
        return "".join(out)


def _escape(text: str) -> str:
    return _JSON.encode(text).decode()[1:-1]
