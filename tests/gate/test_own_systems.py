"""A team's own system judged as nteval judges its own (issue 55): the same ranking gets the same
decision whether nteval computes it or reads it from a run file (hostile K2); a declared family is
checked against the ranking where the ranking can refute it; a wrapper (a one-input fusion, an input
at weight 0) has the family of what it wraps (K3); an encoder the references do not contain is told
so in the first line and judged with the leave-model-out evidence (F3). On the bundled sample with
a default pin (the lexical vote and all-MiniLM-L6-v2), and all-MiniLM-L6-v2 as the references
encode it (ONNX int8, 128 word pieces)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import cli, needs_e5, needs_onnx, one_line_error, retag

SYSTEMS = """- {name: mini8, algorithm: dense, params: {model: minilm, backend: onnx-int8, max_tokens: 128}}
- {name: bad4, algorithm: bm25, params: {k1: 0.01, b: 0.0}}
- {name: f1, algorithm: linear, params: {systems: [bad4]}}
- {name: h4w0, algorithm: linear, params: {systems: [bad4, mini8], weights: [1, 0]}}
"""


@pytest.fixture(scope="module")
def pinned(sample_index, sample_pin, tmp_path_factory) -> tuple[Path, Path, Path]:
    """(the sample's index, the session's default pin of 300 topics, a systems file)."""
    where = tmp_path_factory.mktemp("own")
    sref = json.loads((sample_pin / "pin.json").read_text())["protocols"]["highrecall"]["settings"]["sref"]
    assert "neural" in sref["families"]
    (where / "systems.yaml").write_text(SYSTEMS, encoding="utf-8")
    return sample_index, sample_pin, where / "systems.yaml"


@pytest.fixture(scope="module")
def twins(pinned, tmp_path_factory) -> dict[str, dict]:
    """MiniLM computed by nteval against BM25, per task: its gate's candidate (the twin every other
    way in must match), gated once for the module."""
    where = tmp_path_factory.mktemp("twins")
    out = {}
    for task in ("known-item", "topical"):
        r = _gate(pinned, where / task, "bm25", "mini8", task=task)
        assert r.exit_code in (0, 3, 4), r.output
        out[task] = _cand(where / task, "mini8")
    return out


def _gate(pinned, out: Path, baseline: str, candidate: str, *args: str, task: str = "topical"):
    index, pin, systems = pinned
    cache = Path(pin).parent / "own-systems-runs"   # (this module's gates share their runs: each system runs once a task)
    return cli("gate", "--index", index, "--pin", pin, "--task", task, "--systems", systems, "--baseline", baseline,
               "--candidate", candidate, "--out", out, "--quiet", "--runs-cache", cache, *args)


def _run_of(pinned, task: str, name: str) -> Path:
    """A system's run as the gates of this module cached it."""
    protocol = "focused" if task == "known-item" else "highrecall"
    return next((Path(pinned[1]).parent / "own-systems-runs").glob(f"*/{protocol}/pinned/{name}.run"))


def _cand(out: Path, name: str) -> dict:
    return json.loads((out / "gate.json").read_text())["candidates"][name]


