"""Structured output as it grows: the answer's object while it streams, then validated.

With ``Options(response_schema=...)`` the answer is JSON text; `PartialOutputs`
reads it from the events and, after each text delta that changes it, gives the
object so far (`PartialOutput`), typed leniently as the schema asks: an instance
of the msgspec Struct, dataclass or pydantic model with the fields present so
far (the others None, or their default), nested objects and lists typed too,
strings as far as they arrived; a plain JSON Schema dict gives the JSON value.
At `Done` it gives the final object, validated exactly as ``complete()`` does
(`parse_output`: a bad answer raises `OutputValidationError`). The forced-tool
emulation of structured output is invisible here as everywhere: its answer
streams as text.

Why a helper over the event stream and not an event of its own: an event that
carried the object so far after every delta would repeat the whole answer each
time, so its bytes on a wire (and its encoding) would grow with the square of
the answer; the events never carry a copy of the partial message, and this is
a fold over them like `Accumulator`, with the same cost. It needs nothing from
the wire either, so it works on any stream: every shell, the local model, a
replay, and a streamfn proxy (the schema travels with the request, the text
comes back).

Cost: linear in the answer. The JSON is read once by the incremental
`PartialJSONParser`; typing reuses what is finished (a list's earlier items, an
object's earlier fields) and rebuilds only the objects on the path to the value
being written, so each delta costs the widths of those objects, not the size
of the answer. The typed value is therefore a live view like ``acc.message``:
its lists, maps and objects are updated in place later; copy it to keep a
snapshot. A long string grows in place too: before each delta the typed value
lets go of the string being written (`_Typer.release`), which the parser can then
extend without copying, whatever the caller holds of the previous value. A frozen
type cannot be updated: its object is built anew on each change and its string
copied, so a frozen type with one long field costs the square of that field.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any, Final, Literal, NamedTuple, overload

import msgspec

from .._accumulate import Accumulator
from .._errors import CompletionError, StreamfnError
from .._events import Done, Error, Event, TextDelta
from ..json._partial_json import PartialJSONParser
from ..json._schema import is_pydantic_model
from ..json._structured import parse_output

__all__ = ["PartialOutput", "PartialOutputs", "check_finished", "iter_partial_outputs"]


class PartialOutput(NamedTuple):
    """The answer's object so far (``final`` False), or the validated answer (True)."""

    value: Any
    final: bool = False


# -- shapes: what the schema says each JSON value becomes ------------------------------


class _Any:
    """No type to apply: the JSON value as it is."""


class _List:
    __slots__ = ("item",)

    def __init__(self, item: Any) -> None:
        self.item = item


class _Object:
    """An object: ``build`` makes the instance from attribute keyword arguments (None:
    a dict is wanted, updated in place); ``fields`` maps JSON names to (attribute,
    shape); ``values`` is the shape of every value of a map."""

    __slots__ = ("build", "fields", "values")

    def __init__(self) -> None:
        self.build: Callable[[dict[str, Any]], Any] | None = None
        self.fields: dict[str, tuple[str, Any]] = {}
        self.values: Any = _ANY


class _Union:
    __slots__ = ("options",)

    def __init__(self, options: list[Any]) -> None:
        self.options = options


_ANY: Final = _Any()


def _builder(make: Callable[..., Any], required: list[str]) -> Callable[[dict[str, Any]], Any]:
    """Build with the fields present; a required one not there yet is None. A type whose
    own checks refuse a partial instance gives the fields as a dict instead."""

    def build(kwargs: dict[str, Any]) -> Any:
        for name in required:
            kwargs.setdefault(name, None)
        try:
            return make(**kwargs)
        except Exception:
            return kwargs

    return build


class _Shapes:
    """Shapes from `msgspec.inspect` (pydantic models from their fields), memoised per
    type so recursive types end."""

    def __init__(self) -> None:
        self.memo: dict[Any, Any] = {}

    def of_type(self, spec: Any) -> Any:
        if is_pydantic_model(spec):
            return self.pydantic(spec)
        try:
            info = msgspec.inspect.type_info(spec)
        except Exception:  # a type msgspec cannot describe: no typing, the JSON as is
            return _ANY
        return self.of_info(info)

    def of_info(self, info: Any) -> Any:
        mi = msgspec.inspect
        if isinstance(info, (mi.StructType, mi.DataclassType, mi.TypedDictType)):
            if getattr(info, "array_like", False):
                return _ANY
            key = info.cls
            if key in self.memo:
                return self.memo[key]
            shape = self.memo[key] = _Object()
            for field in info.fields:
                shape.fields[field.encode_name] = (field.name, self.of_info(field.type))
            if not isinstance(info, mi.TypedDictType):
                required = [f.name for f in info.fields if f.required]
                shape.build = _builder(info.cls, required)
            return shape
        if isinstance(info, (mi.ListType, mi.SetType, mi.FrozenSetType, mi.VarTupleType)):
            return _List(self.of_info(info.item_type))
        if isinstance(info, mi.DictType):
            shape = _Object()
            shape.values = self.of_info(info.value_type)
            return shape
        if isinstance(info, mi.UnionType):
            return _Union([self.of_info(t) for t in info.types if not isinstance(t, mi.NoneType)])
        if isinstance(info, mi.CustomType) and is_pydantic_model(info.cls):
            return self.pydantic(info.cls)
        return _ANY

    def pydantic(self, cls: Any) -> Any:
        if cls in self.memo:
            return self.memo[cls]
        shape = self.memo[cls] = _Object()
        required: list[str] = []
        for name, field in cls.model_fields.items():
            shape.fields[field.alias or name] = (name, self.of_type(field.annotation))
            if field.is_required():
                required.append(name)
        shape.build = _builder(cls.model_construct, required)
        return shape


