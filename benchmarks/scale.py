#!/usr/bin/env python3
"""Scale benchmark: `nteval index` and a focused experiment at 100k, 300k and 1M Medline records.

    python benchmarks/scale.py                 # 100k, 300k, 1M (about an hour on 2 cores)
    python benchmarks/scale.py --sizes 20000,60000 --systems default   # a quick look

The sets are made from the real shared PubMed files (pubmed20n0014 + pubmed21n1298, every
PubmedArticle once, the newest version of a PMID): record i of a set is source record
``i mod n_source`` with its PMID re-numbered to ``copy × 10^8 + PMID`` (copy = i div n_source), so
PMIDs are unique; files of 25,000 records, gzipped, in a temporary directory removed afterwards
(the smaller sets are prefixes of the larger). Copies repeat the text: the numbers here are for
time and memory, not for retrieval quality (a title's own abstract has identical twins at 1M).

For each size: `nteval index` wall time, time per record, peak RSS of the whole process tree
(sampled from /proc; also without file-backed pages, i.e. what the processes allocated), index bytes
per record; then `nteval focused --topics 1000 --systems table1` wall time and its peak RSS. Goals
(issue 15): time per record at the largest size ≤ 1.3× that at the smallest; peak RSS ≤ 2 GB at 1M;
nothing left in the temporary directory's parent afterwards. Writes benchmarks/out/scale.json and,
with matplotlib, docs/scale.png; prints a table and an extrapolation to 36M records.
"""
from __future__ import annotations

import argparse
import gzip
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
SHARED = Path(os.environ.get("NTEVAL_SHARED_DATA", ROOT.parent / "shared" / "data")) / "medline" / "pubmed_baseline_update"
SOURCES = ("pubmed20n0014.xml.gz", "pubmed21n1298.xml.gz")
PER_FILE = 25_000
ARTICLE = re.compile(rb"<PubmedArticle>.*?</PubmedArticle>", re.S)
PMID = re.compile(rb'(<PMID Version="\d+">)(\d+)(</PMID>)')


def source_records() -> tuple[bytes, list[tuple[int, bytes]]]:
    """(XML head, [(pmid, record bytes)]): every article of the shared files once, newest version."""
    by_pmid: dict[int, bytes] = {}
    head = b""
    for name in SOURCES:
        text = gzip.open(SHARED / name).read()
        if not head:
            head = text[:text.index(b"<PubmedArticle>")]
        for m in ARTICLE.finditer(text):
            rec = m.group(0)
            by_pmid[int(PMID.search(rec).group(2))] = rec
    return head, list(by_pmid.items())


def write_sets(folder: Path, total: int, per_file: int = PER_FILE) -> list[Path]:
    """``total`` re-numbered records in gzipped files of ``per_file`` records."""
    head, pool = source_records()
    files = []
    for f in range(0, total, per_file):
        path = folder / f"scale{f // per_file:04d}.xml.gz"
        with gzip.open(path, "wb", compresslevel=1) as out:
            out.write(head)
            for i in range(f, min(total, f + per_file)):
                copy, (pmid, rec) = divmod(i, len(pool))[0], pool[i % len(pool)]
                new = str(copy * 10**8 + pmid).encode()
                rec = PMID.sub(lambda m: m.group(1) + new + m.group(3), rec, count=1)  # the article's own PMID
                rec = rec.replace(b'<ArticleId IdType="pubmed">%d</ArticleId>' % pmid,
                                  b'<ArticleId IdType="pubmed">' + new + b"</ArticleId>")
                out.write(rec + b"\n")
            out.write(b"</PubmedArticleSet>\n")
        files.append(path)
    return files


def measured(cmd: list[str], every: float = 0.25) -> dict:
    """Wall time and peak tree RSS (all pages, and anonymous only) of ``cmd``."""
    from peak_rss import tree_pids

    page = os.sysconf("SC_PAGE_SIZE")

    def statm(pid: int) -> tuple[int, int]:
        try:
            with open(f"/proc/{pid}/statm") as fh:
                f = fh.read().split()
            return int(f[1]) * page, (int(f[1]) - int(f[2])) * page
        except OSError:
            return 0, 0

    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    peak = peak_anon = 0
    err = b""
    try:
        while proc.poll() is None:
            pages = [statm(pid) for pid in tree_pids(proc.pid)]
            rss, anon = sum(r for r, _ in pages), sum(a for _, a in pages)
            peak, peak_anon = max(peak, rss), max(peak_anon, anon)
            time.sleep(every)
    except BaseException:  # Ctrl-C, SIGTERM: nteval cleans up its own partial output, then we remove ours
        proc.terminate()
        proc.wait()
        raise
    err = proc.stderr.read()
    if proc.returncode != 0:
        raise SystemExit(f"failed ({proc.returncode}): {' '.join(cmd)}\n{err.decode(errors='replace')[-2000:]}")
    return {"seconds": round(time.perf_counter() - t0, 1), "peak_rss_mb": round(peak / 2**20),
            "peak_anon_rss_mb": round(peak_anon / 2**20)}


