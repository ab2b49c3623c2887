"""Grid cells and per-system runs on a real Dask cluster (a LocalCluster of 2 worker processes, 1
thread each): byte-identical to a local run, a worker SIGKILLed mid-grid loses nothing and no stored
cell is rewritten, missing paths and bad schedulers are one line."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time

import pytest

distributed = pytest.importorskip("distributed")

from conftest import HANG  # noqa: E402

from nteval.errors import InputError  # noqa: E402
from nteval.grid import parse_axis, run_grid  # noqa: E402

AXES = ["k1=0.5,0.9,1.2", "b=0.4,0.8"]
GRID = dict(protocol="focused", n_topics=40, seed=3, progress=False, min_topics=10, plots=False)


def _cluster(scratch):
    """Workers' scratch space and dask's own lock files in the test's directory, not
    /tmp/dask-scratch-space (which would be left behind)."""
    import dask

    dask.config.set({"temporary-directory": str(scratch)})
    return distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0",
                                    local_directory=str(scratch))


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with _cluster(tmp_path_factory.mktemp("dask-scratch")) as c:
        yield c


@pytest.fixture(scope="module")
def local_grid(first200_index, tmp_path_factory):
    """The reference: the same grid computed in this process (--jobs 1)."""
    out = tmp_path_factory.mktemp("local") / "g"
    run_grid(first200_index, out, [parse_axis(a) for a in AXES], jobs=1, **GRID)
    return out


def _stamps(out):
    return {p: (p.stat().st_ino, p.stat().st_mtime_ns) for p in (out / "cells").glob("*/*.json")}


def test_grid_on_cluster_is_byte_identical_and_resumes(cluster, first200_index, local_grid, tmp_path):
    out = tmp_path / "g"
    res = run_grid(first200_index, out, [parse_axis(a) for a in AXES], scheduler=cluster.scheduler_address, **GRID)
    assert (out / "grid.tsv").read_bytes() == (local_grid / "grid.tsv").read_bytes()
    assert res["cells"]["computed"] == 6 and res["timing"]["workers"] == 2
    assert res["timing"]["scheduler"] == cluster.scheduler_address
    cells = [json.loads(p.read_text()) for p in (out / "cells").glob("*/*.json")]
    assert all(c["worker"].startswith("tcp://") and c["pid"] != os.getpid() for c in cells)
    # each worker process keeps its JVM and open index for all its cells (the per-process cache)
    pids = {c["pid"] for c in cells}
    assert 1 <= len(pids) <= 2
    before = _stamps(out)
    again = run_grid(first200_index, out, [parse_axis(a) for a in AXES], scheduler=cluster.scheduler_address, **GRID)
    assert again["cells"]["computed"] == 0 and _stamps(out) == before
    assert (out / "grid.tsv").read_bytes() == (local_grid / "grid.tsv").read_bytes()


def test_killed_worker_loses_nothing(first200_index, tmp_path):
    """SIGKILL one worker process once some cells are stored: its cells are recomputed elsewhere,
    the grid completes byte-identical to --jobs 1, and no cell stored before the kill is rewritten."""
    axes = [parse_axis("k1=0.3:1.5:0.4"), parse_axis("b=0.2:0.8:0.2")]  # 4 × 4 = 16 cells
    kw = dict(GRID, n_topics=60)
    out, ref = tmp_path / "g", tmp_path / "ref"
    with _cluster(tmp_path / "dask-scratch") as cl, distributed.Client(cl.scheduler_address, set_as_default=False) as client:
        pids = client.run(os.getpid)
        seen: dict = {}

        def killer():
            deadline = time.time() + 120
            while time.time() < deadline and len(_stamps(out)) < 2:
                time.sleep(0.01)
            seen["before"] = _stamps(out)
            busy = {w: keys for w, keys in client.processing().items() if keys}
            addr = sorted(busy)[0] if busy else sorted(pids)[0]
            os.kill(pids[addr], signal.SIGKILL)  # a worker with cells in hand
            seen["victim"] = pids[addr]
            seen["lost"] = [k.removeprefix("nteval-cell-") for k in busy.get(addr, []) if k.startswith("nteval-cell-")]

        t = threading.Thread(target=killer)
        t.start()
        res = run_grid(first200_index, out, axes, scheduler=cl.scheduler_address, **kw)
        t.join()
        client.wait_for_workers(2, timeout=60)  # the nanny restarted the killed worker
        assert set(client.run(os.getpid).values()) != set(pids.values())
    before = seen["before"]
    assert 2 <= len(before) < 16, "kill the worker while the grid runs"
    assert res["cells"]["computed"] == 16
    after = _stamps(out)
    assert len(after) == 16 and all(after[p] == st for p, st in before.items())  # never rewritten
    by_name = {p.stem: json.loads(p.read_text()) for p in after}
    assert seen["lost"], "the killed worker was computing cells"
    # the cells it held were computed by another worker
    assert any(by_name[key[:32]]["pid"] != seen["victim"] for key in seen["lost"])
    run_grid(first200_index, ref, axes, jobs=1, **kw)
    assert (out / "grid.tsv").read_bytes() == (ref / "grid.tsv").read_bytes()


def test_worker_without_the_index_is_one_line(cluster, first200_index, tmp_path):
    from nteval.cluster import check_workers, result_of, session
    from nteval.grid.cells import Task
    from nteval.grid.remote import _cell_task
    from nteval.systems.base import make_system

    missing = str(tmp_path / "nowhere" / "nt")
    with session(cluster.scheduler_address) as client:
        with pytest.raises(InputError, match=r"^worker tcp://\S+ cannot see .*nowhere/nt: the index must be on a path"):
            check_workers(client, [str(first200_index), missing])
        # a worker that joins later is checked by the task itself
        task = Task("focused", missing, "t", "q", make_system("bm25", "bm25"), {}, 10, ("RR",), "p")
        fut = client.submit(_cell_task, task, "k", {}, {}, None, retries=0, pure=False)
        with pytest.raises(InputError, match=r"^worker tcp://\S+ cannot see .*nowhere/nt") as err:
            result_of(fut, "cell")
        assert "\n" not in str(err.value)


SYSTEMS = """\
- name: bm25
  algorithm: bm25
