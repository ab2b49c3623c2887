"""The references a pin's topical topics were judged by go with the pin: fresh topics and extensions
are judged by them, or refused in one line when this install cannot run them (a pin judged with
all-MiniLM-L6-v2, on an install without the neural extra: before, no fresh topic was made and the
gate said "no document was added since the pin"); an extension keeps the pin's record of them
verbatim. (Issue 50: G5, G9.)"""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import FIRST100, FIRST200, cli, one_line_error, without_the_neural_extra
from conftest import needs_neural as neural

from nteval.protocols.highrecall import NEURAL_SREFS


@pytest.fixture(scope="module")
def grown(tmp_path_factory) -> Path:
    """The 200-record slice with 100 more records added (the documents fresh topics are made of)."""
    from nteval.index import build_index

    out = tmp_path_factory.mktemp("grown") / "idx"
    build_index([FIRST200, FIRST100], out)
    return out


@pytest.fixture(scope="module")
def neural_pin(first200_index, tmp_path_factory) -> Path:
    """A pin made with the neural extra: its topical topics judged by the lexical vote and MiniLM."""
    pin = tmp_path_factory.mktemp("npin") / "pin"
    r = cli("pin", "--index", first200_index, "--topics", 60, "--out", pin, "--quiet")
    assert r.exit_code == 0, r.output
    sref = json.loads((pin / "pin.json").read_text())["protocols"]["highrecall"]["settings"]["sref"]
    assert sref["families"]["neural"] == list(NEURAL_SREFS)
    return pin


def _settings(pin: Path) -> dict:
    return json.loads((pin / "pin.json").read_text())["protocols"]["highrecall"]["settings"]


@neural
def test_without_the_extra_fresh_topics_and_extensions_are_refused(neural_pin, grown, tmp_path, monkeypatch):
    """G5: an install without the neural extra, on a pin judged with MiniLM: a topical gate or check
    with --fresh, and pin --extend, are one line naming the extra (exit 2), never 0 fresh topics or
    an unextended topical set; the known-item gate (its topics need no reference) makes its fresh
    topics as before."""
    without_the_neural_extra(monkeypatch)
    common = ["--index", grown, "--pin", neural_pin]
    line = one_line_error(cli("gate", *common, "--task", "topical", "--baseline", "bm25", "--candidate",
                              "bm25_k1.2_b0.75", "--fresh", 40, "--out", tmp_path / "g", "--quiet"),
                          "judged by", "neural extra")
    assert "minilm" in line and "fresh topics" in line and str(neural_pin) in line
    assert not (tmp_path / "g").exists()   # nothing half-written: not even its stake (hostile T8)
    one_line_error(cli("check", *common, "--task", "topical", "--system", "bm25", "--fresh", 40, "--history",
                       tmp_path / "h.sqlite", "--out", tmp_path / "c", "--quiet"), "neural extra")
    line = one_line_error(cli("pin", "--extend", neural_pin, "--index", grown, "--topics", 90, "--out",
                              tmp_path / "ext", "--quiet"), "neural extra")
    assert "extension" in line and not (tmp_path / "ext").exists()
    r = cli("gate", *common, "--task", "known-item", "--baseline", "bm25", "--candidate", "bm25_k1.2_b0.75",
            "--fresh", 40, "--out", tmp_path / "k", "--quiet")
    assert r.exit_code in (0, 4), r.output
    assert json.loads((tmp_path / "k" / "gate.json").read_text())["sets"]["fresh"]["topics"] > 0


def test_an_extension_keeps_the_pins_references(first200_index, tmp_path, monkeypatch):
    """G9: an extension keeps settings.sref (the pin's record of its references) verbatim, also when
    it adds no topical topic (here: the pin sampled every eligible document of the slice already;
    before, its settings were then dropped, and a gate on it said nothing of who judged it), and
    an install with the neural extra does not upgrade a lexical pin's references."""
    pin, ext = tmp_path / "pin", tmp_path / "ext"
    with monkeypatch.context() as mp:
        without_the_neural_extra(mp)
        r = cli("pin", "--index", first200_index, "--topics", 200, "--out", pin, "--quiet")
    assert r.exit_code == 0, r.output
    r = cli("pin", "--extend", pin, "--index", first200_index, "--topics", 400, "--out", ext, "--quiet")
    assert r.exit_code == 0, r.output
    assert _settings(ext)["sref"] == _settings(pin)["sref"] and "neural" not in _settings(ext)["sref"]["families"]
    r = cli("gate", "--index", first200_index, "--pin", ext, "--task", "topical", "--baseline", "bm25",
            "--candidate", "bm25_k1.2_b0.75", "--out", tmp_path / "g", "--quiet")
    assert r.exit_code in (0, 4), r.output
    assert "lexical references alone" in (json.loads((tmp_path / "g" / "gate.json").read_text())["judged_by"] or "")


