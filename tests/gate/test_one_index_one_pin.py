"""One index, one pin (issue 56, hostile K1): the default reference's vector of a text no longer
depends on the texts encoded beside it, so the same seed on the same index gives byte-identical
topics and judgments whatever the caches hold: an index updated with its vectors carried, the same
records indexed from scratch, and that index again from empty caches; a pooled reference whose store
an earlier pin warmed, and a cold one. The bundled sample's first 900 records, split into 600 and
the 300 an update adds; the vectors kept beside each index (not the session's shared cache), so each
index encodes what its own history makes it. (With the batched int8 encoding both tests fail.)"""
from __future__ import annotations

import gzip
import re
import shutil
from pathlib import Path

from conftest import needs_onnx


def _split(where: Path, first: int = 600, total: int = 900) -> None:
    """The sample's first ``first`` records (A) and the next ones up to ``total`` (B, an update)."""
    from nteval.demo import sample_path

    text = gzip.open(sample_path(), "rt", encoding="utf-8").read()
    head, arts = text[: text.index("<PubmedArticle>")], re.findall(r"<PubmedArticle>.*?</PubmedArticle>", text, re.S)
    for name, part in (("A", arts[:first]), ("B", arts[first:total])):
        with gzip.open(where / f"sample{name}.xml.gz", "wt", encoding="utf-8") as fh:
            fh.write(head + "\n".join(part) + "\n</PubmedArticleSet>\n")


def _same(a: Path, b: Path) -> None:
    for f in ("focused/topics.tsv", "focused/qrels.txt", "highrecall/topics.tsv", "highrecall/qrels.txt.gz"):
        assert (a / f).read_bytes() == (b / f).read_bytes(), f


@needs_onnx
def test_an_updated_index_and_its_twin_from_scratch_give_one_pin(tmp_path, monkeypatch):
    import json

    from nteval.gate.pin import PinSpec, pin_topics
    from nteval.index import build_index, read_manifest, update_index

    monkeypatch.delenv("NTEVAL_DENSE_CACHE", raising=False)   # (each index encodes beside itself)
    _split(tmp_path)
    build_index([tmp_path / "sampleA.xml.gz"], tmp_path / "A")
    pin_topics(tmp_path / "A", tmp_path / "pinA", PinSpec(n_topics=30))   # (encodes A's records)
    shutil.copytree(tmp_path / "A", tmp_path / "AB")
    update_index(tmp_path / "AB", [tmp_path / "sampleB.xml.gz"])           # (A's vectors carried)
    build_index([tmp_path / "sampleA.xml.gz", tmp_path / "sampleB.xml.gz"], tmp_path / "AB2")
    assert read_manifest(tmp_path / "AB")["fingerprint"] == read_manifest(tmp_path / "AB2")["fingerprint"]
    pin_topics(tmp_path / "AB", tmp_path / "pinAB", PinSpec(n_topics=200))
    pin_topics(tmp_path / "AB2", tmp_path / "pinAB2", PinSpec(n_topics=200))
    meta = [json.loads(m.read_text()) for m in (tmp_path / "AB" / "dense").glob("all-*/meta.json")]
    assert meta and meta[0]["reused"] >= 500 and meta[0]["encoded_this_time"] <= 300   # (the update's records only)
    _same(tmp_path / "pinAB", tmp_path / "pinAB2")
    shutil.rmtree(tmp_path / "AB2" / "dense")   # (and made again from empty caches: on disk and in this process)
    from nteval.encoders import store

    monkeypatch.setattr(store, "_VECTORS", {})
    pin_topics(tmp_path / "AB2", tmp_path / "pinAB2again", PinSpec(n_topics=200))
    _same(tmp_path / "pinAB2", tmp_path / "pinAB2again")


@needs_onnx
def test_a_pooled_pin_is_the_same_cold_and_warm(tmp_path, monkeypatch):
    from nteval.gate.pin import PinSpec, pin_topics
    from nteval.index import build_index

    monkeypatch.delenv("NTEVAL_DENSE_CACHE", raising=False)
    _split(tmp_path)
    build_index([tmp_path / "sampleA.xml.gz"], tmp_path / "cold")
    shutil.copytree(tmp_path / "cold", tmp_path / "warm")
    pin_topics(tmp_path / "warm", tmp_path / "warmup", PinSpec(n_topics=30, seed=7, pool=50))   # (warms its store)
    pin_topics(tmp_path / "cold", tmp_path / "pin_cold", PinSpec(n_topics=80, pool=50))
    pin_topics(tmp_path / "warm", tmp_path / "pin_warm", PinSpec(n_topics=80, pool=50))
    _same(tmp_path / "pin_cold", tmp_path / "pin_warm")
