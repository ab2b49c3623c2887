"""A small pure-Python BM25 over an nteval index's document store: the "any system" of the tests.

Used two ways: as a Python callable (``PyBM25(index_dir).search``) and as an external program
(``python tests/pybm25.py INDEX_DIR TOPICS RUN K``, reading ``qid<TAB>text`` topics and writing a
TREC run), so both adapters are tested with a real, independent ranking function.
"""
from __future__ import annotations

import math
import re
import sqlite3
import sys
from collections import Counter
from pathlib import Path

_TOKEN = re.compile(r"[a-z0-9]+")
_STOP = frozenset("a an and are as at be by for from has in is it its of on or that the to was were with".split())


def tokens(text: str) -> list[str]:
    return [t for t in _TOKEN.findall(text.lower()) if t not in _STOP]


class PyBM25:
    def __init__(self, index_dir: str | Path, field: str = "abstract", k1: float = 0.9, b: float = 0.4):
        db = sqlite3.connect(str(Path(index_dir) / "docs.sqlite"))
        rows = db.execute(f"SELECT docid, {field} FROM docs ORDER BY seq").fetchall()
        db.close()
        self.docids = [r[0] for r in rows]
        self.tf = [Counter(tokens(r[1])) for r in rows]
        self.len = [sum(c.values()) for c in self.tf]
        self.avg = sum(self.len) / max(1, len(self.len))
        df: Counter = Counter()
        for c in self.tf:
            df.update(c.keys())
        n = len(rows)
        self.idf = {t: math.log(1 + (n - d + 0.5) / (d + 0.5)) for t, d in df.items()}
        self.k1, self.b = k1, b
        self.calls = 0

    def search(self, queries: dict[str, str], k: int) -> dict[str, list[tuple[str, float]]]:
        self.calls += 1
        out = {}
        for qid, text in queries.items():
            terms = [t for t in set(tokens(text)) if t in self.idf]
            scores = []
            for i, tf in enumerate(self.tf):
                s = 0.0
                for t in terms:
                    f = tf.get(t)
                    if f:
                        s += self.idf[t] * f * (self.k1 + 1) / (f + self.k1 * (1 - self.b + self.b * self.len[i] / self.avg))
                if s > 0:
                    scores.append((self.docids[i], s))
            scores.sort(key=lambda x: -x[1])
            out[qid] = scores[:k]
        return out


def main(argv: list[str]) -> int:
    index_dir, topics_path, run_path, k = argv[1], argv[2], argv[3], int(argv[4])
    topics = dict(line.split("\t", 1) for line in Path(topics_path).read_text(encoding="utf-8").splitlines() if line)
    run = PyBM25(index_dir).search(topics, k)
    with open(run_path, "w", encoding="utf-8") as fh:
        for qid, ranking in run.items():
            for rank, (docid, score) in enumerate(ranking, 1):
                fh.write(f"{qid} Q0 {docid} {rank} {score:.6f} pybm25\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