@needs_onnx
def test_one_ranking_one_decision(pinned, twins, tmp_path):
    """K2: MiniLM computed, and its own run given back as a run file (undeclared, or declared neural),
    get the same decision and exit; declared bm25 it is refused in one line (it ranks like no lexical
    system); BM25's own run as the live baseline (how a live engine's answers arrive) does not make
    the pair's rule disappear; declared neural, it is refused (it ranks like a lexical system)."""
    twin = twins["topical"]
    assert twin["family"]["candidate_family"] == "neural"
    run = _run_of(pinned, "topical", "mini8")
    bm25_run = _run_of(pinned, "topical", "bm25")
    files = tmp_path / "files.yaml"
    files.write_text(f"""- {{name: m8run, run: {retag(run, tmp_path / 'm8run.run', 'm8run')}}}
- {{name: m8neural, run: {retag(run, tmp_path / 'm8neural.run', 'm8neural')}, params: {{family: neural}}}}
- {{name: m8bm25, run: {retag(run, tmp_path / 'm8bm25.run', 'm8bm25')}, params: {{family: bm25}}}}
- {{name: live_bm25, run: {retag(bm25_run, tmp_path / 'live_bm25.run', 'live_bm25')}}}
- {{name: live_neural, run: {retag(bm25_run, tmp_path / 'live_neural.run', 'live_neural')}, params: {{family: neural}}}}
- {{name: mini8, algorithm: dense, params: {{model: minilm, backend: onnx-int8, max_tokens: 128}}}}
""", encoding="utf-8")
    index, pin, _ = pinned
    for name in ("m8run", "m8neural"):
        out = tmp_path / name
        r = _gate((index, pin, files), out, "bm25", name)
        c = _cand(out, name)
        assert r.exit_code == (3 if twin["decision"] == "worse" else 4 if twin["decision"] == "inconclusive" else
                               r.exit_code), r.output
        assert c["pinned"]["diff"] == twin["pinned"]["diff"]  # (the same ranking: the same scores)
        # the run file is never judged more leniently than its computed twin
        assert c["family"]["overstatement"] >= twin["family"]["overstatement"], c["family"]
        assert c["decision"] == twin["decision"] or (twin["decision"] in ("better", "non-inferior")
                                                     and c["decision"] == "inconclusive"), (c["decision"], twin["decision"])
    # undeclared, its ranking is read: no lexical system's, and ordered as the references' own model orders its hits
    undeclared = _cand(tmp_path / "m8run", "m8run")
    assert undeclared["family"]["candidate_family"] == "neural" and undeclared["decision"] == twin["decision"]
    assert undeclared["family"]["encoder_checked"]["m8run"]["same"]
    # declared neural, its ranking is read for its encoder: it orders its hits as the references' own model does
    declared = _cand(tmp_path / "m8neural", "m8neural")
    assert declared["family"]["candidate_family"] == "neural" and declared["decision"] == twin["decision"]
    assert declared["family"]["encoder_checked"]["m8neural"]["same"], declared["family"]
    assert "m8neural is judged as the references' own model (its ranking orders its top hits as all-MiniLM-L6-v2 " \
           "does" in (tmp_path / "m8neural" / "gate.md").read_text()
    one_line_error(_gate((index, pin, files), tmp_path / "lie", "bm25", "m8bm25"),
                   "system m8bm25: declared bm25", "ranks like no lexical system")
    assert not any((tmp_path / "lie" / f).exists() for f in ("gate.json", "gate.md", "junit.xml"))
    # the baseline side: BM25's own run as a run file, undeclared: a lexical ranking, the pair's rule holds
    r = _gate((index, pin, files), tmp_path / "live", "live_bm25", "mini8")
    live = _cand(tmp_path / "live", "mini8")
    assert live["family"]["read_from_ranking"]["live_bm25"]["class"] == "lexical"
    assert live["family"]["overstatement"] >= twin["family"]["overstatement"]
    assert live["decision"] == twin["decision"] or twin["decision"] in ("better", "non-inferior"), r.output
    one_line_error(_gate((index, pin, files), tmp_path / "lie2", "live_neural", "mini8"),
                   "system live_neural: declared neural", "ranks like a lexical system")


@needs_onnx
def test_a_false_declaration_buys_no_quieter_exit(pinned, twins, tmp_path):
    """Hostile turn 8, N1: MiniLM's own topical ranking declared `family: hybrid` (or static_hybrid)
    got the hybrid's smaller allowance and PASS, where its computed twin is INCONCLUSIVE. Its ranking
    orders its hits as the references' own model does: it is judged as the more cautious of what it
    declares and that model, and says so."""
    twin = twins["topical"]
    run = _run_of(pinned, "topical", "mini8")
    index, pin, _ = pinned
    files = tmp_path / "files.yaml"
    files.write_text("".join(f"- {{name: m8{f}, run: {retag(run, tmp_path / f'm8{f}.run', f'm8{f}')}, params: {{family: {f}}}}}\n"
                             for f in ("hybrid", "static_hybrid")), encoding="utf-8")
    for f in ("hybrid", "static_hybrid"):
        r = _gate((index, pin, files), tmp_path / f, "bm25", f"m8{f}")
        c = _cand(tmp_path / f, f"m8{f}")
        assert c["pinned"]["diff"] == twin["pinned"]["diff"]
        assert c["family"]["overstatement"] >= twin["family"]["overstatement"], c["family"]
        assert c["decision"] == twin["decision"] or (twin["decision"] in ("better", "non-inferior")
                                                     and c["decision"] == "inconclusive"), (c["decision"], r.output)
        assert f"m8{f} is declared " in c["family"]["caution"] and "judged as the more cautious of" in c["family"]["caution"]


