"""The protocol registry: every command that runs, grids, correlates or reports protocols asks
here instead of naming them.

A protocol is one module of this package (or of another package, registered through the
``nteval.protocols`` entry-point group) defining a :class:`~nteval.protocols.base.Protocol`
subclass; adding one is adding its module name to :data:`BUILTIN`.
"""
from __future__ import annotations

from importlib import import_module

from ..errors import InputError, suggest
from ..plugins import entry_points
from .base import Protocol, ProtocolSpec, TopicSet, param

__all__ = ["BUILTIN", "Protocol", "ProtocolSpec", "TopicSet", "get", "names", "param"]

#: module name → protocol (the registry lines)
BUILTIN = {
    "focused": "nteval.protocols.focused",
    "highrecall": "nteval.protocols.highrecall",
    "crosslingual": "nteval.protocols.crosslingual",
    "mesh": "nteval.protocols.mesh",
    "keywords": "nteval.protocols.keywords",
}

_LOADED: dict[str, Protocol] = {}


def _entry_points() -> dict[str, str]:
    return entry_points("nteval.protocols")


def _modules() -> dict[str, str]:
    return {**_entry_points(), **BUILTIN}


def names() -> list[str]:
    """Every registered protocol, built-ins first in their order."""
    return list(BUILTIN) + sorted(set(_entry_points()) - set(BUILTIN))


def get(name: str) -> Protocol:
    """The protocol called ``name`` (one-line error listing the known ones otherwise)."""
    if name not in _LOADED:
        modules = _modules()
        if name not in modules:
            raise InputError(None, f"no protocol {name!r}{suggest(name, names())} (known: {', '.join(names())})")
        target = modules[name]
        module_name, _, attr = target.partition(":")
        module = import_module(module_name)
        proto = getattr(module, attr) if attr else module.PROTOCOL
        _LOADED[name] = proto() if isinstance(proto, type) else proto
    return _LOADED[name]
