"""The evidence tables of the docs are the data the scripts wrote: the gate's error rates
(docs/gate.md from docs/gate_error_rates.json) and the title-leak study (docs/any-system.md from
docs/title_leak_*.json). A hand-edited number, or data regenerated without the page, fails here."""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))


def _block(page: str, name: str) -> str:
    m = re.search(rf"<!-- {name} -->\n(.*?)\n<!-- /{name} -->", (ROOT / "docs" / page).read_text(encoding="utf-8"), re.S)
    assert m, f"docs/{page}: no <!-- {name} --> block"
    return m.group(1)


def test_gate_error_rate_tables_are_the_data():
    from gate_error_rates import tables

    made = tables(json.loads((ROOT / "docs" / "gate_error_rates.json").read_text()))
    for name, text in made.items():
        assert _block("gate.md", name) == text, f"docs/gate.md {name}: run scripts/gate_error_rates.py --render"


def test_title_leak_table_is_the_data():
    from title_leak_study import table

    data = {label: json.loads((ROOT / "docs" / f"title_leak_{label.lower()}.json").read_text())
            for label in ("PubMed", "SciFact")}
    assert _block("any-system.md", "title-leak") == table(data)
    for res in data.values():  # and what the page says of them holds
        for st in res["studies"]:
            flagged = [n for n, r in st["runs"].items() if r["flagged"]]
            assert flagged == ["bm25s_title_and_abstract"], (st["protocol"], flagged)


def test_the_published_error_rates_are_what_the_gate_computes():
    """The shipped error rates recomputed from the same real per-topic scores (the cell most sensitive
    to the bounds: an equal candidate at 100 topics, where the betting bound just starts to pass some),
    with the script's seed and draws: a change of the bounds (TRUNCATION, the grid, α's split) that
    leaves docs/gate_error_rates.json as it was fails here."""
    sys.path.insert(0, str(ROOT / "tests" / "gate"))
    from test_decide import _real

    from nteval.gate.decide import DecisionRule
    from nteval.gate.simulate import equal_population, error_rates

    data = json.loads((ROOT / "docs" / "gate_error_rates.json").read_text())
    name = "RR: bm25_k1.2_b0.75 vs qld_mu100"
    (cell,) = [c for c in data["cells"] if c["population"] == name and c["n"] == 100]
    real = _real()["focused"]
    pop = equal_population(name, real["bm25_k1.2_b0.75"], real["qld_mu100"])
    again = error_rates(pop, 100, data["reps"], DecisionRule.of("5%", data["alpha"]), seed=100)  # (seed: 1000·k + n)
    assert again["decisions"] == cell["decisions"], "run scripts/gate_error_rates.py again: the gate's bounds changed"


def test_the_published_title_leak_study_is_what_the_rules_say():
    """The title-leak rules re-applied to the statistics the study stored for every run: a change of
    a threshold (RESCUE_FLAG, RESCUE_CEILING, HIGHRECALL_*) that leaves the published "which runs
    are flagged" as it was fails here; and what a gate takes off a decision covers what the titles
    added, for every share of the topics searched with them."""
    from nteval import leak

    for label in ("PubMed", "SciFact"):
        res = json.loads((ROOT / "docs" / f"title_leak_{label.lower()}.json").read_text())
        for st in res["studies"]:
            for name, r in st["runs"].items():
                if r["rule"] == "rescues":
                    assert r["ceiling"] == leak.RESCUE_CEILING, (label, name)
                    p = leak._binomial_p(r["hits"], r["misses"], leak.RESCUE_CEILING)
                    flagged = r["misses"] > 0 and r["hits"] / r["misses"] >= leak.RESCUE_FLAG and p < leak.P_LEAK
                    assert r["p"] == pytest.approx(p) and r["flagged"] == flagged, (label, name)
                else:
                    flagged = r["share"] >= leak.HIGHRECALL_FLAG and r["lower"] > leak.HIGHRECALL_CEILING
                    assert r["ceiling"] == leak.HIGHRECALL_CEILING and r["flagged"] == flagged, (label, name)
            for row in st.get("shares", []):
                assert row["refused_all"] == st["runs"][row["run"]]["flagged"]
                if not row["title_blind"] and row["every_gain"]:  # (a search of the titles shown: all it gained)
                    assert row["taken_off"] >= row["gain"] - 1e-4, (label, row)


def test_every_environment_variable_is_documented():
    """Every NTEVAL_* variable the package reads is in docs/install.md's table (hostile K8:
    NTEVAL_ENCODER_THREADS was in the CHANGELOG only)."""
    used = {m for p in (ROOT / "nteval").rglob("*.py")
            for m in re.findall(r"NTEVAL_[A-Z_]*[A-Z](?![A-Z_*])", p.read_text(encoding="utf-8"))}
    table = (ROOT / "docs" / "install.md").read_text(encoding="utf-8")
    assert used and not sorted(v for v in used if f"`{v}`" not in table)
