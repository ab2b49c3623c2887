"""System declarations and their validation.

A systems YAML file is a list (or ``{systems: [...]}``) of ``{name, algorithm, params}``. Unknown
algorithms, unknown parameters and bad values are errors naming the file, the system and the key.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import InputError

BM25 = {"k1": 0.9, "b": 0.4}
#: algorithm → default parameters (every allowed key is listed; types follow the defaults).
ALGORITHMS: dict[str, dict[str, Any]] = {
    "bm25": dict(BM25),
    "qld": {"mu": 1000.0},
    "bm25_rm3": {**BM25, "fb_docs": 10, "fb_terms": 10, "original_query_weight": 0.5},
    "bm25_rocchio": {**BM25, "fb_docs": 10, "fb_terms": 10, "alpha": 1.0, "beta": 0.75},
    "disjunctive": {**BM25, "max_words": 5},
    "conj_disj": {**BM25, "max_words": 6},
    "and_then": {**BM25, "max_words": 5},
    "proximity": {**BM25, "depth": 100},
    "bm25_proximity": {**BM25, "depth": 100, "bm25_weight": 2.0, "proximity_weight": 1.0},
    "rrf": {"systems": [], "k": 60},
}
_POSITIVE = {"k1", "mu", "fb_docs", "fb_terms", "max_words", "depth", "k"}
_UNIT = {"b", "original_query_weight"}


@dataclass(frozen=True)
class System:
    name: str
    algorithm: str
    params: dict[str, Any] = field(default_factory=dict)

    def key(self) -> str:
        """Content hash of what determines the system's output."""
        blob = json.dumps({"algorithm": self.algorithm, "params": self.params}, sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()

    def describe(self) -> str:
        ps = ", ".join(f"{k}={v}" for k, v in self.params.items() if v != ALGORITHMS[self.algorithm].get(k) or k == "systems")
        return f"{self.algorithm}({ps})" if ps else self.algorithm


def make_system(name: str, algorithm: str, params: dict[str, Any] | None = None, where: str | Path | None = None) -> System:
    """Validate and fill defaults."""
    if algorithm not in ALGORITHMS:
        raise InputError(where, f"system {name!r}: unknown algorithm {algorithm!r} (known: {', '.join(ALGORITHMS)})",
                         place="algorithm")
    defaults = ALGORITHMS[algorithm]
    params = dict(params or {})
    out: dict[str, Any] = {}
    for key, value in params.items():
        if key not in defaults:
            raise InputError(where, f"system {name!r}: unknown parameter {key!r} for {algorithm} "
                                    f"(allowed: {', '.join(defaults)})", place=f"params.{key}")
        d = defaults[key]
        if isinstance(d, list):
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise InputError(where, f"system {name!r}: {key} must be a list of system names", place=f"params.{key}")
        elif isinstance(d, bool) or not isinstance(value, (int, float)) or isinstance(value, bool):
            raise InputError(where, f"system {name!r}: {key} must be a number, got {value!r}", place=f"params.{key}")
        elif isinstance(d, int) and not isinstance(d, bool):
            if float(value) != int(value):
                raise InputError(where, f"system {name!r}: {key} must be a whole number, got {value!r}", place=f"params.{key}")
            value = int(value)
        else:
            value = float(value)
        if key in _POSITIVE and not value > 0:
            raise InputError(where, f"system {name!r}: {key} must be > 0, got {value!r}", place=f"params.{key}")
        if key in _UNIT and not 0 <= value <= 1:
            raise InputError(where, f"system {name!r}: {key} must be within [0, 1], got {value!r}", place=f"params.{key}")
        out[key] = value
    full = {k: (list(v) if isinstance(v, list) else v) for k, v in defaults.items()}
    full.update(out)
    if algorithm == "rrf" and not full["systems"]:
        raise InputError(where, f"system {name!r}: rrf needs params.systems (names to fuse)", place="params.systems")
    return System(name=name, algorithm=algorithm, params=full)


def load_systems(path: str | Path) -> list[System]:
    """Read and validate a systems YAML file (names unique, rrf inputs defined earlier)."""
    import yaml

    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(path, "no such systems file") from None
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        place = f"line {mark.line + 1}" if mark else None
        raise InputError(path, f"invalid YAML: {getattr(err, 'problem', err)}", place=place) from None
    if isinstance(data, dict) and "systems" in data:
        data = data["systems"]
    if not isinstance(data, list) or not data:
        raise InputError(path, "expected a non-empty list of systems ({name, algorithm, params})")
    systems: list[System] = []
    names: set[str] = set()
    for i, entry in enumerate(data, 1):
        if not isinstance(entry, dict):
            raise InputError(path, "each system must be a mapping {name, algorithm, params}", place=f"systems[{i}]")
        extra = set(entry) - {"name", "algorithm", "params"}
        name = str(entry.get("name") or "")
        if extra:
            raise InputError(path, f"system {name or i!r}: unknown key {sorted(extra)[0]!r} (allowed: name, algorithm, params)",
                             place=f"systems[{i}]")
        if not name or any(c.isspace() or c in "/\\" for c in name):
            raise InputError(path, f"system #{i}: name must be non-empty, without spaces or slashes", place=f"systems[{i}].name")
        if name in names:
            raise InputError(path, f"system {name!r} is declared twice", place=f"systems[{i}].name")
        params = entry.get("params") or {}
        if not isinstance(params, dict):
            raise InputError(path, f"system {name!r}: params must be a mapping", place=f"systems[{i}].params")
        s = make_system(name, str(entry.get("algorithm", "")), params, where=path)
        if s.algorithm == "rrf":
            for dep in s.params["systems"]:
                if dep not in names:
                    raise InputError(path, f"system {name!r}: fuses {dep!r}, which is not declared before it",
                                     place=f"systems[{i}].params.systems")
        names.add(name)
        systems.append(s)
    return systems
