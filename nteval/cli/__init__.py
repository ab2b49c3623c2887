"""The ``nteval`` command line: a thin shell over the Python API, one module per command.

:mod:`.app` is the group (one-line errors, ``--config``, signals); :mod:`.options` makes the
options from the declarations of the spec objects; each other module adds its commands to
:data:`main`. nteval's own modules are imported at the top of each module; the heavy libraries
they use (the JVM, lxml, scipy, torch, FAISS, matplotlib, Optuna, Dask) stay deferred into the
functions that need them (scripts/hoist_imports.py lists where), so ``nteval --help`` and commands
that never search start fast.
"""
from __future__ import annotations

from . import (  # noqa: F401  (they add the commands)
    correlate,
    encode,
    evaluate,
    export,
    gate,
    grid,
    index,
    listing,
    protocols,
    tune,
)
from .app import main
from .options import HIGHRECALL_OPTIONS, SAMPLE_FILTERS

__all__ = ["HIGHRECALL_OPTIONS", "SAMPLE_FILTERS", "main"]


#: names of the one-module CLI before 0.2, served from where they went (one release, with a warning)
_MOVED = {"spec_options": "nteval.cli.options", "MAX_DEPTH": "nteval.settings"}


def __getattr__(name: str):
    if name in _MOVED:
        import importlib
        import warnings

        warnings.warn(f"nteval.cli.{name} moved to {_MOVED[name]}.{name}; the old path goes in 0.3",
                      DeprecationWarning, stacklevel=2)
        return getattr(importlib.import_module(_MOVED[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
