"""Grid figures: a contour map per protocol and measure (the paper's Figure 5), a line plot for
one-parameter grids, and the protocols side by side. The best cell is starred and labelled; the
dashed line encloses the cells within 1 % of it; a legend says so, the colorbar (or y axis) names
the measure and protocol."""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .plots import INK, pyplot, save_png

if TYPE_CHECKING:  # (a grid axis: name and values)
    from ..grid.spec import Axis


def _safe(name: str) -> str:
    return name.replace("@", "_at_").replace("/", "_")


#: The near-best contour: black dashes on a white halo, visible on dark and light colours alike.
def _near_style():
    from matplotlib import patheffects

    return {"colors": "black", "linestyles": "--", "linewidths": 1.3,
            "path_effects": [patheffects.withStroke(linewidth=3.2, foreground="white")]}


#: Colours of reference systems' lines (external runs, dense models scored beside a grid).
_REF_COLORS = ("#ff7f0e", "#e377c2", "#17becf", "#bcbd22", "#8c564b", "#7f7f7f") * 4


def _legend_handles(res: dict[str, Any], drawn: bool, all_near: bool) -> list:
    """Legend entries for the star and the dashed 1 % line (explained, not left to guess)."""
    from matplotlib.lines import Line2D

    style = _near_style()
    pct = f"{100 * res['near_best']['tolerance']:g} %"
    handles = [Line2D([], [], marker="*", color="#d62728", mec="white", ms=13, ls="none", label=f"best {res['best']['value']:.4f}")]
    if drawn:
        handles.append(Line2D([], [], color=style["colors"], ls="--", lw=style["linewidths"], path_effects=style["path_effects"],
                              label=f"within {pct} of best (≥ {res['near_best']['threshold']:.4f})"))
    elif all_near:
        handles.append(Line2D([], [], ls="none", label=f"every cell within {pct} of best"))
    return handles


def _map(fig, ax, axes: list[Axis], values: np.ndarray, res: dict[str, Any], label: str) -> None:
    """A two-parameter grid as filled contours, its colorbar named after the measure."""
    best, thr = res["best"], res["near_best"]["threshold"]
    x, y = np.asarray(axes[0].values), np.asarray(axes[1].values)
    z = values.reshape(len(x), len(y)).T
    cs = ax.contourf(x, y, z, levels=14, cmap="viridis")
    fig.colorbar(cs, ax=ax, fraction=0.046, pad=0.03).set_label(label)
    drawn = bool(z.min() < thr < z.max())
    if drawn:
        ax.contour(x, y, z, levels=[thr], **_near_style())
    gx, gy = np.meshgrid(x, y)
    ax.plot(gx.ravel(), gy.ravel(), ".", color="black", ms=2, alpha=0.35)
    bx, by = best["params"][axes[0].name], best["params"][axes[1].name]
    ax.plot([bx], [by], marker="*", color="#d62728", ms=16, mec="white", mew=1.2, ls="none", clip_on=False, zorder=5)
    # label the star on the side facing the middle of the map so it stays inside the axes
    dx = -1 if bx > (x.min() + x.max()) / 2 else 1
    dy = -1 if by > (y.min() + y.max()) / 2 else 1
    ax.annotate(f"{best['value']:.4f}", (bx, by), xytext=(10 * dx, 10 * dy), textcoords="offset points", color=INK,
                fontsize=9, fontweight="bold", ha="right" if dx < 0 else "left", va="top" if dy < 0 else "bottom",
                bbox=dict(boxstyle="round,pad=0.25", fc="white", ec="none", alpha=0.85), zorder=6)
    ax.set_xlabel(axes[0].name)
    ax.set_ylabel(axes[1].name)
    handles = _legend_handles(res, drawn, bool(z.min() >= thr))
    from matplotlib.lines import Line2D

    for (name, v), color in zip(sorted((res.get("references") or {}).items()), _REF_COLORS):
        # a reference system's score as an iso-line: cells beyond it beat that system
        if z.min() < v < z.max():
            ax.contour(x, y, z, levels=[v], colors=color, linewidths=1.6, linestyles="-")
            handles.append(Line2D([], [], color=color, lw=1.6, label=f"{name} {v:.4f}"))
        else:
            side = "every cell above" if v <= z.min() else "no cell reaches"
            handles.append(Line2D([], [], ls="none", label=f"{name} {v:.4f} ({side})"))
    ax.legend(handles=handles, fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=2, frameon=False)


