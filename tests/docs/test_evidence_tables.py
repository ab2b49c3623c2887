"""The evidence tables of the docs are the data the scripts wrote: the gate's error rates
(docs/gate.md from docs/gate_error_rates.json) and the title-leak study (docs/bring-your-own.md from
docs/title_leak.json). A hand-edited number, or data regenerated without the page, fails here."""
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


def test_title_leak_tables_are_the_data():
    """The page's tables are the study's, and what the page says of them holds: no title-blind run
    is refused, on any collection (issue 55's rule)."""
    from title_leak_study import levels_table, table

    data = json.loads((ROOT / "docs" / "title_leak.json").read_text())
    assert _block("bring-your-own.md", "title-leak") == table(data)
    assert _block("bring-your-own.md", "title-leak-levels") == levels_table(data)
    blind = [r for r in data["summary"] if r["group"] == "title-blind"]
    assert len(blind) >= 12 and not [r for r in blind if r["refused"]], blind
    assert {r["collection"] for r in blind} >= {"sample", "pubmed", "cisi", "cf", "scifact", "med"}


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
    a threshold (RESCUE_*, HIGHRECALL_*, OUTSIDE_*) that leaves the published table as it was fails
    here; the thresholds are at least what the rule written in the study gives from the blind levels;
    and the stored statistics are nteval.leak's own (a focused rule's p recomputed)."""
    from title_leak_study import blind_levels, refused, summary, thresholds

    from nteval import leak

    data = json.loads((ROOT / "docs" / "title_leak.json").read_text())
    assert summary(data["collections"]) == data["summary"]
    assert blind_levels(data["collections"]) == data["blind_levels"]
    rule = thresholds(data["blind_levels"])
    for name, value in rule.items():
        const, cls = name.rstrip("]").split("[")
        assert getattr(leak, const)[cls] == pytest.approx(value), name
    for col in data["collections"].values():
        for st in col["protocols"].values():
            for name, r in st["runs"].items():
                assert refused(r) == r["refused"], name
                if r["rule"] == "rescues":
                    assert r["p"] == pytest.approx(leak._binomial_p(r["hits"], r["misses"], r["ceiling"]))


def test_every_environment_variable_is_documented():
    """Every NTEVAL_* variable the package reads is in docs/install.md's table (hostile K8:
    NTEVAL_ENCODER_THREADS was in the CHANGELOG only)."""
    used = {m for p in (ROOT / "nteval").rglob("*.py")
            for m in re.findall(r"NTEVAL_[A-Z_]*[A-Z](?![A-Z_*])", p.read_text(encoding="utf-8"))}
    table = (ROOT / "docs" / "install.md").read_text(encoding="utf-8")
    assert used and not sorted(v for v in used if f"`{v}`" not in table)