def _pick(union: _Union, value: Any) -> Any:
    """The member of a union that fits the JSON value's kind."""
    for option in union.options:
        if isinstance(value, dict) and isinstance(option, _Object):
            return option
        if isinstance(value, list) and isinstance(option, _List):
            return option
    return _ANY


# -- typing the growing value -----------------------------------------------------------


class _State:
    """One container on the path being written: what of it is typed for good."""

    __slots__ = ("done", "fields", "instance", "out", "provisional", "ref")

    def __init__(self, ref: Any) -> None:
        self.ref = ref  # keeps the container alive, so its id stays its own
        self.done = 0  # leading items (or keys) typed for good
        self.out: list[Any] = []
        self.fields: dict[str, Any] = {}
        self.provisional = False
        #: the typed object given out for this container, updated in place after
        self.instance: Any = None


#: where the string being written sits in the typed value: (holder, key or attribute
#: name, whether it is an attribute)
_Leaf = tuple[Any, Any, bool]


def _put(holder: Any, name: Any, value: Any, attribute: bool) -> bool:
    """Set ``holder``'s member; False when it refuses (a frozen type)."""
    try:
        if attribute:
            setattr(holder, name, value)
        else:
            holder[name] = value
    except Exception:  # frozen Struct, dataclass or pydantic model: built anew instead
        return False
    return True


def _leaf_string(value: Any) -> str | None:
    """The string at the end of the path being written, if it ends in one."""
    while isinstance(value, (list, dict)) and value:
        value = value[-1] if isinstance(value, list) else next(reversed(value.values()))
    return value if isinstance(value, str) else None


class _Typer:
    """Types the parser's live value; only the rightmost path (where text arrives) is
    typed again, everything before it is final and reused."""

    def __init__(self, shape: Any) -> None:
        self.shape = shape
        self.states: dict[int, _State] = {}
        self.touched: dict[int, _State] = {}
        #: where the typed value holds the string being written (see `release`)
        self.leaf: _Leaf | None = None
        self.released = False

    def typed(self, value: Any) -> Any:
        self.touched = {}
        self.leaf, self.released = None, False
        out = self.convert(value, self.shape)
        self.states = self.touched  # containers off the path are finished: forget them
        return out

    def release(self) -> None:
        """Let go of the string being written before the parser extends it.

        The parser grows that string in place only when nothing else holds it, and the
        typed value given out (a Struct's field, a list's last item) does: each delta
        would copy the whole string, quadratic in a long field. So its place is
        emptied while the parser reads; `typed` (or `restore`) fills it again."""
        if self.leaf is not None and not self.released:
            self.released = _put(*self.leaf[:2], None, self.leaf[2])

    def restore(self, value: Any) -> None:
        """Put the string back when the delta changed nothing to type again."""
        if self.leaf is not None and self.released:
            _put(*self.leaf[:2], _leaf_string(value), self.leaf[2])
            self.released = False

    def state(self, value: Any) -> _State:
        state = self.states.get(id(value))
        if state is None or state.ref is not value:
            state = _State(value)
        self.touched[id(value)] = state
        return state

    def convert(self, value: Any, shape: Any) -> Any:
        if isinstance(shape, _Union):
            shape = _pick(shape, value)
        if isinstance(value, list) and isinstance(shape, _List):
            return self.list(value, shape)
        if isinstance(value, dict) and isinstance(shape, _Object):
            return self.object(value, shape)
        return value

    def list(self, value: list[Any], shape: _List) -> list[Any]:
        state = self.state(value)
        out = state.out
        if state.provisional:
            out.pop()
        count = len(value)
        while state.done < count - 1:  # every item but the last is complete
            out.append(self.convert(value[state.done], shape.item))
            state.done += 1
        state.provisional = count > 0
        if count:
            self.leaf = None  # what an earlier, finished item set is not on the path
            last = self.convert(value[-1], shape.item)
            out.append(last)
            if isinstance(last, str):
                self.leaf = (out, count - 1, False)
        return out

    def object(self, value: dict[str, Any], shape: _Object) -> Any:
        state = self.state(value)
        count = len(value)
        if count == 0:
            return shape.build({}) if shape.build is not None else state.fields
        fresh = count - state.done  # keys not yet typed for good, the last one included
        tail: list[tuple[str, Any]] = []
        for item in reversed(value.items()):
            tail.append(item)
            if len(tail) == fresh:
                break
        tail.reverse()
        placed: list[str] = []
        for key, item in tail[:-1]:  # every key but the last is complete
            name = self.place(state, shape, key, item)
            if name is not None:
                placed.append(name)
            state.done += 1
        key, item = tail[-1]
        self.leaf = None  # what an earlier, finished member set is not on the path
        if shape.build is None:
            name = self.place(state, shape, key, item)  # the dict is the output, in place
            if name is not None and isinstance(state.fields[name], str):
                self.leaf = (state.fields, name, False)
            return state.fields
        last = self.place(state, shape, key, item, keep=False)
        return self.instance(state, shape.build, placed, last)

    def instance(
        self,
        state: _State,
        build: Callable[[dict[str, Any]], Any],
        placed: Iterable[str],
        last: tuple[str, Any] | None,
    ) -> Any:
        """The typed object, updated in place (the fields just finished and the one being
        written) so each delta costs its changes; built anew the first time, or when
        the type refuses to be updated (a frozen one)."""
        instance = state.instance
        attribute = not isinstance(instance, dict)  # a type refusing partial data: a dict
        changed = [(name, state.fields[name]) for name in placed]
        if last is not None:
            changed.append(last)
        if instance is None or not all(
            _put(instance, name, typed, attribute) for name, typed in changed
        ):
            kwargs = dict(state.fields)
            if last is not None:
                kwargs[last[0]] = last[1]
            instance = state.instance = build(kwargs)
            attribute = not isinstance(instance, dict)
        if last is not None and isinstance(last[1], str):
            self.leaf = (instance, last[0], attribute)
        return instance

    @overload
    def place(
        self, state: _State, shape: _Object, key: str, item: Any, *, keep: Literal[True] = ...
    ) -> str | None: ...

    @overload
    def place(
        self, state: _State, shape: _Object, key: str, item: Any, *, keep: Literal[False]
    ) -> tuple[str, Any] | None: ...

    def place(
        self, state: _State, shape: _Object, key: str, item: Any, *, keep: bool = True
    ) -> str | tuple[str, Any] | None:
        """Type one member: into ``state.fields`` (``keep``; its name returned) or
        returned with its name; None for a key the type has no field for."""
        if shape.build is None:
            name, sub = key, shape.fields[key][1] if key in shape.fields else shape.values
        elif key in shape.fields:
            name, sub = shape.fields[key]
        else:
            return None  # a key the type has no field for (a tag, or an invented one)
        typed = self.convert(item, sub)
        if keep:
            state.fields[name] = typed
            return name
        return name, typed


