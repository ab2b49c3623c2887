"""System declarations and their validation.

A systems YAML file is a list (or ``{systems: [...]}``) of entries, each one of:

- ``{name, algorithm, params}``: a system nteval computes (Lucene families, ``dense``, fusions);
- ``{name, run: PATH}`` (or ``runs: {PROTOCOL: PATH, human: PATH}``): an external TREC run;
- ``{name, callable: "module:function", version}``: a Python ``search(queries, k) -> run``;
- ``{name, command: "prog {topics} {run} {k}", version}``: an external program run per topic set.

Unknown algorithms, unknown parameters and bad values are errors naming the file, the system and
the key. (:mod:`nteval.systems.external` runs the last three kinds.)
"""
from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import InputError, short

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
    "dense": {"model": "wordllama", "dim": 256, "index": "flat", "nlist": 0, "nprobe": 0, "hnsw_m": 32,
              "ef_search": 0, "dtype": "float32"},  # 0 = chosen from the collection size and the depth
    "rrf": {"systems": [], "k": 60},
    "linear": {"systems": [], "weights": [], "norm": "minmax"},
}
#: Systems whose run is combined from other systems' runs (they name their inputs in ``systems``).
FUSIONS = {"rrf", "linear"}
#: Systems nteval does not compute: their runs come from outside (see :mod:`nteval.systems.external`).
EXTERNAL_KINDS = {"external": "run", "callable": "callable", "command": "command"}
#: String parameters: the values they accept (None: any non-empty string, e.g. a model path).
_CHOICES: dict[str, tuple[str, ...] | None] = {"model": None, "index": ("flat", "ivf", "hnsw"),
                                               "dtype": ("float32", "float16"),
                                               "norm": ("minmax", "zscore", "none")}
#: Systems files are small hand-written lists; a bigger file is refused before YAML parses it.
MAX_SYSTEMS_FILE_BYTES = 1_000_000
#: Systems and config files are a few levels deep; deeper nesting is refused before it is built.
MAX_YAML_DEPTH = 20
#: System names become file names (NAME.run, NAME.meta.json): keep them well under NAME_MAX (255).
MAX_NAME_CHARS = 100
#: Bound on any numeric parameter (Lucene takes 32-bit floats and ints).
MAX_PARAM_VALUE = 1e9
_POSITIVE = {"k1", "mu", "fb_docs", "fb_terms", "max_words", "depth", "k", "dim", "hnsw_m"}
_NON_NEGATIVE = {"nlist", "nprobe", "ef_search"}  # 0 = chosen from the collection size (and the depth)
_UNIT = {"b", "original_query_weight"}


