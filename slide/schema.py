"""A small declarative checker for the JSON-like values slide reads back from its own files
(config.json, metrics.jsonl, a checkpoint's position, manifests, model headers).

Those files travel and can be edited by anyone, so nothing read from one is trusted until it
matches a declared schema: a wrong type, a missing key or an out-of-range number becomes a
ValueError (or the subclass the caller names) such as

    run/config.json: field network.hidden: expected a list of integers >= 1, found 'abc'

instead of a KeyError, a TypeError or a loop that never ends deep inside the code that uses it.
"""

from __future__ import annotations

import math
import reprlib
from typing import Any, Callable, Mapping, Optional, Sequence, Type

from .settings import Setting

_SHOW = reprlib.Repr()
_SHOW.maxstring, _SHOW.maxother, _SHOW.maxlist, _SHOW.maxdict, _SHOW.maxlevel = 60, 60, 4, 4, 3
_SHOW.maxlong = 40


def shown(value: Any) -> str:
    """A short repr: a hostile value may be megabytes long or nested thousands deep."""
    try:
        return _SHOW.repr(value)
    except (RecursionError, ValueError):
        return f"a {type(value).__name__}"


class Mismatch(Exception):
    """Raised inside a check; `validate` turns it into the caller's error naming file and field."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field, self.message = field, message


class Schema:
    """One node of a schema: `check(value, field)` returns the value (possibly normalised) or
    raises Mismatch. `expected` says, for messages, what the node accepts."""

    expected = "a value"

    def check(self, value: Any, field: str) -> Any:
        raise NotImplementedError

    def fail(self, value: Any, field: str) -> "Mismatch":
        return Mismatch(field, f"expected {self.expected}, found {shown(value)}")


def _range_text(lo: Optional[float], hi: Optional[float]) -> str:
    parts = ([f">= {lo:,}"] if lo is not None else []) + ([f"<= {hi:,}"] if hi is not None else [])
    return " and ".join(parts)


class Int(Schema):
    """An integer (never a bool or a float) within [lo, hi]."""

    def __init__(self, lo: Optional[int] = None, hi: Optional[int] = None) -> None:
        self.lo, self.hi = lo, hi
        bounds = _range_text(lo, hi)
        self.expected = f"an integer {bounds}".rstrip()

    def check(self, value: Any, field: str) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.fail(value, field)
        if (self.lo is not None and value < self.lo) or (self.hi is not None and value > self.hi):
            raise self.fail(value, field)
        return value


class Number(Schema):
    """An int or float within [lo, hi]; finite unless `finite` is False (metrics may hold NaN)."""

    def __init__(self, lo: Optional[float] = None, hi: Optional[float] = None, *, finite: bool = True) -> None:
        self.lo, self.hi, self.finite = lo, hi, finite
        kind = "a finite number" if finite else "a number"
        self.expected = f"{kind} {_range_text(lo, hi)}".rstrip()

    def check(self, value: Any, field: str) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise self.fail(value, field)
        if self.finite and not math.isfinite(value):
            raise self.fail(value, field)
        if (self.lo is not None and value < self.lo) or (self.hi is not None and value > self.hi):
            raise self.fail(value, field)
        return value


class Str(Schema):
    """A string, non-empty unless `empty`; one of `choices` when given."""

    def __init__(self, choices: Sequence[str] = (), *, empty: bool = False,
                 test: Optional[Callable[[str], bool]] = None, what: str = "") -> None:
        self.choices, self.empty, self.test = tuple(choices), empty, test
        self.expected = what or (f"one of {', '.join(self.choices)}" if self.choices
                                 else "a string" if empty else "a non-empty string")

    def check(self, value: Any, field: str) -> str:
        if not isinstance(value, str) or (not self.empty and not value):
            raise self.fail(value, field)
        if (self.choices and value not in self.choices) or (self.test is not None and not self.test(value)):
            raise self.fail(value, field)
        return value


class Bool(Schema):
    expected = "true or false"

    def check(self, value: Any, field: str) -> bool:
        if not isinstance(value, bool):
            raise self.fail(value, field)
        return value


class Anything(Schema):
    """Any JSON value: a field slide stores but never interprets."""

    expected = "any value"

    def check(self, value: Any, field: str) -> Any:
        return value


class Nullable(Schema):
    """null, or what `inner` accepts."""

    def __init__(self, inner: Schema) -> None:
        self.inner = inner
        self.expected = f"null or {inner.expected}"

    def check(self, value: Any, field: str) -> Any:
        return None if value is None else self.inner.check(value, field)


class ListOf(Schema):
    """A list whose every item `item` accepts; at most `max_len` items."""

    def __init__(self, item: Schema, *, max_len: Optional[int] = None, what: str = "") -> None:
        self.item, self.max_len = item, max_len
        self.expected = what or f"a list of {item.expected.removeprefix('a ').removeprefix('an ')}s"

    def check(self, value: Any, field: str) -> list:
        if not isinstance(value, list) or (self.max_len is not None and len(value) > self.max_len):
            raise self.fail(value, field)
        return [self.item.check(v, f"{field}[{i}]") for i, v in enumerate(value)]


class Record(Schema):
    """A JSON object with `required` and `optional` keys, each with its schema. Other keys are
    refused unless `extra` (files that newer slides may add keys to keep them)."""

    def __init__(self, required: Mapping[str, Schema] = (), optional: Mapping[str, Schema] = (), *,
                 extra: bool = False, what: str = "a JSON object") -> None:
        self.required, self.optional, self.extra = dict(required), dict(optional), extra
        self.expected = what

    def check(self, value: Any, field: str) -> dict:
        if not isinstance(value, dict):
            raise self.fail(value, field)
        missing = [k for k in self.required if k not in value]
        if missing:
            raise Mismatch(_join(field, missing[0]), "missing")
        if not self.extra:
            unknown = sorted(str(k) for k in value if k not in self.required and k not in self.optional)
            if unknown:
                raise Mismatch(field, f"unknown keys {shown(unknown)}; known: "
                                      f"{', '.join(sorted([*self.required, *self.optional]))}")
        out = dict(value)
        for key, schema in (*self.required.items(), *self.optional.items()):
            if key in value:
                out[key] = schema.check(value[key], _join(field, key))
        return out


class MapOf(Schema):
    """A JSON object of any keys whose values `value` accepts."""

    def __init__(self, value: Schema, *, what: str = "") -> None:
        self.value = value
        self.expected = what or f"a JSON object of {value.expected.removeprefix('a ').removeprefix('an ')}s"

    def check(self, value: Any, field: str) -> dict:
        if not isinstance(value, dict):
            raise self.fail(value, field)
        return {k: self.value.check(v, _join(field, str(k))) for k, v in value.items()}


class FromSetting(Schema):
    """A value checked by a declared setting (slide.settings), with the setting's own message."""

    def __init__(self, setting: Setting) -> None:
        self.setting = setting
        self.expected = f"a valid {setting.name}"

    def check(self, value: Any, field: str) -> Any:
        try:
            return self.setting.check(value, "\0")
        except ValueError as e:  # "\0 must be ..., got ...": the setting's wording, our field name
            raise Mismatch(field, str(e).replace("\0 ", "", 1)) from None


def table(settings: Mapping[str, Setting], *, nullable: bool = False) -> Record:
    """A table of settings (slide.settings.NETWORK, LSH, ...): every key known, every value valid."""
    wrap = (lambda s: Nullable(FromSetting(s))) if nullable else FromSetting
    return Record(optional={name: wrap(s) for name, s in settings.items()}, what="a table of settings")


def _join(field: str, key: str) -> str:
    return f"{field}.{key}" if field else key


def validate(value: Any, schema: Schema, where: str, *, error: Type[ValueError] = ValueError,
             field: str = "") -> Any:
    """`value` checked against `schema`; `error` naming `where` (a file, or "file:line") and the
    field otherwise."""
    try:
        return schema.check(value, field)
    except Mismatch as m:
        at = f"field {m.field}: " if m.field else ""
        raise error(f"{where}: {at}{m.message}") from None
    except RecursionError:
        raise error(f"{where}: {field or 'the value'} is nested too deeply") from None
