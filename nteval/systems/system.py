"""A System: a name, a kind (``algorithm``) and its parameters, validated against the kind's
declarations (:mod:`nteval.systems.registry`)."""
from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import InputError, short
from ..params import MAX_PARAM_VALUE  # noqa: F401  (re-exported)
from . import registry
from .families import FAMILIES
from .kind import FAMILY, SystemKind, extra_missing

#: System names become file names (NAME.run, NAME.meta.json): keep them well under NAME_MAX (255).
MAX_NAME_CHARS = 100


@dataclass(frozen=True)
class System:
    """A named search method. ``fn`` holds the Python callable of a ``callable`` system (not part
    of its identity: ``params["version"]`` is, so a changed function needs a new version)."""
    name: str
    algorithm: str
    params: dict[str, Any] = field(default_factory=dict)
    fn: Callable[..., Any] | None = field(default=None, compare=False, repr=False)

    @property
    def kind(self) -> SystemKind:
        return registry.get(self.algorithm)

    def key(self) -> str:
        """Content hash of what determines the system's output (an external run's file content too)."""
        return self.kind.key(self)

    @property
    def is_external(self) -> bool:
        return not self.kind.computed

    def describe(self) -> str:
        return self.kind.describe(self)


class _Algorithms(Mapping):
    """algorithm → default parameters, read from the registry when first asked (the table earlier
    versions kept here by hand)."""

    def __getitem__(self, name: str) -> dict[str, Any]:
        if name not in registry.algorithms():
            raise KeyError(name)
        return registry.get(name).defaults()

    def __iter__(self) -> Iterator[str]:
        return iter(registry.algorithms())

    def __len__(self) -> int:
        return len(registry.algorithms())


class _Fusions:
    """The kinds whose runs are fused from other systems' runs (ask ``system.kind.fusion``)."""

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and registry.known(name) and registry.get(name).fusion

    def __iter__(self) -> Iterator[str]:
        return iter(n for n in registry.names() if registry.get(n).fusion)


#: Deprecated views kept for code written against earlier versions.
ALGORITHMS: Mapping[str, dict[str, Any]] = _Algorithms()
FUSIONS = _Fusions()


def check_family(value: Any, who: str, where: str | Path | None, place: str = f"params.{FAMILY}") -> str:
    """A declared family (``params: {family: neural}``, which every kind accepts), or one line
    naming it and the families there are."""
    if not isinstance(value, str) or value not in FAMILIES:
        raise InputError(where, f"{who}: unknown family {short(value)} (allowed: {', '.join(FAMILIES)})", place=place)
    return value


def make_system(name: str, algorithm: str, params: dict[str, Any] | None = None, where: str | Path | None = None,
                listing: bool = False) -> System:
    """Validate against the kind's declared parameters and fill the defaults. ``params`` may also
    declare the system's family (:data:`~nteval.systems.kind.FAMILY`), whatever its kind.
    ``listing``: only listed, not run, so a system that needs an optional extra that is not
    installed is still read (``nteval systems``)."""
    if not isinstance(algorithm, str) or not registry.known(algorithm) or registry.get(algorithm).yaml_keys:
        raise InputError(where, f"system {short(name)}: unknown algorithm {short(algorithm)} "
                                f"(known: {', '.join(registry.algorithms())})", place="algorithm")
    kind = registry.get(algorithm)
    declared = kind.declared()
    who = f"system {short(name)}"
    out: dict[str, Any] = {}
    for key, value in dict(params or {}).items():
        if key == FAMILY and key not in declared:
            out[key] = check_family(value, who, where)
            continue
        if key not in declared:
            raise InputError(where, f"{who}: unknown parameter {short(key)} for {algorithm} "
                                    f"(allowed: {', '.join([*declared, FAMILY])})", place=f"params.{str(key)[:40]}")
        out[key] = declared[key].coerce(value, who, where)
    full = {**kind.defaults(), **out}
    if FAMILY in out and not kind.fusion:
        computed = kind.family_of({k: v for k, v in full.items() if k != FAMILY})
        if computed is not None and computed != out[FAMILY]:
            # (hostile T3: MiniLM declared "bm25" passed a topical gate as within-family, exit 0)
            raise InputError(where, f"{who}: family {out[FAMILY]} is not what nteval computes for {algorithm} "
                                    f"({computed}); a declaration is for systems nteval does not compute (run files, "
                                    "callables, programs, pyterrier, http, postgres): leave it out",
                             place=f"params.{FAMILY}")
    try:
        kind.check(name, full, where)
    except InputError:
        if not (listing and extra_missing(kind.needs_extra(full))):
            raise
    return System(name=name, algorithm=algorithm, params=full)


def name_problem(name: str) -> str | None:
    """What makes ``name`` unfit to name a system (None if nothing): names become file names
    (NAME.run) and table cells."""
    if not name or any(c.isspace() or c in "/\\|" or not c.isprintable() for c in name) or name.startswith("."):
        return ("name must be non-empty, without spaces, slashes, '|' (it splits report tables) or control characters, "
                "not starting with a dot")
    if len(name) > MAX_NAME_CHARS:
        return f"name has {len(name)} characters (at most {MAX_NAME_CHARS}; it becomes a file name)"
    return None


def check_name(name: str, where: str | Path | None, i: int | str) -> None:
    """Refuse a system name :func:`name_problem` finds unfit, naming the file and the place."""
    problem = name_problem(name)
    if problem:
        place = f"systems[{i}].name" if isinstance(i, int) else str(i)
        raise InputError(where, f"system {short(name) if name else '#' + str(i)}: {problem}", place=place)
