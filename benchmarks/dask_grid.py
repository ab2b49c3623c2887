#!/usr/bin/env python3
"""`nteval grid` on a Dask cluster vs local workers — one command, ratios in the same run.

The 4 × 4 BM25 grid of `make bench` (k1 0.6–1.5 × b 0.3–0.9, focused + high-recall = 32 cells) as
`nteval grid` subprocesses: ``--jobs 1``, ``--jobs 2``, and ``--scheduler`` on a LocalCluster of
2 worker processes × 1 thread started fresh for the run (its workers start their JVMs during the
grid, as loky's do) and then again on the same, now warm, cluster. The three orders alternate over
``--rounds``; medians are reported. Every grid.tsv must be byte-identical to ``--jobs 1``'s.

    python benchmarks/dask_grid.py [--index DIR] [--topics 300] [--rounds 2]

Without ``--index`` the ../shared PubMed files are indexed first (not timed), else the bundled
sample. Needs ``distributed`` (``pip install 'nteval[cluster]'``).
"""
from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
AXES = ["--param", "k1=0.6:1.5:0.3", "--param", "b=0.3:0.9:0.2"]


def grid(index: Path, out: Path, n_topics: int, extra: list[str]) -> tuple[float, dict]:
    args = [sys.executable, "-m", "nteval.cli", "grid", "--index", str(index), "--protocol", "both", *AXES,
            "--topics", str(n_topics), "--quiet", "--out", str(out), *extra]
    t = time.perf_counter()
    subprocess.run(args, cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t, json.loads((out / "grid.json").read_text())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--index", type=Path)
    ap.add_argument("--topics", type=int, default=300)
    ap.add_argument("--rounds", type=int, default=2)
    a = ap.parse_args()
    import dask
    from distributed import LocalCluster

    with tempfile.TemporaryDirectory(prefix="nteval-dask-bench-") as tmp:
        work = Path(tmp)
        index = a.index
        if index is None:
            from benchmarks.run import inputs

            index = work / "idx"
            subprocess.run([sys.executable, "-m", "nteval.cli", "index", *map(str, inputs()[1]), "--out", str(index),
                            "--quiet"], check=True, cwd=ROOT, stdout=subprocess.DEVNULL)
        rows: dict[str, list[tuple[float, float]]] = {"jobs1": [], "jobs2": [], "dask": [], "dask_warm": [], "start": []}
        reference = None
        for r in range(a.rounds):
            order = ["jobs1", "jobs2", "dask"] if r % 2 == 0 else ["dask", "jobs2", "jobs1"]
            for what in order:
                out = work / f"{what}-{r}"
                if what == "dask":
                    t = time.perf_counter()
                    dask.config.set({"temporary-directory": str(work / "dask-scratch")})  # not /tmp/dask-scratch-space
                    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0",
                                      local_directory=str(work / "dask-scratch")) as cl:
                        rows["start"].append((time.perf_counter() - t, 0.0))
                        wall, g = grid(index, out, a.topics, ["--scheduler", cl.scheduler_address])
                        warm, gw = grid(index, work / f"warm-{r}", a.topics, ["--scheduler", cl.scheduler_address])
                        rows["dask_warm"].append((warm, gw["timing"]["cells_per_minute"]))
                        assert (work / f"warm-{r}" / "grid.tsv").read_bytes() == (out / "grid.tsv").read_bytes()
                else:
                    wall, g = grid(index, out, a.topics, ["--jobs", what[-1]])
                rows[what].append((wall, g["timing"]["cells_per_minute"]))
                tsv = (out / "grid.tsv").read_bytes()
                reference = reference if reference is not None else tsv
                assert tsv == reference, f"{what} round {r}: grid.tsv differs"
                print(f"round {r} {what:<6} wall {wall:6.1f} s  {g['timing']['cells_per_minute']:6.1f} cells/min "
                      f"({g['cells']['computed']} cells)", flush=True)
                shutil.rmtree(out)
        med = {k: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v)) for k, v in rows.items() if v}
        cells = g["cells"]["total"]
        print(f"\n{cells} cells, {a.topics} topics, index {index} ({a.rounds} rounds, medians; grid.tsv identical in all runs)")
        for k, label in (("jobs1", "--jobs 1"), ("jobs2", "--jobs 2"), ("dask", "LocalCluster 2×1, cold workers"),
                         ("dask_warm", "LocalCluster 2×1, warm workers")):
            print(f"  {label:<32} wall {med[k][0]:6.1f} s  {cells / med[k][0] * 60:5.1f} cells/min (wall)  "
                  f"{med[k][1]:5.1f} cells/min (compute)")
        print(f"  LocalCluster start-up {med['start'][0]:.1f} s (not in the walls above); cold dask / --jobs 2 wall "
              f"{med['dask'][0] / med['jobs2'][0]:.2f}×, warm {med['dask_warm'][0] / med['jobs2'][0]:.2f}×")


if __name__ == "__main__":
    main()
