"""Declared parameters: the one table every plug-in fills in.

Two shapes of one declaration (name, default, help, bounds or choices, command-line spelling):

* :class:`Param`, for the parameters of a system kind (:class:`nteval.systems.kind.SystemKind`),
  which live in a ``params:`` mapping of a systems YAML;
* :func:`param`, a dataclass field, for the spec objects: protocol specs
  (:class:`nteval.protocols.base.ProtocolSpec`), run settings and execution
  (:mod:`nteval.settings`), grid and correlate specs. :func:`check_declared` validates them.

Validation, ``--param`` parsing, the listings of ``nteval protocols``/``nteval systems``, the
command-line options of every command (``nteval.cli.options.declared``) and the docs' parameter
tables (:mod:`nteval.report.reference`) are all made from these declarations; the contract test
``tests/architecture/test_parameter_contract.py`` holds them together, as scikit-learn's declared
parameter constraints drive its estimators' validation.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any

from .errors import InputError, short

#: Bound on any numeric system parameter (Lucene takes 32-bit floats and ints).
MAX_PARAM_VALUE = 1e9


@dataclass(frozen=True)
class Param:
    """One declared parameter. ``min``/``max`` are inclusive bounds; ``positive`` means > 0.
    ``choices``: the strings a string parameter accepts (None: any non-empty string). ``items``:
    for list parameters, what they hold (``"names"`` of systems or ``"numbers"`` ≥ 0); ``"mapping"``: a
    mapping of names to JSON values (an HTTP request's headers or body), default None (none given)."""

    name: str
    default: Any
    help: str = ""
    min: float | None = None
    max: float | None = None
    positive: bool = False
    choices: tuple[str, ...] | None = None
    items: str | None = None

    def bounds(self) -> str:
        """The range as ``nteval systems`` shows it: ``(0..1)``, ``(>0)``, ``(≥0)`` or nothing."""
        if self.min == 0 and self.max == 1:
            return " (0..1)"
        if self.min is not None and self.min == self.max:
            return " (fixed)"
        if self.positive:
            return " (>0)"
        if self.min == 0 and self.max is None:
            return " (≥0)"
        return ""

    def shown(self) -> str:
        """``name=default`` with its range, for listings."""
        if isinstance(self.default, list):
            return f"{self.name}=[{self.items or 'values'}]"
        if self.items == "mapping":
            return f"{self.name}={{…}}"
        d = f"{self.default:g}" if isinstance(self.default, float) else str(self.default)
        return f"{self.name}={d}{self.bounds()}"

    def coerce(self, value: Any, who: str, where: Any) -> Any:
        """``value`` checked against the declaration and converted to the default's type, or a
        one-line :class:`InputError` naming ``who`` (e.g. ``system bm25``) and ``params.NAME``."""
        key, d, place = self.name, self.default, f"params.{self.name}"
        if self.items == "mapping":
            if not isinstance(value, dict) or not all(isinstance(k, str) for k in value) or not _json_like(value):
                raise InputError(where, f"{who}: {key} must be a mapping of names to JSON values (strings, numbers, "
                                        f"lists, mappings), got {short(value)}", place=place)
            return value
        if self.items == "numbers":
            if not isinstance(value, list) or not all(isinstance(v, (int, float)) and not isinstance(v, bool)
                                                      and math.isfinite(v) and v >= 0 for v in value):
                raise InputError(where, f"{who}: {key} must be a list of numbers ≥ 0, got {short(value)}", place=place)
            return [float(v) for v in value]
        if isinstance(d, list):
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise InputError(where, f"{who}: {key} must be a list of system names", place=place)
            return value
        if isinstance(d, str):
            if not isinstance(value, str) or not value.strip():
                raise InputError(where, f"{who}: {key} must be a non-empty string, got {short(value)}", place=place)
            if self.choices is not None and value not in self.choices:
                raise InputError(where, f"{who}: {key} must be one of {', '.join(self.choices)}, got {short(value)}",
                                 place=place)
            return value
        if isinstance(d, bool) or not isinstance(value, (int, float)) or isinstance(value, bool):
            raise InputError(where, f"{who}: {key} must be a number, got {short(value)}", place=place)
        if isinstance(value, float) and not math.isfinite(value):
            raise InputError(where, f"{who}: {key} must be a finite number, got {value!r}", place=place)
        if abs(value) > MAX_PARAM_VALUE:
            raise InputError(where, f"{who}: {key} must be at most {MAX_PARAM_VALUE:g} in size, got {short(value, 30)}",
                             place=place)
        if isinstance(d, int):
            if float(value) != int(value):
                raise InputError(where, f"{who}: {key} must be a whole number, got {short(value)}", place=place)
            value = int(value)
        else:
            value = float(value)
        if self.min == 0 and self.max is None and not value >= 0:
            raise InputError(where, f"{who}: {key} must be ≥ 0, got {value!r}", place=place)
        if self.positive and not value > 0:
            raise InputError(where, f"{who}: {key} must be > 0, got {value!r}", place=place)
        if self.min == 0 and self.max == 1 and not 0 <= value <= 1:
            raise InputError(where, f"{who}: {key} must be within [0, 1], got {value!r}", place=place)
        if self.min is not None and self.min == self.max and value != self.min:
            raise InputError(where, f"{who}: {key} is fixed at {self.min:g}, got {value!r}", place=place)
        if (self.min is not None and value < self.min) or (self.max is not None and value > self.max):
            lo, hi = ("-inf" if self.min is None else f"{self.min:g}"), ("inf" if self.max is None else f"{self.max:g}")
            raise InputError(where, f"{who}: {key} must be within [{lo}, {hi}], got {value!r}", place=place)
        return value


def _json_like(value: Any, depth: int = 0) -> bool:
    """``value`` is what JSON can hold (strings, finite numbers, booleans, null, lists, string-keyed mappings)."""
    if depth > 20:
        return False
    if value is None or isinstance(value, (str, bool, int)):
        return True
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, list):
        return all(_json_like(v, depth + 1) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _json_like(v, depth + 1) for k, v in value.items())
    return False


