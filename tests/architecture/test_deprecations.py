"""Old import paths of names the redesign moved still work for one release, with a
DeprecationWarning where the module moved (CHANGELOG lists them)."""
from __future__ import annotations

import importlib
import sys

import pytest


@pytest.mark.parametrize("old, new, name", [
    ("nteval.correlate.stats", "nteval.stats", "correlations"),
    ("nteval.correlate.caveats", "nteval.report.caveats", "caveats"),
])
def test_moved_modules_warn_and_serve_the_same_objects(old, new, name):
    sys.modules.pop(old, None)
    with pytest.warns(DeprecationWarning, match=f"{old} moved to {new}"):
        mod = importlib.import_module(old)
    assert getattr(mod, name) is getattr(importlib.import_module(new), name)


@pytest.mark.parametrize("old, name, new", [
    ("nteval.answer", "run_compare", "nteval.compare"), ("nteval.answer", "answer_lines", "nteval.report.text"),
    ("nteval.cli", "spec_options", "nteval.cli.options"), ("nteval.cli", "MAX_DEPTH", "nteval.settings"),
])
def test_moved_names_warn_and_serve_the_same_objects(old, name, new):
    mod = importlib.import_module(old)
    with pytest.warns(DeprecationWarning, match=f"{old}.{name} moved to {new}"):
        value = getattr(mod, name)
    assert value is getattr(importlib.import_module(new), name)
    with pytest.raises(AttributeError):
        mod.no_such_name  # noqa: B018


def test_names_of_the_split_modules_still_import():
    """nteval.index became a package (manifest: reading, build: building) and the store took the
    document-store queries of dense: the old names are served as before."""
    from nteval.corpus.store import index_texts
    from nteval.encoders.store import index_texts as dense_texts
    from nteval.index import build_index, read_manifest, sha256_file, update_index
    from nteval.index.build import build_index as built
    from nteval.index.manifest import read_manifest as read

    assert build_index is built and read_manifest is read and callable(update_index) and callable(sha256_file)
    assert dense_texts is index_texts


def test_names_still_importable_from_their_old_modules():
    from nteval.formats.versions import CELL_FORMAT, RUN_FORMAT
    from nteval.grid.cells import CELL_FORMAT as cells_format
    from nteval.grid.cells import open_target
    from nteval.protocols.base import VerdictSpec
    from nteval.protocols.highrecall import highrecall_summary
    from nteval.report.text import highrecall_summary as text_summary
    from nteval.runs import RUN_FORMAT as runs_format
    from nteval.systems.base import ALGORITHMS, FUSIONS, System, make_system
    from nteval.systems.execute import open_target as execute_open_target
    from nteval.systems.system import System as system_System
    from nteval.verdict import VerdictSpec as verdict_VerdictSpec

    assert (cells_format, runs_format) == (CELL_FORMAT, RUN_FORMAT)
    assert open_target is execute_open_target and text_summary is highrecall_summary
    assert verdict_VerdictSpec is VerdictSpec and System is system_System
    # the algorithm table and the fusion set are views of the registry now
    assert ALGORITHMS["bm25"] == {"k1": 0.9, "b": 0.4} and "qld" in ALGORITHMS and "external" not in ALGORITHMS
    assert "rrf" in FUSIONS and "linear" in FUSIONS and "bm25" not in FUSIONS
    assert make_system("x", "bm25").key() == make_system("x", "bm25", {"k1": 0.9}).key()


def test_public_verbs_from_the_front_door():
    import subprocess

    import nteval

    for name in nteval.__all__:
        assert getattr(nteval, name) is not None, name
    # `import nteval` alone loads none of the pipelines (no Lucene, no JVM)
    code = "import sys, nteval; print(sorted(m for m in sys.modules if m.startswith('nteval.')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "['nteval._version']"
