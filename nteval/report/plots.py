"""Matplotlib figures written straight to PNG (Agg backend: no display needed)."""
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

#: Text on figures: near-black, never below 8 pt (the figures are read at 100 % in report.html).
INK = "#1a1a1a"
LABEL_SIZE = 8.0


def pyplot():
    """matplotlib.pyplot on the Agg backend (no display needed)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def scatter_figure(x: Sequence[float], y: Sequence[float], labels: Sequence[str], text: tuple[str, str, str],
                   diagonal: bool = True, small: bool = False):
    """Points labelled by name, every label readable (no two overlap; see :func:`place_labels`).
    ``text``: (x-axis label, y-axis label, title).
    ``small``: a thumbnail size, for a scatter with little to show (two distinct values on an axis)."""
    fig, ax = pyplot().subplots(figsize=(4.6, 3.6) if small else (6.4, 5.4), dpi=110)
    ax.scatter(x, y, s=28, color="#1f77b4", zorder=3)
    if diagonal:  # same measure on both axes: y = x is the reference
        lo = min(min(x), min(y))
        hi = max(max(x), max(y))
        ax.plot([lo, hi], [lo, hi], lw=0.8, ls="--", color="grey")
    ax.margins(0.12)  # room around the outermost points for their labels
    xlabel, ylabel, title = text
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    ax.grid(alpha=0.3)
    fig.tight_layout()  # final axes geometry first: labels are placed in screen space
    place_labels(ax, x, y, labels)
    return fig


#: Distances (points) from a point to its label's near edge, tried in turn.
_RINGS = (2, 6, 11, 17, 24, 32, 42, 54, 68, 84, 102, 122, 146, 172, 200, 240, 290, 350)
_ANGLES = np.deg2rad([30, 150, -30, -150, 90, -90, 0, 180, 60, 120, -60, -120, 15, 165, -15, -165,
                      45, 135, -45, -135, 75, 105, -75, -105])


def _hits(boxes: np.ndarray, pts: np.ndarray) -> bool:
    """Does any point fall inside any box (x0, y0, x1, y1)?"""
    if not len(boxes) or not len(pts):
        return False
    b, q = boxes[:, None, :], pts[None, :, :]
    return bool(np.any((b[..., 0] < q[..., 0]) & (q[..., 0] < b[..., 2]) & (b[..., 1] < q[..., 1]) & (q[..., 1] < b[..., 3])))


def _leader(p: np.ndarray, dx: float, dy: float, w: float, h: float, ppt: float) -> np.ndarray:
    """Sample points of the line from a point to its label (empty when the label sits close
    enough to need none)."""
    if np.hypot(dx, dy) <= max(w, h) / 2 + 8 * ppt:
        return np.empty((0, 2))
    pts = p + np.outer(np.linspace(0.05, 1, 24), [dx, dy])
    inside_own = (np.abs(pts[:, 0] - p[0] - dx) < w / 2) & (np.abs(pts[:, 1] - p[1] - dy) < h / 2)
    return pts[~inside_own]


def _free_spot(p: np.ndarray, w: float, h: float, boxes: list[list[float]], lines: np.ndarray, frame,
               ppt: float, strict: bool = True) -> tuple[float, float] | None:
    """Offset (pixels) of the nearest label box around ``p`` inside ``frame`` that overlaps no
    box and (``strict``) no leader line, and whose own leader line crosses no label; None when
    there is none."""
    taken = np.asarray(boxes)
    for ring in _RINGS:
        r = ring * ppt
        for a in _ANGLES:
            dx, dy = np.cos(a) * (r + w / 2), np.sin(a) * (r + h / 2)
            x0, y0 = p[0] + dx - w / 2, p[1] + dy - h / 2
            if x0 < frame.x0 or y0 < frame.y0 or x0 + w > frame.x1 or y0 + h > frame.y1:
                continue
            if np.any((taken[:, 0] < x0 + w) & (x0 < taken[:, 2]) & (taken[:, 1] < y0 + h) & (y0 < taken[:, 3])):
                continue
            if strict and (_hits(np.array([[x0, y0, x0 + w, y0 + h]]), lines)
                           or _hits(taken, _leader(p, dx, dy, w, h, ppt))):
                continue
            return dx, dy
    return None


def place_labels(ax, x: Sequence[float], y: Sequence[float], labels: Sequence[str], size: float = LABEL_SIZE) -> list:
    """Greedy label placement: the most crowded points first, each label at the nearest spot
    around its point (rings of growing radius) that overlaps no placed label, marker or leader
    line and not the axes' edge; a thin leader line joins a label set apart from its point (dense
    clusters, systems with identical scores). Text offsets are in points: they survive a change
    of dpi."""
    fig = ax.figure
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    px = ax.transData.transform(np.column_stack([np.asarray(x, float), np.asarray(y, float)]))
    ppt = fig.dpi / 72  # pixels per point
    frame = ax.get_window_extent(renderer)
    m = 3.5 * ppt  # a marker's half-width
    boxes = [[cx - m, cy - m, cx + m, cy + m] for cx, cy in px]
    lines = np.empty((0, 2))
    near = (np.hypot(*(px[:, None, :] - px[None, :, :]).transpose(2, 0, 1)) < 40 * ppt).sum(axis=1)
    out = []
    for i in sorted(range(len(labels)), key=lambda i: (-near[i], i)):
        probe = ax.text(0, 0, labels[i], fontsize=size)
        bb = probe.get_window_extent(renderer)
        probe.remove()
        w, h = bb.width + 2 * ppt, bb.height + 1 * ppt
        spot = _free_spot(px[i], w, h, boxes, lines, frame, ppt) or _free_spot(px[i], w, h, boxes, lines, frame, ppt, False)
        dx, dy = spot if spot is not None else (0.0, 4 * ppt + h / 2)  # nowhere free: just above the point
        leader = _leader(px[i], dx, dy, w, h, ppt)
        out.append(ax.annotate(labels[i], (x[i], y[i]), xytext=(dx / ppt, dy / ppt), textcoords="offset points",
                               fontsize=size, color=INK, ha="center", va="center", zorder=4,
                               arrowprops=dict(arrowstyle="-", color="#777", lw=0.6, shrinkA=1, shrinkB=3)
                               if len(leader) else None))
        cx, cy = px[i][0] + dx, px[i][1] + dy
        boxes.append([cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2])
        lines = np.vstack([lines, leader])
    return out


def scatter(x: Sequence[float], y: Sequence[float], labels: Sequence[str], text: tuple[str, str, str], path: Path,
            diagonal: bool = True, small: bool = False) -> Path:
    """:func:`scatter_figure` saved as a PNG at ``path``."""
    return save_png(scatter_figure(x, y, labels, text, diagonal, small), path, layout=False)


def save_png(fig, path: Path, layout: bool = True) -> Path:
    """Lay out (unless the figure is already: placed labels must not move), write atomically
    (temp file, rename) at 150 dpi (sharp at full width in report.html) and close a figure."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp.png")
    if layout:
        fig.tight_layout()
    fig.savefig(tmp, dpi=150)
    pyplot().close(fig)
    tmp.replace(path)
    return path