def du(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def run(sizes: list[int], systems: str, topics: int, tmp_parent: Path, focused: bool = True) -> dict:
    before = set(os.listdir(tmp_parent))
    work = Path(tempfile.mkdtemp(prefix="nteval-scale-", dir=tmp_parent))
    rows = []
    try:
        t = time.perf_counter()
        (work / "xml").mkdir()
        # every size a whole number of files: at most PER_FILE records each, a divisor of every size
        per_file = min(PER_FILE, math.gcd(*sizes))
        files = write_sets(work / "xml", max(sizes), per_file)
        made = round(time.perf_counter() - t, 1)
        print(f"sets       {len(files)} files of {per_file:,} records written in {made} s", flush=True)
        nteval = [sys.executable, "-m", "nteval.cli"]
        for n in sizes:
            srcs = files[:n // per_file]
            idx = work / f"idx-{n}"
            ix = measured([*nteval, "index", *map(str, srcs), "--out", str(idx), "--quiet"])
            manifest = json.loads((idx / "manifest.json").read_text())
            docs = manifest["counts"]["kept"]
            size = du(idx)
            fo = measured([*nteval, "focused", "--index", str(idx), "--topics", str(topics), "--systems", systems,
                           "--out", str(work / f"focused-{n}"), "--quiet"]) if focused else \
                {"seconds": None, "peak_rss_mb": None, "peak_anon_rss_mb": None}
            row = {"records": n, "documents": docs, "index_s": ix["seconds"],
                   "us_per_record": round(ix["seconds"] / n * 1e6, 1), "index_peak_rss_mb": ix["peak_rss_mb"],
                   "index_peak_anon_rss_mb": ix["peak_anon_rss_mb"], "index_bytes_per_record": round(size / n),
                   "index_gb": round(size / 1e9, 2), "focused_s": fo["seconds"],
                   "focused_peak_rss_mb": fo["peak_rss_mb"], "focused_peak_anon_rss_mb": fo["peak_anon_rss_mb"]}
            rows.append(row)
            print(json.dumps(row), flush=True)
            shutil.rmtree(idx)
            shutil.rmtree(work / f"focused-{n}", ignore_errors=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    left = sorted(set(os.listdir(tmp_parent)) - before)
    return {"sizes": sizes, "systems": systems, "topics": topics, "per_file": per_file, "cores": os.cpu_count(),
            "rows": rows, "left_in_tmp": left}


def extrapolate(res: dict, target: int = 36_000_000, cores: int = 16) -> dict:
    """Least squares ``index_s = fixed + marginal × records`` over the measured sizes, evaluated at
    ``target``; the index size from the largest size's bytes per record. On ``cores`` cores the
    parallel parts (parsing per file; Lucene per file on ≥ 4 cores) would divide the marginal cost
    by at most cores / this machine's cores: that bound is printed as a bound, not a measurement."""
    import numpy as np

    x = np.array([r["records"] for r in res["rows"]], float)
    y = np.array([r["index_s"] for r in res["rows"]], float)
    marginal, fixed = np.polyfit(x, y, 1)
    hours = (fixed + marginal * target) / 3600
    here = res["cores"] or 1
    big = res["rows"][-1]
    return {"records": target, "fixed_s": round(float(fixed), 1), "marginal_us_per_record": round(float(marginal) * 1e6, 1),
            "hours_here": round(float(hours), 1), "hours_on_16_cores_at_best": round(float(hours) * here / cores, 1),
            "index_gb": round(big["index_bytes_per_record"] * target / 1e9)}


def _rerun_name(rr: dict) -> str:
    """A rerun's name in the plot's legend: its short ``label``, else its ``why``."""
    return rr.get("label") or rr.get("why", "alone")


def plot(res: dict, path: Path) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    rows = res["rows"]
    x = [r["records"] for r in rows]
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 5))
    a1.plot(x, [r["us_per_record"] for r in rows], "o-", label="nteval index")
    reruns = res.get("reruns", [])  # sizes re-measured later (``--sizes N``), added by hand with a "why"
    groups: dict[str, list[dict]] = {}  # one legend entry (and line) per reason, short "label" if given
    for rr in reruns:
        groups.setdefault(_rerun_name(rr), []).append(rr)
    markers = iter("o^vD<>")
    for why, rs in groups.items():
        m = next(markers, "o")
        rs = sorted(rs, key=lambda r: r["records"])
        a1.plot([r["records"] for r in rs], [r["us_per_record"] for r in rs], m + ":", mfc="none", color="C0",
                label=f"nteval index, rerun: {why}")
        a2.plot([r["records"] for r in rs], [r["index_peak_rss_mb"] for r in rs], m + ":", mfc="none", color="C0",
                label=f"index RSS, rerun: {why}")
    has_focused = all(r["focused_s"] is not None for r in rows)
    if has_focused:
        a1.plot(x, [r["focused_s"] / res["topics"] * 1e3 for r in rows], "s--",
                label=f"focused {res['topics']} topics, ms/topic ({res['systems']})")
        for rr in (r for r in reruns if r.get("focused_s")):
            a1.plot([rr["records"]], [rr["focused_s"] / res["topics"] * 1e3], "s", mfc="none", color="C1",
                    label=f"focused, rerun: {_rerun_name(rr)}")
    a1.set_xscale("log")
    a1.set_xlabel("Medline records")
    a1.set_ylabel("µs per record  /  ms per topic")
    a1.set_title("time (2-core VM)")
    a1.legend(fontsize=7)
    a2.plot(x, [r["index_peak_rss_mb"] for r in rows], "o-", label="index, RSS")
    a2.plot(x, [r["index_peak_anon_rss_mb"] for r in rows], "o:", label="index, anonymous RSS")
    if has_focused:
        a2.plot(x, [r["focused_peak_rss_mb"] for r in rows], "s--", label="focused, RSS")
        a2.plot(x, [r["focused_peak_anon_rss_mb"] for r in rows], "s:", color="C2", label="focused, anonymous RSS")
        for rr in (r for r in reruns if r.get("focused_s")):
            a2.plot([rr["records"]], [rr["focused_peak_rss_mb"]], "s", mfc="none", color="C2",
                    label=f"focused RSS, rerun: {_rerun_name(rr)}")
    a2.axhline(2048, color="grey", lw=0.8)
    a2.set_xscale("log")
    a2.set_xlabel("Medline records")
    a2.set_ylabel("peak MB, whole process tree")
    a2.set_title("memory (sampled every 0.25 s)")
    a2.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def _terminate(signum, _frame):
    raise KeyboardInterrupt(f"signal {signum}")  # unwind: the temporary directory is removed


def main() -> None:
    import signal

    signal.signal(signal.SIGTERM, _terminate)
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="100000,300000,1000000")
    ap.add_argument("--systems", default="table1")
    ap.add_argument("--topics", type=int, default=1000)
    ap.add_argument("--tmp", type=Path, default=Path(tempfile.gettempdir()))
    ap.add_argument("--index-only", action="store_true", help="Skip the focused runs.")
    ap.add_argument("--plot", type=Path, default=ROOT / "docs" / "scale.png")
    ap.add_argument("--report", type=Path, help="Re-report a scale.json written earlier (no runs).")
    a = ap.parse_args()
    if a.report:
        report(json.loads(a.report.read_text()), a)
        return
    if not all((SHARED / s).exists() for s in SOURCES):
        raise SystemExit(f"scale benchmark: needs the shared PubMed files in {SHARED}")
    sizes = sorted(int(s) for s in a.sizes.split(","))
    res = run(sizes, a.systems, a.topics, a.tmp, focused=not a.index_only)
    out = ROOT / "benchmarks" / "out"
    out.mkdir(parents=True, exist_ok=True)
    (out / "scale.json").write_text(json.dumps(res, indent=1) + "\n")
    report(res, a)


