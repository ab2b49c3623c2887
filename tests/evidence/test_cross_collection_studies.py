"""The issue-57 studies' query forms and split questions (scripts/query_form_study.py,
scripts/judged_topics_study.py): what a topic's query becomes, on a real index; the shipped
figures and their docs block."""
from __future__ import annotations

import json

from conftest import script

qf = script("query_form_study")
jt = script("judged_topics_study")
rs = script("residual_study")


def test_key_terms_are_the_sentences_rarest_words_in_its_order(first200_index):
    """The 6 words of highest idf in ``nt`` (one per analyzed form, stopwords skipped), kept in the
    sentence's order; idf read from the real index."""
    from nteval.traits import Terms

    terms = Terms(first200_index)
    try:
        sentence = "The patients were treated with the drug and the patients with cancer were treated again in the clinic."
        got = qf.key_terms(sentence, terms).split()
        words = {w: sorted(terms.text(w))[0] for w in set(sentence.rstrip(".").split()) if terms.text(w)}
        by_form: dict[str, str] = {}
        for w in sentence.rstrip(".").split():   # (the first word of each analyzed form)
            if w in words:
                by_form.setdefault(words[w], w)
        ranked = sorted(by_form, key=lambda f: (-terms.idf(f), sentence.index(by_form[f])))[:qf.KEY_TERMS]
        assert len(got) == min(qf.KEY_TERMS, len(by_form)) and len(set(got)) == len(got)
        assert {words[w] for w in got} == set(ranked)
        assert got == sorted(got, key=sentence.index)             # the sentence's order
        assert "the" not in got and "with" not in got             # stopwords have no analyzed form
        assert len({words[w] for w in got}) == len(got)           # "patients" / "treated" kept once
    finally:
        terms.close()


def test_a_question_is_cut_in_halves_by_its_words():
    assert jt.halves("a b c d e") == ("a b c", "d e")
    assert jt.halves("one two") == ("one", "two")
    assert jt.halves("alone") == ("alone", "")      # (a one-word question has no second half: left out)


def test_the_judged_topics_block_is_the_shipped_figures():
    data = json.loads(jt.OUT_JSON.read_text(encoding="utf-8"))
    assert set(data["collections"]) == {"cisi", "cf", "med"}
    for x in data["collections"].values():
        for v in (*x["families"].values(), *x["systems"].values()):
            assert v[1] <= v[0] <= v[2]                 # the point within its interval
    doc = jt.DOC.read_text(encoding="utf-8")
    assert f"<!-- {jt.MARK} -->\n{jt.block(data)}\n<!-- /{jt.MARK} -->" in doc


