"""Grid axes from ``NAME=START:STOP:STEP`` or ``NAME=V1,V2,...``, the systems of each cell, and
the :class:`GridSpec` a grid run takes."""
from __future__ import annotations

import itertools
from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Any

from ..errors import InputError
from ..params import check_declared, param, same_as
from ..settings import HumanJudgments, RunSettings, SystemSet, check_depth
from ..systems.system import System, make_system

MAX_CELLS = 10_000


@dataclass(frozen=True)
class Axis:
    name: str
    values: tuple[float, ...]


def _number(text: str, spec: str) -> Decimal:
    try:
        d = Decimal(text.strip())
    except InvalidOperation:
        raise InputError(None, f"--param {spec}: {text.strip()!r} is not a number") from None
    if not d.is_finite():
        raise InputError(None, f"--param {spec}: {text.strip()!r} is not a finite number")
    if d and not -20 <= d.adjusted() <= 20:  # (1e999999 took 36 s of CPU before the cell count was checked)
        raise InputError(None, f"--param {spec}: {text.strip()[:40]!r} is out of range (a value between 1e-20 and 1e20)")
    return d


def parse_axis(spec: str) -> Axis:
    """``k1=0.2:3.0:0.2`` (inclusive; decimal arithmetic, so 0.1 steps do not drift) or ``b=0.3,0.75``."""
    name, sep, rhs = spec.partition("=")
    name = name.strip()
    if not sep or not name or not rhs.strip():
        raise InputError(None, f"--param {spec!r}: expected NAME=START:STOP:STEP or NAME=V1,V2,...")
    if ":" in rhs:
        parts = rhs.split(":")
        if len(parts) != 3:
            raise InputError(None, f"--param {spec}: a range is START:STOP:STEP")
        start, stop, step = (_number(p, spec) for p in parts)
        if step <= 0 or stop < start:
            raise InputError(None, f"--param {spec}: need STEP > 0 and STOP ≥ START")
        if (stop - start) > step * MAX_CELLS:  # (checked before the division: no huge integers)
            raise InputError(None, f"--param {spec}: more than {MAX_CELLS} values")
        n = int((stop - start) / step) + 1
        if n > MAX_CELLS:
            raise InputError(None, f"--param {spec}: {n} values (at most {MAX_CELLS})")
        values = [start + i * step for i in range(n)]
    else:
        values = [_number(v, spec) for v in rhs.split(",") if v.strip()]
    if len(set(values)) != len(values):
        raise InputError(None, f"--param {spec}: repeated value")
    return Axis(name, tuple(float(v) for v in values))


def value_label(v: float) -> str:
    """A parameter value as grid.tsv and the labels write it: ``:g`` (0.2, 1e+09), or, where that
    would read back as another value (999999999 is not 1e+09), Python's shortest exact form."""
    short = f"{v:g}"
    return short if float(short) == v else repr(float(v))


def cell_label(params: dict[str, float]) -> str:
    return ",".join(f"{k}={value_label(v)}" for k, v in params.items())


def grid_systems(base: System, axes: list[Axis]) -> list[tuple[dict[str, float], System]]:
    """Every cell's parameter values and validated system (row-major: last axis varies fastest)."""
    if not 1 <= len(axes) <= 2:
        raise InputError(None, "give one or two --param")
    names = [a.name for a in axes]
    if len(set(names)) != len(names):
        raise InputError(None, f"--param {names[0]} given twice")
    allowed = base.kind.defaults()
    for a in axes:
        default = allowed.get(a.name)
        if a.name not in allowed or isinstance(default, (list, bool)):
            numeric = [k for k, v in allowed.items() if isinstance(v, (int, float)) and not isinstance(v, bool)]
            raise InputError(None, f"--param {a.name}: not a numeric parameter of {base.algorithm} "
                                   f"(gridable: {', '.join(numeric)})")
        for v in a.values:  # each value alone, so the error names the axis value that is out of range
            try:
                make_system(base.name, base.algorithm, {**base.params, a.name: v})
            except InputError as err:
                raise InputError(None, f"--param {a.name}={v:g}: {err.message}") from None
    n = 1
    for a in axes:
        n *= len(a.values)
    if n > MAX_CELLS:
        raise InputError(None, f"{n} cells (at most {MAX_CELLS})")
    cells = []
    for combo in itertools.product(*(a.values for a in axes)):
        params = dict(zip(names, combo))
        s = make_system(base.name, base.algorithm, {**base.params, **params})
        cells.append(({k: s.params[k] for k in names}, System(f"{base.name}[{cell_label(params)}]", s.algorithm, s.params)))
    return cells


@dataclass(frozen=True)
class GridSpec:
    """What one grid evaluates. ``axes``: one or two :class:`Axis`; ``system``: an algorithm or a
    system's name in ``systems`` (or the shipped sets) whose other parameters stay fixed;
    ``protocol``: a registered protocol, several joined by commas, ``both`` (focused and
    high-recall) or ``none`` (human judgments only); ``measures``: for every protocol (None: each
    protocol's ``grid_measures``); ``human``: judgments the cells are also scored on;
    ``protocol_params``: {protocol: {parameter: value}} (S_ref, k, zt… of high-recall);
    ``sample``: the sampling filters (language, years…) every document-sampling protocol gets;
    ``references``: systems scored beside the grid on the same topics (a line on each map);
    ``plots``: draw the contour maps; ``task``: the declared search task (its headline leads)."""

    axes: tuple[Axis, ...]
    system: str = param("bm25", "an algorithm (bm25, qld, bm25_rm3, ...) or a system name from --systems / the "
                                "shipped sets")
    systems: Any = same_as(SystemSet, "source")
    protocol: str = param("both", "protocol(s) to evaluate the grid under: a name from `nteval protocols`, several "
                                  "joined by commas, both (focused,highrecall) or none (human judgments only)")
    measures: tuple[str, ...] | None = param(None, "ir_measures name(s) for every protocol (repeatable)  [default: "
                                                   "focused RR; highrecall AP Bpref; human AP nDCG@10]", flag="--measure")
    n_topics: int = param(1000, "documents sampled as NT topics (D0)", min=1, flag="--topics")
    seed: int = param(42, "sampling seed (same seed + same index = byte-identical topics and qrels)", min=0)
    depth: int = same_as(RunSettings, "depth")
    min_topics: int = same_as(RunSettings, "min_topics")
    human: HumanJudgments | None = None
    protocol_params: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    sample: Mapping[str, Any] = field(default_factory=dict)
    references: tuple[System, ...] = ()
    plots: bool = True
    task: str | None = same_as(RunSettings, "task")
    one_pass: bool = param(True, "score a grid over a BM25 or QLD system's parameters in one pass over the postings "
                                 "(the same runs as one per cell, exhaustively; --per-cell: one run per cell)",
                           flag="--one-pass/--per-cell")

    def __post_init__(self) -> None:
        object.__setattr__(self, "axes", tuple(self.axes))
        object.__setattr__(self, "references", tuple(self.references or ()))
        if self.measures is not None:
            object.__setattr__(self, "measures", tuple(str(m) for m in self.measures) or None)
        for opt, value in (("--topics", self.n_topics), ("--depth", self.depth)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise InputError(None, f"{opt} must be ≥ 1, got {value}")
        check_depth(self.depth)
        check_declared(self, as_options=True)
