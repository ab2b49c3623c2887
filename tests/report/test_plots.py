"""Figures a reader can read: grid maps explain their dashed line and name their measure, one-
parameter plots label the y axis, scatter labels never overlap. Real measurements: the PubMed BM25
grid in docs/ and the 24 `wide` systems' focused scores on the bundled PubMed slice."""
from __future__ import annotations

import csv
import itertools
from pathlib import Path

import matplotlib.colors as mcolors
import numpy as np
import pytest
from conftest import DATA
from matplotlib.text import Text

from nteval.grid.run import _near_best
from nteval.grid.spec import parse_axis
from nteval.report.contours import grid_plots, measure_figure
from nteval.report.plots import pyplot, scatter_figure

ROOT = Path(__file__).resolve().parents[2]
GRID = ROOT / "docs" / "grid_pubmed_bm25.tsv"
WIDE = DATA / "scores" / "first200_focused_wide.tsv"


def _grid_result(rows: list[dict], axes) -> dict:
    """grid.json's shape, from the measured cells of a grid.tsv."""
    protos: dict = {}
    for r in rows:
        protos.setdefault(r["protocol"], {}).setdefault(r["measure"], []).append(
            ({a.name: float(r[a.name]) for a in axes}, float(r["value"])))
    return {"system": {"name": "bm25"}, "protocols": {
        p: {"index": "nt", "topics": 500, "measures": {m: {**_near_best(c, axes), "values": [v for _, v in c]} for m, c in ms.items()}}
        for p, ms in protos.items()}}


@pytest.fixture(scope="module")
def grid_rows():
    return list(csv.DictReader(GRID.open(), delimiter="\t"))


def _axis(rows, name):
    return parse_axis(f"{name}=" + ",".join(sorted({r[name] for r in rows}, key=float)))


def _dark(color) -> bool:
    r, g, b = mcolors.to_rgb(color)
    return 0.2126 * r + 0.7152 * g + 0.0722 * b < 0.3


def test_contour_map_names_its_measure_and_explains_the_dashed_line(grid_rows):
    axes = [_axis(grid_rows, "k1"), _axis(grid_rows, "b")]
    fig = measure_figure(_grid_result(grid_rows, axes), axes, "focused", "RR")
    try:
        ax, cbar = fig.axes
        assert cbar.get_ylabel() == "RR (focused)"
        legend = [t.get_text() for t in ax.get_legend().get_texts()]
        assert any(t.startswith("within 1 % of best") for t in legend) and any(t.startswith("best 0.92") for t in legend)
        assert len(ax.collections) >= 2  # the filled map and the dashed 1 % contour
        for text in ax.texts:  # the best value's label: dark, on a light box, big enough
            assert _dark(text.get_color()) and text.get_fontsize() >= 8
            assert text.get_bbox_patch() is not None
    finally:
        pyplot().close(fig)


def test_one_parameter_plot_labels_the_measure(grid_rows):
    one = [r for r in grid_rows if r["b"] == "0.4"]
    axes = [_axis(one, "k1")]
    fig = measure_figure(_grid_result(one, axes), axes, "highrecall", "AP")
    try:
        (ax,) = fig.axes
        assert ax.get_ylabel() == "AP (highrecall)" and ax.get_xlabel() == "k1"
        assert "within 1 % of best" in [t.get_text() for t in ax.get_legend().get_texts()]
    finally:
        pyplot().close(fig)


def test_grid_plots_written_for_both_shapes(grid_rows, tmp_path):
    axes = [_axis(grid_rows, "k1"), _axis(grid_rows, "b")]
    paths = grid_plots(_grid_result(grid_rows, axes), axes, tmp_path)
    assert {p.name for p in paths} == {"grid_focused_RR.png", "grid_highrecall_AP.png", "grid_highrecall_Bpref.png",
                                       "grid_compare.png"}
    assert all(p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for p in paths)


def test_scatter_labels_of_24_systems_do_not_overlap():
    rows = list(csv.DictReader(WIDE.open(), delimiter="\t"))
    assert len(rows) == 24
    x, y = [float(r["RR"]) for r in rows], [float(r["nDCG@10"]) for r in rows]
    assert len(set(zip(x, y))) < 20  # a real dense case: several systems score exactly the same
    fig = scatter_figure(x, y, [r["system"] for r in rows], ("RR", "nDCG@10", "focused, wide systems"))
    try:
        fig.canvas.draw()
        ax = fig.axes[0]
        renderer = fig.canvas.get_renderer()
        labels = [t for t in ax.texts if t.get_text() in {r["system"] for r in rows}]
        assert len(labels) == 24
        boxes = [Text.get_window_extent(t, renderer) for t in labels]  # the text alone, not its leader line
        clash = [(a.get_text(), b.get_text()) for (a, ba), (b, bb) in itertools.combinations(zip(labels, boxes), 2)
                 if ba.overlaps(bb)]
        assert not clash
        frame = ax.get_window_extent(renderer)
        assert all(frame.x0 <= b.x0 and b.x1 <= frame.x1 and frame.y0 <= b.y0 and b.y1 <= frame.y1 for b in boxes)
        assert all(_dark(t.get_color()) and t.get_fontsize() >= 8 for t in labels)
    finally:
        pyplot().close(fig)


def test_noise_is_not_a_landscape_and_the_tied_cells_are_drawn(grid_rows):
    """A map whose cells span less than the minimum meaningful difference is coloured over that
    difference (and says so); the cells the paired test cannot tell apart from the best are ringed
    and in the legend."""
    from nteval.report.contours import color_range, mmd_of

    axes = [_axis(grid_rows, "k1"), _axis(grid_rows, "b")]
    res = _grid_result(grid_rows, axes)
    r = res["protocols"]["focused"]["measures"]["RR"]
    values = np.asarray(r["values"])
    best = r["best"]["value"]
    lo, hi, widened = color_range(values, best)
    assert widened == (values.max() - values.min() < mmd_of(best))
    if widened:
        assert (lo, hi) == pytest.approx((values.max() - 0.05 * best, values.max()))
    r["indistinguishable_from_best"] = {"cells": 2, "params": [r["best"]["params"], r["best"]["params"]]}
    fig = measure_figure(res, axes, "focused", "RR")
    try:
        ax, cbar = fig.axes
        legend = [t.get_text() for t in ax.get_legend().get_texts()]
        assert "cannot be told apart from the best: 2 cells (paired test, Holm)" in legend
        notes = [t.get_text() for t in ax.texts if "minimum meaningful difference" in t.get_text()]
        assert bool(notes) == widened
        assert cbar.get_ylim()[1] - cbar.get_ylim()[0] >= min(values.max() - values.min(), mmd_of(best)) - 1e-9
    finally:
        pyplot().close(fig)
