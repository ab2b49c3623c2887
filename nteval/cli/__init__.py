"""The ``nteval`` command line: a thin shell over the Python API, one module per command.

:mod:`.app` is the group (one-line errors, ``--config``, signals); :mod:`.options` makes the
options from the declarations of the spec objects; each other module adds its commands to
:data:`main`. Imports of the pipelines are deferred into each command, so ``nteval --help`` and
commands that never search start fast (no JVM, no Lucene, no XML parser).
"""
from __future__ import annotations

from . import correlate, evaluate, export, grid, index, listing, protocols  # noqa: F401  (they add the commands)
from .app import main
from .options import HIGHRECALL_OPTIONS, SAMPLE_FILTERS

__all__ = ["HIGHRECALL_OPTIONS", "SAMPLE_FILTERS", "main"]
