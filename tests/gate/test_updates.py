"""A pin on an index updated since: the bundled sample split into the records of a first release
(1,400) and the 600 an update adds, pinned before the update. Extensions of the pin made on the
updated index, fresh topics too few to decide on in the history, fresh topics asked of a run file."""
from __future__ import annotations

import gzip
import json
import re
import shutil
from pathlib import Path

import pytest
from conftest import cli, retag


@pytest.fixture(scope="module")
def updated(tmp_path_factory) -> dict[str, Path]:
    """{"before": the index of the first 1,400 records, "pin": 150 topics pinned on it, "after": that
    index updated with the other 600 records}."""
    from nteval.demo import sample_path
    from nteval.gate.pin import PinSpec, pin_topics
    from nteval.index import build_index, update_index

    where = tmp_path_factory.mktemp("updated")
    text = gzip.open(sample_path(), "rt", encoding="utf-8").read()
    head, arts = text[: text.index("<PubmedArticle>")], re.findall(r"<PubmedArticle>.*?</PubmedArticle>", text, re.S)
    for name, part in (("A", arts[:1400]), ("B", arts[1400:])):
        with gzip.open(where / f"sample{name}.xml.gz", "wt", encoding="utf-8") as fh:
            fh.write(head + "\n".join(part) + "\n</PubmedArticleSet>\n")
    build_index([where / "sampleA.xml.gz"], where / "before")
    pin_topics(where / "before", where / "pin", PinSpec(n_topics=150))
    shutil.copytree(where / "before", where / "after")
    update_index(where / "after", [where / "sampleB.xml.gz"])
    return {"before": where / "before", "pin": where / "pin", "after": where / "after"}


def test_an_extension_on_the_updated_index_scores_its_pinned_topics_as_the_pin_does(updated, tmp_path):
    """`pin --extend` on the updated index (what an inconclusive gate advises) keeps the pin's list of
    known documents: the pinned topics are scored on condensed rankings under both pins (the same
    system scores the same on them), and the new topics judge known documents only."""
    from nteval.gate.gate import run_check
    from nteval.gate.pin import read_pin

    ext = tmp_path / "pin2"
    r = cli("pin", "--extend", updated["pin"], "--index", updated["after"], "--topics", 200, "--out", ext, "--quiet")
    assert r.exit_code == 0, r.output
    per = {}
    for name, p in (("pin", updated["pin"]), ("ext", ext)):
        res = run_check(updated["after"], p, tmp_path / f"c-{name}", "bm25", tmp_path / f"{name}.sqlite",
                        task="topical", progress=False)
        assert res["sets"]["pinned"].get("condensed") and res["pin"]["documents_added_since"] > 0
        per[name] = res["per_topic"]["pinned"]["bm25"]
    common = sorted(set(per["pin"]) & set(per["ext"]))
    assert len(common) > 100 and len(per["ext"]) > len(per["pin"])
    assert [per["ext"][q] for q in common] == pytest.approx([per["pin"][q] for q in common], abs=1e-9)
    p2 = read_pin(ext)
    known = p2.known()
    _, qrels, _ = p2.topic_set("highrecall")
    assert all(d in known for v in qrels.values() for d in v)


def test_a_release_whose_fresh_topics_were_too_few_ships(updated, tmp_path):
    """A candidate that passed on the pinned topics, with 3 fresh topics shown but not decided on,
    went live: the regression checked after it alerts against it."""
    hist = tmp_path / "h.sqlite"
    r = cli("gate", "--index", updated["after"], "--pin", updated["pin"], "--task", "known-item", "--baseline",
            "disjunctive_1", "--candidate", "bm25", "--label", "v2", "--baseline-label", "v1", "--fresh", 3,
            "--history", hist, "--out", tmp_path / "g", "--quiet")
    assert r.exit_code == 0 and "only 3 fresh topics (fewer than 30): shown, not decided on" in r.output, r.output
    r = cli("check", "--index", updated["after"], "--pin", updated["pin"], "--task", "known-item", "--system",
            "disjunctive_1", "--label", "v3", "--history", hist, "--out", tmp_path / "c", "--quiet")
    assert r.exit_code == 5 and "ALERT: release v3" in r.output and "best earlier release v2" in r.output, r.output
    r = cli("history", hist)
    assert "not released" not in r.output, r.output


def test_fresh_topics_asked_of_a_run_file_are_refused_before_the_work(updated, tmp_path):
    first = tmp_path / "first"
    assert cli("check", "--index", updated["after"], "--pin", updated["pin"], "--task", "known-item", "--system", "bm25",
               "--history", tmp_path / "h.sqlite", "--out", first, "--quiet").exit_code == 0
    run = retag(first / "runs" / "pinned" / "bm25.run", tmp_path / "live.run", "live")
    r = cli("check", "--index", updated["after"], "--pin", updated["pin"], "--task", "known-item", "--system", run,
            "--fresh", 20, "--history", tmp_path / "h.sqlite", "--out", tmp_path / "c", "--quiet")
    assert r.exit_code == 0, r.output
    assert r.stderr.startswith("note: --fresh 20: no fresh topic made: fresh topics need systems nteval runs")
    res = json.loads((tmp_path / "c" / "check.json").read_text())
    assert res["sets"]["fresh"]["topics"] == 0 and "nteval runs" in res["sets"]["fresh"]["status"]["why_not"]
    assert not (tmp_path / "c" / "runs" / "fresh").exists()
