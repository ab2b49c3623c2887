"""Fusion of runs (nteval.systems.fusion), computed by hand."""
from __future__ import annotations

import numpy as np
import pytest


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

