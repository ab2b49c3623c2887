"""A copy of a BEIR collection with the titles of a seeded share of its documents blanked.

Real corpora hold many documents without a title (old Medline abstracts, web pages, CORD-19);
this makes one from a judged collection, so that what nteval does with them can be measured
against the untouched collection's human judgments (docs/indexing.md, "The whole collection is searched").
Its twin, ``scripts/drop_abstracts.py``, drops abstracts instead (title-only records, which NT
never searches: docs/validation.md, "What the verdict covers").

    python scripts/blank_titles.py ../shared/data/cisi/beir OUT --share 0.7 --seed 1

Which documents lose their title: the ``share`` with the smallest ``sha256("{seed}:{docid}")``
(the same rule as topic sampling: the same seed gives the same documents on any machine).
OUT gets ``corpus.jsonl`` (the same lines, ``"title": ""`` where blanked) and copies of
``queries.jsonl`` and ``qrels/`` (or ``qrels.tsv``).
"""
from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import shutil
from pathlib import Path


def blank(beir: Path, out: Path, share: float, seed: int, field: str) -> tuple[int, int]:
    """Copy the BEIR collection ``beir`` to ``out`` with ``field`` emptied in the seeded ``share``
    of its documents; (documents, documents changed)."""
    src = next(p for p in (beir / "corpus.jsonl", beir / "corpus.jsonl.gz") if p.is_file())
    opener = gzip.open if src.suffix == ".gz" else open
    with opener(src, "rt", encoding="utf-8") as fh:
        lines = [json.loads(line) for line in fh if line.strip()]
    key = lambda d: hashlib.sha256(f"{seed}:{d['_id']}".encode()).digest()  # noqa: E731
    chosen = {d["_id"] for d in sorted(lines, key=key)[: round(share * len(lines))]}
    out.mkdir(parents=True, exist_ok=True)
    tmp = out / ".corpus.jsonl.tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        for d in lines:
            fh.write(json.dumps({**d, field: ""} if d["_id"] in chosen else d, ensure_ascii=False) + "\n")
    tmp.replace(out / "corpus.jsonl")
    shutil.copyfile(beir / "queries.jsonl", out / "queries.jsonl")
    if (beir / "qrels").is_dir():
        shutil.copytree(beir / "qrels", out / "qrels", dirs_exist_ok=True)
    else:  # (a slice keeps its one qrels file beside the corpus: nteval/data/scifact_slice)
        shutil.copyfile(beir / "qrels.tsv", out / "qrels.tsv")
    return len(lines), len(chosen)


def main(field: str = "title", what: str = "titles blanked", default_share: float = 0.7) -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("beir", type=Path, help="a BEIR directory (corpus.jsonl[.gz], queries.jsonl, qrels/)")
    ap.add_argument("out", type=Path)
    ap.add_argument("--share", type=float, default=default_share)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    n, changed = blank(a.beir, a.out, a.share, a.seed, field)
    print(f"{a.out}: {n} documents, {changed} {what} ({a.share:.0%}, seed {a.seed})")


if __name__ == "__main__":
    main()
