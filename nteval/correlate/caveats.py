"""Deprecated: moved to :mod:`nteval.report.caveats` in 0.2 (it is report text); this path goes in 0.3."""
import importlib as _importlib
import warnings as _warnings

_warnings.warn("nteval.correlate.caveats moved to nteval.report.caveats; the old path goes in 0.3", DeprecationWarning, stacklevel=2)
globals().update({k: v for k, v in vars(_importlib.import_module("nteval.report.caveats")).items() if not k.startswith("__")})