def _line(ax, axes: list[Axis], values: np.ndarray, res: dict[str, Any], label: str) -> None:
    """A one-parameter grid as a line, the measure on the y axis."""
    best, thr = res["best"], res["near_best"]["threshold"]
    live = [a for a in axes if len(a.values) > 1]
    a = live[0] if live else axes[0]
    ax.plot(np.asarray(a.values), values.ravel(), "o-", color="#1f77b4", ms=4)
    ax.axhline(thr, ls="--", lw=0.9, color="#444", label=f"within {100 * res['near_best']['tolerance']:g} % of best")
    ax.plot([best["params"][a.name]], [best["value"]], marker="*", color="#d62728", ms=16, ls="none", clip_on=False,
            label=f"best {best['value']:.4f}")
    for (name, v), color in zip(sorted((res.get("references") or {}).items()), _REF_COLORS):
        ax.axhline(v, ls="-", lw=1.3, color=color, label=f"{name} {v:.4f}")
    ax.set_xlabel(a.name)
    ax.set_ylabel(label)
    ax.legend(fontsize=8, loc="best")
    ax.grid(alpha=0.3)


def _panel(fig, ax, axes: list[Axis], res: dict[str, Any], title: str, label: str) -> None:
    """``label``: the measure and protocol, for the colorbar or the y axis."""
    values = np.asarray(res["values"], dtype=float)
    if len([a for a in axes if len(a.values) > 1]) == 2:
        _map(fig, ax, axes, values, res, label)
    else:
        _line(ax, axes, values, res, label)
    ax.set_title(title, fontsize=10, color=INK)


def _title(name: str, m: str, res: dict[str, Any], p: dict[str, Any]) -> str:
    best = ", ".join(f"{k}={v:g}" for k, v in res["best"]["params"].items())
    return f"{name} ({p['topics']} topics, index {p['index']}): {m}\nbest {res['best']['value']:.4f} at {best}"


def measure_figure(result: dict[str, Any], axes: list[Axis], protocol: str, measure: str):
    """One protocol and measure over the grid (a contour map, or a line for one parameter)."""
    p = result["protocols"][protocol]
    res = p["measures"][measure]
    fig, ax = pyplot().subplots(figsize=(6.2, 5.2), dpi=110)
    _panel(fig, ax, axes, res, f"{result['system']['name']}: " + _title(protocol, measure, res, p), f"{measure} ({protocol})")
    return fig


def compare_figure(result: dict[str, Any], axes: list[Axis]):
    """The protocols side by side, each with its first measure."""
    protos = list(result["protocols"].items())
    fig, axs = pyplot().subplots(1, len(protos), figsize=(5.6 * len(protos), 5.0), dpi=110, squeeze=False)
    for ax, (name, p) in zip(axs[0], protos):
        m = next(iter(p["measures"]))
        _panel(fig, ax, axes, p["measures"][m], _title(name, m, p["measures"][m], p), f"{m} ({name})")
    fig.suptitle(f"{result['system']['name']}: the same grid under each protocol", fontsize=11)
    return fig


def grid_plots(result: dict[str, Any], axes: list[Axis], out: Path) -> list[Path]:
    """One PNG per protocol and measure, plus ``grid_compare.png`` when there are several protocols."""
    if all(len(a.values) == 1 for a in axes):
        return []  # a single cell: nothing to draw
    paths = [save_png(measure_figure(result, axes, name, m), out / f"grid_{name}_{_safe(m)}.png")
             for name, p in result["protocols"].items() for m in p["measures"]]
    if len(result["protocols"]) > 1:
        paths.append(save_png(compare_figure(result, axes), out / "grid_compare.png"))
    return paths
