"""A copy of a BEIR collection with the titles of a seeded share of its documents blanked.

Real corpora hold many documents without a title (old Medline abstracts, web pages, CORD-19);
this makes one from a judged collection, so that what nteval does with them can be measured
against the untouched collection's human judgments (docs/indexing.md, "The whole collection is searched").

    python scripts/blank_titles.py ../shared/data/cisi/beir OUT --share 0.7 --seed 1

Which documents lose their title: the ``share`` with the smallest ``sha256("{seed}:{docid}")``
(the same rule as topic sampling: the same seed gives the same documents on any machine).
OUT gets ``corpus.jsonl`` (the same lines, ``"title": ""`` where blanked) and copies of
``queries.jsonl`` and ``qrels/``.
"""
from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import shutil
from pathlib import Path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("beir", type=Path, help="a BEIR directory (corpus.jsonl[.gz], queries.jsonl, qrels/)")
    ap.add_argument("out", type=Path)
    ap.add_argument("--share", type=float, default=0.7)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    src = next(p for p in (a.beir / "corpus.jsonl", a.beir / "corpus.jsonl.gz") if p.is_file())
    opener = gzip.open if src.suffix == ".gz" else open
    with opener(src, "rt", encoding="utf-8") as fh:
        lines = [json.loads(line) for line in fh if line.strip()]
    key = lambda d: hashlib.sha256(f"{a.seed}:{d['_id']}".encode()).digest()  # noqa: E731
    blank = {d["_id"] for d in sorted(lines, key=key)[: round(a.share * len(lines))]}
    a.out.mkdir(parents=True, exist_ok=True)
    with open(a.out / "corpus.jsonl", "w", encoding="utf-8") as fh:
        for d in lines:
            fh.write(json.dumps({**d, "title": ""} if d["_id"] in blank else d, ensure_ascii=False) + "\n")
    shutil.copyfile(a.beir / "queries.jsonl", a.out / "queries.jsonl")
    shutil.copytree(a.beir / "qrels", a.out / "qrels", dirs_exist_ok=True)
    print(f"{a.out}: {len(lines)} documents, {len(blank)} titles blanked ({a.share:.0%}, seed {a.seed})")


if __name__ == "__main__":
    main()
