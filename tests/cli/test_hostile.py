"""What a hostile tester hit (../shared/hostile/README.md, its N- and P-numbers), each fixed and
tested here: races between readers and writers of an index, damaged resume directories and caches,
user code that exits or floods, unbounded inputs, bad numbers, broken places to write."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import FIRST100, FIRST200, HANG, cli, one_line_error, quick

from nteval.encoders import models, store

ROOT = Path(__file__).resolve().parents[2]
NTEVAL = [sys.executable, "-m", "nteval.cli"]


def _copy_index(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns("nteval-docids*", "dense"))
    return dst


# -- N43/N44: readers and writers of one index -------------------------------------------------------

def test_a_writer_is_refused_while_a_protocol_reads_the_index_and_the_other_way_round(first200_index, tmp_path):
    """N43 (--update) and N44 (--force) while a protocol runs: before, the protocol searched the new
    index (or none) and cached the result under the old fingerprint."""
    from nteval.atomic import out_lock, read_lock

    idx = _copy_index(first200_index, tmp_path / "idx")
    with read_lock(idx):  # what every protocol run, grid, correlate and export holds
        r = subprocess.run([*NTEVAL, "index", "--update", str(idx), str(FIRST100)], capture_output=True, text=True)
        assert r.returncode == 2 and "another nteval process is reading this index" in r.stderr, r.stderr
        r = subprocess.run([*NTEVAL, "index", str(FIRST100), "--out", str(idx), "--force"], capture_output=True, text=True)
        assert r.returncode == 2 and "reading this index" in r.stderr
    # a writer in another process (what index --update / --force hold while they build)
    holder = subprocess.Popen([sys.executable, "-c", "import sys, time; from nteval.atomic import out_lock\n"
                               f"with out_lock({str(idx)!r}):\n    print('held', flush=True); time.sleep(60)"],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        one_line_error(cli("focused", "--index", idx, "--topics", "20", "--min-topics", "5", "--out", tmp_path / "f"),
                       f"(pid {holder.pid}) is writing this index", "wait for it to finish")
    finally:
        holder.kill()
        holder.wait()
    assert not (tmp_path / "f").exists()
    assert out_lock  # (the same lock, held shared by readers)
    r = cli("focused", "--index", idx, "--topics", "20", "--min-topics", "5", "--out", tmp_path / "f", "--quiet")
    assert r.exit_code == 0, r.output  # and once nobody writes, it runs


def test_runs_made_while_the_index_changed_are_not_kept(first200_index, tmp_path):
    """Whatever changes an index without nteval's locks (another machine on NFS): the fingerprint is
    checked before results are written; the runs of that call are removed, not cached."""
    from nteval.errors import InputError
    from nteval.experiment import check_unchanged
    from nteval.index import read_manifest
    from nteval.runs import RunInfo
    from nteval.systems.base import make_system

    idx = _copy_index(first200_index, tmp_path / "idx")
    before = read_manifest(idx)
    run = tmp_path / "bm25.run"
    run.write_text("x")
    (tmp_path / "bm25.meta.json").write_text("{}")
    m = json.loads((idx / "manifest.json").read_text())
    m["fingerprint"] = "0" * 64
    (idx / "manifest.json").write_text(json.dumps(m))
    with pytest.raises(InputError, match="the index changed while the systems ran"):
        check_unchanged(idx, before, [RunInfo(make_system("bm25", "bm25"), run, "k", False, 1.0, 0, None)])
    assert not run.exists() and not (tmp_path / "bm25.meta.json").exists()


# -- N47/N48: a damaged resume directory -------------------------------------------------------------

def _killed_partial(tmp_path: Path, files: list[Path]) -> Path:
    """A real build SIGKILLed after its first file's checkpoint: its .partial directory (a copy)."""
    import signal
    import sqlite3

    out, partial = tmp_path / "k" / "idx", tmp_path / "k" / ".idx.partial"
    p = subprocess.Popen([*NTEVAL, "index", *map(str, files), "--out", str(out), "--jobs", "1", "--quiet"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 120
    while time.time() < deadline and p.poll() is None:
        try:
            db = sqlite3.connect(f"file:{partial / 'docs.sqlite'}?mode=ro", uri=True, timeout=0.1)
            try:
                if db.execute("SELECT COUNT(*) FROM _checkpoint").fetchone()[0] >= 1:
                    break
            finally:
                db.close()
        except sqlite3.Error:
            pass
        time.sleep(0.01)
    p.send_signal(signal.SIGKILL)
    p.wait(timeout=60)
    assert partial.is_dir(), "the build finished before it could be killed"
    keep = tmp_path / "partial_1"
    shutil.copytree(partial, keep)
    return keep


@pytest.fixture(scope="module")
def killed(tmp_path_factory):
    from index_compare import renumbered

    base = tmp_path_factory.mktemp("killed")
    big = renumbered(base / "big.xml", FIRST200, copies=8)
    files = [FIRST100, big]
    return files, _killed_partial(base, files)


@pytest.mark.parametrize("damage, why", [
    ("truncate_batch", "its staged batch 00000.jsonl changed since its checkpoint"),
    ("edit_batch", "its staged batch 00000.jsonl changed since its checkpoint"),
    ("delete_rows", "its document store holds"),
])
def test_a_damaged_resume_directory_is_discarded_not_trusted(killed, tmp_path, damage, why, capsys):
    import sqlite3

    from index_compare import assert_same_index

    from nteval.index import build_index

    files, partial = killed
    work = tmp_path / ".idx.partial"
    shutil.copytree(partial, work)
    batch = work / ".collections" / "json" / "00000.jsonl"
    if damage == "truncate_batch":
        batch.write_text("".join(batch.read_text().splitlines(keepends=True)[:10]))
    elif damage == "edit_batch":
        batch.write_text(batch.read_text().replace("the", "INJECTED", 1))
    else:
        db = sqlite3.connect(str(work / "docs.sqlite"))
        db.execute("DELETE FROM docs WHERE rowid % 10 = 0")
        db.commit()
        db.close()
    build_index(files, tmp_path / "idx", jobs=1)
    err = capsys.readouterr().err
    assert "discarding the interrupted build" in err and why in err, err
    ref = tmp_path / "ref"
    build_index(files, ref, jobs=1)
    assert_same_index(tmp_path / "idx", ref)


def test_a_build_whose_lucene_counts_disagree_with_its_store_is_not_an_index(tmp_path, monkeypatch):
    from nteval.errors import InputError
    from nteval.index import build_index
    from nteval.lucene import indexer

    real = indexer.doc_count
    monkeypatch.setattr(indexer, "doc_count", lambda path: real(path) - (1 if Path(path).name == "nt" else 0))
    with pytest.raises(InputError, match="the nt index being built holds .* documents but the document store"):
        build_index([FIRST100], tmp_path / "idx")
    assert not (tmp_path / "idx").exists() and not list(tmp_path.glob(".idx*"))


# -- N29/N28/N75: damaged caches are checked, rebuilt, and said so -----------------------------------

@pytest.fixture
def fresh_dense(dense_cache):
    from nteval.systems import dense

    return dense_cache, dense


def _dense_rr(index, out, systems_yaml, capsys=None) -> float:
    from nteval.encoders import store
    from nteval.experiment import run_focused
    from nteval.systems import dense

    store._VECTORS.clear()
    dense._FAISS.clear()
    res = run_focused(index, out, n_topics=40, seed=2, systems=systems_yaml, progress=False, min_topics=10)
    return res["systems"]["dense"]["RR"]


@pytest.mark.parametrize("damage", ["rotate_docids", "reverse_vectors", "truncate_vectors", "broken_meta",
                                    "drop_docid_line", "wrong_width"])
def test_a_damaged_dense_cache_is_encoded_again(first200_index, fresh_dense, tmp_path, damage, capsys):
    import numpy as np

    cache, dense = fresh_dense
    yml = tmp_path / "d.yaml"
    yml.write_text("- {name: dense, algorithm: dense}\n")
    good = _dense_rr(first200_index, tmp_path / "a", yml)
    [d] = [p for p in cache.iterdir() if p.is_dir() and p.name != "onnx"]   # (onnx/: the session export it starts with)
    vec, ids = d / "vectors-float32.npy", d / "docids.txt"
    if damage == "rotate_docids":
        lines = ids.read_text().splitlines(keepends=True)
        ids.write_text("".join(lines[1:] + lines[:1]))
    elif damage == "reverse_vectors":
        np.save(vec, np.load(vec)[::-1].copy())
    elif damage == "truncate_vectors":
        vec.write_bytes(vec.read_bytes()[: vec.stat().st_size // 2])
    elif damage == "broken_meta":
        (d / "meta.json").write_text("{broken")
    elif damage == "drop_docid_line":
        ids.write_text("".join(ids.read_text().splitlines(keepends=True)[:-1]))
    else:
        np.save(vec, np.zeros((5, 3), dtype=np.float32))
    capsys.readouterr()
    again = _dense_rr(first200_index, tmp_path / "b", yml)  # (a new OUT: the run is made again)
    err = capsys.readouterr().err
    assert "note: the dense vectors cache" in err and "is damaged" in err and "encoding again" in err
    assert again == good


def test_a_damaged_encoding_part_is_encoded_again_on_resume(first200_index, fresh_dense, tmp_path):
    """N29's third case: a finished part of a killed encoding, changed before the resume."""
    import numpy as np

    cache, dense = fresh_dense
    from nteval.index import read_manifest

    fp = read_manifest(first200_index)["fingerprint"]
    enc = models.load_encoder("wordllama", 256, "dense")
    ref = store.document_vectors(first200_index, "nt", fp, enc, progress=False).matrix.copy()
    final = store.cache_dir(first200_index, "nt", fp, enc)
    partial = final.with_name(final.name + ".partial")
    shutil.copytree(final, partial)  # (a killed encoding's state: one finished part and its digest)
    (partial / "meta.json").unlink()
    (partial / "vectors-float32.npy").unlink()
    np.save(partial / "part-000000.npy", ref[::-1].copy())
    (partial / "parts.json").write_text(json.dumps({"0": dense._sha256(partial / "part-000000.npy")}) + "\n")
    shutil.rmtree(final)
    store._VECTORS.clear()
    resumed = store.document_vectors(first200_index, "nt", fp, enc, progress=False)
    assert json.loads((final / "meta.json").read_text())["encoded_this_time"] == 0  # the part was trusted ...
    assert np.array_equal(resumed.matrix, ref[::-1])                                  # ... as its digest says
    # now a part that is NOT the file its digest recorded: encoded again
    shutil.copytree(final, partial)
    (partial / "meta.json").unlink()
    np.save(partial / "part-000000.npy", ref[::-1].copy())
    (partial / "parts.json").write_text(json.dumps({"0": "0" * 64}) + "\n")
    shutil.rmtree(final)
    store._VECTORS.clear()
    again = store.document_vectors(first200_index, "nt", fp, enc, progress=False)
    assert json.loads((final / "meta.json").read_text())["encoded_this_time"] == len(ref)
    assert np.array_equal(again.matrix, ref)


def test_a_reordered_docid_table_is_written_again(first200_index, tmp_path, capsys):
    """N75: a Lucene docid table of the right length but the wrong order (RR 0.0035 before)."""
    import numpy as np

    from nteval.lucene.searcher import Index

    idx = _copy_index(first200_index, tmp_path / "idx")
    with Index(idx / "nt") as nt:
        ref = nt.search("cancer patients treatment", 10)
    [table] = list((idx / "nt").glob("nteval-docids.*.npy"))
    np.save(table, np.load(table)[::-1].copy())
    capsys.readouterr()
    with Index(idx / "nt") as nt:
        assert nt.search("cancer patients treatment", 10) == ref
    assert "does not match its index (damaged?): writing it again" in capsys.readouterr().err


# -- N57: a worker that starts after nteval was killed does not compute ----------------------------

def test_a_worker_whose_nteval_is_already_gone_exits_at_once(tmp_path):
    """The kill -9 window of grid --jobs 2 (3.3-3.5 s): a worker taking its first task after the
    parent died used to compute and store the cell."""
    marker = tmp_path / "computed"
    worker = textwrap.dedent(f"""
        import os, sys, time
        parent = int(sys.argv[1])
        while True:  # wait until the parent is gone
            try:
                os.kill(parent, 0)
            except ProcessLookupError:
                break
            time.sleep(0.05)
        from nteval.lifecycle import watch_parent
        watch_parent(parent)
        open({str(marker)!r}, "w").write("computed")
    """)
    parent = textwrap.dedent(f"""
        import os, subprocess, sys
        subprocess.Popen([sys.executable, "-c", {worker!r}, str(os.getpid())])
        os._exit(0)
    """)
    subprocess.run([sys.executable, "-c", parent], check=True)
    time.sleep(3)
    assert not marker.exists()


# -- N49/N51/N52: a scheduler that is not one --------------------------------------------------------

def _fake_scheduler(mode: str) -> int:
    """A TCP peer on 127.0.0.1 that accepts and then never speaks (silent) or speaks garbage."""
    import socket
    import threading

    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(8)

    def serve() -> None:
        while True:
            c, _ = srv.accept()

            def one(c=c) -> None:
                try:
                    while mode == "garbage":
                        c.sendall(os.urandom(4096))
                        time.sleep(0.05)
                    time.sleep(600)
                except OSError:
                    pass
            threading.Thread(target=one, daemon=True).start()

    threading.Thread(target=serve, daemon=True).start()
    return srv.getsockname()[1]


@pytest.mark.parametrize("mode", ["silent", "garbage"])
def test_a_scheduler_that_never_answers_is_one_line_within_the_timeout(first200_index, tmp_path, mode):
    pytest.importorskip("distributed")
    port = _fake_scheduler(mode)
    t0 = time.time()
    r = subprocess.run([*NTEVAL, "grid", "--index", str(first200_index), "--param", "k1=1,2", "--protocol", "focused",
                        "--topics", "20", "--min-topics", "10", "--quiet", "--out", str(tmp_path / "g"),
                        "--scheduler", f"tcp://127.0.0.1:{port}"], capture_output=True, text=True, timeout=HANG,
                       env={**os.environ, "NTEVAL_SCHEDULER_TIMEOUT": "3"})
    took = time.time() - t0
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 2 and len(lines) == 1 and lines[0].startswith(f"nteval: error: --scheduler tcp://127.0.0.1:{port}"), r.stderr
    assert took < quick(40), took  # (it waited 590 s and more before)
    assert not (tmp_path / "g").exists()
    said = re.search(r"no answer (?:within|after) (\d+) s", lines[0])
    if mode == "silent":  # L9: the time it says is the time it waited (it said "30 s" after 46 s)
        assert said and abs(int(said.group(1)) - took) <= quick(4), (lines[0], took)


@pytest.mark.parametrize("address, says", [("foo", "expected tcp://HOST:PORT"), ("tcp://", "expected tcp://HOST:PORT"),
                                           ("tcp://127.0.0.1:notaport", "expected tcp://HOST:PORT"),
                                           ("http://127.0.0.1:8786", "the http:// protocol is not supported"),
                                           ("ucx://127.0.0.1:1", "the ucx:// protocol is not supported"),
                                           ("tcp://127.0.0.1:99999", "port 99999 is not a port")])
def test_a_malformed_scheduler_address_is_one_line_at_once(first200_index, tmp_path, address, says):
    pytest.importorskip("distributed")
    t0 = time.time()
    r = subprocess.run([*NTEVAL, "focused", "--index", str(first200_index), "--topics", "20", "--min-topics", "10",
                        "--out", str(tmp_path / "f"), "--scheduler", address], capture_output=True, text=True, timeout=HANG)
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 2 and len(lines) == 1 and lines[0].startswith(f"nteval: error: --scheduler {address}: {says}"), r.stderr
    assert time.time() - t0 < quick(15)


# -- N7, N16-N21: user code and programs ---------------------------------------------------------------

CALLABLES = textwrap.dedent("""
    import os, sys
    def exits0(queries, k): sys.exit(0)
    def exits3(queries, k): raise SystemExit(3)
    def os_exit(queries, k): os._exit(0)
    def good(queries, k): return {q: [("x", 1.0)] for q in queries}
    def chdir(queries, k):  # focused topic ids are docids: each query finds its own document
        os.chdir("/")
        return {q: [(q, 1.0)] for q in queries}
""")


@pytest.mark.parametrize("fn, says", [("exits0", "called sys.exit(0)"), ("exits3", "called sys.exit(3)"),
                                      ("os_exit", "called os._exit(0)")])
def test_a_callable_that_exits_does_not_end_nteval(first200_index, tmp_path, fn, says, monkeypatch):
    """N7: rc 0, no output, no results, before."""
    (tmp_path / "hostile_mod.py").write_text(CALLABLES)
    yml = tmp_path / "s.yaml"
    yml.write_text(f"- {{name: bm25, algorithm: bm25}}\n- {{name: mine, callable: 'hostile_mod:{fn}', version: 1}}\n")
    r = subprocess.run([*NTEVAL, "focused", "--index", str(first200_index), "--topics", "20", "--min-topics", "10",
                        "--systems", str(yml), "--out", str(tmp_path / "f"), "--allow-code"],
                       capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(tmp_path)}, timeout=HANG)
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert r.stderr.strip().splitlines() == [f"nteval: error: system 'mine': its search {says} instead of returning "
                                             "rankings"], r.stderr
    assert (tmp_path / "f" / "runs" / "bm25.run").is_file() and not (tmp_path / "f" / "results.json").exists()


def test_a_callable_that_changes_directory_does_not_move_relative_paths(first200_index, tmp_path):
    """N10: sqlite3 "unable to open database file" (rc 1, 50 lines), before."""
    (tmp_path / "hostile_mod.py").write_text(CALLABLES)
    shutil.copytree(first200_index, tmp_path / "idx", ignore=shutil.ignore_patterns("nteval-docids*", "dense"))
    (tmp_path / "s.yaml").write_text("- {name: bm25, algorithm: bm25}\n- {name: mine, callable: 'hostile_mod:chdir', "
                                     "version: 1}\n")
    r = subprocess.run([*NTEVAL, "focused", "--index", "idx", "--topics", "20", "--min-topics", "10", "--systems",
                        "s.yaml", "--out", "f", "--allow-code", "--quiet"], cwd=tmp_path, capture_output=True, text=True,
                       env={**os.environ, "PYTHONPATH": str(tmp_path)}, timeout=HANG)
    assert r.returncode == 0, r.stderr
    assert set(json.loads((tmp_path / "f" / "results.json").read_text())["systems"]) == {"bm25", "mine"}


def _command_yaml(tmp_path: Path, script: str, name: str = "cmd") -> Path:
    prog = tmp_path / f"{name}.sh"
    prog.write_text("#!/bin/sh\n" + script)
    prog.chmod(0o755)
    yml = tmp_path / f"{name}.yaml"
    yml.write_text(f"- {{name: bm25, algorithm: bm25}}\n- {{name: {name}, command: '{prog} {{topics}} {{run}} {{k}}', "
                   "version: 1}\n")
    return yml


def _good_run_line() -> str:
    """sh that writes a one-hit TREC run for every topic of $1 into $2 (the topic's own document:
    focused topic ids are docids)."""
    return "awk -F'\\t' '{print $1\" Q0 \"$1\" 1 1.0 cmd\"}' \"$1\" > \"$2\"\n"


def test_a_programs_stderr_is_not_held_in_memory(first200_index, tmp_path):
    """N17: 2 GB of stderr cost 2.1 GB of RSS. Now: its last 64 KB."""
    yml = _command_yaml(tmp_path, "head -c 300000000 /dev/zero | tr '\\0' x >&2\n" + _good_run_line() + "exit 3\n")
    # a fresh parent between pytest and nteval: its RUSAGE_CHILDREN peak is this command's alone
    # (pytest's own would hold the largest child of the whole session)
    peak = "import resource, subprocess, sys; subprocess.run(sys.argv[1:]); " \
           "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)"
    r = subprocess.run([sys.executable, "-c", peak, *NTEVAL, "focused", "--index", str(first200_index), "--topics",
                        "20", "--min-topics", "10", "--systems", str(yml), "--out", str(tmp_path / "f"), "--allow-code"],
                       capture_output=True, text=True, timeout=HANG)
    peak_kb = int(r.stdout.split()[-1])
    assert "its command exited with status 3: xxxx" in r.stderr and "its command exited with status 3: xxxx" in r.stderr and len(r.stderr) < 400
    assert peak_kb < 1_000_000, peak_kb  # (300 MB of stderr: before, ≥ 300 MB held; the JVM's ~400 MB aside)


def test_a_program_that_leaves_children_does_not_keep_nteval_waiting_nor_outlive_it(first200_index, tmp_path):
    """N18: a background child kept nteval waiting as long as it lived; N20: after SIGKILL of nteval
    the program's grandchild and its temporary directory stayed."""
    marker = tmp_path / "child-alive"
    yml = _command_yaml(tmp_path, _good_run_line() + f"(sleep 30; touch {marker}) &\n")
    t0 = time.time()
    r = subprocess.run([*NTEVAL, "focused", "--index", str(first200_index), "--topics", "20", "--min-topics", "10",
                        "--systems", str(yml), "--out", str(tmp_path / "f"), "--allow-code", "--quiet"],
                       capture_output=True, text=True, timeout=HANG)
    assert r.returncode == 0, r.stderr
    assert time.time() - t0 < quick(25)
    # SIGKILL of nteval while the program runs: the program, its children and its temporary directory go —
    # whether the kill reaches nteval alone or its whole process group (kill -9 -PGID; hostile re-run N20g: the
    # supervisor died with the group and the program's session survived)
    import signal

    hang = _command_yaml(tmp_path, f"(sleep 300; touch {marker}) &\nsleep 300\n", name="hang")
    for how in ("pid", "group"):
        tmpdirs = tmp_path / f"tmp-{how}"
        tmpdirs.mkdir()
        p = subprocess.Popen([*NTEVAL, "focused", "--index", str(first200_index), "--topics", "20", "--min-topics", "10",
                              "--systems", str(hang), "--out", str(tmp_path / f"h-{how}"), "--allow-code", "--quiet"],
                             env={**os.environ, "TMPDIR": str(tmpdirs)}, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL, start_new_session=(how == "group"))
        deadline = time.time() + 120
        while time.time() < deadline and not list(tmpdirs.glob("nteval-command-*/topics.tsv")):
            time.sleep(0.1)
        time.sleep(1)
        if how == "group":
            os.killpg(p.pid, signal.SIGKILL)
        else:
            p.send_signal(signal.SIGKILL)
        p.wait()
        time.sleep(3)
        left = subprocess.run(["pgrep", "-f", f"touch {marker}"], capture_output=True, text=True).stdout.split()
        assert left == [] and list(tmpdirs.glob("nteval-command-*")) == [], how


def test_program_failures_are_clean_lines(first200_index, tmp_path):
    """N16: an unbalanced quote (a traceback); N21: escape sequences from stderr reached the terminal;
    N14: '> {run}' does not work (no shell) and the error now says so."""
    bad = tmp_path / "q.yaml"
    bad.write_text("- {name: c, command: \"prog 'unclosed {run}\", version: 1}\n")
    one_line_error(cli("systems", bad), "cannot be split into arguments")
    esc = _command_yaml(tmp_path, "printf '\\033]0;PWNED\\007\\033[2J\\033[31mRED-INJECTED\\n' >&2\nexit 1\n", name="esc")
    r = subprocess.run([*NTEVAL, "focused", "--index", str(first200_index), "--topics", "20", "--min-topics", "10",
                        "--systems", str(esc), "--out", str(tmp_path / "f"), "--allow-code"],
                       capture_output=True, text=True, timeout=HANG)
    assert r.returncode == 2 and "RED-INJECTED" in r.stderr and "\x1b" not in r.stderr and "\x07" not in r.stderr
    redirect = tmp_path / "redir.yaml"
    redirect.write_text("- {name: r, command: 'echo 1 > {run}', version: 1}\n")
    r = subprocess.run([*NTEVAL, "focused", "--index", str(first200_index), "--topics", "20", "--min-topics", "10",
                        "--systems", str(redirect), "--out", str(tmp_path / "r"), "--allow-code"],
                       capture_output=True, text=True, timeout=HANG)
    assert r.returncode == 2 and "not by a shell" in r.stderr


# -- N62-N66, P11i, N68: numbers and files too big for their target ----------------------------------

@pytest.mark.parametrize("args, says", [
    (["evaluate", "--qrels", "Q", "--measures", "P@9223372036854775808", "R"], "the cutoff must be a whole number within"),
    (["evaluate", "--qrels", "Q", "--measures", "P(rel=2147483648)@10", "R"], "relevance level (rel=) must be"),
    (["evaluate", "--qrels", "Q", "--measures", "nDGC@10", "R"], "did you mean nDCG@10?"),
    (["grid", "--index", "I", "--param", "k1=0:1e999999:1", "--out", "O"], "is out of range"),
    (["grid", "--index", "I", "--param", "k1=0:1e999999999:1", "--out", "O"], "is out of range"),
    (["grid", "--index", "I", "--param", "k1=0:1e15:1", "--out", "O"], "more than 10000 values"),
    (["focused", "--index", "I", "--depth", "2147483648", "--out", "O"], "'--depth': 2147483648 is not in the range"),
    (["focused", "--index", "I", "--seed", "-1", "--out", "O"], "'--seed': -1 is not in the range"),
    (["run", "--protocol", "mesh", "--param", "seed=-1", "--index", "I", "--out", "O"], "seed=-1: must be ≥ 0"),
    (["correlate", "--index", "I", "--queries", "Q", "--qrels", "Q", "--bootstrap", "0", "--out", "O"], "'--bootstrap'"),
    (["correlate", "--index", "I", "--queries", "Q", "--qrels", "Q", "--bootstrap", "1000000000", "--out", "O"],
     "'--bootstrap'"),
    (["focused", "--index", "I", "--systems", "tabel1", "--out", "O"], "did you mean table1?"),
    # hostile re-run N62b: ir_measures' own parameter checks are assertions (tracebacks before)
    (["evaluate", "--qrels", "Q", "--measures", "RBP(p=2)", "R"], "measure 'RBP(p=2)': its parameter p cannot be 2"),
    (["focused", "--index", "I", "--measures", "RBP(p=0)", "--out", "O"], "its parameter p cannot be 0"),
    (["evaluate", "--qrels", "Q", "--measures", "SDCG@10", "R"], "its parameter max_rel must be given"),
    (["evaluate", "--qrels", "Q", "--measures", "P(judged_only=1)@10", "R"], "its parameter judged_only cannot be 1"),
    (["run", "--protocol", "focsed", "--index", "I", "--out", "O"], "did you mean focused?"),
])
def test_numbers_and_names_are_refused_before_any_work(first200_index, tmp_path, args, says):
    sub = {"I": str(first200_index), "O": str(tmp_path / "o"), "Q": str(tmp_path / "q.txt"), "R": str(tmp_path / "r.run")}
    (tmp_path / "q.txt").write_text("1 0 d 1\n")
    (tmp_path / "r.run").write_text("1 Q0 d 1 1.0 t\n")
    t0 = time.time()
    one_line_error(cli(*[sub.get(a, a) for a in args]), says)
    assert time.time() - t0 < quick(10) and not (tmp_path / "o").exists()


def test_trec_eval_measure_names_are_read_as_ir_measures(first200_index, tmp_path):
    (tmp_path / "q.txt").write_text("1 0 d 1\n2 0 e 1\n")
    (tmp_path / "r.run").write_text("1 Q0 d 1 2.0 t\n1 Q0 x 2 1.0 t\n2 Q0 x 1 1.0 t\n")
    r = cli("evaluate", "--qrels", tmp_path / "q.txt", "--measures", "map P.1 recip_rank ndcg_cut.10", "--json",
            tmp_path / "r.run")
    assert r.exit_code == 0, r.output
    assert "trec_eval's measure names read as ir_measures'" in r.stderr and "map → AP" in r.stderr
    assert json.loads(r.stdout) == {"t": {"AP": 0.5, "P@1": 0.5, "RR": 0.5, "nDCG@10": 0.5}}


def test_deep_yaml_is_refused_at_once(tmp_path):
    """N68: 100,000 nested lists took 229 s and ended in a RecursionError."""
    from nteval.errors import InputError
    from nteval.systems.base import load_systems

    for depth, says in ((100_000, "invalid YAML"), (25, "nested deeper than 20 levels")):
        p = tmp_path / f"deep{depth}.yaml"
        p.write_text("- {name: x, algorithm: bm25, params: {k1: " + "[" * depth + "]" * depth + "}}\n")
        t0 = time.time()
        with pytest.raises(InputError, match=says):
            load_systems(p)
        assert time.time() - t0 < quick(2)


@pytest.mark.parametrize("params, says", [("{index: hnsw, hnsw_m: 1}", "hnsw_m must be within [2, 256]"),
                                          ("{index: hnsw, hnsw_m: 1000000}", "hnsw_m must be within"),
                                          ("{index: hnsw, ef_search: 1000000000}", "ef_search must be at most"),
                                          ("{index: ivf, nlist: 1000000000}", "nlist must be at most")])
def test_faiss_settings_that_crash_it_are_refused_when_declared(tmp_path, params, says):
    """N24 (hnsw_m 1: SIGSEGV in libfaiss), N26 (std::bad_alloc)."""
    from nteval.errors import InputError
    from nteval.systems.base import load_systems

    p = tmp_path / "d.yaml"
    import re

    p.write_text(f"- {{name: d, algorithm: dense, params: {params}}}\n")
    with pytest.raises(InputError, match=re.escape(says)):
        load_systems(p)


def test_ivf_lists_beyond_the_collection_are_one_line(first200_index, tmp_path, monkeypatch):
    """N25: nlist 100,000 on a small collection: a faiss RuntimeError traceback."""
    monkeypatch.setenv("NTEVAL_DENSE_CACHE", str(tmp_path / "dc"))
    p = tmp_path / "d.yaml"
    p.write_text("- {name: d, algorithm: dense, params: {index: ivf, nlist: 100000}}\n")
    one_line_error(cli("focused", "--index", first200_index, "--topics", "20", "--min-topics", "10", "--systems", p,
                       "--out", tmp_path / "f", "--quiet"), "nlist 100,000 is more than the 178 documents")


def test_a_huge_external_run_is_read_within_the_depth(first200_index, tmp_path):
    """N3: a 10M-line run took 2.7 GB before its refusal; runs are now cut to the depth as they stream."""
    import resource

    from nteval.formats.trec import read_run_top

    big = tmp_path / "big.run"
    with open(big, "w") as fh:
        for i in range(1_000_000):
            fh.write(f"q{i % 10} Q0 d{i} 1 {i % 977 / 10:.1f} t\n")
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    run = read_run_top(big, 100)
    grew_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    assert sorted(run) == [f"q{i}" for i in range(10)] and all(len(r) == 100 for r in run.values())
    assert run["q0"][0][1] == 97.6 and grew_kb < 100_000  # (a whole read_run: ~700 MB here)
    from nteval.formats.trec import read_run, trec_order

    small = tmp_path / "small.run"
    small.write_text("".join(open(big).readlines()[:5000]))
    assert read_run_top(small, 7) == {q: trec_order(r)[:7] for q, r in read_run(small).items()}


# -- N73: damaged index internals ------------------------------------------------------------------------

def _halve(path: Path) -> None:
    with open(path, "r+b") as fh:
        fh.truncate(path.stat().st_size // 2)


@pytest.mark.parametrize("damage, says", [("halve_store", "database disk image is malformed"),
                                          ("drop_docs", "no such table: docs"),
                                          ("halve_postings", "CorruptIndexException")])
def test_damaged_index_files_are_one_line_that_says_rebuild(first200_index, tmp_path, damage, says):
    import sqlite3

    idx = _copy_index(first200_index, tmp_path / "idx")
    if damage == "halve_store":
        _halve(idx / "docs.sqlite")
    elif damage == "drop_docs":
        with sqlite3.connect(idx / "docs.sqlite") as db:
            db.execute("DROP TABLE docs")
    else:  # the largest Lucene file of nt (postings, or a compound file)
        _halve(max((p for p in (idx / "nt").iterdir() if p.name.startswith("_")), key=lambda p: p.stat().st_size))
    r = cli("focused", "--index", idx, "--topics", "20", "--min-topics", "5", "--quiet", "--out", tmp_path / "f")
    one_line_error(r, f"{idx}: ", "damaged", says, "rebuild it with nteval index --force")


# -- P6a/P6b/N59/N60: a full disk, a place that cannot be written ------------------------------------------

def _file_size_limit(limit: int):
    """preexec_fn: the process may write no file beyond ``limit`` bytes (``ulimit -f``); its writes
    then fail with EFBIG, the way a full disk fails them with ENOSPC."""
    def limit_files() -> None:
        import resource
        import signal

        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    return limit_files


def _stray(root: Path) -> list[Path]:
    """Temporary files an interrupted write would leave (every nteval temp name starts with a dot)."""
    return [p for p in root.rglob(".*") if not p.name.endswith(".lock")] if root.exists() else []


@pytest.mark.skipif(sys.platform != "linux", reason="RLIMIT_FSIZE and SIGXFSZ as Linux has them")
def test_a_write_that_fails_midway_is_one_line_keeps_what_is_complete_and_the_command_resumes(first200_index, tmp_path):
    out = tmp_path / "f"
    cmd = [*NTEVAL, "focused", "--index", str(first200_index), "--topics", "20", "--min-topics", "5", "--quiet",
           "--out", str(out)]
    r = subprocess.run(cmd, preexec_fn=_file_size_limit(20_000), capture_output=True, text=True, timeout=HANG)
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 1 and len(lines) == 1, r.stderr
    assert "ulimit -f" in lines[0] and str(out) in lines[0] and "nothing half-written" in lines[0], lines[0]
    assert (out / "topics.tsv").is_file() and not _stray(out)
    assert not list((out / "runs").glob("*")), "a run over the limit was kept"  # 20 topics × 1,000 lines each
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=HANG)
    assert r.returncode == 0, r.stderr
    assert json.loads((out / "results.json").read_text())["topic_counts"]["used"] == 20


@pytest.mark.skipif(sys.platform != "linux", reason="RLIMIT_FSIZE and SIGXFSZ as Linux has them")
def test_an_index_build_that_cannot_write_leaves_nothing(tmp_path):
    out = tmp_path / "idx"
    r = subprocess.run([*NTEVAL, "index", str(FIRST200), "--out", str(out)], preexec_fn=_file_size_limit(100_000),
                       capture_output=True, text=True, timeout=HANG)
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 1 and len(lines) == 1 and "Traceback" not in r.stderr, r.stderr
    assert "ulimit -f" in lines[0] or "full" in lines[0], lines[0]
    assert sorted(p.name for p in tmp_path.iterdir()) == []


@pytest.mark.skipif(sys.platform != "linux", reason="RLIMIT_FSIZE and SIGXFSZ as Linux has them")
def test_arrays_are_written_whole_or_not_at_all(tmp_path):
    code = textwrap.dedent(f"""
        import errno, numpy as np, sys
        from pathlib import Path
        from nteval.atomic import save_array
        try:
            save_array(Path({str(tmp_path)!r}) / "v.npy", np.ones((1000, 256), dtype=np.float32))
        except OSError as err:
            sys.exit(0 if err.errno in (errno.EFBIG, errno.ENOSPC) and err.filename.endswith("v.npy") else 3)
        sys.exit(4)
    """)
    r = subprocess.run([sys.executable, "-c", code], preexec_fn=_file_size_limit(100_000), capture_output=True,
                       text=True, timeout=HANG)
    assert r.returncode == 0, r.stderr
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("command", ["focused", "grid", "index"])
def test_an_out_below_a_file_is_one_line_before_any_work(first200_index, tmp_path, command):
    (tmp_path / "afile").write_text("mine\n")
    out = tmp_path / "afile" / "x"
    args = {"focused": ["focused", "--index", first200_index, "--topics", "20", "--min-topics", "5"],
            "grid": ["grid", "--index", first200_index, "--param", "k1=0.9,1.2", "--topics", "20", "--min-topics", "5"],
            "index": ["index", FIRST200]}[command]
    one_line_error(cli(*args, "--out", out), str(out), f"{tmp_path / 'afile'} is a file, not a directory")
    assert (tmp_path / "afile").read_text() == "mine\n"


def test_rank_baselines_refuses_an_unwritable_out_before_reading_any_run(tmp_path):
    (tmp_path / "afile").write_text("mine\n")
    (tmp_path / "r").mkdir()
    (tmp_path / "q.txt").write_text("q1 0 a 1\n")
    r = cli("rank-baselines", "--runs", tmp_path / "r", "--qrels", tmp_path / "q.txt", "--out", tmp_path / "afile" / "rb.json")
    one_line_error(r, "afile/rb.json", "is a file, not a directory")


def test_machine_failures_read_as_one_line_each():
    import errno
    import sqlite3

    from nteval.errors import explain_failure

    full = explain_failure(OSError(errno.ENOSPC, "No space left on device", "/o/runs/x.run"), out="/o")
    assert full == ("no space left on the device writing /o/runs/x.run; complete files are kept, nothing half-written: "
                    "free space (or choose another place) and run the command again", 1)
    assert explain_failure(OSError("2097152 requested and 978912 written"), out="/o")[0].startswith(
        "no space left on the device writing /o;")  # numpy's short write has no errno
    assert explain_failure(OSError(errno.EROFS, "Read-only file system", "/o/.f.lock")) == (
        "cannot write /o/.f.lock: read-only file system", 2)
    assert explain_failure(sqlite3.OperationalError("database or disk is full"), out="/o")[1] == 1
    assert explain_failure(sqlite3.DatabaseError("file is not a database"), index="/i") == (
        "/i: the document store docs.sqlite is damaged (sqlite: file is not a database): rebuild it with nteval index "
        "--force", 2)
    assert explain_failure(ValueError("a bug")) is None  # bugs still show their traceback


# -- N72: a Java VM that cannot start ------------------------------------------------------------------------

@pytest.mark.parametrize("heap, says", [("999999g", "more than this machine's"), ("2x", "must look like 2g"),
                                        ("64m", "must be at least 256m")])  # (re-run N72b: 64m below -Xms)
def test_a_jvm_that_cannot_start_is_one_line_before_out_is_touched(first200_index, tmp_path, heap, says):
    out = tmp_path / "f"
    env = {**os.environ, "NTEVAL_JVM_HEAP": heap}
    r = subprocess.run([*NTEVAL, "focused", "--index", str(first200_index), "--topics", "20", "--min-topics", "5",
                        "--out", str(out)], env=env, capture_output=True, text=True, timeout=HANG)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and says in r.stderr, r.stderr
    assert not out.exists()


@pytest.mark.skipif(sys.platform != "linux", reason="RLIMIT_AS as Linux has it")
def test_an_address_space_limit_too_small_for_the_jvm_is_one_line(first200_index, tmp_path):
    def limit() -> None:
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (2_500_000_000, 2_500_000_000))
    out = tmp_path / "f"
    r = subprocess.run([*NTEVAL, "grid", "--index", str(first200_index), "--param", "k1=0.9,1.2", "--topics", "20",
                        "--min-topics", "5", "--out", str(out)], preexec_fn=limit, capture_output=True, text=True,
                       timeout=HANG)
    assert r.returncode == 2 and "ulimit -v" in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert not out.exists()


# -- P2b: invalid UTF-8 deep in a BEIR corpus ----------------------------------------------------------------

@pytest.mark.parametrize("gz", [False, True])
def test_invalid_utf8_is_reported_on_its_own_line_not_where_the_decoder_was(tmp_path, gz):
    import gzip

    from nteval.corpus.beir import read_beir
    from nteval.errors import InputError

    lines = [json.dumps({"_id": str(i), "title": f"title {i}", "text": "x" * 300}).encode() for i in range(60)]
    lines[40] = lines[40].replace(b"title 40", b"title \xff40")  # line 41; the decoder reads 8 KB ahead
    data = b"\n".join(lines) + b"\n"
    path = tmp_path / ("c.jsonl.gz" if gz else "c.jsonl")
    path.write_bytes(gzip.compress(data) if gz else data)
    with pytest.raises(InputError, match=r":line 41: not UTF-8"):
        list(read_beir(path))


def test_a_source_with_no_usable_record_says_why_each_was_skipped(tmp_path):
    """The P1q single-record bomb said "every record lacked a title or an abstract" for a record
    skipped as too large."""
    corpus = tmp_path / "c.jsonl"
    corpus.write_text('{"_id": "1", "title": "", "text": ""}\n{"_id": "2", "title": "t", "text": ""}\n'
                      '{"_id": "3", "title": "", "text": "only text"}\n')
    one_line_error(cli("index", corpus, "--out", tmp_path / "i", "--documents", "title+abstract"),
                   "no usable document: every record was skipped (1 no_text, 1 no_title, 1 no_abstract")
    assert not (tmp_path / "i").exists()


def test_the_benchmark_script_answers_help_without_running(tmp_path):
    r = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "run.py"), "--help"], capture_output=True, text=True,
                       timeout=HANG, cwd=tmp_path)
    assert r.returncode == 0 and r.stdout.startswith("usage: benchmarks/run.py") and "--grid-only" in r.stdout, r.stderr
    assert not (ROOT / "benchmarks" / "out" / "results.json").exists() or r.stderr == ""


