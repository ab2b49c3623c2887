"""A grid scored in one pass over the postings gives the tables the per-cell grid gives, cell for
cell (its cells are the same files under the same keys: either path reuses the other's)."""
from __future__ import annotations

import json

import pytest

from nteval.grid import parse_axis, run_grid


def _tables(out):
    grid = json.loads((out / "grid.json").read_text())
    for k in ("timing", "cells", "index"):
        grid.pop(k, None)
    return (out / "grid.tsv").read_bytes(), json.dumps(grid, sort_keys=True)


@pytest.mark.parametrize("system, axes, extra", [
    ("bm25", ["k1=0.6,1.5", "b=0.2,0.8"], {}),
    ("bm25", ["k1=0.6,1.5"], {"measures": ["nDCG@10", "RR"]}),   # a measure the pass does not compute: chunks
    ("qld", ["mu=200,1000,2500"], {}),
    ("bm25", ["k1=0.9,1.8"], {"holdout": True}),
])
def test_one_pass_grid_equals_per_cell_grid(first200_index, tmp_path, system, axes, extra):
    kw = dict(system=system, n_topics=40, seed=5, min_topics=10, progress=False, plots=False, **extra)
    a = run_grid(first200_index, tmp_path / "one", [parse_axis(x) for x in axes], **kw)
    b = run_grid(first200_index, tmp_path / "per", [parse_axis(x) for x in axes], one_pass=False, **kw)
    assert a["cells"]["computed"] == b["cells"]["computed"] == a["cells"]["total"]
    assert _tables(tmp_path / "one") == _tables(tmp_path / "per")
    cells = sorted((tmp_path / "one" / "cells").rglob("*.json"))
    # each protocol's cells came from one pass
    assert cells and all(json.loads(c.read_text())["one_pass"] == a["cells"]["per_protocol"] for c in cells)
    assert a["timing"]["one_pass"] == len(a["protocols"]) and b["timing"]["one_pass"] == 0
    # the per-cell OUT's cells are the one-pass grid's too: nothing is computed again
    again = run_grid(first200_index, tmp_path / "per", [parse_axis(x) for x in axes], **kw)
    assert again["cells"]["computed"] == 0


def test_feedback_systems_take_the_per_cell_path(first200_index, tmp_path):
    res = run_grid(first200_index, tmp_path / "rm3", [parse_axis("fb_terms=5,10")], system="bm25_rm3",
                   protocol="focused", n_topics=30, min_topics=10, progress=False, plots=False)
    cells = list((tmp_path / "rm3" / "cells").rglob("*.json"))
    assert res["cells"]["computed"] == 2 and not any("one_pass" in json.loads(c.read_text()) for c in cells)
    assert res["timing"]["one_pass"] == 0
