"""nteval: evaluate biomedical search engines without human relevance judgments (No-Title protocols)."""
from ._version import __version__


def _check_dependencies() -> None:
    """One clear line, not ``No module named 'numpy'`` from deep inside, when nteval is imported by
    a Python that lacks its dependencies (the system python3 instead of the venv's)."""
    import importlib.util
    import sys

    missing = [m for m in ("numpy", "click", "lxml", "scipy") if importlib.util.find_spec(m) is None]
    if missing:
        raise ImportError(f"nteval's dependencies ({', '.join(missing)}) are not installed for this Python "
                          f"({sys.executable}): use the environment `make install` made (.venv/bin/python, or "
                          "`source .venv/bin/activate`), or install nteval here with `pip install -e .`")


_check_dependencies()

#: The public verbs, one import away (``import nteval; nteval.run_compare(...)``). They load on first
#: use, so ``import nteval`` stays fast and starts no JVM.
_VERBS = {
    "build_index": "nteval.index.build", "update_index": "nteval.index.build",
    "run_protocol": "nteval.experiment", "run_focused": "nteval.experiment", "run_highrecall": "nteval.experiment",
    "run_compare": "nteval.compare", "run_grid": "nteval.grid", "parse_axis": "nteval.grid",
    "run_correlate": "nteval.correlate.agreement", "export_collection": "nteval.export",
    "evaluate_files": "nteval.evaluate", "load_systems": "nteval.systems.base", "make_system": "nteval.systems.system",
    "callable_system": "nteval.systems.external", "command_system": "nteval.systems.external",
    "run_sref_sensitivity": "nteval.experiment", "run_tune": "nteval.tune",
    "pin_topics": "nteval.gate.pin", "extend_pin": "nteval.gate.pin", "run_gate": "nteval.gate.gate",
    "run_check": "nteval.gate.gate", "history_report": "nteval.gate.trend",
    # the spec objects the verbs take (their fields are also accepted as plain keywords)
    "RunSettings": "nteval.settings", "Execution": "nteval.settings", "SystemSet": "nteval.settings",
    "HumanJudgments": "nteval.settings", "GridSpec": "nteval.grid.spec", "CorrelateSpec": "nteval.correlate.spec",
    "PinSpec": "nteval.gate.pin", "GateSpec": "nteval.gate.gate",
}
#: Modules one attribute away: ``nteval.frames.means(results)`` (DataFrames), ``nteval.pyterrier``.
_MODULES = {"frames": "nteval.report.frames", "pyterrier": "nteval.pyterrier"}
__all__ = ["__version__", *_VERBS, *_MODULES]


def __getattr__(name: str):
    if name in _VERBS or name in _MODULES:
        import importlib

        if name in _MODULES:
            return importlib.import_module(_MODULES[name])
        return getattr(importlib.import_module(_VERBS[name]), name)
    raise AttributeError(f"module 'nteval' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_VERBS) | set(_MODULES))
