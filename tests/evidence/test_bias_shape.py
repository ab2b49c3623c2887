"""Level and shape (scripts/bias_shape_study.py): a family's floor under a design, the interval of a
difference between two collections' biases (against scipy's normal), and the shipped figures and
docs block recomputed from the shipped studies' JSON."""
from __future__ import annotations

import json
import math
import re

import pytest
from conftest import script
from scipy.stats import norm

bs = script("bias_shape_study")


def test_the_floor_is_half_the_range_whatever_the_offset():
    """Biases −24, 0, −2: the best constant is −12 and leaves 12 on two of them; any other leaves more."""
    b = [-24.0, 0.0, -2.0]
    assert bs.floor(b) == 12.0
    for c in (-20.0, -12.0, -11.0, -5.0, 0.0):
        assert max(abs(x - c) for x in b) >= bs.floor(b)


def test_a_contrast_interval_adds_the_two_variances():
    """[10, 0, 20] against [0, −10, 10]: each interval 20 wide, s = 20 / (2 · 1.96); Δ = 10 with scipy's
    normal 95 % interval of scale √2 · s (independent collections): 10 ± 1.96 · √2 · 5.10 = [−4.1, 24.1]."""
    s = 20 / (2 * norm.ppf(0.975))
    lo, hi = norm.interval(0.95, loc=10, scale=math.sqrt(2) * s)
    assert bs.contrast([10.0, 0.0, 20.0], [0.0, -10.0, 10.0]) == [10.0, round(lo, 1), round(hi, 1)]
    assert round(lo, 1) == -4.1 and round(hi, 1) == 24.1


def _design(rows: dict[str, dict[str, list[float]]]) -> dict[str, dict[str, list[float]]]:
    return {c: {f: rows[f][c] for f in rows} for c in bs.TOPICAL}


def test_a_constant_bias_has_no_shape_and_a_wide_one_is_shown():
    """Expansion +13 on every collection (any level): floor 0, nothing shown. Reduction +12, −19, +10 with
    ±5 intervals: floor 15.5, its widest pair CISI − CF (+31), shown beyond 10; the design's floor is it."""
    rows = {"expansion": {c: [13.0, 8.0, 18.0] for c in bs.TOPICAL},
            "reduction": {"cisi": [12.0, 7.0, 17.0], "cf": [-19.0, -24.0, -14.0], "med": [10.0, 5.0, 15.0]}}
    r = bs.shape(_design(rows))
    assert r["families"]["expansion"]["floor"] == 0.0 and not r["families"]["expansion"]["shown"]
    red = r["families"]["reduction"]
    assert red["floor"] == 15.5 and red["widest"] == ["cisi", "cf"] and red["contrast"][0] == 31.0
    assert red["shown"] and r["shown"] == ["reduction"] and r["worst"] == "reduction" and r["floor"] == 15.5


def test_a_shape_within_the_noise_is_not_shown():
    """+12 against −2 (floor 7) with ±20 intervals: Δ = 14, its interval reaches below 10: not shown."""
    rows = {"neural": {"cisi": [12.0, -8.0, 32.0], "cf": [-2.0, -22.0, 18.0], "med": [5.0, -15.0, 25.0]}}
    r = bs.shape(_design(rows))
    assert r["floor"] == 7.0 and r["families"]["neural"]["contrast"][1] < 10 and r["shown"] == []


@pytest.fixture(scope="module")
def shipped():
    return bs.shipped()


def test_the_shipped_json_and_block_are_what_the_studies_give(shipped):
    """nteval/data/bias_shape.json and the docs block are recomputed from the shipped LOCO, query-form and
    resolution JSON: a study rerun that changes a bias changes these or fails here."""
    assert json.loads(bs.OUT_JSON.read_text(encoding="utf-8")) == json.loads(json.dumps(shipped))
    doc = bs.DOC.read_text(encoding="utf-8")
    got = re.search(r"<!-- loco:shape -->\n(.*?)\n<!-- /loco:shape -->", doc, re.S)
    assert got and got.group(1) == bs.block(shipped)


def test_every_design_computed_on_the_three_is_read(shipped):
    """The LOCO study's ten designs and the query-form study's four other forms; the shipped design once."""
    loco = json.loads((bs.DATA / "loco_fairness.json").read_text(encoding="utf-8"))
    expected = [d for d, r in loco["collections"]["cisi"].items() if "families" in r]
    assert len(expected) == 10
    assert list(shipped["designs"])[:len(expected)] == expected
    assert [d for d in shipped["designs"] if d.startswith("query: ")] == [
        "query: sentence 1", "query: sentences 2–4", "query: sentence 3, key terms", "query: matched length"]
    for r in shipped["designs"].values():     # a design's floor is its largest family floor
        assert r["floor"] == max(v["floor"] for v in r["families"].values())
        assert set(r["families"]) == set(bs.FAMILIES)