- name: qld
  algorithm: qld
  params: {mu: 1000}
- name: rm3
  algorithm: bm25_rm3
- name: disj
  algorithm: disjunctive
  params: {max_words: 3}
- name: fused
  algorithm: rrf
  params: {systems: [bm25, qld, rm3], k: 60}
"""


def test_protocol_runs_on_cluster_are_byte_identical(cluster, first200_index, tmp_path):
    """`nteval focused` with NTEVAL_SCHEDULER and high-recall with ``scheduler=``: one task per Lucene
    system, the fusion made here after its inputs; runs, their cache keys and results as local."""
    from nteval.experiment import run_focused, run_highrecall

    systems = tmp_path / "s.yaml"
    systems.write_text(SYSTEMS)
    kw = dict(n_topics=40, seed=3, systems=str(systems), min_topics=10, progress=False)
    local, dask = tmp_path / "local", tmp_path / "dask"
    run_focused(first200_index, local / "focused", **kw)
    run_highrecall(first200_index, local / "highrecall", **kw)
    r = subprocess.run([sys.executable, "-m", "nteval.cli", "focused", "--index", str(first200_index), "--topics", "40",
                        "--seed", "3", "--systems", str(systems), "--min-topics", "10", "--quiet",
                        "--out", str(dask / "focused")], capture_output=True, text=True, timeout=HANG,
                       env={**os.environ, "NTEVAL_SCHEDULER": cluster.scheduler_address})
    assert r.returncode == 0, r.stderr
    hr = run_highrecall(first200_index, dask / "highrecall", scheduler=cluster.scheduler_address, **kw)
    assert not any(t["reused"] for t in hr["timing"].values())
    names = ("bm25", "qld", "rm3", "disj", "fused")
    for cmd in ("focused", "highrecall"):
        a, b = local / cmd, dask / cmd
        for rel in ["results.tsv", "per_topic.tsv", "qrels.txt", "topics.tsv"] + [f"runs/{s}.run" for s in names]:
            assert (a / rel).read_bytes() == (b / rel).read_bytes(), rel
        for s in names:
            ma, mb = (json.loads((d / "runs" / f"{s}.meta.json").read_text()) for d in (a, b))
            assert {k: v for k, v in ma.items() if k not in ("seconds", "queries_per_s")} == \
                   {k: v for k, v in mb.items() if k not in ("seconds", "queries_per_s")}
    # a re-run on the cluster reuses every cached run (nothing is sent)
    again = run_focused(first200_index, dask / "focused", scheduler=cluster.scheduler_address, **kw)
    assert all(t["reused"] for t in again["timing"].values())


def test_correlate_on_cluster_matches_local(cluster, correlated, scifact_index, tmp_path):
    from click.testing import CliRunner

    from nteval.cli import main
    from nteval.demo import scifact_slice

    _, local = correlated
    sl, out = scifact_slice(), tmp_path / "c"
    r = CliRunner().invoke(main, ["correlate", "--index", str(scifact_index), "--queries", str(sl / "queries.jsonl"),
                                  "--qrels", str(sl / "qrels.tsv"), "--topics", "40", "--bootstrap", "50",
                                  "--min-topics", "10", "--out", str(out), "--quiet",
                                  "--scheduler", cluster.scheduler_address])
    assert r.exit_code == 0, r.output
    for rel in ("human/per_topic.tsv", "focused/results.tsv", "highrecall/results.tsv", "human/runs/bm25.run",
                "focused/runs/bm25_rm3.run"):
        assert (out / rel).read_bytes() == (local / rel).read_bytes(), rel
    a, b = (json.loads((d / "report.json").read_text()) for d in (local, out))
    assert a["pairs"] == b["pairs"] and a["baselines"] == b["baselines"]


def test_unreachable_scheduler_is_one_line(first200_index, tmp_path):
    r = subprocess.run([sys.executable, "-m", "nteval.cli", "grid", "--index", str(first200_index), "--param", "k1=1,2",
                        "--protocol", "focused", "--topics", "20", "--min-topics", "10", "--quiet",
                        "--out", str(tmp_path / "g"), "--scheduler", "tcp://127.0.0.1:9"],
                       capture_output=True, text=True, timeout=120,
                       env={**os.environ, "DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT": "2s",
                            "NTEVAL_SCHEDULER_TIMEOUT": "3"})  # (refused connections are retried until then)
    assert r.returncode == 2, r.stderr
    assert r.stderr.strip().splitlines()[-1].startswith("nteval: error: --scheduler tcp://127.0.0.1:9: cannot connect"), r.stderr
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr
