"""An independent BM25 over an exported BEIR collection: ``bm25s`` (PyPI, pure Python/NumPy, its
own tokenizer: lowercase, ``\\w\\w+`` tokens, English stopwords, no stemming) → a TREC run file.

The outside system of the export round-trip test; reusable wherever an external run is needed
(``python tests/bm25s_run.py BEIR_DIR RUN [--depth N]``).
"""
from __future__ import annotations

import json
import sys
from pathlib import Path


def _jsonl(path: Path) -> list[dict]:
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def bm25s_run(beir_dir: str | Path, run_path: str | Path, depth: int = 1000, k1: float = 0.9, b: float = 0.4,
              tag: str = "bm25s") -> dict[str, int]:
    """Search BEIR_DIR's queries over its corpus (title and text joined by a space, as BEIR
    systems do) with bm25s' Lucene-variant BM25; write the top ``depth`` hits with a positive
    score per query as a TREC run (``qid Q0 docid rank score tag``). Returns counts."""
    import bm25s

    beir_dir = Path(beir_dir)
    docs = _jsonl(beir_dir / "corpus.jsonl")
    queries = _jsonl(beir_dir / "queries.jsonl")
    tokenizer = bm25s.tokenization.Tokenizer(stopwords="en")
    corpus_ids = tokenizer.tokenize([f"{d.get('title', '')} {d['text']}".strip() for d in docs], update_vocab=True,
                                    return_as="ids", show_progress=False)
    query_ids = tokenizer.tokenize([q["text"] for q in queries], update_vocab=False, return_as="ids",
                                   show_progress=False)  # words the corpus lacks become the empty token
    model = bm25s.BM25(k1=k1, b=b, method="lucene")
    model.index(corpus_ids, show_progress=False)
    hits, scores = model.retrieve(query_ids, k=min(depth, len(docs)), show_progress=False)
    lines, empty = [], 0
    for q, row, srow in zip(queries, hits, scores):
        ranked = [(docs[int(i)]["_id"], float(s)) for i, s in zip(row, srow) if s > 0]
        empty += not ranked
        lines += [f"{q['_id']} Q0 {d} {r} {s:.6f} {tag}\n" for r, (d, s) in enumerate(ranked, 1)]
    Path(run_path).write_text("".join(lines), encoding="utf-8")
    return {"queries": len(queries), "documents": len(docs), "empty_queries": empty, "lines": len(lines)}


if __name__ == "__main__":
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("beir_dir")
    ap.add_argument("run")
    ap.add_argument("--depth", type=int, default=1000)
    ap.add_argument("--k1", type=float, default=0.9)
    ap.add_argument("--b", type=float, default=0.4)
    ap.add_argument("--tag", default="bm25s")
    a = ap.parse_args()
    print(bm25s_run(a.beir_dir, a.run, a.depth, a.k1, a.b, a.tag), file=sys.stderr)
