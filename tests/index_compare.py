"""Helpers for tests that compare two indexes built different ways (update, resume) and that make
Medline files out of the bundled slices."""
from __future__ import annotations

import gzip
import re
from pathlib import Path

from nteval.corpus.store import DocStore
from nteval.index import read_manifest
from nteval.lucene.searcher import Index

_ARTICLE = re.compile(r"<PubmedArticle>.*?</PubmedArticle>", re.S)
_PMID = re.compile(r"<PMID Version=\"\d+\">(\d+)</PMID>")


def make_update(path: Path, base: Path) -> Path:
    """An NLM-style update file for ``base``: 4 revised records (new titles), one whose newest
    version lost its abstract, 2 DeleteCitations of present records and 1 of an absent one, and one
    new record."""
    text = gzip.open(base, "rt", encoding="utf-8").read()
    with_abstract = [a for a in _ARTICLE.findall(text) if "<Abstract>" in a]
    revised = [re.sub(r"<ArticleTitle>", "<ArticleTitle>Revised version: ", a, count=1) for a in with_abstract[:4]]
    lost = re.sub(r"<Abstract>.*?</Abstract>", "", with_abstract[4], flags=re.S)
    new = _PMID.sub('<PMID Version="1">99999001</PMID>', with_abstract[7], count=1)
    deleted = [_PMID.search(a)[1] for a in with_abstract[5:7]] + ["99999999"]
    path.write_text('<?xml version="1.0" encoding="utf-8"?>\n<PubmedArticleSet>\n' + "\n".join([*revised, lost, new])
                    + "\n<DeleteCitation>\n" + "".join(f'<PMID Version="1">{p}</PMID>\n' for p in deleted)
                    + "</DeleteCitation>\n</PubmedArticleSet>\n", encoding="utf-8")
    return path


def renumbered(path: Path, base: Path, copies: int, first_pmid: int = 90_000_000) -> Path:
    """A Medline file of ``copies`` copies of ``base``'s articles under new, unique PMIDs."""
    text = gzip.open(base, "rt", encoding="utf-8").read()
    articles = _ARTICLE.findall(text)
    with open(path, "w", encoding="utf-8") as fh:
        fh.write('<?xml version="1.0" encoding="utf-8"?>\n<PubmedArticleSet>\n')
        for i in range(copies * len(articles)):
            fh.write(_PMID.sub(f'<PMID Version="1">{first_pmid + i}</PMID>', articles[i % len(articles)], count=1) + "\n")
        fh.write("</PubmedArticleSet>\n")
    return path


def _stable(m: dict) -> dict:
    """What must match between an updated index and a from-scratch one (paths and clocks aside)."""
    return {"counts": m["counts"], "per_source": [s["counts"] for s in m["sources"]],
            "sha256": [s["sha256"] for s in m["sources"]], "indexes": m["indexes"], "store": m["store"],
            "fingerprint": m["fingerprint"]}


def _rows(index_dir: Path) -> tuple[list, list]:
    store = DocStore(index_dir / "docs.sqlite")
    try:
        docs = store.db.execute("SELECT * FROM docs ORDER BY docid").fetchall()
        mesh = store.db.execute("SELECT * FROM mesh ORDER BY docid, heading, qualifier_ui, qualifier").fetchall()
        tables = {t for (t,) in store.db.execute("SELECT name FROM sqlite_master")}
        skipped = store.db.execute("SELECT * FROM skipped ORDER BY docid").fetchall() if "skipped" in tables else None
    finally:
        store.close()
    return docs, mesh, tables, skipped


def assert_same_index(updated: Path, scratch: Path, n_queries: int = 100) -> None:
    assert _stable(read_manifest(updated)) == _stable(read_manifest(scratch))
    assert _rows(updated) == _rows(scratch)
    store = DocStore(scratch / "docs.sqlite")
    titles = [t for (t,) in store.db.execute("SELECT title FROM docs ORDER BY seq LIMIT ?", (n_queries,))]
    store.close()
    assert len(titles) == n_queries
    for name in ("all", "nt"):
        with Index(updated / name) as u, Index(scratch / name) as s:
            assert u.num_docs == u.max_doc == s.num_docs == s.max_doc  # no deleted document left
            for t in titles:
                assert u.search(t, 100) == s.search(t, 100), (name, t)
