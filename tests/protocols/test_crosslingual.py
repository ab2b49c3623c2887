"""Cross-lingual focused protocol on real Medline records with vernacular titles (the bundled
pubmed20n0014 slice: Spanish, Italian, Portuguese and German titles of English-abstract records)."""
from __future__ import annotations

import json

import pytest

from nteval.errors import InputError
from nteval.experiment import run_protocol


def _run(index, out, **params):
    return run_protocol("crosslingual", index, out, systems="default", progress=False, min_topics=3, **params)


def test_vernacular_titles_are_queries_and_own_abstracts_relevant(first100_index, tmp_path):
    res = _run(first100_index, tmp_path / "a", seed=1)
    topics = dict(line.split("\t", 1) for line in (tmp_path / "a" / "topics.tsv").read_text().splitlines())
    # PMID 399349, checked by hand against the XML: <VernacularTitle> and Language ger; topic id DOCID-lang
    assert topics["399349-ger"] == "Dreidimensionale Rekonstruktion von odontogenen Zysten und ihre Beziehung zu Zähnen und Knochen."
    qrels = [line.split() for line in (tmp_path / "a" / "qrels.txt").read_text().splitlines()]
    assert all(q.rsplit("-", 1)[0] == d and r == "1" for q, _, d, r in qrels) and len(qrels) == len(topics)
    langs = res["strata"]["language"]
    assert set(langs) == {"spa", "ita", "por", "ger"} == set(res["languages"])
    assert sum(g["topics"] for g in langs.values()) == res["n_topics"] == len(topics)
    for g in langs.values():  # per-language means are means over that language's topics
        assert set(g["systems"]) == set(res["systems"])
    assert res["verdict"]["measure"] == "RR" and res["protocol"] == "crosslingual"
    # every topic's relevant document is its own record, searched in nt: a run finds some of them
    assert max(s["R@1000"] for s in res["systems"].values()) > 0


def test_same_seed_same_bytes_and_language_filter(first100_index, tmp_path):
    _run(first100_index, tmp_path / "a", seed=4)
    _run(first100_index, tmp_path / "b", seed=4)
    for f in ("topics.tsv", "qrels.txt"):
        assert (tmp_path / "a" / f).read_bytes() == (tmp_path / "b" / f).read_bytes()
    res = _run(first100_index, tmp_path / "c", seed=4, languages=("spa",), n_topics=3)
    assert list(res["strata"]["language"]) == ["spa"] and res["n_topics"] == 3
    assert res["languages"]["spa"]["eligible"] == 4
    with pytest.raises(InputError, match=r"no vernacular title in language\(s\) xyz .this index has: spa 4"):
        _run(first100_index, tmp_path / "d", languages=("xyz",))
    assert not (tmp_path / "d").exists()


def test_old_index_says_rebuild(old_index, tmp_path):
    with pytest.raises(InputError, match="rebuild it with nteval index --force"):
        _run(old_index, tmp_path / "o")
    assert not (tmp_path / "o").exists()
    json.loads((old_index / "manifest.json").read_text())  # untouched
