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


def topics_curve(curves: dict[str, list[dict]], path: Path, title: str, stable_tau: float = 0.9) -> Path:
    """Split-half Kendall τ vs topics per set (one line per label, shaded 2.5-97.5 % over draws)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.2), dpi=110)
    for label, curve in curves.items():
        n = [p["topics"] for p in curve]
        ax.plot(n, [p["tau_mean"] for p in curve], marker="o", ms=3, label=label)
        ax.fill_between(n, [p["tau_lo"] for p in curve], [p["tau_hi"] for p in curve], alpha=0.15)
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