def test_python_dash_m_nteval_is_the_command_line():
    r = subprocess.run([sys.executable, "-m", "nteval", "--help"], capture_output=True, text=True, timeout=HANG)
    assert r.returncode == 0 and r.stdout.startswith("Usage: nteval "), r.stdout + r.stderr


# -- A new user's first hour (issue 29, items 1, 2, 4, 6) ----------------------------------------------------

def test_the_parent_of_an_index_says_which_index_lies_below(first200_index, tmp_path):
    parent = tmp_path / "project"
    _copy_index(first200_index, parent / "index")
    one_line_error(cli("focused", "--index", parent, "--topics", "20", "--out", tmp_path / "f"),
                   "not an nteval index directory", f"the index below it is {parent / 'index'}")


def test_the_topic_floor_says_to_ask_for_more_when_the_corpus_has_them(first200_index, tmp_path):
    line = one_line_error(cli("focused", "--index", first200_index, "--topics", "30", "--min-topics", "40",
                              "--out", tmp_path / "f"), "only 30 usable topics (asked for 30")
    assert "ask for more (--topics 40 or more)" in line and "larger corpus" not in line
    line = one_line_error(cli("focused", "--index", first200_index, "--topics", "5000", "--min-topics", "1000",
                              "--out", tmp_path / "g"), "below the floor of 1000")
    assert "use a larger corpus" in line


