"""Engine caches that a kill or a damaged file cannot turn into a crash or a wrong result (issue 40:
H3, H5, M1). PISA's per-(k1, b) files are prepared by nteval atomically and checked before each
use; a damaged file of an engine's index is found by its digest and built again, said so; a PISA
crash while preparing is one line; only the settings used last are kept. Searches whose engine
might crash run in a child process: a signal there fails the test instead of killing pytest."""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("tantivy")
pytest.importorskip("pyterrier_pisa")

SETTING = "bm25.k1-1.2.b-0.75"
YAML = {"pisa": "- {name: pisa_bm25, algorithm: pisa, params: {k1: 1.2, b: 0.75}}\n",
        "tantivy": "- {name: tantivy_bm25, algorithm: tantivy}\n"}


def _focused(index: Path, work: Path, engine: str, cache: Path, name: str) -> subprocess.CompletedProcess:
    """``nteval focused`` with one engine system, in a child process, the engine cache at ``cache``."""
    (work / f"{engine}.yaml").write_text(YAML[engine])
    env = {**os.environ, "NTEVAL_ENGINE_CACHE": str(cache)}
    return subprocess.run([sys.executable, "-m", "nteval", "focused", "--index", str(index), "--topics", "40",
                           "--seed", "4", "--min-topics", "10", "--systems", str(work / f"{engine}.yaml"),
                           "--out", str(work / name), "--quiet"], capture_output=True, text=True, env=env)


@pytest.fixture(scope="module")
def built(first200_index, tmp_path_factory):
    """Both engines' caches, built once, and the runs they give."""
    work = tmp_path_factory.mktemp("caches")
    runs = {}
    for engine in ("pisa", "tantivy"):
        res = _focused(first200_index, work, engine, work / "cache", f"ref_{engine}")
        assert res.returncode == 0, res.stderr
        runs[engine] = (work / f"ref_{engine}" / "runs" / f"{engine}_bm25.run").read_text()
    return work, runs


def _copy(built, tmp_path, engine: str) -> Path:
    """A copy of the built cache of ``engine`` (links kept as links); its directory."""
    work, _ = built
    src = next(p for p in (work / "cache").iterdir() if p.is_dir() and f"-{engine}-" in p.name)
    dest = tmp_path / "cache" / src.name
    shutil.copytree(src, dest, symlinks=True)
    return dest


def _truncate(path: Path, size: int) -> None:
    with open(path, "r+b") as fh:
        fh.truncate(size)


def _scramble(path: Path) -> None:
    import random

    path.write_bytes(random.Random(7).randbytes(path.stat().st_size))  # same size, other bytes


PISA_DAMAGE = {
    # a per-setting file cut short (what kill -9 during the first search at a setting left in place)
    "setting_truncated": (lambda d: _truncate(d / "settings" / SETTING / f"{SETTING}.q0.bmw.64.block_simdbp", 9000),
                          "PISA's files for k1=1.2, b=0.75"),
    "setting_scrambled": (lambda d: _scramble(d / "settings" / SETTING / f"{SETTING}.q0.bmw.64"),
                          f"{SETTING}.q0.bmw.64 changed since it was written"),
    "setting_empty": (lambda d: _truncate(d / "settings" / SETTING / f"{SETTING}.q0.bmw.64.block_simdbp", 0),
                      "has 0 bytes"),
    "index_truncated": (lambda d: _truncate(d / "pisa" / "inv.docs", 1000), "pisa/inv.docs has 1,000 bytes"),
    "index_file_gone": (lambda d: (d / "pisa" / "pt_meta.json").unlink(), "pisa/pt_meta.json is missing"),
}


@pytest.mark.parametrize("case", sorted(PISA_DAMAGE))
def test_a_damaged_pisa_file_is_prepared_again_never_a_signal(built, first200_index, tmp_path, case):
    """EP_a/b/b2/f/g: before, every later search died of SIGSEGV or SIGABRT with nothing printed."""
    damage, says = PISA_DAMAGE[case]
    damage(_copy(built, tmp_path, "pisa"))
    res = _focused(first200_index, tmp_path, "pisa", tmp_path / "cache", "o")
    assert res.returncode == 0, (res.returncode, res.stderr)
    assert says in res.stderr and "again" in res.stderr, res.stderr
    assert (tmp_path / "o" / "runs" / "pisa_bm25.run").read_text() == built[1]["pisa"]


def test_a_setting_left_half_prepared_by_a_killed_run_is_never_used(built, first200_index, tmp_path):
    """What a kill -9 during the first search at a setting leaves now: its staging directory,
    with a file cut short. The next run does not see it as the setting, prepares the setting
    again, and removes the leftover."""
    where = _copy(built, tmp_path, "pisa")
    shutil.rmtree(where / "settings" / SETTING)
    stage = where / "settings" / f".{SETTING}.99999.partial"
    stage.mkdir()
    (stage / f"{SETTING}.q0.bmw.64.block_simdbp").write_bytes(b"\0" * 4096)
    res = _focused(first200_index, tmp_path, "pisa", tmp_path / "cache", "o")
    assert res.returncode == 0, res.stderr
    assert (tmp_path / "o" / "runs" / "pisa_bm25.run").read_text() == built[1]["pisa"]
    assert not stage.exists() and json.loads((where / "settings" / SETTING / "setting.json").read_text())["k1"] == 1.2