def test_a_work_folder_without_the_correlate_runs_is_one_line(tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    for name in ("query_form_study", "judged_topics_study", "residual_study", "med_titles_study", "loco_fairness_study"):
        path = Path(qf.__file__).parent / f"{name}.py"
        r = subprocess.run([sys.executable, str(path), "--work", str(tmp_path)], capture_output=True, text=True)
        assert r.returncode == 2 and "Traceback" not in r.stderr, (name, r.stderr)
        wanted = "med_corr" if name.startswith("med") else "cisi_corr, cf_corr, med_corr"
        assert r.stderr.strip().splitlines()[-1].endswith(f"no finished correlate run in {wanted} "
                                                          "(module docstring: how to make one)") or name.startswith("loco")


def test_the_learned_judge_labels_what_reads_like_the_relevant_documents():
    """The ``classifier`` design's step (scripts/loco_fairness_study.py ``learned``), a hand case: the
    references' top holds three documents on diabetes (pseudo-relevant) and three on fractures; of
    the deeper ones, the one on diabetes becomes relevant, the one on fractures does not, a document
    without features is left alone; with nothing to learn from, the references' labels stand."""
    from sklearn.feature_extraction.text import TfidfVectorizer

    loco = script("loco_fairness_study")
    texts = {"a1": "insulin glucose diabetes blood sugar", "a2": "diabetes insulin resistance and glucose",
             "a3": "glucose tolerance of insulin treated diabetic patients", "b1": "fracture of the femur and bone surgery",
             "b2": "bone fracture healing after orthopedic surgery", "b3": "femur fracture fixation in surgery",
             "a4": "insulin therapy for glucose control in diabetes", "b4": "hip fracture bone surgery outcomes"}
    row = {d: i for i, d in enumerate(texts)}
    x = TfidfVectorizer().fit_transform(list(texts.values())).tocsr()
    pos, seen = {"a1", "a2", "a3"}, {"a1", "a2", "a3", "b1", "b2", "b3"}
    assert loco.learned(x, row, pos, seen, {"a4", "b4", "elsewhere"}) == {"a1", "a2", "a3", "a4"}
    assert loco.learned(x, row, pos, pos, {"a4", "b4"}) == pos            # no negative to learn from
    assert loco.learned(x, row, set(), seen, {"a4", "b4"}) == set()       # no positive
    assert loco.learned(x, row, pos, seen, seen) == pos                   # nothing deeper to label


def test_a_residual_collection_leaves_out_what_the_feedback_read():
    """trec_eval's AP on the residual collection, by hand: the seen documents leave the ranking and
    the relevant set; nothing relevant left is NaN (the topic is not scored), nothing seen is plain AP."""
    import math

    ranking = ["a", "b", "c", "d", "e"]
    assert rs.residual_ap(ranking, {"a", "c", "e"}, set()) == (1 / 1 + 2 / 3 + 3 / 5) / 3
    assert rs.residual_ap(ranking, {"a", "c", "e"}, {"a", "b"}) == (1 / 1 + 2 / 3) / 2   # c, d, e: c 1st, e 3rd
    assert rs.residual_ap(ranking, {"a", "z"}, {"a"}) == 0.0                             # z never retrieved
    assert math.isnan(rs.residual_ap(ranking, {"a"}, {"a"}))


def test_the_residual_block_is_the_shipped_figures():
    data = json.loads(rs.OUT_JSON.read_text(encoding="utf-8"))
    assert set(data["collections"]) == {"cisi", "cf", "med"} and data["feedback_depths"] == rs.feedback_depths()
    for x in data["collections"].values():
        for y in (x[k] for k in rs.SCORINGS):
            for v in (y["expansion"], y["control"], *y["systems"].values()):
                assert v[1] <= v[0] <= v[2]
        r = x["residual"]
        assert x["within"] == (abs(r["expansion"][0]) <= rs.WITHIN and abs(r["control"][0]) <= rs.WITHIN)
    assert data["enters_the_verdict"] == all(x["within"] for x in data["collections"].values())
    loco = json.loads(script("loco_fairness_study").OUT_JSON.read_text(encoding="utf-8"))["collections"]
    for c, x in data["collections"].items():   # (the raw scoring is the LOCO study's shipped row, recomputed)
        assert x["raw"]["expansion"][0] == loco[c]["shipped"]["families"]["expansion"][0]
    doc = rs.DOC.read_text(encoding="utf-8")
    assert f"<!-- {rs.MARK} -->\n{rs.block(data)}\n<!-- /{rs.MARK} -->" in doc


def test_the_med_titles_block_is_the_shipped_figures():
    """MED scored on its titled and untitled parts: the whole collection is the LOCO study's shipped
    row (the same runs, pseudo-qrels and judges), the parts are the figures' rendering in the docs."""
    mt = script("med_titles_study")
    data = json.loads(mt.OUT_JSON.read_text(encoding="utf-8"))
    loco = json.loads(script("loco_fairness_study").OUT_JSON.read_text(encoding="utf-8"))["collections"]["med"]["shipped"]
    whole = data["parts"]["whole collection"]
    assert whole["systems"]["e5"][0] == loco["e5"]["bias"][0]
    assert {f: v[0] for f, v in whole["families"].items()} == {f: v[0] for f, v in loco["families"].items()}
    assert list(data["parts"]) == list(mt.PARTS) and data["titled_records"] < data["records"]
    for x in data["parts"].values():
        for v in (*x["systems"].values(), *x["families"].values()):
            assert v[1] <= v[0] <= v[2]
    doc = mt.DOC.read_text(encoding="utf-8")
    assert f"<!-- {mt.MARK} -->\n{mt.block(data)}\n<!-- /{mt.MARK} -->" in doc


def test_med_titled_records_are_those_its_store_gives_a_title(first200_index):
    """On a real index: the records with a title in the document store, and how many it holds."""
    from nteval.corpus.store import FILENAME, DocStore

    mt = script("med_titles_study")
    titled, records = mt.titled_records(first200_index)
    store = DocStore(first200_index / FILENAME)
    try:
        assert records == {d for d, _, _ in store.iter_texts("all")} and len(records) == len(store) and titled <= records
        assert all((store.get(d) or {}).get("title") for d in titled)
    finally:
        store.close()


def test_residual_ap_leaves_what_feedback_saw_out_of_ranking_and_relevant_set():
    """A hand case: ranking a b c d, relevant {a, c, e}; BM25 saw a. Residual ranking b c d,
    relevant {c, e}: c at rank 2 → AP (1/2) / 2. Nothing relevant left: NaN (the topic is left out)."""
    import math

    assert rs.residual_ap(["a", "b", "c", "d"], {"a", "c", "e"}, {"a"}) == (1 / 2) / 2
    assert rs.residual_ap(["a", "b", "c", "d"], {"a", "c", "e"}, set()) == (1 / 1 + 2 / 3) / 3
    assert math.isnan(rs.residual_ap(["a", "b"], {"a"}, {"a"}))


def test_the_loco_gate_table_pools_the_topical_collections_by_hand():
    """The leave-one-collection-out gate table's pooled rows add the topical collections' counts (0/200
    and 3/300 are 3/500: 0.6 %, Clopper-Pearson's exact 95 % interval [0.1, 1.7]); a design without a
    gate on one of them has no pooled row. An interval under 1 % needs 368 losing pairs with none
    passed (scipy's exact interval: 0/367 reaches 1 %, 0/368 does not), and 500 allow no false pass."""
    from scipy.stats import binomtest

    loco = script("loco_fairness_study")
    fam = {f: {"false_pass": 0, "losses": 0} for f in loco.FAMILIES}
    gate = {"x": {"false_pass": 0, "losses": 200, "per_family": {**fam, "bm25": {"false_pass": 0, "losses": 200}}},
            "y": {"false_pass": 3, "losses": 300, "per_family": {**fam, "bm25": {"false_pass": 3, "losses": 300}}}}
    s = {"chosen": {"training": ["cisi", "cf"]},
         "collections": {"cisi": {"shipped": {"gate": gate["x"]}, "held out": {"gate": gate["x"]}},
                         "cf": {"shipped": {"gate": gate["y"]}}}}
    rows = loco.pooled_gate_rows(s)
    [shipped] = [r for r in rows if r.startswith("| ")]
    assert "| shipped | — | 3/500 (0.6 % [0.1, 1.7]) |" in shipped and shipped.endswith("| 3/500 |"), shipped
    assert "at least 368 losing pairs" in rows[-1] and "at most 0 false passes" in rows[-1], rows[-1]
    upper = [binomtest(0, n).proportion_ci(method="exact").high for n in (367, 368)]
    assert upper[0] >= 0.01 > upper[1]


def test_from_json_refuses_what_it_would_ignore(tmp_path):
    """``--from-json`` computes nothing: an option saying what to compute or where to write is refused
    in one line naming it (exit 2), not ignored; alone it renders the shipped study."""
    import subprocess
    import sys
    from pathlib import Path

    study = Path(__file__).resolve().parents[2] / "scripts" / "loco_fairness_study.py"
    cmd = [sys.executable, str(study), "--from-json"]
    for extra, named in ((["--json", str(tmp_path / "x.json")], "--json"), (["--designs", "shipped"], "--designs"),
                         (["--e5-refs"], "--e5-refs")):
        r = subprocess.run(cmd + extra, capture_output=True, text=True)
        assert r.returncode == 2 and named in r.stderr.splitlines()[-1] and "Traceback" not in r.stderr, r.stderr
    assert not (tmp_path / "x.json").exists()
    r = subprocess.run(cmd, capture_output=True, text=True)
    assert r.returncode == 0 and r.stdout.startswith("| collection | design |"), r.stderr


def test_the_product_gate_row_says_what_nt_alone_did_on_the_same_runs():
    """The LOCO study's product gate (the rules, their evidence without the collection): NT alone's
    figures are its decisions before the rules (a row's ``nt_alone``), by hand: of three pairs the
    judges show losing, NT alone passes two, the rules make one of them inconclusive; the rows say
    both, and how many pairs each decides. The pooled row adds the product gates too."""
    loco = script("loco_fairness_study")
    rows = [{"baseline": "a", "candidate": "b", "gate": "inconclusive", "nt_alone": "better", "human": "worse",
             "human_beyond_margin": True},
            {"baseline": "a", "candidate": "c", "gate": "non-inferior", "human": "worse", "human_beyond_margin": True},
            {"baseline": "b", "candidate": "c", "gate": "worse", "human": "worse", "human_beyond_margin": True},
            {"baseline": "c", "candidate": "a", "gate": "inconclusive", "nt_alone": "worse", "human": "better",
             "human_beyond_margin": False}]
    from nteval.correlate.gate_agreement import tally

    extra = loco._with_rules(tally(rows))   # (gate_agreement's result: tally's, and more)
    assert extra["changed_by_rules"] == 2 and extra["false_passes"] == [["a", "c"]]
    assert extra["nt_alone"] == {"false_pass": 2, "losses": 3, "agreement": 0.25, "decided": 4}   # (1 of 4 agree)
    g = {"false_pass": 1, "losses": 3, "agreement": 0.5, "decided": 2, "pairs": 4,
         "per_family": {f: {"false_pass": 0, "losses": 0} for f in loco.FAMILIES}, **extra}
    label = loco._gate_label("shipped", "gate_rules", g)
    assert "it decides 2 of 4 pairs" in label and "NT alone passes 2/3" in label and "deciding 4 of 4" in label
    s = {"chosen": {"training": ["cisi"]}, "collections": {"cisi": {"shipped": {"gate_rules": g}}}}
    [pooled] = [r for r in loco.pooled_gate_rows(s) if r.startswith("| ")]
    assert "| shipped, the product's gate | — | 1/3 (" in pooled, pooled


def test_a_study_writes_its_json_and_doc_block_whole_or_not_at_all(tmp_path):
    """The studies' shared writer: a doc without the study's block is refused before the JSON is
    written (nothing half-done); with it, both files are written through a temp file and renamed (none
    left beside them), the block replaced and the text around it kept."""
    import pytest

    fs = script("fairness_study")
    out, doc = tmp_path / "study.json", tmp_path / "doc.md"
    doc.write_text("before\n<!-- other -->\nold\n<!-- /other -->\n", encoding="utf-8")
    with pytest.raises(SystemExit, match="no <!-- mine --> block"):
        fs.write_study({"a": 1}, "table", out, "mine", doc)
    assert not out.exists() and doc.read_text(encoding="utf-8").startswith("before")
    doc.write_text("before\n<!-- mine -->\nold\n<!-- /mine -->\nafter\n", encoding="utf-8")
    fs.write_study({"a": 1}, "table", out, "mine", doc)
    assert json.loads(out.read_text(encoding="utf-8")) == {"a": 1}
    assert doc.read_text(encoding="utf-8") == "before\n<!-- mine -->\ntable\n<!-- /mine -->\nafter\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["doc.md", "study.json"]


def test_the_product_gate_row_says_what_its_disagreements_are():
    """The agreement cell of a product-gate row splits the pairs both decide differently, by hand: one
    false alarm (the gate fails what the judges pass), one pass of a loss the judges show within the
    margin, one false pass (beyond it); a row without the split (NT alone's) shows the share only."""
    loco = script("loco_fairness_study")
    rows = [{"baseline": "a", "candidate": "b", "gate": "worse", "human": "non-inferior", "human_beyond_margin": False},
            {"baseline": "a", "candidate": "c", "gate": "non-inferior", "human": "worse", "human_beyond_margin": False},
            {"baseline": "b", "candidate": "c", "gate": "better", "human": "better", "human_beyond_margin": False},
            {"baseline": "c", "candidate": "a", "gate": "non-inferior", "human": "worse", "human_beyond_margin": True},
            {"baseline": "c", "candidate": "b", "gate": "inconclusive", "human": "better", "human_beyond_margin": False}]
    from nteval.correlate.gate_agreement import tally

    extra = loco._with_rules(tally(rows))   # (gate_agreement's result: tally's, and more)
    assert (extra["both_decide"], extra["agree"], extra["false_alarm"], extra["human_pass"]) == (4, 1, 1, 3)
    g = {"false_pass": 1, "agreement": 0.25, **extra}
    assert loco._agreement_cell(g) == "25.0 % of 4 (false alarms 1/3; 1 passed, a loss within the margin to the judges)"
    assert loco._agreement_cell({"agreement": 0.978, "false_pass": 0}) == "97.8 %"


def test_each_collection_is_gated_on_its_own_tasks_verdict_by_hand():
    """The LOCO study's own-task line: a topical collection's product gate is the shipped design's
    high-recall one, a known-item collection's the focused verdict's (``focused``), never the other
    (here the other task's gate passes every loss, and the line must not show it); the interval is
    scipy's exact one (2/179: [0.14 %, 3.97 %])."""
    from scipy.stats import binomtest

    loco = script("loco_fairness_study")
    fam = {f: {"false_pass": 0, "losses": 0} for f in loco.FAMILIES}

    def g(k: int, n: int, agreement: float) -> dict:
        return {"false_pass": k, "losses": n, "agreement": agreement, "per_family": fam}

    s = {"collections": {"cisi": {"shipped": {"gate_rules": g(0, 338, 0.997)}, loco.FOCUSED: {"gate_rules": g(338, 338, 0.1)}},
                         "scifact": {"shipped": {"gate_rules": g(179, 179, 0.1)}, loco.FOCUSED: {"gate_rules": g(2, 179, 0.9)}}}}
    assert loco.own_task_gates(s) == ["CISI (topical) 0/338 (0.0 % [0.0, 1.1]), agreement 99.7 %",
                                      "SciFact (known-item) 2/179 (1.1 % [0.1, 4.0]), agreement 90.0 %"]
    ci = binomtest(2, 179).proportion_ci(method="exact")
    assert (round(ci.low * 100, 1), round(ci.high * 100, 1)) == (0.1, 4.0)
    assert loco._known_item("scifact").endswith("its task)") and "not its task (topical)" in loco._known_item("med")
    s["collections"]["cisi"].pop("shipped")                       # (no gate of its task computed: no claim)
    assert [x.split(" ")[0] for x in loco.own_task_gates(s)] == ["SciFact"]


def test_the_focused_gate_reads_rr_on_the_topics_every_system_has(tmp_path):
    """``focused_rr``: a correlate run's focused per_topic.tsv, its RR rows only, on the topics all
    systems have (a topic one system lacks is left out, as the gate's pairs need every system)."""
    from types import SimpleNamespace

    loco = script("loco_fairness_study")
    (tmp_path / "focused").mkdir()
    (tmp_path / "focused" / "per_topic.tsv").write_text(
        "system\tqid\tmeasure\tvalue\n"
        "a\tq1\tRR\t1.0\na\tq1\tnDCG@10\t0.3\na\tq2\tRR\t0.5\na\tq3\tRR\t0.25\n"
        "b\tq1\tRR\t0.2\nb\tq2\tRR\t0.0\n", encoding="utf-8")
    rr, qids = loco.focused_rr(SimpleNamespace(corr=tmp_path, names=["a", "b"]))
    assert qids == ["q1", "q2"]
    assert rr["a"].tolist() == [1.0, 0.5] and rr["b"].tolist() == [0.2, 0.0]


def test_the_shipped_loco_study_gates_every_collection_on_its_own_task():
    """The shipped figures hold a product gate of each collection's own task (CISI, CF, MED topical,
    SciFact known-item), and the docs block says them."""
    loco = script("loco_fairness_study")
    s = json.loads(loco.OUT_JSON.read_text(encoding="utf-8"))
    assert set(s["collections"]) == set(loco.TASK)
    own = loco.own_task_gates(s)
    assert [x for x in own if not any(x.startswith(f"{loco.NAMES[c]} ({loco.TASK[c]}) ") for c in s["collections"])] == []
    assert len(own) == len(s["collections"])
    for c, rows in s["collections"].items():
        g = rows["shipped" if loco.TASK[c] == "topical" else loco.FOCUSED]["gate_rules"]
        assert 0 <= g["false_pass"] <= g["losses"] and sum(v["losses"] for v in g["per_family"].values()) == g["losses"]
    assert "Each collection gated on its own task's verdict" in loco.DOC.read_text(encoding="utf-8")


def test_a_matched_length_query_starts_at_the_third_sentence_and_wraps():
    """W words from sentence 3 on, then sentences 1 and 2; a short abstract gives all its words."""
    s = ["One two three.", "Four five.", "Six seven eight.", "Nine ten."]
    assert qf.matched_query(s, 4) == "Six seven eight. Nine"
    assert qf.matched_query(s, 7) == "Six seven eight. Nine ten. One two"
    assert qf.matched_query(s, 50) == "Six seven eight. Nine ten. One two three. Four five."
    assert qf.matched_query(s[:2], 3) == "One two three."          # (no third sentence: from the first)


def test_matched_words_is_the_judged_queries_median_half_up(tmp_path):
    """Lengths 2, 3, 4, 5 words: median 3.5, W = 4; with a fifth of 9 words, W = 4 (the median)."""
    (tmp_path / "human").mkdir()
    rows = ["1\ta b", "2\ta b c", "3\ta b c d", "4\ta b c d e"]
    (tmp_path / "human" / "topics.tsv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    assert qf.matched_words(tmp_path) == 4
    (tmp_path / "human" / "topics.tsv").write_text("\n".join([*rows, "5\t" + " w" * 9]) + "\n", encoding="utf-8")
    assert qf.matched_words(tmp_path) == 4


def test_the_matched_length_verdict_is_its_rule_on_the_stored_figures():
    """nteval/data/query_forms.json's ``matched``: its rule (the module docstring) recomputed on the
    stored rows; the shipped figures fail two of its four conditions, so no query-length option."""
    data = json.loads(qf.OUT_JSON.read_text(encoding="utf-8"))
    m = data["matched"]
    assert json.loads(json.dumps(qf.matched_verdict(data["collections"], m["words"]))) == m
    assert m["words"] == {"cisi": 50, "cf": 14, "med": 16}
    assert not m["ship"] and [k for k, v in m["checks"].items() if not v] == ["J lower on CISI and CF", "lexical τ kept"]
