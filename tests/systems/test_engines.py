"""PISA and Tantivy as system kinds on a real PubMed index: their indexes hold the documents Lucene
indexed, are cached and rebuilt when damaged, their runs join the experiment beside Lucene's, and
bad input is one line."""
from __future__ import annotations

import json
import shutil
import sys

import pytest

from nteval.errors import InputError
from nteval.experiment import run_focused

pytest.importorskip("tantivy")
pytest.importorskip("pyterrier_pisa")

SYSTEMS = """
- {name: bm25_k1.2_b0.75, algorithm: bm25, params: {k1: 1.2, b: 0.75}}
- {name: pisa_k1.2_b0.75, algorithm: pisa, params: {k1: 1.2, b: 0.75}}
- {name: tantivy, algorithm: tantivy}
"""


@pytest.fixture(scope="module")
def engines_run(first200_index, tmp_path_factory):
    work = tmp_path_factory.mktemp("engines")
    (work / "s.yaml").write_text(SYSTEMS)
    res = run_focused(first200_index, work / "f", n_topics=60, seed=4, systems=str(work / "s.yaml"), progress=False,
                      min_topics=10)
    return work, res


def test_engines_rank_beside_lucene_and_are_cached(engines_run, first200_index):
    work, res = engines_run
    s = res["systems"]
    assert set(s) == {"bm25_k1.2_b0.75", "pisa_k1.2_b0.75", "tantivy"}
    # three BM25 implementations with the same k1 and b over the same texts: close, not equal (analyzers differ)
    assert abs(s["pisa_k1.2_b0.75"]["RR"] - s["bm25_k1.2_b0.75"]["RR"]) < 0.1
    assert abs(s["tantivy"]["RR"] - s["bm25_k1.2_b0.75"]["RR"]) < 0.1
    caches = sorted(p.name for p in (first200_index / "engines").iterdir() if p.is_dir())
    assert [c.split("-")[1] for c in caches] == ["pisa", "tantivy"] and all(c.startswith("nt-") for c in caches)
    for c in caches:
        meta = json.loads((first200_index / "engines" / c / "meta.json").read_text())
        assert meta["documents"] == json.loads((first200_index / "manifest.json").read_text())["indexes"]["nt"]["documents"]
    notes = res["system_notes"]
    assert notes["pisa_k1.2_b0.75"]["stemmer"] == "porter2" and notes["tantivy"]["engine"] == "tantivy"
    runs = work / "f" / "runs"
    for name in ("pisa_k1.2_b0.75", "tantivy"):
        lines = (runs / f"{name}.run").read_text().splitlines()
        assert lines and all(len(line.split()) == 6 for line in lines)


def test_a_damaged_engine_index_is_built_again(engines_run, first200_index, capsys):
    from nteval.systems.engines import engine_index

    work, _ = engines_run
    tv = next(p for p in (first200_index / "engines").iterdir() if p.is_dir() and "-tantivy-" in p.name)
    meta = json.loads((tv / "meta.json").read_text())
    (tv / "meta.json").write_text(json.dumps({**meta, "documents": 3}))
    built: list[int] = []

    def build(partial, docs, n, progress):
        built.append(n)
        return {}

    from nteval.index import read_manifest

    fp = read_manifest(first200_index)["fingerprint"]
    where, new = engine_index(first200_index, "nt", fp, "tantivy", build)
    assert where == tv and built == [meta["documents"]] and new["documents"] == meta["documents"]
    assert "is damaged (it holds other documents than the index): building it again" in capsys.readouterr().err
    shutil.rmtree(tv)  # (the stand-in build left no Tantivy files: the next use builds the real one)


