"""Any system under NT: dense retrieval (wordllama + FAISS), linear/RRF hybrids, external TREC runs,
Python callables and external programs — on a real PubMed index, through the real protocols."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from conftest import one_line_error

from nteval.cli import main
from nteval.errors import InputError

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
from pybm25 import PyBM25  # noqa: E402

YAML = """\
- {name: bm25, algorithm: bm25}
- {name: dense, algorithm: dense}
- {name: dense_ivf, algorithm: dense, params: {index: ivf, nprobe: 2}}
- {name: hybrid_rrf, algorithm: rrf, params: {systems: [bm25, dense]}}
- {name: hybrid_linear, algorithm: linear, params: {systems: [bm25, dense], weights: [0.7, 0.3]}}
"""
ARGS = ["--topics", "40", "--min-topics", "10", "--quiet"]


@pytest.fixture
def dense_cache(tmp_path, monkeypatch) -> Path:
    """Encodings go to a per-test cache, not into the session's shared index."""
    d = tmp_path / "dense-cache"
    monkeypatch.setenv("NTEVAL_DENSE_CACHE", str(d))
    from nteval.systems import dense

    dense._VECTORS.clear()
    dense._FAISS.clear()
    return d


def _cli(*args: str):
    return CliRunner().invoke(main, [str(a) for a in args])


# -- dense ---------------------------------------------------------------------------------------

def test_flat_dense_search_is_exact_inner_product(first200_index, dense_cache):
    from nteval.index import read_manifest
    from nteval.systems.dense import dense_run, document_vectors, index_texts, load_encoder

    fp = read_manifest(first200_index)["fingerprint"]
    enc = load_encoder("wordllama", 256)
    texts = dict(index_texts(first200_index, "nt"))
    topics = {d: t[:120] for d, t in list(texts.items())[:15]}
    params = {"model": "wordllama", "dim": 256, "index": "flat", "nlist": 0, "nprobe": 16, "hnsw_m": 32,
              "ef_search": 128, "dtype": "float32"}
    run, notes = dense_run("dense", params, first200_index, "nt", fp, topics, 50, progress=False)
    vec = document_vectors(first200_index, "nt", fp, enc)
    assert vec.docids == list(texts) and notes["documents"] == len(texts)
    assert np.allclose(np.linalg.norm(vec.matrix, axis=1), 1.0, atol=1e-5)
    q = enc.embed(list(topics.values()))
    brute = q @ vec.matrix.T  # numpy brute force: the baseline faiss flat must equal
    for i, qid in enumerate(topics):
        order = np.argsort(-brute[i], kind="stable")[:50]
        assert [d for d, _ in run[qid]][:10] == [vec.docids[j] for j in order[:10]]
        assert np.allclose([s for _, s in run[qid]], brute[i][order], atol=1e-5)
    found = sum(run[qid][0][0] == qid for qid in topics)
    assert found >= len(topics) // 2, found  # a passage of its own abstract mostly finds the abstract first


def test_encoding_resumes_from_the_last_finished_part(first200_index, dense_cache, monkeypatch):
    from nteval.index import read_manifest
    from nteval.systems import dense

    fp = read_manifest(first200_index)["fingerprint"]
    real = dense.load_encoder("wordllama", 256)
    calls = {"n": 0}

    def dying(texts):
        calls["n"] += 1
        if calls["n"] > 2:
            raise KeyboardInterrupt  # killed while encoding the third part
        return real.embed(texts)

    monkeypatch.setattr(dense, "PART", 50)
    with pytest.raises(KeyboardInterrupt):
        dense.document_vectors(first200_index, "nt", fp, dense.Encoder(real.id, real.dim, dying), progress=False)
    final = dense.cache_dir(first200_index, "nt", fp, real)
    assert not final.exists()
    assert sorted(p.name for p in final.with_name(final.name + ".partial").glob("part-*.npy")) == \
        ["part-000000.npy", "part-000001.npy"]
    vec = dense.document_vectors(first200_index, "nt", fp, real, progress=False)
    assert vec.meta["encoded_this_time"] == len(vec.docids) - 100
    assert not final.with_name(final.name + ".partial").exists()
    fresh = np.concatenate([real.embed([t for _, t in list(dense.index_texts(first200_index, "nt"))])])
    assert np.allclose(vec.matrix, fresh, atol=1e-6)