def test_a_pisa_crash_while_preparing_a_setting_is_one_line(built, first200_index, tmp_path):
    """The first search at a setting runs PISA's compression in a child process: an index file
    damaged in a way its digest cannot tell (here: emptied, and the digest forged) makes PISA
    abort there, and nteval says so in one line (exit 2) instead of dying of the signal."""
    where = _copy(built, tmp_path, "pisa")
    shutil.rmtree(where / "settings")
    (where / "pisa" / "inv.docs").write_bytes(b"")
    meta = json.loads((where / "meta.json").read_text())
    meta["files"]["pisa/inv.docs"] = [0, hashlib.sha256(b"").hexdigest()]
    (where / "meta.json").write_text(json.dumps(meta))
    res = _focused(first200_index, tmp_path, "pisa", tmp_path / "cache", "o")
    assert res.returncode == 2, (res.returncode, res.stderr)
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and "PISA failed to prepare its postings for k1=1.2, b=0.75 (died of SIGABRT" in lines[0]
    assert "delete this directory" in lines[0] and not list((where / "settings").iterdir())


def test_tantivy_without_its_meta_json_is_built_again_not_opened_empty(built, first200_index, tmp_path):
    """H5 (ET_c): Tantivy opens a directory without meta.json as a new empty index (RR 0, rc 0,
    and wrong for ever after); the cache's digests find the file missing and it is built again."""
    where = _copy(built, tmp_path, "tantivy")
    (where / "tantivy" / "meta.json").unlink()
    res = _focused(first200_index, tmp_path, "tantivy", tmp_path / "cache", "o")
    assert res.returncode == 0, res.stderr
    assert "tantivy/meta.json is missing): building it again" in res.stderr
    assert (tmp_path / "o" / "runs" / "tantivy_bm25.run").read_text() == built[1]["tantivy"]


def test_tantivy_holding_fewer_documents_than_recorded_is_refused(built, first200_index, tmp_path):
    """Past the digests (here: meta.json removed from the recorded files too), the opened index's
    document count must be the one recorded: one line naming the cache to delete."""
    where = _copy(built, tmp_path, "tantivy")
    (where / "tantivy" / "meta.json").unlink()
    meta = json.loads((where / "meta.json").read_text())
    del meta["files"]["tantivy/meta.json"]
    (where / "meta.json").write_text(json.dumps(meta))
    res = _focused(first200_index, tmp_path, "tantivy", tmp_path / "cache", "o")
    assert res.returncode == 2, res.stderr
    assert f"the Tantivy index holds 0 documents where its meta.json says {meta['documents']:,}: delete {where}" \
        in res.stderr and len(res.stderr.strip().splitlines()) == 1


def test_pisa_keeps_only_the_settings_used_last_and_rotates_its_log(built, first200_index, tmp_path, monkeypatch):
    """M1: each k1/b searched is a compressed copy of the postings; NTEVAL_PISA_SETTINGS bound how
    many stay (the least recently used go first), and pisa.log is rotated."""
    import nteval.systems.pisa as pisa
    from nteval.index import read_manifest
    from nteval.systems.execute import Target, run_system
    from nteval.systems.system import make_system

    where = _copy(built, tmp_path, "pisa")
    monkeypatch.setenv("NTEVAL_ENGINE_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("NTEVAL_PISA_SETTINGS", "2")
    monkeypatch.setattr(pisa, "LOG_BYTES", 2000)
    target = Target(first200_index, "nt", read_manifest(first200_index)["fingerprint"])
    topics = {"q1": "protein kinase inhibitors", "q2": "cancer screening"}
    runs = {}
    for k1 in (0.6, 0.9, 1.2, 0.6, 1.5):
        runs.setdefault(k1, run_system(target, make_system("p", "pisa", {"k1": k1, "b": 0.5}), topics, 50))
        assert run_system(target, make_system("p", "pisa", {"k1": k1, "b": 0.5}), topics, 50) == runs[k1]
    kept = sorted(d.name for d in (where / "settings").iterdir())
    assert kept == ["bm25.k1-0.6.b-0.5", "bm25.k1-1.5.b-0.5"]  # 0.6 was used again after 0.9 and 1.2
    assert (where / "pisa.log.1").is_file() and (where / "pisa.log").stat().st_size <= 2000 + 64_000
    with pytest.raises(Exception, match="NTEVAL_PISA_SETTINGS must be a whole number ≥ 1"):
        monkeypatch.setenv("NTEVAL_PISA_SETTINGS", "0")
        run_system(target, make_system("p", "pisa", {"k1": 2.0, "b": 0.5}), topics, 50)