def topics_curve(curves: dict[str, list[dict]], path: Path, title: str, stable_tau: float = 0.9) -> Path:
    """Split-half Kendall τ vs topics per set (one line per label, shaded 2.5-97.5 % over draws)."""
    fig, ax = pyplot().subplots(figsize=(6.4, 4.2), dpi=110)
    for label, curve in curves.items():
        n = [p["topics"] for p in curve]
        line, = ax.plot(n, [p["tau_mean"] for p in curve], marker="o", ms=3, label=f"{label}: mean τ over draws")
        ax.fill_between(n, [p["tau_lo"] for p in curve], [p["tau_hi"] for p in curve], alpha=0.15,
                        color=line.get_color(), label=f"{label}: middle 95 % of draws (2.5–97.5 %)")
    ax.axhline(stable_tau, ls="--", lw=0.8, color="grey", label=f"τ = {stable_tau} (stable)")
    ax.set_xscale("log")
    ticks = sorted({p["topics"] for c in curves.values() for p in c})
    ax.set_xticks(ticks, [str(t) for t in ticks], fontsize=7)
    ax.minorticks_off()
    ax.set_xlabel("topics in each of two disjoint random sets")
    ax.set_ylabel("Kendall τ-b between the two rankings")
    ax.set_ylim(min(0.0, *(p["tau_lo"] for c in curves.values() for p in c)), 1.02)
    ax.set_title(title, fontsize=10)
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8, loc="lower right")
    return save_png(fig, path)
