"""Grid figures: a contour map per protocol and measure (the paper's Figure 5), a line plot for
one-parameter grids, and the protocols side by side. The best cell is starred and labelled; the
dashed line encloses the cells within 1 % of it."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from ..grid.spec import Axis
from .plots import save_png


def _safe(name: str) -> str:
    return name.replace("@", "_at_").replace("/", "_")


def _panel(fig, ax, axes: list[Axis], res: dict[str, Any], title: str) -> None:
    values = np.asarray(res["values"], dtype=float)
    best, thr = res["best"], res["near_best"]["threshold"]
    live = [a for a in axes if len(a.values) > 1]
    if len(live) == 2:
        x, y = np.asarray(axes[0].values), np.asarray(axes[1].values)
        z = values.reshape(len(x), len(y)).T
        cs = ax.contourf(x, y, z, levels=14, cmap="viridis")
        fig.colorbar(cs, ax=ax, fraction=0.046, pad=0.03)
        if z.min() < thr < z.max():
            ax.contour(x, y, z, levels=[thr], colors="white", linestyles="--", linewidths=1.2)
        gx, gy = np.meshgrid(x, y)
        ax.plot(gx.ravel(), gy.ravel(), ".", color="black", ms=2, alpha=0.35)
        bx, by = best["params"][axes[0].name], best["params"][axes[1].name]
        ax.plot([bx], [by], marker="*", color="#d62728", ms=16, mec="white", mew=1.2, ls="none", clip_on=False, zorder=5)
        # label the star on the side facing the middle of the map so it stays inside the axes
        dx = -1 if bx > (x.min() + x.max()) / 2 else 1
        dy = -1 if by > (y.min() + y.max()) / 2 else 1
        ax.annotate(f"{best['value']:.4f}", (bx, by), xytext=(9 * dx, 9 * dy), textcoords="offset points", color="white",
                    fontsize=9, fontweight="bold", ha="right" if dx < 0 else "left", va="top" if dy < 0 else "bottom")
        ax.set_xlabel(axes[0].name)
        ax.set_ylabel(axes[1].name)
    else:
        a = live[0] if live else axes[0]
        x = np.asarray(a.values)
        ax.plot(x, values.ravel(), "o-", color="#1f77b4", ms=4)
        ax.axhline(thr, ls="--", lw=0.9, color="grey", label="1 % below best")
        ax.plot([best["params"][a.name]], [best["value"]], marker="*", color="#d62728", ms=16, ls="none", clip_on=False,
                label=f"best {best['value']:.4f}")
        ax.set_xlabel(a.name)
        ax.legend(fontsize=8, loc="best")
        ax.grid(alpha=0.3)
    ax.set_title(title, fontsize=10)


def _title(name: str, m: str, res: dict[str, Any], p: dict[str, Any]) -> str:
    best = ", ".join(f"{k}={v:g}" for k, v in res["best"]["params"].items())
    return f"{name} ({p['topics']} topics, index {p['index']}): {m}\nbest {res['best']['value']:.4f} at {best}"


def grid_plots(result: dict[str, Any], axes: list[Axis], out: Path) -> list[Path]:
    """One PNG per protocol and measure, plus ``grid_compare.png`` when there are several protocols."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    if all(len(a.values) == 1 for a in axes):
        return []  # a single cell: nothing to draw
    system = result["system"]["name"]
    paths = []
    for name, p in result["protocols"].items():
        for m, res in p["measures"].items():
            fig, ax = plt.subplots(figsize=(6.2, 4.8), dpi=110)
            _panel(fig, ax, axes, res, f"{system}: " + _title(name, m, res, p))
            paths.append(save_png(fig, out / f"grid_{name}_{_safe(m)}.png"))
    protos = list(result["protocols"].items())
    if len(protos) > 1:
        fig, axs = plt.subplots(1, len(protos), figsize=(5.6 * len(protos), 4.6), dpi=110, squeeze=False)
        for ax, (name, p) in zip(axs[0], protos):
            m = next(iter(p["measures"]))
            _panel(fig, ax, axes, p["measures"][m], _title(name, m, p["measures"][m], p))
        fig.suptitle(f"{system}: the same grid under each protocol", fontsize=11)
        paths.append(save_png(fig, out / "grid_compare.png"))
    return paths
