"""The system-kind registry: every place that runs, caches, tunes or lists systems asks here
instead of testing algorithm names.

A kind is a :class:`~nteval.systems.kind.SystemKind` subclass in a module; the built-ins are the
lines of :data:`BUILTIN`, others come from the ``nteval.system_kinds`` entry-point group
(``name = "package.module:KindClass"``).
"""
from __future__ import annotations

from importlib import import_module

from ..errors import InputError, short
from ..plugins import entry_points
from .kind import SystemKind

#: kind name → "module:class" (the registry lines)
BUILTIN = {
    "bm25": "nteval.systems.lucene_kinds:BM25",
    "qld": "nteval.systems.lucene_kinds:QLD",
    "bm25_rm3": "nteval.systems.lucene_kinds:RM3",
    "bm25_rocchio": "nteval.systems.lucene_kinds:Rocchio",
    "disjunctive": "nteval.systems.querygen:Disjunctive",
    "conj_disj": "nteval.systems.querygen:ConjDisj",
    "and_then": "nteval.systems.querygen:AndThen",
    "proximity": "nteval.systems.proximity:Proximity",
    "bm25_proximity": "nteval.systems.proximity:BM25Proximity",
    "dense": "nteval.systems.dense:Dense",
    "pisa": "nteval.systems.pisa:PisaBM25",
    "tantivy": "nteval.systems.tantivy:TantivyBM25",
    "sqlite_fts5": "nteval.systems.sqlite_fts5:SqliteFts5",
    "postgres": "nteval.systems.postgres:PostgresFts",
    "http": "nteval.systems.http:HttpKind",
    "rrf": "nteval.systems.fusion:RRF",
    "linear": "nteval.systems.fusion:Linear",
    "external": "nteval.systems.external:ExternalRun",
    "callable": "nteval.systems.external:CallableKind",
    "command": "nteval.systems.external:CommandKind",
    "pyterrier": "nteval.systems.pyterrier:PyTerrierKind",
}
ENTRY_POINT_GROUP = "nteval.system_kinds"

_LOADED: dict[str, SystemKind] = {}


def _entry_points() -> dict[str, str]:
    return entry_points(ENTRY_POINT_GROUP)


def names() -> list[str]:
    """Every registered kind, built-ins first in their order."""
    return list(BUILTIN) + sorted(set(_entry_points()) - set(BUILTIN))


def algorithms() -> list[str]:
    """The kinds a systems YAML declares with ``algorithm:`` (not the run/callable/command entries)."""
    return [n for n in names() if not get(n).yaml_keys]


def get(name: str) -> SystemKind:
    """The kind called ``name`` (one-line error listing the algorithms otherwise)."""
    kind = _LOADED.get(name)
    if kind is None:
        target = BUILTIN.get(name) or _entry_points().get(name)
        if target is None:
            raise InputError(None, f"unknown algorithm {short(name)} (known: {', '.join(algorithms())})")
        module_name, _, attr = target.partition(":")
        obj = getattr(import_module(module_name), attr or "KIND")
        kind = obj() if isinstance(obj, type) else obj
        if not isinstance(kind, SystemKind) or kind.name != name:
            raise InputError(None, f"system kind {short(name)}: {target} is not a SystemKind named {name!r}")
        _LOADED[name] = kind
    return kind


def known(name: str) -> bool:
    return name in BUILTIN or name in _entry_points()