@dataclass(frozen=True)
class System:
    """A named search method. ``fn`` holds the Python callable of a ``callable`` system (not part
    of its identity: ``params["version"]`` is, so a changed function needs a new version)."""
    name: str
    algorithm: str
    params: dict[str, Any] = field(default_factory=dict)
    fn: Callable[..., Any] | None = field(default=None, compare=False, repr=False)

    def key(self) -> str:
        """Content hash of what determines the system's output (an external run's file content too)."""
        ident: dict[str, Any] = {"algorithm": self.algorithm, "params": self.params}
        if self.algorithm == "external":
            from .external import run_files_digest

            ident = {"algorithm": "external", "content": run_files_digest(self)}
        blob = json.dumps(ident, sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()

    @property
    def is_external(self) -> bool:
        return self.algorithm in EXTERNAL_KINDS

    def describe(self) -> str:
        if self.algorithm == "external":
            files = self.params.get("runs") or {"": self.params.get("run")}
            return "external run " + ", ".join(Path(str(p)).name for p in files.values())
        if self.algorithm in ("callable", "command"):
            what = (self.params.get("target") or self.params.get("command")
                    or getattr(self.fn, "__qualname__", type(self.fn).__name__))
            return f"{self.algorithm} {short(what, 40)} (version {self.params.get('version')})"
        ps = ", ".join(f"{k}={v}" for k, v in self.params.items() if v != ALGORITHMS[self.algorithm].get(k) or k == "systems")
        return f"{self.algorithm}({ps})" if ps else self.algorithm


def make_system(name: str, algorithm: str, params: dict[str, Any] | None = None, where: str | Path | None = None) -> System:
    """Validate and fill defaults."""
    if algorithm not in ALGORITHMS:
        raise InputError(where, f"system {short(name)}: unknown algorithm {short(algorithm)} (known: {', '.join(ALGORITHMS)})",
                         place="algorithm")
    defaults = ALGORITHMS[algorithm]
    params = dict(params or {})
    out: dict[str, Any] = {}
    for key, value in params.items():
        if key not in defaults:
            raise InputError(where, f"system {short(name)}: unknown parameter {short(key)} for {algorithm} "
                                    f"(allowed: {', '.join(defaults)})", place=f"params.{str(key)[:40]}")
        d = defaults[key]
        if key == "weights":
            if not isinstance(value, list) or not all(isinstance(v, (int, float)) and not isinstance(v, bool)
                                                      and math.isfinite(v) and v >= 0 for v in value):
                raise InputError(where, f"system {short(name)}: weights must be a list of numbers ≥ 0, got {short(value)}",
                                 place=f"params.{key}")
            value = [float(v) for v in value]
        elif isinstance(d, list):
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise InputError(where, f"system {short(name)}: {key} must be a list of system names", place=f"params.{key}")
        elif isinstance(d, str):
            choices = _CHOICES.get(key)
            if not isinstance(value, str) or not value.strip():
                raise InputError(where, f"system {short(name)}: {key} must be a non-empty string, got {short(value)}",
                                 place=f"params.{key}")
            if choices is not None and value not in choices:
                raise InputError(where, f"system {short(name)}: {key} must be one of {', '.join(choices)}, got {short(value)}",
                                 place=f"params.{key}")
        elif isinstance(d, bool) or not isinstance(value, (int, float)) or isinstance(value, bool):
            raise InputError(where, f"system {short(name)}: {key} must be a number, got {short(value)}", place=f"params.{key}")
        elif isinstance(value, float) and not math.isfinite(value):
            raise InputError(where, f"system {short(name)}: {key} must be a finite number, got {value!r}",
                             place=f"params.{key}")
        elif abs(value) > MAX_PARAM_VALUE:
            raise InputError(where, f"system {short(name)}: {key} must be at most {MAX_PARAM_VALUE:g} in size, "
                                    f"got {short(value, 30)}", place=f"params.{key}")
        elif isinstance(d, int) and not isinstance(d, bool):
            if float(value) != int(value):
                raise InputError(where, f"system {short(name)}: {key} must be a whole number, got {short(value)}", place=f"params.{key}")
            value = int(value)
        else:
            value = float(value)
        if key in _NON_NEGATIVE and not value >= 0:
            raise InputError(where, f"system {short(name)}: {key} must be ≥ 0, got {value!r}", place=f"params.{key}")
        if key in _POSITIVE and not value > 0:
            raise InputError(where, f"system {short(name)}: {key} must be > 0, got {value!r}", place=f"params.{key}")
        if key in _UNIT and not 0 <= value <= 1:
            raise InputError(where, f"system {short(name)}: {key} must be within [0, 1], got {value!r}", place=f"params.{key}")
        out[key] = value
    full = {k: (list(v) if isinstance(v, list) else v) for k, v in defaults.items()}
    full.update(out)
    if algorithm in FUSIONS and not full["systems"]:
        raise InputError(where, f"system {short(name)}: {algorithm} needs params.systems (names to fuse)", place="params.systems")
    if algorithm == "linear" and full["weights"] and len(full["weights"]) != len(full["systems"]):
        raise InputError(where, f"system {short(name)}: {len(full['weights'])} weights for {len(full['systems'])} systems",
                         place="params.weights")
    if algorithm == "linear" and full["weights"] and not sum(full["weights"]) > 0:
        raise InputError(where, f"system {short(name)}: the weights sum to 0", place="params.weights")
    if algorithm == "dense":
        from .dense import check_dense_params

        check_dense_params(name, full, where)
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


#: Set (to 1) by ``--allow-code``: systems files may declare ``callable:`` and ``command:`` systems.
ALLOW_CODE_ENV = "NTEVAL_ALLOW_CODE"


def code_allowed() -> bool:
    """Whether systems files may run code (``--allow-code`` or NTEVAL_ALLOW_CODE=1). Python code
    that builds systems itself (``callable_system``) needs no permission: it is already code."""
    import os

    return os.environ.get(ALLOW_CODE_ENV, "").strip() in ("1", "true", "yes")


def read_yaml(path: str | Path, what: str = "systems file") -> Any:
    """The YAML value in ``path`` read safely: bounded size, UTF-8, no aliases (a 700-byte alias
    bomb expands to gigabytes); any problem is a one-line :class:`InputError` naming the file."""
    import yaml

    path = Path(path)
    try:
        if path.is_dir():
            raise InputError(path, f"is a directory, not a {what}")
        size = path.stat().st_size
        if size > MAX_SYSTEMS_FILE_BYTES:
            raise InputError(path, f"{what} too large ({size:,} bytes; at most {MAX_SYSTEMS_FILE_BYTES:,})")
        text = path.read_bytes().decode("utf-8")
    except FileNotFoundError:
        raise InputError(path, f"no such {what}") from None
    except UnicodeDecodeError as err:
        line = path.read_bytes()[: err.start].count(b"\n") + 1
        raise InputError(path, f"not UTF-8 text (byte 0x{err.object[err.start]:02x})", place=f"line {line}") from None
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml's parser when present (fast)
    try:
        depth = 0
        for event in yaml.parse(text, Loader=loader):
            if isinstance(event, yaml.AliasEvent):
                raise InputError(path, f"YAML aliases (*name) are not allowed in a {what}; write values out",
                                 place=f"line {event.start_mark.line + 1}")
            if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
                depth += 1
                if depth > MAX_YAML_DEPTH:  # (a 200 KB file of nested lists took 229 s, then a RecursionError)
                    raise InputError(path, f"nested deeper than {MAX_YAML_DEPTH} levels: not a {what}",
                                     place=f"line {event.start_mark.line + 1}")
            elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
                depth -= 1
        return yaml.load(text, Loader=loader)
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        place = f"line {mark.line + 1}" if mark else None
        raise InputError(path, f"invalid YAML: {short(getattr(err, 'problem', err))}", place=place) from None


def load_systems(path: str | Path, listing: bool = False) -> list[System]:
    """Read and validate a systems YAML file: a list of systems, ``{systems: [...]}``, or one system
    as a mapping (names unique, rrf inputs defined earlier). Systems that run code need
    :func:`code_allowed`, unless the file is only being ``listing``-ed (nothing runs then)."""
    path = Path(path)
    data = read_yaml(path)
    if isinstance(data, dict) and "systems" in data:
        data = data["systems"]
    elif isinstance(data, dict) and "name" in data:  # one system written as a mapping, not a list of one
        data = [data]
    if not isinstance(data, list) or not data:
        raise InputError(path, "expected a non-empty list of systems ({name, algorithm, params})")
    systems: list[System] = []
    names: set[str] = set()
    for i, entry in enumerate(data, 1):
        if not isinstance(entry, dict):
            raise InputError(path, "each system must be a mapping {name, algorithm, params}", place=f"systems[{i}]")
        raw_name = entry.get("name")
        if raw_name is not None and not isinstance(raw_name, (str, int, float)) or isinstance(raw_name, bool):
            raise InputError(path, f"system #{i}: name must be a string, got {short(raw_name)}", place=f"systems[{i}].name")
        name = str(raw_name or "")
        kinds = [k for k, key in EXTERNAL_KINDS.items() if key in entry] + (["external"] if "runs" in entry else [])
        allowed = {"name", "algorithm", "params"} if not kinds else {"name", "run", "runs", "callable", "command", "version"}
        extra = set(entry) - allowed
        if extra:
            raise InputError(path, f"system {short(name or i)}: unknown key {short(sorted(map(str, extra))[0])} "
                                   f"(allowed: {', '.join(sorted(allowed))})", place=f"systems[{i}]")
        check_name(name, path, i)
        if name in names:
            raise InputError(path, f"system {short(name)} is declared twice", place=f"systems[{i}].name")
        if kinds:
            from .external import external_entry

            code = [k for k in ("callable", "command") if k in entry]
            if code and not (listing or code_allowed()):
                raise InputError(path, f"system {short(name)} runs code ({code[0]}: {short(entry[code[0]], 60)}): a "
                                       "systems file that declares code runs it with your rights, like a Makefile; if "
                                       "you trust this file, give --allow-code (or set NTEVAL_ALLOW_CODE=1)",
                                 place=f"systems[{i}].{code[0]}")
            s = external_entry(name, entry, path, f"systems[{i}]")
        else:
            params = entry.get("params") or {}
            if not isinstance(params, dict):
                raise InputError(path, f"system {short(name)}: params must be a mapping", place=f"systems[{i}].params")
            algorithm = entry.get("algorithm", "")
            if not isinstance(algorithm, str):
                raise InputError(path, f"system {short(name)}: algorithm must be a name, got {short(algorithm)}",
                                 place=f"systems[{i}].algorithm")
            s = make_system(name, algorithm, params, where=path)
        if s.algorithm in FUSIONS:
            for dep in s.params["systems"]:
                if dep not in names:
                    raise InputError(path, f"system {short(name)}: fuses {short(dep)}, which is not declared before it",
                                     place=f"systems[{i}].params.systems")
        names.add(name)
        systems.append(s)
    return systems