def test_dense_and_hybrids_run_beside_the_zoo_and_are_cached(first200_index, dense_cache, tmp_path):
    (tmp_path / "s.yaml").write_text(YAML)
    out = tmp_path / "f"
    r = _cli("focused", "--index", first200_index, "--systems", tmp_path / "s.yaml", "--out", out, *ARGS)
    assert r.exit_code == 0, r.output
    res = json.loads((out / "results.json").read_text())
    assert set(res["systems"]) == {"bm25", "dense", "dense_ivf", "hybrid_rrf", "hybrid_linear"}
    notes = res["system_notes"]
    assert 0 < notes["dense_ivf"]["recall_vs_flat"] < 1 and "recall_vs_flat" not in notes["dense"]
    assert notes["dense"]["model"].startswith("wordllama-l2_supercat-256") and Path(notes["dense"]["cache"]).is_dir()
    assert "recall of the top 1000 vs exact (flat) search" in r.output
    rr = {n: v["RR"] for n, v in res["systems"].items()}
    assert rr["dense"] > 0.3 and rr["bm25"] > 0.5  # both find titles' abstracts, far above chance (1/200)
    r2 = _cli("focused", "--index", first200_index, "--systems", tmp_path / "s.yaml", "--out", out, *ARGS)
    assert r2.exit_code == 0, r2.output
    again = json.loads((out / "results.json").read_text())
    assert all(t["reused"] for t in again["timing"].values())
    assert again["systems"] == res["systems"]


def test_linear_fusion_by_hand():
    from nteval.systems.fusion import linear

    a = {"q": [("d1", 10.0), ("d2", 5.0), ("d3", 0.0)]}
    b = {"q": [("d3", 2.0), ("d1", 1.0)]}
    # min-max: a → d1 1, d2 .5, d3 0; b → d3 1, d1 0, d2 absent → b's floor 0
    fused = dict(linear([a, b], [3.0, 1.0], "minmax")["q"])
    assert fused == pytest.approx({"d1": 0.75, "d2": 0.375, "d3": 0.25})
    z = dict(linear([a, b], None, "zscore")["q"])  # absent d2 in b gets b's lowest z (-1)
    za = (np.array([10, 5, 0]) - 5) / np.std([10, 5, 0])
    assert z["d2"] == pytest.approx(0.5 * za[1] + 0.5 * -1.0)


def test_bad_dense_declarations_fail_before_any_run(first200_index, tmp_path):
    (tmp_path / "s.yaml").write_text("- {name: bm25, algorithm: bm25}\n"
                                     "- {name: st, algorithm: dense, params: {model: /no/such/model}}\n")
    r = _cli("focused", "--index", first200_index, "--systems", tmp_path / "s.yaml", "--out", tmp_path / "o", *ARGS)
    one_line_error(r, "system 'st'", "/no/such/model")
    assert not (tmp_path / "o").exists()
    (tmp_path / "s.yaml").write_text("- {name: d, algorithm: dense, params: {index: annoy}}\n")
    one_line_error(_cli("focused", "--index", first200_index, "--systems", tmp_path / "s.yaml", "--out",
                         tmp_path / "o", *ARGS), "index must be one of flat, ivf, hnsw")


# -- external runs ---------------------------------------------------------------------------------

@pytest.fixture
def focused_out(first200_index, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("ext") / "f"
    r = _cli("focused", "--index", first200_index, "--systems", "default", "--out", out, *ARGS)
    assert r.exit_code == 0, r.output
    return out


def _retag(src: Path, dest: Path, tag: str, keep=lambda cols: True, edit=lambda cols: cols) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True)
    rows = [edit(line.split()) for line in src.read_text().splitlines()]
    dest.write_text("".join(" ".join(c[:5] + [tag]) + "\n" for c in rows if keep(c)))


