"""Deprecated: moved to :mod:`nteval.stats` in 0.2 (generic statistics are not correlate's); this path goes in 0.3."""
import importlib as _importlib
import warnings as _warnings

_warnings.warn("nteval.correlate.stats moved to nteval.stats; the old path goes in 0.3", DeprecationWarning, stacklevel=2)
globals().update({k: v for k, v in vars(_importlib.import_module("nteval.stats")).items() if not k.startswith("__")})
