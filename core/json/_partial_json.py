"""Incremental JSON parsing for tool-call arguments that arrive a few characters at a time.

Models stream a tool call's arguments as JSON fragments; a UI wants to show
them while they stream (a file being written, a query being typed). Re-parsing
the whole prefix after every fragment with a "repair then parse" approach is
quadratic: 16,000 one-character fragments cost seconds. `PartialJSONParser`
instead keeps its position between feeds: each character is examined once,
and the value it builds is the live Python object itself (containers are
inserted into their parent the moment they open), so asking for the
best-effort value costs only the size of the string currently being written.

The best-effort value of a prefix is what is certain so far:

- open objects, arrays and strings are shown closed (``{"a": ["x`` is
  ``{"a": ["x"]}``); a string is a prefix of its final text;
- a key without its value yet, an unfinished number (``12`` may become
  ``123``) and an unfinished ``true``/``false``/``null`` are left out, so a
  shown scalar never changes except a string that grows at its end.

Numbers are converted by msgspec itself, so a complete document gives exactly
what ``msgspec.json.decode`` gives, and invalid JSON is reported at the first
character that proves it invalid, never by an exception from `feed`.
"""

from __future__ import annotations

import re
from typing import Any, Final

import msgspec

from .._errors import PartialJSONError

__all__ = ["PartialJSONError", "PartialJSONParser"]


# Parser states. Plain ints: the consume loop compares them once per character.
_VALUE: Final = 0  # a value must come next
_KEY: Final = 1  # an object key (a string) must come next
_COLON: Final = 2  # the ':' after a key
_AFTER: Final = 3  # a value just ended: ',' or a closing bracket (or nothing at top level)
_STRING: Final = 4  # inside a string (a key or a value)
_NUMBER: Final = 5
_LITERAL: Final = 6  # inside true / false / null
_FAILED: Final = 7

_WHITESPACE: Final = " \t\n\r"
_STRING_RUN: Final = re.compile(r'[^"\\\x00-\x1f]+')
_NUMBER_RUN: Final = re.compile(r"[0-9eE+.\-]+")
_NUMBER_SYNTAX: Final = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
_HEX_DIGITS: Final = frozenset("0123456789abcdefABCDEF")
_ESCAPES: Final = {
    '"': '"',
    "\\": "\\",
    "/": "/",
    "b": "\b",
    "f": "\f",
    "n": "\n",
    "r": "\r",
    "t": "\t",
}
_LITERALS: Final[dict[str, tuple[str, object]]] = {
    "t": ("true", True),
    "f": ("false", False),
    "n": ("null", None),
}


