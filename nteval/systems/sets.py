"""Systems files: the shipped sets (``default``, ``table1``, ``wide``) and named lookups in them."""
from __future__ import annotations

from pathlib import Path

from .base import System, load_systems


def builtin_systems(name: str) -> Path:
    from importlib import resources

    return Path(str(resources.files("nteval") / "configs" / "systems" / f"{name}.yaml"))


def resolve_systems(spec: str | Path | None) -> tuple[Path, list[System]]:
    """A YAML path, or the name of a shipped set (``default``, ``table1``, ``wide``)."""
    if spec is None:
        spec = "default"
    p = Path(spec)
    if not p.exists() and builtin_systems(str(spec)).is_file():
        p = builtin_systems(str(spec))
    return p, load_systems(p)


def find_named_system(name: str, files: list[Path | None]) -> tuple[System, Path] | None:
    """The first system called ``name`` in the given systems files (missing ones skipped), and its file."""
    for path in files:
        if path is not None and Path(path).is_file():
            for s in load_systems(path):
                if s.name == name:
                    return s, Path(path)
    return None
