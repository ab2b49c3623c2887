"""Tantivy (the Rust search library many production teams embed instead of Lucene) as a system
kind, through its official Python bindings: ``pip install 'nteval[engines]'``.

The index is built from the documents of the index the protocol searches, exactly the texts
Lucene indexed (:func:`nteval.corpus.store.index_texts`), cached beside the nteval index
(:mod:`nteval.systems.engines`) and resumable: documents are committed in batches and a cut
build goes on after the last commit.

**How its analysis differs from nteval's Lucene**: Tantivy's simple tokenizer (split on
non-alphanumeric characters), lower-cased, Lucene's English stop words (the same list as nteval's
Lucene), then Tantivy's English stemmer (Snowball Porter2; Lucene: the original Porter stemmer).
A query is analyzed the same way and searched as a disjunction of its terms (a term repeated in
the query counts that many times, as in Lucene's bag of words). **BM25's parameters are fixed**:
Tantivy's Python bindings score with k1 = 1.2, b = 0.75 and offer no way to change them, so the
kind declares them with those bounds (compare it with Lucene's ``bm25_k1.2_b0.75``). Like Lucene,
Tantivy keeps document lengths in one byte.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..corpus.store import index_docids
from ..errors import InputError
from ..params import Param
from ..progress import shown as show
from ..progress import tqdm
from .engines import LUCENE_STOPWORDS, engine_index, package_version, require
from .kind import RunContext, SystemKind

if TYPE_CHECKING:
    from ..formats.trec import Run
    from .system import System

K1 = Param("k1", 1.2, "BM25 term-frequency saturation (fixed by Tantivy's Python bindings)", min=1.2, max=1.2)
B = Param("b", 0.75, "BM25 document-length normalization (fixed by Tantivy's Python bindings)", min=0.75, max=0.75)
TOKENIZER = "nteval_en"
#: documents per commit while building (a cut build resumes after the last one)
COMMIT = 20_000


def _analyzer(tantivy: Any) -> Any:
    return (tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.simple())
            .filter(tantivy.Filter.remove_long(40))
            .filter(tantivy.Filter.lowercase())
            .filter(tantivy.Filter.custom_stopword(list(LUCENE_STOPWORDS)))
            .filter(tantivy.Filter.stemmer("english"))
            .build())


def _schema(tantivy: Any) -> Any:
    sb = tantivy.SchemaBuilder()
    sb.add_unsigned_field("seq", stored=False, indexed=False, fast=True)
    sb.add_text_field("text", stored=False, tokenizer_name=TOKENIZER, index_option="freq")
    return sb.build()


def _open(tantivy: Any, path: Path) -> Any:
    index = tantivy.Index(_schema(tantivy), path=str(path), reuse=True)
    index.register_tokenizer(TOKENIZER, _analyzer(tantivy))
    return index


def tantivy_index(target: Any, progress: bool | None) -> tuple[Path, dict[str, Any]]:
    """The cached Tantivy index of the target's documents (resumed after its last commit)."""
    tv = require("tantivy", "engines", "tantivy")

    def build(partial: Path, docs, n: int, shown: bool | None) -> dict[str, Any]:
        where = partial / "tantivy"
        where.mkdir(exist_ok=True)
        state = partial / "committed.json"
        try:
            done = int(json.loads(state.read_text())["documents"])
        except (OSError, ValueError, KeyError, TypeError):
            done = 0
        index = _open(tv, where)
        index.reload()
        if index.searcher().num_docs != done:  # documents beyond the last recorded commit, or fewer: start over
            writer = index.writer(heap_size=128_000_000, num_threads=1)
            writer.delete_all_documents()
            writer.commit()
            writer.wait_merging_threads()
            done = 0
        writer = index.writer(heap_size=128_000_000, num_threads=1)
        bar = tqdm(total=n, initial=done, unit=" doc", desc=f"Tantivy index of {target.index_name}",
                   disable=not show(shown), file=sys.stderr, leave=False, mininterval=0.5)
        try:
            for seq, (_docid, text) in enumerate(docs):
                if seq < done:
                    continue
                doc = tv.Document()
                doc.add_unsigned("seq", seq)
                doc.add_text("text", text)
                writer.add_document(doc)
                bar.update(1)
                if (seq + 1) % COMMIT == 0:
                    writer.commit()
                    state.write_text(json.dumps({"documents": seq + 1}))
            writer.commit()
            writer.wait_merging_threads()
        finally:
            bar.close()
        state.unlink(missing_ok=True)
        return {"tantivy": getattr(tv, "__version__", None), "resumed_after": done}

    return engine_index(target.index_dir, target.index_name, target.fingerprint, "tantivy", build, progress)


class TantivyBM25(SystemKind):
    name = "tantivy"
    engine_package = "tantivy"
    extra = "engines"
    params = (K1, B)
    summary = "Okapi BM25 in Tantivy, k1 1.2 and b 0.75 fixed (pip install 'nteval[engines]')"
    family = "bm25"
    needs_lucene = False

    def run(self, target: Any, system: System, topics: dict[str, str], depth: int, ctx: RunContext) -> Run:
        from concurrent.futures import ThreadPoolExecutor

        tv = require("tantivy", "engines", "tantivy")
        where, meta = tantivy_index(target, target.progress)
        index = _open(tv, where / "tantivy")
        index.reload()
        searcher, schema, analyzer = index.searcher(), index.schema, _analyzer(tv)
        if searcher.num_docs != meta["documents"]:  # (Tantivy opens a directory without its meta.json as empty)
            raise InputError(where, f"the Tantivy index holds {searcher.num_docs:,} documents where its meta.json says "
                                    f"{meta['documents']:,}: delete {where} (nteval builds it again)")
        docids = index_docids(target.index_dir, target.index_name)
        should = tv.Occur.Should

        def one(query: str) -> list[tuple[str, float]]:
            terms = analyzer.analyze(query)
            if not terms:
                return []
            q = tv.Query.boolean_query([(should, tv.Query.term_query(schema, "text", t)) for t in terms])
            hits = searcher.search(q, limit=depth, count=False).hits
            seqs = searcher.fast_field_values("seq", [a for _, a in hits])
            return [(docids[s], float(score)) for (score, _), s in zip(hits, seqs)]

        qids = list(topics)
        out: Run = {}
        with ThreadPoolExecutor(max_workers=max(1, ctx.threads)) as pool:
            for i in range(0, len(qids), 500):
                chunk = qids[i:i + 500]
                out.update(zip(chunk, pool.map(lambda q: one(topics[q]), chunk)))
                ctx.tick(len(chunk))
        target.notes[system.name] = {"engine": "tantivy", "index": str(where), "build_seconds": meta.get("build_seconds")}
        return out

    def identity(self, system: System) -> dict[str, Any]:
        return {**super().identity(system), "tantivy": package_version("tantivy"),
                "analyzer": "simple+lower+lucene-stops+porter2"}
