"""System declarations and their validation.

A systems YAML file is a list (or ``{systems: [...]}``) of entries, each one of:

- ``{name, algorithm, params}``: a system nteval computes (Lucene families, ``dense``, fusions);
- ``{name, run: PATH}`` (or ``runs: {PROTOCOL: PATH, human: PATH}``): an external TREC run;
- ``{name, callable: "module:function", version}``: a Python ``search(queries, k) -> run``;
- ``{name, command: "prog {topics} {run} {k}", version}``: an external program run per topic set.

Any of them may declare its family with ``params: {family: neural}`` (a key of
:data:`nteval.systems.families.FAMILIES`): the only parameter a system nteval does not compute has.

Unknown algorithms, unknown parameters and bad values are errors naming the file, the system and
the key. (:mod:`nteval.systems.external` runs the last three kinds.)
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from ..errors import InputError, short
from . import registry
from .external import external_entry
from .system import (  # noqa: F401  (the names' home before system kinds; still imported from here)
    ALGORITHMS,
    FUSIONS,
    MAX_NAME_CHARS,
    MAX_PARAM_VALUE,
    System,
    check_name,
    make_system,
    name_problem,
)

#: Systems files are small hand-written lists; a bigger file is refused before YAML parses it.
MAX_SYSTEMS_FILE_BYTES = 1_000_000
#: Systems and config files are a few levels deep; deeper nesting is refused before it is built.
MAX_YAML_DEPTH = 20


def _yaml_keys() -> set[str]:
    """The keys that declare a system nteval does not compute (``run``, ``runs``, ``callable``, ``command``)."""
    return {key for n in registry.names() for key in registry.get(n).yaml_keys}


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
        kinds = [n for n in registry.names() if any(key in entry for key in registry.get(n).yaml_keys)]
        allowed = {"name", "algorithm", "params"} if not kinds else {"name", "version", "params", *_yaml_keys()}
        extra = set(entry) - allowed
        if extra:
            raise InputError(path, f"system {short(name or i)}: unknown key {short(sorted(map(str, extra))[0])} "
                                   f"(allowed: {', '.join(sorted(allowed))})", place=f"systems[{i}]")
        check_name(name, path, i)
        if name in names:
            raise InputError(path, f"system {short(name)} is declared twice", place=f"systems[{i}].name")
        if kinds:
            code = [key for n in kinds if registry.get(n).runs_code for key in registry.get(n).yaml_keys if key in entry]
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
            s = make_system(name, algorithm, params, where=path, listing=listing)
        if s.kind.fusion:
            for dep in s.kind.inputs(s):
                if dep not in names:
                    raise InputError(path, f"system {short(name)}: fuses {short(dep)}, which is not declared before it",
                                     place=f"systems[{i}].params.systems")
        names.add(name)
        systems.append(s)
    return systems