def test_the_api_draws_no_progress_bars_into_a_log_and_a_rerun_says_what_it_reused(first200_index, tmp_path, capfd):
    from nteval.experiment import run_focused
    from nteval.report.text import runs_line

    first = run_focused(first200_index, tmp_path / "f", n_topics=20, min_topics=5, systems="default")
    assert "it/s" not in capfd.readouterr().err and "systems:" not in capfd.readouterr().err  # stderr is no terminal
    again = run_focused(first200_index, tmp_path / "f", n_topics=20, min_topics=5, systems="default")
    assert runs_line(first) == "(runs: 6 computed)"
    assert runs_line(again).startswith("(runs: 0 computed, 6 reused from the cache")


def test_every_bracket_a_person_reads_says_it_is_a_95_percent_interval(first200_index, tmp_path):
    r = cli("focused", "--index", first200_index, "--topics", "40", "--min-topics", "5", "--task", "known-item",
            "--out", tmp_path / "f")
    assert r.exit_code == 0, r.output
    headline = r.output.splitlines()[0]
    assert ", 95 % CI [" in headline, headline
    for line in r.output.splitlines():
        if "e.g. " in line and " vs " in line and "[" in line:
            assert "(95 % CI [" in line, line
        if line.lstrip().startswith("evidence"):
            assert "brackets: 95 % CIs" in line, line
        if line.lstrip().startswith("bias:"):
            assert "(95 % CI [" in line, line


