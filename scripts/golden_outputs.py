"""Golden outputs: run a fixed set of nteval commands on the bundled sample and compare two trees.

A refactor must not change what nteval writes. This script runs the commands below with the
Python given (so one checkout's code can be run against another's) into DIR, then compares two
such directories file by file: byte for byte, except JSON/TSV fields that record time, process
ids, dates or the absolute path of the run (masked, and listed).

    python scripts/golden_outputs.py run DIR [--python PY]     # the commands, into DIR
    python scripts/golden_outputs.py diff OLD NEW              # 0 differences → exit 0

The commands: the sample's index; focused (200 topics, table1); high-recall (default and
``--preset paper``); a 3 × 3 BM25 grid under both protocols; correlate on the bundled SciFact
slice; BEIR export; compare --task known-item; ``run --protocol focused --param``.
"""
from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "nteval" / "data" / "pubmed21n1298_first2000.xml.gz"
SCIFACT = ROOT / "nteval" / "data" / "scifact_slice"

#: JSON keys whose values record how or when a run happened, not what it computed.
VOLATILE = re.compile(r"(seconds|_s$|^secs$|elapsed|timing|time|pid|date|created|built_at|started|finished|generated|"
                      r"per_second|qps|throughput|host|python|java|version|rss|memory)", re.I)


def commands(d: Path) -> list[list[str]]:
    idx, sci = str(d / "index"), str(d / "scifact-index")
    common = ["--index", idx, "--topics", "200", "--systems", "table1", "--quiet"]
    return [
        ["index", str(SAMPLE), "--out", idx, "--quiet"],
        ["focused", *common, "--out", str(d / "focused")],
        ["highrecall", *common, "--out", str(d / "highrecall")],
        ["highrecall", *common, "--preset", "paper", "--out", str(d / "highrecall-paper")],
        ["grid", "--index", idx, "--param", "k1=0.6,1.2,2.0", "--param", "b=0.3,0.6,0.9", "--topics", "150",
         "--quiet", "--out", str(d / "grid")],
        ["index", str(SCIFACT / "corpus.jsonl.gz"), "--out", sci, "--quiet"],
        ["correlate", "--index", sci, "--queries", str(SCIFACT / "queries.jsonl"), "--qrels", str(SCIFACT / "qrels.tsv"),
         "--topics", "200", "--systems", "default", "--bootstrap", "300", "--min-topics", "20", "--quiet",
         "--out", str(d / "correlate")],
        ["export", "--from", str(d / "focused"), "--format", "beir", "--out", str(d / "export")],
        ["compare", *common, "--task", "known-item", "--out", str(d / "compare")],
        ["run", "--protocol", "focused", "--param", "n_topics=150", "--param", "seed=7", "--index", idx,
         "--systems", "default", "--quiet", "--out", str(d / "run-focused")],
    ]


def run(d: Path, python: str) -> None:
    d = d.absolute()
    d.mkdir(parents=True, exist_ok=True)
    for cmd in commands(d):
        print("+ nteval", " ".join(cmd), flush=True)
        p = subprocess.run([python, "-m", "nteval", *cmd], cwd=d, capture_output=True, text=True)
        (d / "log.txt").open("a").write(f"$ nteval {' '.join(cmd)}\n{p.stdout}{p.stderr}\nexit {p.returncode}\n")
        if p.returncode != 0:
            sys.exit(f"failed ({p.returncode}): nteval {' '.join(cmd)}\n{p.stderr[-2000:]}")


def _mask(obj, root: str):
    if isinstance(obj, dict):
        return {k: ("<masked>" if VOLATILE.search(k) else _mask(v, root)) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_mask(v, root) for v in obj]
    if isinstance(obj, str):
        return _paths(obj.replace(root, "<ROOT>"))
    return obj


def _paths(text: str) -> str:
    """The installed package's own files (shipped system sets) wherever the checkout lies."""
    return re.sub(r"/[^\s\"']*/nteval/(configs|data)/", r"<PKG>/nteval/\1/", text)


def _normal(path: Path, root: Path) -> bytes:
    data = path.read_bytes()
    if path.suffix == ".json":
        try:
            return json.dumps(_mask(json.loads(data), str(root)), sort_keys=True, indent=1).encode()
        except ValueError:
            pass
    if path.suffix in (".md", ".txt", ".html", ".tsv", ".tex", ".log"):
        text = _paths(data.decode("utf-8", "replace").replace(str(root), "<ROOT>"))
        text = re.sub(r"\d+(\.\d+)? ?(s|ms|min|seconds)\b", "<T>", text)
        text = re.sub(r"\d{4}-\d\d-\d\d([T ][\d:.]+)?", "<DATE>", text)
        return text.encode()
    return data


#: files that hold nothing but how a run happened (logs, locks, timings), and Lucene's segment files
#: (they carry random segment ids: an index is compared through its docs.sqlite and manifest).
SKIP = re.compile(r"(^|/)(log\.txt|\.lock|.*\.lock|timing.*|.*\.pid)$|(^|/)(all|nt)/[^/]+$")


def diff(old: Path, new: Path) -> int:
    old, new = old.absolute(), new.absolute()

    def files(d: Path) -> set[str]:
        return {str(p.relative_to(d)) for p in d.rglob("*") if p.is_file() and not SKIP.search(str(p.relative_to(d)))}

    a, b = files(old), files(new)
    bad = sorted(a ^ b)
    for f in bad:
        print(f"only in {'old' if f in a else 'new'}: {f}")
    n = 0
    for f in sorted(a & b):
        if _normal(old / f, old) != _normal(new / f, new):
            print(f"differs: {f}")
            n += 1
    print(f"{len(a & b)} files compared, {n} differ, {len(bad)} in one tree only")
    return 1 if n or bad else 0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("dir", type=Path)
    r.add_argument("--python", default=sys.executable)
    c = sub.add_parser("diff")
    c.add_argument("old", type=Path)
    c.add_argument("new", type=Path)
    args = ap.parse_args()
    if args.cmd == "run":
        run(args.dir, args.python)
    else:
        sys.exit(diff(args.old, args.new))


if __name__ == "__main__":
    main()