@needs_onnx
def test_a_baseline_with_a_few_stray_hits_keeps_its_family(pinned, twins, tmp_path):
    """Hostile turn 8, N2: BM25's own run as the live baseline, with two documents that hold no word
    of the query put at ranks 99 and 100, read as no lexical system's: a regressed BM25 against it got
    a cross-family allowance and INCONCLUSIVE (exit 4) where against BM25 it is worse (exit 3). A
    ranking with a few such hits may be a lexical engine's (fuzzy matching, synonyms): judged as the
    most cautious of every family, a lexical one included, it is worse, exit 3."""
    import random

    from nteval.formats.trec import format_run, read_run

    index, pin, _ = pinned
    assert _gate(pinned, tmp_path / "plain", "bm25", "bad4").exit_code == 3
    bm25 = read_run(_run_of(pinned, "topical", "bm25"))
    pool = sorted({d for v in bm25.values() for d, _ in v})
    rnd = random.Random(7)
    strays = {}
    for q, v in bm25.items():
        mine = {d for d, _ in v}
        extra = [d for d in rnd.sample(pool, 40) if d not in mine][:2]
        kept, rest = v[:98], [(d, sc) for d, sc in v[98:] if d not in extra]
        low = kept[-1][1] if kept else 1.0
        step = (low - rest[0][1]) / 3 if rest else 0.001   # (ranked between the 98th and the rest)
        strays[q] = kept + [(d, low - step * (i + 1)) for i, d in enumerate(extra)] + rest
    (tmp_path / "live.run").write_text(format_run(strays, "live"), encoding="utf-8")
    files = tmp_path / "files.yaml"
    files.write_text(f"- {{name: live, run: {tmp_path / 'live.run'}}}\n"
                     "- {name: bad4, algorithm: bm25, params: {k1: 0.01, b: 0.0}}\n", encoding="utf-8")
    r = _gate((index, pin, files), tmp_path / "g", "live", "bad4")
    assert r.exit_code == 3 and r.output.startswith("FAIL — do not release: bad4 is worse than the live live"), r.output
    fam = _cand(tmp_path / "g", "bad4").get("family")
    if fam:  # (read as no lexical system's: every family, a lexical one among them)
        assert fam["read_from_ranking"]["live"]["class"] == "non-lexical" and fam["understatement"] == 0, fam


@needs_onnx
def test_the_encoder_check_reads_the_models_vectors_from_the_store(pinned, twins):
    """The encoder check reads the hits' vectors from the store the model's encoding of ``nt`` left
    (here the computed twin's; no abstract encoded again: 7 of a gate's 9 s on the sample's 1,000-topic
    pin) and finds the τ that encoding them finds, for the model's own ranking (1.00) and BM25's (well
    under the threshold)."""
    from nteval.encoders.models import load_encoder
    from nteval.formats.trec import read_run, read_topics
    from nteval.index.manifest import read_manifest
    from nteval.traits import SEEN_TAU, same_encoder

    index, pin, _ = pinned
    assert twins["topical"]  # (the module's gates have run mini8 and bm25)
    topics = dict(sorted(read_topics(pin / "highrecall" / "topics.tsv").items())[:25])  # (25 topics: their hits encoded again in seconds)
    encoder = load_encoder("minilm", 0, "minilm_int8_128", "onnx-int8", 128)
    fingerprint = read_manifest(index)["fingerprint"]
    encoded, calls = encoder.embed, []
    for name, same in (("mini8", True), ("bm25", False)):
        run = read_run(_run_of(pinned, "topical", name))
        fresh = same_encoder(index, run, topics, encoder)
        encoder.embed = lambda texts: calls.append(len(texts)) or encoded(texts)
        stored = same_encoder(index, run, topics, encoder, fingerprint)
        encoder.embed = encoded
        assert stored == fresh and stored["same"] is same and (stored["tau"] >= SEEN_TAU) is same, (stored, fresh)
    assert calls and max(calls) <= 25  # (the queries only: their hits, about 250, are not encoded)