def test_pin_preset_lexical_encodes_nothing_and_records_its_references(tmp_path, monkeypatch):
    """`pin --preset lexical` (new user, turn 6, F1: a team that wants a lexical pin now): the topical
    topics are judged by the lexical vote alone, nothing is encoded (no vector cache appears), and the
    pin records it; the default pin of an install with the extra records the pooled MiniLM share."""
    from nteval.index import build_index

    idx = tmp_path / "idx"
    build_index([FIRST200], idx)
    monkeypatch.setenv("NTEVAL_DENSE_CACHE", str(tmp_path / "vectors"))
    r = cli("pin", "--index", idx, "--topics", "60", "--preset", "lexical", "--out", tmp_path / "lex", "--quiet")
    assert r.exit_code == 0, r.output
    sref = json.loads((tmp_path / "lex" / "pin.json").read_text())["protocols"]["highrecall"]["settings"]["sref"]
    assert set(sref["families"]) == {"lexical"} and "pool" not in sref
    assert not (tmp_path / "vectors").exists() and not (idx / "dense").exists()
    r = cli("pin", "--index", idx, "--topics", "60", "--preset", "nope", "--out", tmp_path / "x")
    assert r.exit_code == 2 and "--preset" in r.output and not (tmp_path / "x").exists()


def test_an_older_pins_neural_reference_is_still_the_one_it_was_judged_by():
    """Pins made before the neural reference was encoded with int8 weights and 128 word pieces
    recorded ``minilm``: their fresh topics and extensions are judged by that reference as it was
    (torch, every word piece the model reads), not by today's default."""
    from nteval.gate.pin import Pin, pinned_references
    from nteval.protocols.highrecall import REFERENCE_SYSTEMS, resolve_srefs

    old = Pin(Path("old-pin"), {"protocols": {"highrecall": {"settings": {"sref": {
        "name": "bm25+bm25_k1.2_b0.75+qld_mu1000+minilm",
        "families": {"lexical": ["bm25", "bm25_k1.2_b0.75", "qld_mu1000"], "neural": ["minilm"]}}}}}})
    names = pinned_references(old)
    assert names[-1] == "minilm" and REFERENCE_SYSTEMS["minilm"] == ("dense", {"model": "minilm"})
    ref = resolve_srefs(names)[-1]
    assert ref.params.get("backend", "auto") == "auto" and not ref.params.get("max_tokens")
    assert NEURAL_SREFS != ("minilm",)


def test_the_default_neural_reference_is_the_studys_choice_and_falls_back_to_torch(monkeypatch):
    """The shipped reference encodes as scripts/reference_encoding_study.py chose (its output ships in
    nteval/data/reference_encoding.json); where ONNX Runtime is missing, or torch sees a GPU, the
    torch reference (the study's baseline, as fair) stands in, never the lexical vote alone."""
    import sys

    from nteval.encoders.models import SHIPPED_MODELS
    from nteval.protocols import highrecall

    root = Path(__file__).resolve().parents[2]
    sys.path.insert(0, str(root / "scripts"))
    try:
        import reference_encoding_study as study
    finally:
        sys.path.pop(0)
    chosen = json.loads((root / "nteval" / "data" / "reference_encoding.json").read_text())["choice"]["chosen"]
    backend, cut = study.VARIANTS[chosen]
    algorithm, params = highrecall.REFERENCE_SYSTEMS[NEURAL_SREFS[0]]
    assert algorithm == "dense" and params["model"] == "minilm"
    assert params.get("backend", "auto") == backend and params.get("max_tokens", 0) == cut
    if SHIPPED_MODELS["minilm"].missing():
        pytest.skip("needs the neural extra")
    assert highrecall.default_srefs()[-1] == NEURAL_SREFS[0]
    monkeypatch.setattr(highrecall, "missing_modules", lambda *m: ["onnxruntime"])
    assert highrecall.default_srefs() == highrecall.LEXICAL_SREFS + highrecall.NEURAL_SREFS_TORCH
    # --preset balanced is the default's references, whichever this install judges with (hostile T6)
    assert highrecall.HighRecallSpec(preset="balanced").sref == highrecall.LEXICAL_SREFS + highrecall.NEURAL_SREFS_TORCH
    # where torch sees a GPU (this machine has none: asked of torch as a GPU machine would answer),
    # the torch reference encodes there
    monkeypatch.setattr(highrecall, "missing_modules", lambda *m: [])
    monkeypatch.setattr(highrecall, "cuda_available", lambda: True)
    assert highrecall.default_srefs() == highrecall.LEXICAL_SREFS + highrecall.NEURAL_SREFS_TORCH


def test_a_pool_with_the_lexical_preset_is_refused(first200_index, tmp_path):
    """Hostile T7: ``pin --preset lexical --pool 30`` ignored the pool and recorded it in pin.json."""
    line = one_line_error(cli("pin", "--index", first200_index, "--topics", 30, "--preset", "lexical", "--pool", 30,
                              "--out", tmp_path / "p", "--quiet"), "--pool 30", "--preset lexical")
    assert "Traceback" not in line and not (tmp_path / "p").exists()