class PartialJSONParser:
    """Feed JSON text in pieces; read the best-effort value of what has arrived at any time.

    `feed` costs O(len(text)). `value` returns the live value being built: the
    same root object every time, updated in place as more text arrives (copy
    it to keep a snapshot). Errors are sticky and readable from `error`.
    """

    __slots__ = (
        "_allow_close",
        "_escape",
        "_hex",
        "_high_surrogate",
        "_holder",
        "_keys",
        "_literal",
        "_max_depth",
        "_number",
        "_pending",
        "_stack",
        "_state",
        "_string_is_key",
        "_string_slot",
        "consumed",
        "error",
    )

    def __init__(self, *, max_depth: int = 500) -> None:
        # Deeper nesting is refused rather than built: msgspec (and repr, deepcopy,
        # encoders) recurse per level and would fail on it anyway.
        self._max_depth = max_depth
        #: characters consumed so far (the offset used in error messages)
        self.consumed = 0
        #: why the text is not JSON, once that is certain; None while it may still be
        self.error: str | None = None
        self._state = _VALUE
        self._allow_close = False  # right after '[' or '{', the closing bracket is allowed
        # Open containers, innermost last; for objects the key being filled sits in _keys.
        self._stack: list[dict[str, Any] | list[Any]] = []
        self._keys: list[str | None] = []
        # The top-level value lives in a one-slot list so every value has a (container, slot).
        self._holder: list[Any] = [None]
        # String being read: decoded pieces not yet in the tree, and where it goes.
        self._pending: list[str] = []
        self._string_is_key = False
        self._string_slot: tuple[dict[str, Any] | list[Any], str | int] | None = None
        self._escape = 0  # 0: none, 1: after '\', 2: inside '\uXXXX'
        self._hex = ""
        self._high_surrogate: int | None = None
        self._number: list[str] = []
        self._literal = ""

    # -- public ---------------------------------------------------------
    @property
    def complete(self) -> bool:
        """A whole JSON value has been read (only whitespace may follow)."""
        return self._state == _AFTER and not self._stack

    def feed(self, text: str) -> None:
        """Consume more text. Never raises on bad JSON: see `error`."""
        if self._state != _FAILED and text:
            self._consume(text)

    def value(self) -> Any:
        """The best-effort value of the text so far (None before any value began).

        Costs the length of the string being written, if any; nothing else
        is rebuilt.
        """
        self._flush_string()
        return self._holder[0]

    def close(self) -> Any:
        """Declare the input complete and return the final value.

        Raises `PartialJSONError` when the text is invalid or incomplete.
        """
        if self._state == _NUMBER and not self._stack:
            self._end_number()
        if self.error is not None:
            raise PartialJSONError(self.error)
        if not self.complete:
            what = "no JSON value" if self._holder[0] is None else "incomplete JSON"
            raise PartialJSONError(f"{what} after {self.consumed} characters")
        return self.value()

    # -- the consume loop -------------------------------------------------
    def _consume(self, text: str) -> None:
        """One pass over ``text``; runs of plain string or number characters go at C speed."""
        i = 0
        n = len(text)
        base = self.consumed
        while i < n:
            state = self._state
            if state == _STRING:
                if self._escape:
                    i = self._consume_escape(text, i)
                    continue
                match = _STRING_RUN.match(text, i)
                if match is not None:
                    if self._high_surrogate is not None:
                        self._fail(base + i, "a \\u high surrogate must be followed by a low one")
                        break
                    self._pending.append(match.group())
                    i = match.end()
                    continue
                char = text[i]
                i += 1
                if char == '"':
                    if self._high_surrogate is not None:
                        self._fail(
                            base + i - 1, "a \\u high surrogate must be followed by a low one"
                        )
                        break
                    self._end_string()
                elif char == "\\":
                    self._escape = 1
                else:
                    self._fail(base + i - 1, f"control character {char!r} inside a string")
                    break
                continue
            if state == _NUMBER:
                match = _NUMBER_RUN.match(text, i)
                if match is not None:
                    self._number.append(match.group())
                    i = match.end()
                    continue
                if not self._end_number(base + i):
                    break
                continue  # the delimiter is handled by the next state
            char = text[i]
            if state == _LITERAL:  # before whitespace: "tr ue" is not "true"
                if not self._literal_char(char, base + i):
                    break
                i += 1
                continue
            if char in _WHITESPACE:
                i += 1
                continue
            if state == _VALUE:
                if char == "]" and self._allow_close:
                    self._close_container()
                elif not self._begin_value(char, base + i):
                    break
            elif state == _KEY:
                if char == '"':
                    self._begin_string(key=True)
                elif char == "}" and self._allow_close:
                    self._close_container()
                else:
                    self._fail(base + i, f"expected an object key in double quotes, got {char!r}")
                    break
            elif state == _COLON:
                if char != ":":
                    self._fail(base + i, f"expected ':' after an object key, got {char!r}")
                    break
                self._state = _VALUE
                self._allow_close = False
            elif state == _AFTER:
                if not self._after_value(char, base + i):
                    break
            else:  # _FAILED
                break
            i += 1
        self.consumed = base + min(i, n)

    def _begin_value(self, char: str, offset: int) -> bool:
        if char in "[{" and len(self._stack) >= self._max_depth:
            self._fail(offset, f"nested deeper than {self._max_depth} levels")
            return False
        if char == '"':
            self._begin_string(key=False)
        elif char == "{":
            obj: dict[str, Any] = {}
            self._place(obj)
            self._stack.append(obj)
            self._keys.append(None)
            self._state = _KEY
            self._allow_close = True
        elif char == "[":
            arr: list[Any] = []
            self._place(arr)
            self._stack.append(arr)
            self._keys.append(None)
            self._state = _VALUE
            self._allow_close = True
        elif char == "-" or "0" <= char <= "9":
            self._number = [char]
            self._state = _NUMBER
        elif char in _LITERALS:
            self._literal = char
            self._state = _LITERAL
        else:
            self._fail(offset, f"expected a JSON value, got {char!r}")
            return False
        return True

    def _after_value(self, char: str, offset: int) -> bool:
        if not self._stack:
            self._fail(offset, f"unexpected {char!r} after the end of the JSON value")
            return False
        top = self._stack[-1]
        if char == ",":
            self._state = _KEY if isinstance(top, dict) else _VALUE
            self._allow_close = False
        elif char == ("}" if isinstance(top, dict) else "]"):
            self._close_container()
        else:
            closer = "}" if isinstance(top, dict) else "]"
            self._fail(offset, f"expected ',' or {closer!r}, got {char!r}")
            return False
        return True

    def _close_container(self) -> None:
        self._stack.pop()
        self._keys.pop()
        self._state = _AFTER
        self._allow_close = False

    # -- scalars ----------------------------------------------------------
    def _begin_string(self, *, key: bool) -> None:
        self._state = _STRING
        self._string_is_key = key
        self._pending = []
        if not key:
            # Shown as "" at once: the value is certainly a string that has begun.
            self._string_slot = self._place("")

    def _consume_escape(self, text: str, i: int) -> int:
        char = text[i]
        if self._escape == 1:
            if char == "u":
                self._escape = 2
                self._hex = ""
                return i + 1
            decoded = _ESCAPES.get(char)
            if decoded is None:
                self._fail(self.consumed + i, f"invalid escape '\\{char}' inside a string")
                return len(text)
            if self._high_surrogate is not None:
                self._fail(self.consumed + i, "a \\u high surrogate must be followed by a low one")
                return len(text)
            self._pending.append(decoded)
            self._escape = 0
            return i + 1
        if char not in _HEX_DIGITS:
            self._fail(self.consumed + i, f"invalid hex digit {char!r} in a \\u escape")
            return len(text)
        self._hex += char
        if len(self._hex) < 4:
            return i + 1
        code = int(self._hex, 16)
        self._escape = 0
        high = self._high_surrogate
        if 0xD800 <= code <= 0xDBFF:
            if high is not None:
                self._fail(self.consumed + i, "two \\u high surrogates in a row")
                return len(text)
            self._high_surrogate = code  # held back until its low half arrives
        elif 0xDC00 <= code <= 0xDFFF:
            if high is None:
                self._fail(self.consumed + i, "a \\u low surrogate without a high one")
                return len(text)
            self._high_surrogate = None
            self._pending.append(chr(0x10000 + ((high - 0xD800) << 10) + (code - 0xDC00)))
        else:
            if high is not None:
                self._fail(self.consumed + i, "a \\u high surrogate must be followed by a low one")
                return len(text)
            self._pending.append(chr(code))
        return i + 1

    def _end_string(self) -> None:
        if self._string_is_key:
            self._keys[-1] = "".join(self._pending)
            self._pending = []
            self._state = _COLON
            return
        self._flush_string()
        self._string_slot = None
        self._state = _AFTER

    def _flush_string(self) -> None:
        """Append the decoded pieces to the string in the tree, in place where CPython can.

        The slot is emptied first so the local name holds the only reference:
        then ``+=`` resizes the string in place instead of copying it, which
        keeps reading the value after every one-character feed linear overall.
        If a caller still holds the old string, CPython copies and nothing
        visible changes.
        """
        slot = self._string_slot
        if slot is None or not self._pending or self._string_is_key:
            return
        container: Any = slot[0]  # a dict with a str key or a list with an int one
        key = slot[1]
        addition = self._pending[0] if len(self._pending) == 1 else "".join(self._pending)
        self._pending = []
        text: str = container[key]
        container[key] = None
        text += addition
        container[key] = text

    def _end_number(self, offset: int | None = None) -> bool:
        token = "".join(self._number)
        self._number = []
        where = self.consumed if offset is None else offset
        if _NUMBER_SYNTAX.fullmatch(token) is None:
            self._fail(where - len(token), f"invalid number {token!r}")
            return False
        try:
            number = msgspec.json.decode(token)
        except msgspec.DecodeError as exc:
            self._fail(where - len(token), f"number {token!r}: {exc}")
            return False
        self._place(number)
        self._state = _AFTER
        return True

    def _literal_char(self, char: str, offset: int) -> bool:
        word, value = _LITERALS[self._literal[0]]
        literal = self._literal + char
        if not word.startswith(literal):
            self._fail(offset, f"invalid literal {literal!r} (expected {word!r})")
            return False
        self._literal = literal
        if literal == word:
            self._place(value)
            self._state = _AFTER
        return True

    # -- the tree ---------------------------------------------------------
    def _place(self, value: Any) -> tuple[dict[str, Any] | list[Any], str | int]:
        """Put a value where the grammar says it goes; return that slot."""
        if not self._stack:
            self._holder[0] = value
            return self._holder, 0
        top = self._stack[-1]
        if isinstance(top, list):
            top.append(value)
            return top, len(top) - 1
        key = self._keys[-1]
        assert key is not None
        top[key] = value
        return top, key

    def _fail(self, offset: int, reason: str) -> None:
        self._flush_string()
        self.error = f"invalid JSON at character {offset}: {reason}"
        self._state = _FAILED
