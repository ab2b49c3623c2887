"""A killed `nteval index` over several files resumes after its last complete file (real
subprocess, real SIGKILL, real Lucene)."""
from __future__ import annotations

import signal
import sqlite3
import subprocess
import sys
import time

from conftest import FIRST100, FIRST200, MEDSAMP2006
from index_compare import assert_same_index, renumbered

import nteval.index.build
from nteval.index import build_index


def _checkpoints(store) -> int:
    try:
        db = sqlite3.connect(f"file:{store}?mode=ro", uri=True, timeout=0.1)
        try:
            return int(db.execute("SELECT COUNT(*) FROM _checkpoint").fetchone()[0])
        finally:
            db.close()
    except sqlite3.Error:
        return 0


def test_killed_build_resumes_after_the_last_complete_file(tmp_path, monkeypatch, capsys):
    big = renumbered(tmp_path / "big.xml", FIRST200, copies=8)  # 1,600 records: a few seconds to parse
    files = [FIRST100, big, FIRST200, MEDSAMP2006]
    out = tmp_path / "idx"
    partial = tmp_path / ".idx.partial"
    p = subprocess.Popen([sys.executable, "-m", "nteval.cli", "index", *map(str, files), "--out", str(out),
                          "--jobs", "1", "--quiet"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.time() + 120
    while time.time() < deadline and p.poll() is None and _checkpoints(partial / "docs.sqlite") < 1:
        time.sleep(0.01)
    p.send_signal(signal.SIGKILL)
    p.wait(timeout=60)
    assert p.returncode == -signal.SIGKILL
    assert not out.exists() and partial.is_dir()
    done = _checkpoints(partial / "docs.sqlite")
    assert 1 <= done < len(files)
    print(f"killed after {done} of {len(files)} files", file=sys.__stderr__)

    parsed = []
    real = nteval.index.build.parse_file
    monkeypatch.setattr(nteval.index.build, "parse_file", lambda path, *a: parsed.append(path) or real(path, *a))
    build_index(files, out, jobs=1)
    assert f"resuming the build of {out}: {done} of {len(files)} source file(s) already done" in capsys.readouterr().err
    assert parsed == files[done:]  # only the files after the last checkpoint
    assert not partial.exists()

    monkeypatch.setattr(nteval.index, "parse_file", real)
    ref = tmp_path / "ref"
    build_index(files, ref)
    assert_same_index(out, ref)


def test_other_sources_discard_a_partial_build(tmp_path, capsys):
    out = tmp_path / "idx"
    partial = tmp_path / ".idx.partial"
    partial.mkdir()
    (partial / "docs.sqlite").write_bytes(b"not a database at all, 32 bytes")
    (partial / "junk").mkdir()
    m = build_index([FIRST100], out)
    assert "discarding the interrupted build" in capsys.readouterr().err
    assert m["counts"]["seen"] == 100 and not partial.exists()