def test_a_bug_is_one_line_with_the_traceback_kept_in_a_file(capsys, monkeypatch, tmp_path):
    """An exception nteval does not expect (a bug, not bad input) is one line naming it and the file
    that keeps its traceback, exit 1; NTEVAL_TRACEBACK=1 shows the traceback instead."""
    import re

    from nteval.cli.app import friendly_errors as _friendly_errors

    @_friendly_errors
    def buggy():
        return f"{'auto':,}"  # the real bug the README's quick start hit: ValueError: Cannot specify ',' with 's'.

    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.delenv("NTEVAL_TRACEBACK", raising=False)
    import tempfile
    monkeypatch.setattr(tempfile, "tempdir", None)  # re-read TMPDIR
    with pytest.raises(SystemExit) as e:
        buggy()
    err = capsys.readouterr().err
    assert e.value.code == 1 and len(err.strip().splitlines()) == 1
    assert err.startswith("nteval: internal error (a bug in nteval, not in your input): ValueError: Cannot specify")
    path = re.search(r"the traceback is in (\S+);", err).group(1)
    assert path.startswith(str(tmp_path)) and "Traceback (most recent call last)" in open(path).read()
    monkeypatch.setenv("NTEVAL_TRACEBACK", "1")
    with pytest.raises(ValueError):
        buggy()


