"""nteval: evaluate biomedical search engines without human relevance judgments (No-Title protocols)."""
__version__ = "0.1.0"


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
