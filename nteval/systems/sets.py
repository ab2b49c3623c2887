"""Systems files: the shipped sets (``default``, ``table1``, ``wide``) and named lookups in them."""
from __future__ import annotations

from pathlib import Path

from ..errors import InputError, short, suggest
from ..settings import SystemSet
from .base import System, load_systems


def builtin_systems(name: str) -> Path:
    from importlib import resources

    return Path(str(resources.files("nteval") / "configs" / "systems" / f"{name}.yaml"))


def resolve_systems(spec: str | Path | list[System] | None, extra: list[System] | None = None
                    ) -> tuple[Path | None, list[System]]:
    """A YAML path, the name of a shipped set (``default``, ``table1``, ``wide``), or a list of
    Systems (e.g. with :func:`~nteval.systems.external.callable_system` ones); then ``extra`` (runs
    of ``--runs DIR``) after them. Returns the YAML (None for a list) and the systems."""
    if isinstance(spec, (list, tuple)):
        p, systems = None, list(spec)
        bad = [s for s in systems if not isinstance(s, System)]
        if bad:
            raise InputError(None, f"systems: expected System objects, got {short(bad[0])}")
    else:
        p = Path(spec if spec is not None else "default")
        if not p.exists() and builtin_systems(str(p)).is_file():
            p = builtin_systems(str(p))
        elif not p.exists() and p.suffix not in (".yaml", ".yml") and len(p.parts) == 1:
            raise InputError(p, f"no such systems file or shipped set{suggest(str(p), shipped_sets())} (shipped: "
                                f"{', '.join(shipped_sets())}; `nteval systems` lists them)")
        systems = load_systems(p)
    names = {s.name for s in systems}
    if len(names) != len(systems):
        raise InputError(p, "two systems share a name")
    for s in extra or []:
        if s.name in names:
            where = s.params.get("run") or next(iter(s.params.get("runs", {}).values()), None)
            raise InputError(where, f"external run {short(s.name)} has the name of a system already in the set: rename "
                                    "its run tag, or name it in a systems YAML ({name, run: PATH})")
        names.add(s.name)
        systems.append(s)
    return p, systems


def resolve_set(chosen) -> tuple[Path | None, list[System]]:
    """A :class:`~nteval.settings.SystemSet` (or what :func:`resolve_systems` takes) → (the systems
    YAML, or the set's ``file`` when its source is a list; the Systems, ``extra`` after them)."""
    chosen = SystemSet.of(chosen)
    path, systems = resolve_systems(chosen.source, list(chosen.extra) or None)
    return path or chosen.file, systems


def shipped_sets() -> list[str]:
    return sorted(p.stem for p in builtin_systems("default").parent.glob("*.yaml"))


def find_named_system(name: str, files: list[Path | None]) -> tuple[System, Path] | None:
    """The first system called ``name`` in the given systems files (missing ones skipped: a shipped
    set's name is no file), and its file. A YAML path that does not exist is one line naming it (it was
    said as "no such system in missing.yaml", with a suggestion pointing away from the typo)."""
    for path in files:
        if path is not None and Path(path).suffix in (".yaml", ".yml") and not Path(path).exists():
            raise InputError(Path(path), "no such systems file (--systems)")
    for path in files:
        if path is not None and Path(path).is_file():
            for s in load_systems(path):
                if s.name == name:
                    return s, Path(path)
    return None


def suggest_system(name: str, files: list[Path | None], extra: tuple[str, ...] = ()) -> str:
    """" (did you mean X?)" for a misspelt system name, among the systems of ``files`` (and ``extra``
    names, e.g. algorithms)."""
    names = list(extra)
    for path in files:
        if path is not None and Path(path).is_file():
            names += [s.name for s in load_systems(path, listing=True)]
    return suggest(name, names)