def test_a_full_disk_under_lucene_is_said_like_nteval_says_its_own():
    """The hostile re-run's late ENOSPC: the Lucene builder's IOException (text as the JVM printed it)
    reads as nteval's own full-disk line; another failure keeps the builder's last word."""
    from nteval.errors import LuceneError, explain_lucene_failure

    seen = LuceneError("Lucene indexing into /tmp/hz/small/ix failed (exit 1): java.lang.IllegalStateException: "
                       "all-writer: java.io.IOException: No space left on device")
    text = explain_lucene_failure(seen, "/tmp/hz/small/ix")
    assert text.startswith("no space left on the device writing /tmp/hz/small/ix (Lucene: ")
    assert "java.io.IOException: No space left on device" in text and "run the command again" in text
    other = LuceneError("Lucene indexing into x failed (exit 1): java.lang.OutOfMemoryError: Java heap space")
    assert explain_lucene_failure(other) == str(other)


def test_a_config_file_cannot_let_a_systems_file_run_code(tmp_path):
    """Hostile re-run N12cfg: `--config` with allow_code: true ran a callable. Running code is the
    user's choice on the command line (or NTEVAL_ALLOW_CODE), never a config file's."""
    from nteval.cli import main

    for text in ("allow_code: true\n", "focused:\n  allow_code: true\n  systems: x.yaml\n", "allow-code: true\n"):
        cfg = tmp_path / "c.yaml"
        cfg.write_text(text)
        r = CliRunner().invoke(main, ["--config", str(cfg), "focused", "--index", str(tmp_path), "--out",
                                      str(tmp_path / "o")])
        assert r.exit_code == 2 and "allow_code cannot come from a config file: give --allow-code" in r.output, r.output
        assert len(r.output.strip().splitlines()) == 1 and not (tmp_path / "o").exists()