def test_tantivy_resumes_a_cut_build(first200_index, tmp_path, monkeypatch):
    """A build killed after a commit goes on from there: the documents before it are not added again."""
    import nteval.systems.tantivy as tk
    from nteval.index import read_manifest
    from nteval.systems.execute import Target

    monkeypatch.setenv("NTEVAL_ENGINE_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(tk, "COMMIT", 50)
    target = Target(first200_index, "nt", read_manifest(first200_index)["fingerprint"])
    seen: list[int] = []
    real = tk.tantivy_index

    class Cut(Exception):
        pass

    import tantivy

    orig = tantivy.IndexWriter.add_document

    def add(self, doc):
        seen.append(1)
        if len(seen) == 120:
            raise Cut()
        return orig(self, doc)

    monkeypatch.setattr(tantivy.IndexWriter, "add_document", add)
    with pytest.raises(Cut):
        real(target, False)
    partial = next((tmp_path / "cache").glob("*.partial"))
    assert json.loads((partial / "committed.json").read_text()) == {"documents": 100}
    seen.clear()
    monkeypatch.setattr(tantivy.IndexWriter, "add_document", lambda self, doc: (seen.append(1), orig(self, doc))[1])
    where, meta = real(target, False)
    n = meta["documents"]
    assert meta["resumed_after"] == 100 and len(seen) == n - 100
    index = tk._open(tantivy, where / "tantivy")
    index.reload()
    assert index.searcher().num_docs == n


def test_tantivy_k1_is_fixed_and_a_missing_package_names_its_extra(first200_index, tmp_path, monkeypatch):
    (tmp_path / "bad.yaml").write_text("- {name: t, algorithm: tantivy, params: {k1: 0.9}}\n")
    with pytest.raises(InputError, match="k1 is fixed at 1.2, got 0.9"):
        run_focused(first200_index, tmp_path / "o", n_topics=20, systems=str(tmp_path / "bad.yaml"), progress=False,
                    min_topics=5)
    assert not (tmp_path / "o").exists()
    (tmp_path / "ok.yaml").write_text("- {name: p, algorithm: pisa}\n")
    monkeypatch.setitem(sys.modules, "pyterrier_pisa", None)  # (as if the package were not installed)
    monkeypatch.setenv("NTEVAL_ENGINE_CACHE", str(tmp_path / "cache"))
    with pytest.raises(InputError, match=r"system kind pisa needs the Python package pyterrier-pisa .*nteval\[engines\]"):
        run_focused(first200_index, tmp_path / "o2", n_topics=20, systems=str(tmp_path / "ok.yaml"), progress=False,
                    min_topics=5)


def test_engine_analyzers_against_lucene(first200_index):
    """What the docs say of the analyzers: the stop words are Lucene's; the stemmers differ
    (Porter2 vs Porter)."""
    import tantivy

    from nteval.lucene.searcher import Index
    from nteval.systems.engines import LUCENE_STOPWORDS
    from nteval.systems.tantivy import _analyzer

    with Index(first200_index / "nt") as idx:
        assert all(idx.analyze(w) == [] for w in LUCENE_STOPWORDS)  # Lucene drops every one of them
        assert idx.analyze("generously") == ["gener"]               # Porter
    a = _analyzer(tantivy)
    assert all(a.analyze(w) == [] for w in LUCENE_STOPWORDS)
    assert a.analyze("generously") == ["generous"]                  # Porter2


def test_a_pisa_build_cut_mid_write_is_built_again(first200_index, tmp_path, monkeypatch):
    """A PISA build killed half-way leaves its .partial directory: the next run starts it again
    and the finished index is a normal one (nothing half-written is ever used)."""
    from nteval.index import read_manifest
    from nteval.systems.execute import Target
    from nteval.systems.pisa import pisa_index

    monkeypatch.setenv("NTEVAL_ENGINE_CACHE", str(tmp_path / "cache"))
    target = Target(first200_index, "nt", read_manifest(first200_index)["fingerprint"])
    import pyterrier_pisa as pp

    real = pp.PisaIndex.index

    def cut(self, it):
        for i, _ in enumerate(it):
            if i == 50:
                raise KeyboardInterrupt("cut")

    monkeypatch.setattr(pp.PisaIndex, "index", cut)
    with pytest.raises(KeyboardInterrupt):
        pisa_index(target, "porter2", False)
    partial = next((tmp_path / "cache").glob("*.partial"))
    assert not (partial / "meta.json").exists() and not list((tmp_path / "cache").glob("nt-pisa-porter2-????????????????"))
    monkeypatch.setattr(pp.PisaIndex, "index", real)
    where, meta = pisa_index(target, "porter2", False)
    assert meta["documents"] > 50 and not partial.exists() and (where / "pisa").is_dir()


@pytest.mark.parametrize("module, kind, extra", [("tantivy", "tantivy", "engines"), ("pyterrier", "pyterrier", "pyterrier")])
def test_a_missing_engine_package_names_its_extra(first200_index, tmp_path, monkeypatch, module, kind, extra):
    monkeypatch.setitem(sys.modules, module, None)
    monkeypatch.setenv("NTEVAL_ENGINE_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("NTEVAL_ALLOW_CODE", "1")
    entry = "{name: t, algorithm: tantivy}" if kind == "tantivy" else '{name: t, pyterrier: "x:y", version: "1"}'
    (tmp_path / "s.yaml").write_text(f"- {entry}\n")
    with pytest.raises(InputError, match=rf"needs the Python package {module}.*nteval\[{extra}\]"):
        run_focused(first200_index, tmp_path / "o", n_topics=20, systems=str(tmp_path / "s.yaml"), progress=False,
                    min_topics=5)


def test_engines_in_held_out_high_recall(first200_index, tmp_path, monkeypatch):
    """--holdout: an engine searches the whole collection at depth + the fold's size, then each
    topic's held-out documents leave its ranking, as for every system that does not search Lucene."""
    from nteval.experiment import run_highrecall
    from nteval.formats.trec import read_run

    monkeypatch.setenv("NTEVAL_ENGINE_CACHE", str(tmp_path / "cache"))
    (tmp_path / "s.yaml").write_text("- {name: bm25, algorithm: bm25}\n- {name: tantivy, algorithm: tantivy}\n"
                                     "- {name: pisa, algorithm: pisa}\n")
    res = run_highrecall(first200_index, tmp_path / "h", n_topics=40, seed=2, systems=str(tmp_path / "s.yaml"),
                         holdout=True, progress=False, min_topics=5)
    assert set(res["systems"]) == {"bm25", "tantivy", "pisa"}
    for name in ("tantivy", "pisa"):
        whole = read_run(tmp_path / "h" / "runs" / "holdout" / "whole" / f"{name}.run")
        scored = read_run(tmp_path / "h" / "runs" / "holdout" / f"{name}.run")
        sources = {q: q.split("-")[0] for q in scored}
        # the engine found the sentence's own abstract for most topics; it never reaches the scored run
        assert sum(sources[q] in {d for d, _ in whole.get(q, [])} for q in scored) >= len(scored) // 2
        assert not any(sources[q] in {d for d, _ in ranking} for q, ranking in scored.items())