def test_external_runs_join_the_experiment(first200_index, focused_out, tmp_path):
    runs = tmp_path / "runs"
    _retag(focused_out / "runs" / "bm25.run", runs / "a.run", "their_bm25")
    qids = sorted({line.split()[0] for line in (focused_out / "runs" / "bm25.run").read_text().splitlines()})
    half = set(qids[: len(qids) // 2])
    _retag(focused_out / "runs" / "bm25.run", runs / "b.txt", "half_bm25", keep=lambda c: c[0] in half)
    r = _cli("focused", "--index", first200_index, "--systems", "default", "--runs", runs, "--out", focused_out, *ARGS)
    assert r.exit_code == 0, r.output
    res = json.loads((focused_out / "results.json").read_text())
    assert res["systems"]["their_bm25"] == res["systems"]["bm25"]
    assert res["system_notes"]["half_bm25"]["topics_without_results"] == len(qids) - len(half)
    assert "half_bm25: no results for" in r.output and "their_bm25" in r.output
    per = [line.split("\t") for line in (focused_out / "per_topic.tsv").read_text().splitlines()[1:]]
    half_rr = {q: float(v) for s, q, m, v in per if s == "half_bm25" and m == "RR"}
    bm25_rr = {q: float(v) for s, q, m, v in per if s == "bm25" and m == "RR"}
    assert len(half_rr) == len(qids)  # missing topics are scored (0), as trec_eval -c
    assert all(half_rr[q] == (bm25_rr[q] if q in half else 0.0) for q in qids)
    sig = (focused_out / "significance.tsv").read_text()
    assert "their_bm25" in sig  # in the verdict's paired tests too


def test_bad_external_runs_are_one_line_errors(first200_index, focused_out, tmp_path):
    src = focused_out / "runs" / "bm25.run"
    base = ["focused", "--index", first200_index, "--systems", "default", "--out", focused_out, *ARGS]
    wrong = tmp_path / "wrong"
    _retag(src, wrong / "a.run", "wrong_topics", edit=lambda c: [c[0] + "0", *c[1:]])
    one_line_error(_cli(*base, "--runs", wrong), "system 'wrong_topics'", "not this experiment's")
    foreign = tmp_path / "foreign"
    n = {"i": 0}

    def spoil(c):
        n["i"] += 1
        return [c[0], c[1], f"X{n['i']}", *c[3:]] if n["i"] % 5 == 0 else c

    _retag(src, foreign / "a.run", "other_corpus", edit=spoil)
    one_line_error(_cli(*base, "--runs", foreign), "system 'other_corpus'", "not in this collection")
    clash = tmp_path / "clash"
    _retag(src, clash / "a.run", "same")
    _retag(src, clash / "b.run", "same")
    one_line_error(_cli(*base, "--runs", clash), "run tag 'same' is also the tag of")
    taken = tmp_path / "taken"
    _retag(src, taken / "a.run", "bm25")
    one_line_error(_cli(*base, "--runs", taken), "has the name of a system already in the set")
    garbage = tmp_path / "garbage"
    garbage.mkdir()
    (garbage / "x.run").write_text("1 Q0 d 1 not-a-number tag\n")
    one_line_error(_cli(*base, "--runs", garbage), "x.run", "line 1")
    # the zoo's results are intact after every refusal
    assert json.loads((focused_out / "results.json").read_text())["systems"]["bm25"]["RR"] > 0


def test_yaml_declares_external_runs_callables_and_commands(tmp_path, monkeypatch):
    from nteval.systems.base import load_systems

    monkeypatch.setenv("NTEVAL_ALLOW_CODE", "1")  # (callables and commands: see test_code_needs_consent)
    (tmp_path / "r.run").write_text("1 Q0 d 1 1.0 t\n")
    ok = tmp_path / "ok.yaml"
    ok.write_text("- {name: bm25, algorithm: bm25}\n- {name: mine, run: r.run}\n"
                  "- {name: fn, callable: 'pybm25:main', version: 1}\n"
                  "- {name: cmd, command: 'prog {topics} {run}', version: v2}\n"
                  "- {name: mix, algorithm: linear, params: {systems: [bm25, mine], weights: [1, 2]}}\n")
    systems = {s.name: s for s in load_systems(ok)}
    assert systems["mine"].params["run"] == str((tmp_path / "r.run").resolve())
    assert systems["cmd"].params["command"] == ["prog", "{topics}", "{run}"]
    key = systems["mine"].key()
    (tmp_path / "r.run").write_text("1 Q0 d 1 2.0 t\n")
    assert load_systems(ok)[1].key() != key  # a changed run file is a new run
    for body, needle in [("- {name: f, callable: 'm:f'}\n", "needs a version"),
                         ("- {name: f, run: r.run, callable: 'm:f'}\n", "give one of run"),
                         ("- {name: f, run: nope.run}\n", "no such run file"),
                         ("- {name: f, command: 'prog {topics}', version: 1}\n", "must write its run to {run}"),
                         ("- {name: f, algorithm: linear, params: {systems: [a], weights: [1, 2]}}\n", "2 weights for 1")]:
        bad = tmp_path / "bad.yaml"
        bad.write_text(body)
        with pytest.raises(InputError, match=needle.replace("{", r"\{").replace("}", r"\}")):
            load_systems(bad)


def test_code_needs_consent(tmp_path, monkeypatch):
    """N12: a systems file with callable:/command: runs code; it is refused without --allow-code
    (listing it runs nothing and is fine)."""
    from nteval.systems.base import load_systems

    monkeypatch.delenv("NTEVAL_ALLOW_CODE", raising=False)
    yml = tmp_path / "code.yaml"
    yml.write_text("- {name: bm25, algorithm: bm25}\n- {name: cmd, command: 'prog {topics} {run}', version: 1}\n")
    with pytest.raises(InputError, match=r"system 'cmd' runs code \(command: .*give --allow-code"):
        load_systems(yml)
    assert [s.name for s in load_systems(yml, listing=True)] == ["bm25", "cmd"]
    r = _cli("systems", yml)
    assert r.exit_code == 0 and "cmd" in r.output
    monkeypatch.setenv("NTEVAL_ALLOW_CODE", "1")
    assert len(load_systems(yml)) == 2


# -- callables and external programs -----------------------------------------------------------------

def test_python_callable_and_external_program_are_systems(first200_index, tmp_path):
    from nteval.experiment import run_focused
    from nteval.systems.base import load_systems
    from nteval.systems.external import callable_system, command_system
    from nteval.systems.sets import builtin_systems

    bm25 = [s for s in load_systems(builtin_systems("default")) if s.name in ("bm25", "disjunctive_1")]
    py = PyBM25(first200_index)
    cmd = [sys.executable, str(HERE / "pybm25.py"), str(first200_index), "{topics}", "{run}", "{k}"]
    systems = [*bm25, callable_system("pybm25", py.search, "1"), command_system("pybm25_cli", cmd, "1")]
    out = tmp_path / "f"
    res = run_focused(first200_index, out, n_topics=40, min_topics=10, systems=systems, progress=False)
    rr = {n: v["RR"] for n, v in res["systems"].items()}
    assert rr["pybm25"] == rr["pybm25_cli"]  # the same code in-process and as a program
    assert abs(rr["pybm25"] - rr["bm25"]) < 0.1 and rr["pybm25"] > rr["disjunctive_1"]
    assert py.calls == 1

    def boom(queries, k):
        raise RuntimeError("service unavailable")

    # same version: the cached run is reused, the function is not called again
    res2 = run_focused(first200_index, out, n_topics=40, min_topics=10, progress=False,
                       systems=[*bm25, callable_system("pybm25", boom, "1")])
    assert res2["systems"]["pybm25"] == res["systems"]["pybm25"]
    # a new version is computed: the failure is one line naming the system, the others' runs stay
    with pytest.raises(InputError, match="system 'pybm25': its search raised RuntimeError: service unavailable"):
        run_focused(first200_index, out, n_topics=40, min_topics=10, progress=False,
                    systems=[*bm25, callable_system("pybm25", boom, "2")])
    assert (out / "runs" / "bm25.run").is_file() and (out / "results.json").is_file()
    for garbage, needle in [(lambda q, k: [1, 2], "must return {qid"),
                            (lambda q, k: {x: [("d", float("nan"))] for x in q}, "is not finite"),
                            (lambda q, k: {x: "d1 d2" for x in q}, "a ranking must be"),
                            (lambda q, k: {"no-such-topic": []}, "not this experiment's"),
                            # a run file cannot hold it: read back, " 123" became "123" (a review found it)
                            (lambda q, k: {x: [(" 123", 1.0)] for x in q}, "contains whitespace")]:
        with pytest.raises(InputError, match=needle.replace("{", r"\{")):
            run_focused(first200_index, out, n_topics=40, min_topics=10, progress=False,
                        systems=[*bm25, callable_system("bad", garbage, "1")])
    failing = [sys.executable, "-c", "import sys; sys.exit('index not found')", "{run}"]
    with pytest.raises(InputError, match="system 'prog': its command exited with status 1: index not found"):
        run_focused(first200_index, out, n_topics=40, min_topics=10, progress=False,
                    systems=[*bm25, command_system("prog", failing, "1")])


def test_dense_and_external_systems_in_holdout_high_recall(first200_index, dense_cache, tmp_path):
    """With source documents held out, dense and callables lose them from their rankings."""
    from nteval.experiment import run_highrecall
    from nteval.systems.base import make_system
    from nteval.systems.external import callable_system

    py = PyBM25(first200_index)
    systems = [make_system("bm25", "bm25"), make_system("dense", "dense"), callable_system("pybm25", py.search, "1"),
               make_system("hyb", "rrf", {"systems": ["bm25", "dense"]})]
    res = run_highrecall(first200_index, tmp_path / "h", n_topics=40, min_topics=10, systems=systems, progress=False,
                         holdout=True)
    held = res.get("holdout") or {}
    assert set(res["systems"]) == {"bm25", "dense", "pybm25", "hyb"}
    for name in ("dense", "pybm25", "hyb"):
        run = (tmp_path / "h" / "runs" / "holdout" / f"{name}.run").read_text().splitlines()
        assert run and all(line.split()[0] != line.split()[2] for line in run), (name, held)


def test_grid_scores_reference_systems_beside_its_cells(first200_index, dense_cache, tmp_path):
    """A dense model, a callable and an external run as references of a BM25 grid: scored on the
    grid's own topics (the same as the protocol run's), drawn on its maps, listed in grid.tsv."""
    from nteval.experiment import run_focused
    from nteval.grid import parse_axis, run_grid
    from nteval.systems.base import make_system
    from nteval.systems.external import callable_system

    py = PyBM25(first200_index)
    refs = [make_system("dense", "dense"), callable_system("pybm25", py.search, "1")]
    res = run_focused(first200_index, tmp_path / "f", n_topics=40, min_topics=10, progress=False,
                      systems=[make_system("bm25", "bm25"), *refs])
    runs = tmp_path / "runs"
    _retag(tmp_path / "f" / "runs" / "bm25.run", runs / "x.run", "their_bm25")
    r = _cli("grid", "--index", first200_index, "--protocol", "focused", "--param", "k1=0.6,0.9", "--topics", "40",
             "--min-topics", "10", "--runs", runs, "--out", tmp_path / "g", "--quiet")
    assert r.exit_code == 0, r.output
    grid = json.loads((tmp_path / "g" / "grid.json").read_text())
    assert grid["protocols"]["focused"]["references"]["their_bm25"]["RR"] == pytest.approx(res["systems"]["bm25"]["RR"], abs=1e-6)
    assert "reference their_bm25" in r.output and "of 2 cells score higher" in r.output
    g2 = run_grid(first200_index, tmp_path / "g2", [parse_axis("k1=0.6,0.9")], protocol="focused", n_topics=40,
                  min_topics=10, references=refs, progress=False)
    got = g2["protocols"]["focused"]["references"]
    assert got["dense"]["RR"] == pytest.approx(res["systems"]["dense"]["RR"], abs=1e-6)
    assert got["pybm25"]["RR"] == pytest.approx(res["systems"]["pybm25"]["RR"], abs=1e-6)
    assert (tmp_path / "g2" / "grid.tsv").read_text().count("\tdense\n") == len(g2["protocols"]["focused"]["measures"])