def _path_sizes(value: Any) -> tuple[int, ...]:
    """The sizes along the path being written: they change exactly when the value does
    (a member added, the string being written growing), for the cost of the path."""
    sizes: list[int] = []
    while isinstance(value, (list, dict)):
        sizes.append(len(value))
        if not value:
            return tuple(sizes)
        value = value[-1] if isinstance(value, list) else next(reversed(value.values()))
    sizes.append(len(value) if isinstance(value, str) else -1)
    return tuple(sizes)


class PartialOutputs:
    """Feed every event of a structured-output stream; `feed` returns a `PartialOutput`
    when the answer's object changed (and the validated one at `Done`), else None.

    ``spec`` is ``Options.response_schema`` (a type or a JSON Schema dict). `Done`'s
    validation raises `OutputValidationError` as ``complete()`` does; after an `Error`
    ``error`` is set and nothing more comes.
    """

    def __init__(self, spec: Any) -> None:
        self.spec = spec
        self.fold = Accumulator()
        self.parser = PartialJSONParser()
        self.error: Error | None = None
        typed = not isinstance(spec, dict) and spec is not None
        self._typer = _Typer(_Shapes().of_type(spec)) if typed else None
        self._sizes: tuple[int, ...] = ()

    def feed(self, event: Event) -> PartialOutput | None:
        self.fold.add(event)
        if isinstance(event, TextDelta):
            parser = self.parser
            if parser.error is not None or not event.delta:
                return None
            typer = self._typer
            if typer is not None:
                typer.release()  # so the string being written grows in place
            parser.feed(event.delta)
            value = parser.value()
            if value is None:
                return None
            sizes = _path_sizes(value)
            if sizes == self._sizes:
                if typer is not None:
                    typer.restore(value)
                return None
            self._sizes = sizes
            return PartialOutput(value if self._typer is None else self._typer.typed(value))
        if isinstance(event, Done):
            return PartialOutput(parse_output(self.fold.message, self.spec), final=True)
        if isinstance(event, Error):
            self.error = event
        return None


def check_finished(outputs: PartialOutputs) -> None:
    if outputs.error is not None:
        raise CompletionError(outputs.error, outputs.fold.message)
    if not outputs.fold.finished:
        raise StreamfnError("the stream ended without Done or Error; no final answer to give")


def iter_partial_outputs(events: Iterable[Event], spec: Any) -> Iterator[PartialOutput]:
    """`streamfn.client.partial_outputs` for the blocking shell (and any list of events)."""
    outputs = PartialOutputs(spec)
    for event in events:
        partial = outputs.feed(event)
        if partial is not None:
            yield partial
    check_finished(outputs)