def report(res: dict, a) -> None:
    small, big = res["rows"][0], res["rows"][-1]
    res["time_per_record_ratio"] = round(big["us_per_record"] / small["us_per_record"], 2)
    if len(res["rows"]) >= 2:
        res["extrapolation"] = extrapolate(res)
    plot(res, a.plot)
    print(f"\n{'records':>10} {'docs':>9} {'index s':>8} {'µs/rec':>7} {'RSS MB':>7} {'anon MB':>8} {'B/rec':>6} "
          f"{'focused s':>9} {'RSS MB':>7}")
    for r in res["rows"]:
        r = {k: ("-" if v is None else v) for k, v in r.items()}
        print(f"{r['records']:>10,} {r['documents']:>9,} {r['index_s']:>8} {r['us_per_record']:>7} "
              f"{r['index_peak_rss_mb']:>7} {r['index_peak_anon_rss_mb']:>8} {r['index_bytes_per_record']:>6} "
              f"{r['focused_s']:>9} {r['focused_peak_rss_mb']:>7}")
    for rr in res.get("reruns", []):
        print(f"  rerun ({rr.get('why', 'alone')}): {rr['records']:,} records, index {rr['index_s']} s, "
              f"{rr['us_per_record']} µs/record, peak {rr['index_peak_rss_mb']} MB"
              + (f"; focused {rr['focused_s']} s, peak {rr['focused_peak_rss_mb']} MB "
                 f"(anonymous {rr['focused_peak_anon_rss_mb']})" if rr.get("focused_s") else ""))
    print(f"time per record {big['records']:,} vs {small['records']:,}: {res['time_per_record_ratio']}× (goal ≤ 1.3×); "
          f"peak RSS at {big['records']:,}: {big['index_peak_rss_mb']} MB index"
          f"{'' if big['focused_peak_rss_mb'] is None else ', %s MB focused' % big['focused_peak_rss_mb']} (goal ≤ 2048); new in the temporary directory afterwards: {res['left_in_tmp'] or 'nothing'}")
    if "extrapolation" in res:
        e = res["extrapolation"]
        print(f"36M records (least squares, index time = {e['fixed_s']} s + {e['marginal_us_per_record']} µs × records): "
              f"{e['hours_here']} h on this {res['cores']}-core VM; on 16 cores no better than "
              f"{e['hours_on_16_cores_at_best']} h (if every part scaled with cores); ~{e['index_gb']} GB of index")


if __name__ == "__main__":
    main()
