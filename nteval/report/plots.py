"""Matplotlib figures written straight to PNG (Agg backend: no display needed)."""
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path


def scatter(x: Sequence[float], y: Sequence[float], labels: Sequence[str], xlabel: str, ylabel: str,
            title: str, path: Path, diagonal: bool = True) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 5), dpi=110)
    ax.scatter(x, y, s=28, color="#1f77b4")
    for xi, yi, lab in zip(x, y, labels):
        ax.annotate(lab, (xi, yi), fontsize=6, xytext=(3, 2), textcoords="offset points", alpha=0.8)
    if diagonal:  # same measure on both axes: y = x is the reference
        lo = min(min(x), min(y))
        hi = max(max(x), max(y))
        ax.plot([lo, hi], [lo, hi], lw=0.8, ls="--", color="grey")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    ax.grid(alpha=0.3)
    return save_png(fig, path)


def save_png(fig, path: Path) -> Path:
    """Lay out, write atomically (temp file, rename) and close a figure."""
    import matplotlib.pyplot as plt

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp.png")
    fig.tight_layout()
    fig.savefig(tmp)
    plt.close(fig)
    tmp.replace(path)
    return path
