"""``nteval systems``: what can be named in ``--systems``/``--system``/``--sref``: the shipped
system sets, the algorithms with their parameters and defaults, and the systems of one set."""
from __future__ import annotations

from importlib import resources
from pathlib import Path

from ..errors import InputError
from . import registry
from .base import load_systems
from .kind import FAMILY, extra_missing
from .system import System


def _family(s: System) -> str:
    """``  (family: neural)`` for a system that declares its family, or ""."""
    return f"  (family: {s.params[FAMILY]})" if s.params.get(FAMILY) else ""


def _extras(s: System, by_name: dict[str, System], seen: frozenset = frozenset()) -> list[str]:
    """The optional extras ``s`` needs: its kind's, and for a fusion those of what it fuses, however
    deep (hostile T9: ``minilm_bm25_rrf`` was listed as runnable without the extra MiniLM needs)."""
    own = [e] if (e := s.kind.needs_extra(s.params)) else []
    if s.kind.fusion:
        for x in s.params.get("systems") or []:
            if x in by_name and x not in seen:
                own += _extras(by_name[x], by_name, seen | {s.name})
    return own


def _needs(systems: list[System], by_name: dict[str, System] | None = None) -> str:
    """`` [needs the neural extra: not installed]`` for systems that need optional extras (each
    extra once), or "". Listing never needs one: nothing runs."""
    names = by_name or {s.name: s for s in systems}
    extras = list(dict.fromkeys(e for s in systems for e in _extras(s, names)))
    if not extras:
        return ""
    parts = [f"the {e} extra" + (": not installed" if extra_missing(e) else "") for e in extras]
    return f"  [needs {'; '.join(parts)}]"


def shipped_sets() -> dict[str, Path]:
    """Shipped set name → its YAML file."""
    root = Path(str(resources.files("nteval") / "configs" / "systems"))
    return {p.stem: p for p in sorted(root.glob("*.yaml"))}


def overview() -> str:
    lines = ["shipped system sets (--systems NAME):"]
    for name, path in shipped_sets().items():
        systems = load_systems(path, listing=True)
        lines.append(f"  {name:<10} {len(systems):>3} systems  {path}{_needs(systems)}")
    lines += ["", "algorithms (params with defaults; --param/--system in nteval grid; any system also takes "
                  "family=NAME, its declared family):"]
    for algo in registry.algorithms():
        kind = registry.get(algo)
        extra = f"  [needs the {kind.extra} extra{': not installed' if extra_missing(kind.extra) else ''}]" \
            if kind.extra else ""
        lines.append(f"  {algo:<15} " + ", ".join(p.shown() for p in kind.params) + extra)
    lines += ["", "systems nteval does not compute (systems YAML entries; --runs DIR adds run files):",
              "  {name, run: PATH}                       an external TREC run (runs: {focused: P, human: P} for correlate)",
              "  {name, callable: 'module:fn', version}  a Python search(queries, k) -> {qid: [(docid, score)]}",
              "  {name, command: 'prog {topics} {run} {k}', version}  an external program writing a TREC run",
              "  (each may declare its family: params: {family: neural})",
              "", "`nteval systems NAME` lists a set's systems (NAME: a shipped set or a systems YAML)."]
    return "\n".join(lines)


def set_listing(spec: str) -> str:
    path = Path(spec)
    if not path.exists():
        sets = shipped_sets()
        if spec not in sets:
            raise InputError(spec, f"no such systems file or shipped set (shipped: {', '.join(sets)})")
        path = sets[spec]
    systems = load_systems(path, listing=True)
    width = max(len(s.name) for s in systems)
    lines = [f"{path}: {len(systems)} systems"]
    by_name = {s.name: s for s in systems}
    lines += [f"  {s.name:<{width}}  {s.describe()}{_family(s)}{_needs([s], by_name)}" for s in systems]
    return "\n".join(lines)