def test_bootstrap_is_bounded_where_it_still_finishes(tmp_path):
    """Hostile re-run N66: --bootstrap 100000 (the old maximum) ran past 180 s and 1.4 GB on 50 topics."""
    from nteval.cli import main

    r = CliRunner().invoke(main, ["correlate", "--index", str(tmp_path), "--queries", "q", "--qrels", "r",
                                  "--bootstrap", "20001", "--out", str(tmp_path / "o")])
    assert r.exit_code == 2 and "--bootstrap" in r.output and "20000" in r.output.replace(",", "")


@pytest.mark.parametrize("content", [bytes(range(256)) * 4, b"oneword\n", b"q1 Q0 d1\n", b"root:x:0:0:root:/root:/bin/bash\n"])
def test_a_run_file_that_is_not_a_trec_run_is_one_line(first200_index, tmp_path, content):
    """Hostile re-run N1reg (a regression of issue 26's precheck): a binary run, a one-word or a
    3-column file, /etc/passwd as a run → an IndexError traceback. Now: one line, exit 2, no OUT."""
    runs = tmp_path / "runs"
    runs.mkdir()
    (runs / "mine.run").write_bytes(content)
    r = cli("focused", "--index", first200_index, "--topics", "20", "--min-topics", "10", "--systems", "default",
            "--runs", runs, "--out", tmp_path / "o")
    one_line_error(r, "mine.run:line 1: ")
    assert not (tmp_path / "o" / "results.json").exists()


def test_a_systems_file_that_does_not_exist_is_said_of_the_file(first200_index, tmp_path):
    """Hostile turn 8, N3: `--systems missing.yaml` was "--system mini8 (did you mean minilm?): no such
    system in missing.yaml" (encode) and "no such system in missing.yaml or the shipped sets" (gate):
    the typo is in the path. One line naming the file, before any work."""
    from conftest import without_the_neural_extra

    pin = tmp_path / "pin"
    with pytest.MonkeyPatch.context() as mp:
        without_the_neural_extra(mp)
        assert cli("pin", "--index", first200_index, "--topics", 30, "--out", pin, "--quiet").exit_code == 0
    missing = tmp_path / "mystems.yaml"
    for args in (["encode", "--index", first200_index, "--system", "mini8", "--systems", missing],
                 ["gate", "--index", first200_index, "--pin", pin, "--task", "known-item", "--systems", missing,
                  "--baseline", "bm25", "--candidate", "x", "--out", tmp_path / "g"],
                 ["focused", "--index", first200_index, "--systems", missing, "--topics", 20, "--out", tmp_path / "f"]):
        one_line_error(cli(*args), str(missing), "no such systems file")
    assert not (tmp_path / "g").exists() and not (tmp_path / "f").exists()