@needs_onnx
def test_a_wrapper_has_the_family_of_what_it_wraps(pinned, tmp_path):
    """K3: a regressed BM25 alone is worse (exit 3); wrapped in a one-input fusion, or fused with
    MiniLM at weight 0, it is the same ranking, of BM25's family, and worse: exit 3, no cross-family
    allowance."""
    for name in ("bad4", "f1", "h4w0"):
        out = tmp_path / name
        r = _gate(pinned, out, "bm25", name)
        assert r.exit_code == 3, r.output
        assert r.output.startswith(f"FAIL — do not release: {name} is worse than the live bm25"), r.output
        assert "family" not in _cand(out, name), r.output  # (bm25 against bm25: no rule, no allowance)


def test_the_unseen_families_bias_is_the_leave_model_out_studys():
    """F3: against references holding all-MiniLM-L6-v2, e5 (and its hybrid) have the leave-model-out
    study's bias; MiniLM, on any backend, its own; an encoder nteval cannot name (an engine declared
    neural) the envelope of both; the allowances follow."""
    from nteval.evidence import _shipped, measured_bias, unseen_study
    from nteval.gate.families import family_check

    configs = {"bm25": {"algorithm": "bm25", "params": {}},
               "e5": {"algorithm": "dense", "params": {"model": "e5"}},
               "e5_rrf": {"algorithm": "rrf", "params": {"systems": ["bm25", "e5"]}},
               "m8": {"algorithm": "dense", "params": {"model": "minilm", "backend": "onnx-int8", "max_tokens": 128}},
               "team": {"algorithm": "http", "params": {"url": "http://x", "family": "neural"}}}
    refs = frozenset({"minilm"})
    study = unseen_study()["collections"]
    e5 = family_check("highrecall", configs, "bm25", "e5", refs)
    assert e5["candidate_family"] == "neural_unseen"
    for col in ("cisi", "cf"):
        point, lo, hi = study[col]["full[minilm]"]["systems"]["e5"]["bias"]
        bm25 = measured_bias("highrecall", "bm25")[col]["bias"]
        assert e5["bias"][col]["ci95"][1] == pytest.approx(hi / 100 - bm25, abs=1e-4)
    # MED, which the unseen-encoders study lacks: the leave-one-collection-out study's e5 (understated there),
    # so a loss of such an encoder on a MEDLINE-like collection must clear that much before it is "worse"
    point, lo, hi = _shipped("loco_fairness.json")["collections"]["med"]["shipped"]["e5"]["bias"]
    bm25_med = measured_bias("highrecall", "bm25")["med"]["bias"]
    assert e5["bias"]["med"]["ci95"] == pytest.approx([lo / 100 - bm25_med, hi / 100 - bm25_med], abs=1e-4)
    assert e5["understatement"] == pytest.approx(-min(v["ci95"][0] for v in e5["bias"].values()), abs=1e-4)
    assert "points on MED" in e5["caution"]
    assert e5["overstatement"] == pytest.approx(max(v["ci95"][1] for v in e5["bias"].values()), abs=1e-4)
    assert "e5's encoder is not among the references that judged these topics (all-MiniLM-L6-v2)" in e5["caution"]
    assert family_check("highrecall", configs, "bm25", "e5_rrf", refs)["candidate_family"] == "hybrid_unseen"
    seen = family_check("highrecall", configs, "bm25", "m8", refs)
    assert seen["candidate_family"] == "neural" and "not among the references" not in (seen.get("caution") or "")
    team = family_check("highrecall", configs, "bm25", "team", refs)
    assert team["candidate_family"] == "neural_unknown"
    assert team["overstatement"] >= max(seen["overstatement"], e5["overstatement"])
    assert team["understatement"] >= max(seen["understatement"], e5["understatement"])
    # under the lexical references alone, every encoder is one they do not contain: the study's lexical figures
    assert family_check("highrecall_lexical", configs, "bm25", "e5", None)["candidate_family"] == "neural"


