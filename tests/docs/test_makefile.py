"""The Makefile's install steps, as `make -n` prints them (nothing is installed)."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_no_red_resolver_error_for_pyserini_installed_without_its_dependencies(tmp_path):
    """F8 (turn 6): pyserini is installed --no-deps on purpose, so every pip install after it (the
    neural step's two) would end in pip's red "ERROR: pip's dependency resolver ..." and a line per
    undeclared pyserini dependency. They pass --no-warn-conflicts, an echo line says why before,
    and `pip check` after shows any broken dependency that is not pyserini's."""
    r = subprocess.run(["make", "-n", "-B", f"VENV={tmp_path / 'venv'}", "install-neural"], cwd=ROOT, capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    at = next(i for i, line in enumerate(lines) if "--no-deps" in line and "pyserini" in line)
    later = [line for line in lines[at:] if " pip install " in line]
    assert len(later) >= 3 and all("--no-warn-conflicts" in line for line in later), later
    neural = next(i for i, line in enumerate(lines) if "adding the neural extra" in line)
    assert "installed --no-deps on purpose" in lines[neural + 1] and lines[neural + 1].startswith("echo")
    assert sum("pip check" in line and "grep -v '^pyserini '" in line for line in lines) == 2


def test_a_script_beside_the_clone_imports_the_installed_package(tmp_path):
    """New user, turn 8 (F10 again): a script saved in the folder that holds the clone (its folder
    ``nteval/`` beside the script) imported that folder as an empty namespace package: "module 'nteval'
    has no attribute 'run_compare'". The Makefile installs the clone in setuptools' compat editable
    mode (the clone on ``sys.path``, where Python's path finder takes the real package over a
    namespace folder), as a wheel install would."""
    import sys

    (tmp_path / "nteval").mkdir()   # (the clone's folder, as the script's folder holds it)
    (tmp_path / "qs.py").write_text("import nteval\nprint(nteval.run_compare.__module__)\n", encoding="utf-8")
    r = subprocess.run([sys.executable, str(tmp_path / "qs.py")], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stdout.strip().startswith("nteval."), r.stdout + r.stderr
    out = subprocess.run(["make", "-n", "-B", f"VENV={tmp_path / 'venv'}", "install-neural"], cwd=ROOT,
                         capture_output=True, text=True, timeout=60).stdout
    assert all("editable_mode=compat" in line for line in out.splitlines() if " -e " in line and "pip install" in line)
