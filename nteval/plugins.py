"""Plug-ins from other packages: the entry points of a group (``nteval.protocols``,
``nteval.system_kinds``), read once per search path.

Scanning the installed distributions costs ~2 ms; the registries ask on every lookup (a systems
file asks once per system), so the answer is kept until ``sys.path`` changes (a package put on it
later, as a notebook or a test does, is found then)."""
from __future__ import annotations

import sys
from functools import lru_cache


def entry_points(group: str) -> dict[str, str]:
    """name → "module:attr" of the group's entry points."""
    return dict(_scan(group, tuple(sys.path)))


@lru_cache(maxsize=16)
def _scan(group: str, _path: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
    from importlib.metadata import entry_points as installed

    return tuple((ep.name, ep.value) for ep in installed(group=group))