@needs_e5
@needs_onnx
def test_an_encoder_the_references_lack_is_told_so_in_the_first_line(first100_index, tmp_path):
    """F3 end to end: e5 gated against BM25 on a default pin: the first line says its encoder is not
    among the references, and gate.json holds the leave-model-out allowance it was judged with."""
    pin = tmp_path / "pin"
    assert cli("pin", "--index", first100_index, "--topics", 100, "--out", pin, "--quiet").exit_code == 0
    r = cli("gate", "--index", first100_index, "--pin", pin, "--task", "topical", "--systems", "neural", "--baseline",
            "bm25", "--candidate", "e5", "--out", tmp_path / "g", "--quiet")
    assert r.exit_code in (0, 3, 4), r.output
    first = r.output.splitlines()[0]
    assert "e5's encoder is not among the references that judged these topics (all-MiniLM-L6-v2)" in first, first
    fam = _cand(tmp_path / "g", "e5")["family"]
    assert fam["candidate_family"] == "neural_unseen" and fam["references"] == ["minilm"]
    # `nteval check` of the same system says it too, in its first line
    r = cli("check", "--index", first100_index, "--pin", pin, "--task", "topical", "--systems", "neural", "--system",
            "e5", "--history", tmp_path / "h.sqlite", "--out", tmp_path / "c", "--quiet")
    assert r.exit_code == 0, r.output
    first = r.output.splitlines()[0]
    assert "its encoder is not among the references that judged these topics (all-MiniLM-L6-v2)" in first, first


@needs_onnx
@pytest.mark.parametrize("task", ["known-item", "topical"])
def test_an_encoders_ranking_given_back_is_no_title_search(pinned, twins, tmp_path, task):
    """F1: all-MiniLM-L6-v2's ranking (trained on title-abstract pairs, it finds from an abstract
    much of what a title says) given back as a run file declared neural: not refused, nothing taken
    off as a title search's gain, and the decision and exit of its computed twin."""
    index, pin, systems = pinned
    twin = twins[task]
    files = tmp_path / "files.yaml"
    run = retag(_run_of(pinned, task, "mini8"), tmp_path / "mine.run", "mine")
    files.write_text(f"- {{name: mine, run: {run}, params: {{family: neural}}}}\n", encoding="utf-8")
    out = tmp_path / "file"
    r = _gate((index, pin, files), out, "bm25", "mine", task=task)
    assert r.exit_code in (0, 3, 4) and "system mine searched the titles" not in r.output, r.output
    c = _cand(out, "mine")
    assert (c["decision"], c["pinned"]["diff"]) == (twin["decision"], twin["pinned"]["diff"]), (c, twin)
    assert not (c["pinned"].get("title_gain") or {}).get("gain") and "not claimed" not in r.output.splitlines()[0]
    leak = json.loads((out / "gate.json").read_text())["sets"]["pinned"]["status"]["title_leak"]["mine"]
    assert leak["flagged"] is False and leak["class"] == "non-lexical"
    # and behind http (a team's encoder service answering with that ranking), declared neural: the same
    from engine_server import EngineServer, RecordedBackend

    from nteval.formats.trec import read_run, read_topics

    topics = read_topics(pin / ("focused" if task == "known-item" else "highrecall") / "topics.tsv")
    ranked = read_run(run)
    server = EngineServer(RecordedBackend({topics[q]: [[d, sc] for d, sc in ranked.get(q, [])] for q in topics})).start()
    try:
        files.write_text(f"""- name: team_encoder
  algorithm: http
  params: {{url: "{server.url}/search?q={{query}}&n={{k}}", hits: results, id: doc, score: relevance, family: neural}}
""", encoding="utf-8")
        r = _gate((index, pin, files), tmp_path / "http", "bm25", "team_encoder", task=task)
    finally:
        server.stop()
    c = _cand(tmp_path / "http", "team_encoder")
    assert (c["decision"], c["pinned"]["diff"]) == (twin["decision"], twin["pinned"]["diff"]), (r.output, twin)
