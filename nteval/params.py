"""Declared parameters: the one table every plug-in fills in.

A :class:`Param` says a parameter's name, default, type (the default's), bounds or choices and
help, once. Protocol specs (:func:`nteval.protocols.base.param`) and system kinds
(:class:`nteval.systems.kind.SystemKind`) declare theirs with it; validation, ``--param``
parsing, the listings of ``nteval protocols``/``nteval systems``, the CLI options of the
protocol commands and the docs' parameter tables are all made from these declarations (the
contract test in ``tests/test_params.py`` holds them together), as scikit-learn's declared
parameter constraints drive its estimators' validation.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from .errors import InputError, short

#: Bound on any numeric system parameter (Lucene takes 32-bit floats and ints).
MAX_PARAM_VALUE = 1e9


@dataclass(frozen=True)
class Param:
    """One declared parameter. ``min``/``max`` are inclusive bounds; ``positive`` means > 0.
    ``choices``: the strings a string parameter accepts (None: any non-empty string). ``items``:
    for list parameters, what they hold (``"names"`` of systems or ``"numbers"`` ≥ 0)."""

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
        if self.positive:
            return " (>0)"
        if self.min == 0 and self.max is None:
            return " (≥0)"
        return ""

    def shown(self) -> str:
        """``name=default`` with its range, for listings."""
        if isinstance(self.default, list):
            return f"{self.name}=[{self.items or 'values'}]"
        d = f"{self.default:g}" if isinstance(self.default, float) else str(self.default)
        return f"{self.name}={d}{self.bounds()}"

    def coerce(self, value: Any, who: str, where: Any) -> Any:
        """``value`` checked against the declaration and converted to the default's type, or a
        one-line :class:`InputError` naming ``who`` (e.g. ``system bm25``) and ``params.NAME``."""
        key, d, place = self.name, self.default, f"params.{self.name}"
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
        return value