def param(default: Any, help: str, *, min: float | None = None, max: float | None = None,
          choices: tuple[str, ...] | None = None, flag: str | None = None, metavar: str | None = None,
          sep: str | None = None) -> Any:
    """A declared field of a spec object: its default, one line of help, inclusive bounds or
    choices, and its command-line spelling (``flag``: when not ``--name``, e.g.
    ``--graded/--binary`` or ``--bootstrap``; ``flag=""``: no command-line option, Python
    only; ``sep``: a list given as one option, its items joined by ``sep``). :func:`check_declared`
    validates it; ``--param`` parsing, the commands' options, listings and the docs' tables read it."""
    meta = {"help": help, "min": min, "max": max, "choices": choices, "flag": flag or None, "metavar": metavar,
            "option": flag != "", "sep": sep}
    if isinstance(default, (list, dict, set)):
        raise TypeError("spec defaults must be immutable (use a tuple)")
    return field(default=default, metadata=meta)


def declared(cls_or_obj: Any) -> list[dataclasses.Field]:
    """The declared fields (made by :func:`param`) of a spec class or object, in order."""
    return [f for f in dataclasses.fields(cls_or_obj) if "help" in f.metadata]


def flag_of(f: dataclasses.Field) -> str:
    """The command-line spelling of a declared field (``--name`` unless it says otherwise)."""
    return (f.metadata.get("flag") or "--" + f.name.replace("_", "-")).split("/")[0]


def check_declared(obj: Any, as_options: bool = False) -> None:
    """One-line :class:`InputError` naming the parameter when a value of ``obj``'s declared fields
    is out of its bounds or choices (None always passes). ``as_options``: name it by its
    command-line flag (``--depth must be ≥ 1, got 0``) instead of ``name=value: must be ≥ 1``."""
    for f in declared(obj):
        v, meta = getattr(obj, f.name), f.metadata
        if v is None:
            continue
        say = (lambda what, f=f, v=v: f"{flag_of(f)} must be {what}, got {short(v)}") if as_options else \
              (lambda what, f=f, v=v: f"{f.name}={short(v)}: must be {what}")
        if meta.get("choices") and v not in meta["choices"]:
            raise InputError(None, say(f"one of {', '.join(meta['choices'])}"))
        if isinstance(f.default, int) and not isinstance(f.default, bool) and as_options and (
                isinstance(v, bool) or not isinstance(v, int)):
            raise InputError(None, say("a whole number"))
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            lo, hi = meta.get("min"), meta.get("max")
            if v != v or v in (float("inf"), float("-inf")):
                raise InputError(None, say("a finite number"))
            if lo is not None and hi is not None and not lo <= v <= hi and as_options:
                raise InputError(None, say(f"within [{lo:,g}, {hi:,g}]"))
            if lo is not None and v < lo:
                raise InputError(None, say(f"≥ {lo:g}"))
            if hi is not None and v > hi:
                raise InputError(None, say(f"≤ {hi:g}"))


def same_as(cls: Any, name: str) -> Any:
    """A field declared like ``cls.name`` (same default, help and bounds): one declaration for an
    option several spec objects share (``--depth`` of runs and of grids)."""
    f = next(f for f in dataclasses.fields(cls) if f.name == name)
    return field(default=f.default, metadata=f.metadata)
