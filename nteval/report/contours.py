"""Grid figures: a contour map per protocol and measure (the paper's Figure 5), a line plot for
one-parameter grids, and the protocols side by side. The best cell is starred and labelled; the
dashed line encloses the cells within 1 % of it; ringed dots mark the cells a paired test cannot
tell apart from the best; a legend says so, the colorbar (or y axis) names the measure and
protocol.

Colours never turn noise into a landscape: a map whose cells span less than the minimum
meaningful difference (5 % of the best score, :data:`nteval.effects.DEFAULT_MMD`) is coloured
over that difference below the best (nearly one colour), and says so. Panels of the same measure
side by side (an NT protocol and the human judgments, both AP) share one colour scale."""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..effects import MMD
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


def mmd_of(best: float) -> float:
    """The minimum meaningful difference below a best score ``best`` (the default MMD)."""
    m = MMD.parse(None)
    return abs(best) * m.value if m.relative else m.value


def color_range(values: np.ndarray, best: float) -> tuple[float, float, bool]:
    """(vmin, vmax, widened): the cells' own range, or — when they span less than the minimum
    meaningful difference — the MMD below the best, so that differences nobody would notice look
    like one colour instead of a landscape."""
    lo, hi = float(np.nanmin(values)), float(np.nanmax(values))
    mmd = mmd_of(best)
    if hi - lo < mmd and mmd > 0:
        return hi - mmd, hi, True
    return lo, hi, False


def _tied(res: dict[str, Any]) -> list[dict[str, float]]:
    return list((res.get("indistinguishable_from_best") or {}).get("params") or [])


def _legend_handles(res: dict[str, Any], drawn: bool, all_near: bool) -> list:
    """Legend entries for the star, the dashed 1 % line and the ringed cells the paired test cannot
    tell apart from the best (explained, not left to guess)."""
    from matplotlib.lines import Line2D

    style = _near_style()
    pct = f"{100 * res['near_best']['tolerance']:g} %"
    handles = [Line2D([], [], marker="*", color="#d62728", mec="white", ms=13, ls="none", label=f"best {res['best']['value']:.4f}")]
    if drawn:
        handles.append(Line2D([], [], color=style["colors"], ls="--", lw=style["linewidths"], path_effects=style["path_effects"],
                              label=f"within {pct} of best (≥ {res['near_best']['threshold']:.4f})"))
    elif all_near:
        handles.append(Line2D([], [], ls="none", label=f"every cell within {pct} of best"))
    tied = res.get("indistinguishable_from_best")
    if tied:
        handles.append(Line2D([], [], marker="o", mfc="none", mec="#d62728", mew=1.6, ms=9, ls="none",
                              label=f"cannot be told apart from the best: {tied['cells']} cells (paired test, Holm)"))
    return handles


def _map(fig, ax, axes: list[Axis], values: np.ndarray, res: dict[str, Any], label: str,
         scale: tuple[float, float, bool] | None = None) -> None:
    """A two-parameter grid as filled contours, its colorbar named after the measure. ``scale``:
    (vmin, vmax, widened) shared with other panels (default: :func:`color_range` of these cells)."""
    best, thr = res["best"], res["near_best"]["threshold"]
    x, y = np.asarray(axes[0].values), np.asarray(axes[1].values)
    z = values.reshape(len(x), len(y)).T
    vmin, vmax, widened = scale or color_range(z, best["value"])
    levels = np.linspace(vmin, vmax, 15)
    cs = ax.contourf(x, y, np.clip(z, vmin, vmax), levels=levels, cmap="viridis", vmin=vmin, vmax=vmax)
    bar = fig.colorbar(cs, ax=ax, fraction=0.046, pad=0.03)
    bar.set_label(label)
    decimals = max(2, min(6, int(np.ceil(-np.log10(max(vmax - vmin, 1e-9)))) + 2))
    bar.ax.yaxis.set_major_formatter(f"{{x:.{decimals}f}}")
    if widened:
        span = float(z.max() - z.min())
        ax.text(0.5, 1.0, f"the map spans {span:.4f} < minimum meaningful difference {mmd_of(best['value']):.4f} "
                          "(5 % of best):\ncolours span the MMD, so noise does not look like a landscape",
                transform=ax.transAxes, ha="center", va="bottom", fontsize=8, color=INK,
                bbox=dict(boxstyle="round,pad=0.2", fc="white", ec="none", alpha=0.85))
    drawn = bool(z.min() < thr < z.max())
    if drawn:
        ax.contour(x, y, z, levels=[thr], **_near_style())
    gx, gy = np.meshgrid(x, y)
    ax.plot(gx.ravel(), gy.ravel(), ".", color="black", ms=2, alpha=0.35)
    tied = _tied(res)
    if tied:
        ax.plot([p[axes[0].name] for p in tied], [p[axes[1].name] for p in tied], "o", mfc="none", mec="#d62728",
                mew=1.6, ms=9, zorder=4, clip_on=False)
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
    ax.legend(handles=handles, fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.13), ncol=1, frameon=False)


def _line(ax, axes: list[Axis], values: np.ndarray, res: dict[str, Any], label: str) -> None:
    """A one-parameter grid as a line, the measure on the y axis."""
    best, thr = res["best"], res["near_best"]["threshold"]
    live = [a for a in axes if len(a.values) > 1]
    a = live[0] if live else axes[0]
    ax.plot(np.asarray(a.values), values.ravel(), "o-", color="#1f77b4", ms=4)
    tied = _tied(res)
    if tied:
        xs = [p[a.name] for p in tied]
        ys = [v for p0, v in zip(_cell_params(axes), values.ravel()) if p0 in tied]
        ax.plot(xs, ys, "o", mfc="none", mec="#d62728", mew=1.4, ms=9,
                label=f"cannot be told apart from the best: {len(tied)} (paired test, Holm)")
    lo, hi, widened = color_range(values, best["value"])
    if widened:  # the y axis spans at least the minimum meaningful difference, and says so
        pad = 0.05 * (hi - lo)
        ax.set_ylim(lo - pad, hi + pad)
        ax.text(0.5, 1.0, f"the cells span {float(values.max() - values.min()):.4f} < minimum meaningful difference "
                          f"{mmd_of(best['value']):.4f}:\nthe axis spans the MMD", transform=ax.transAxes,
                ha="center", va="bottom", fontsize=8, color=INK,
                bbox=dict(boxstyle="round,pad=0.2", fc="white", ec="none", alpha=0.85))
    ax.axhline(thr, ls="--", lw=0.9, color="#444", label=f"within {100 * res['near_best']['tolerance']:g} % of best")
    ax.plot([best["params"][a.name]], [best["value"]], marker="*", color="#d62728", ms=16, ls="none", clip_on=False,
            label=f"best {best['value']:.4f}")
    for (name, v), color in zip(sorted((res.get("references") or {}).items()), _REF_COLORS):
        ax.axhline(v, ls="-", lw=1.3, color=color, label=f"{name} {v:.4f}")
    ax.set_xlabel(a.name)
    ax.set_ylabel(label)
    ax.legend(fontsize=8, loc="best")
    ax.grid(alpha=0.3)


def _cell_params(axes: list[Axis]) -> list[dict[str, float]]:
    """The cells' parameters in the grid's row-major order (its ``values`` order)."""
    import itertools

    return [dict(zip([a.name for a in axes], combo)) for combo in itertools.product(*[a.values for a in axes])]


def _panel(fig, ax, axes: list[Axis], res: dict[str, Any], title: str, label: str,
           scale: tuple[float, float, bool] | None = None) -> None:
    """``label``: the measure and protocol, for the colorbar or the y axis."""
    values = np.asarray(res["values"], dtype=float)
    if len([a for a in axes if len(a.values) > 1]) == 2:
        _map(fig, ax, axes, values, res, label, scale)
    else:
        _line(ax, axes, values, res, label)
    ax.set_title(title, fontsize=10, color=INK, pad=24)


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
    # panels of the same measure (an NT protocol and the human judgments, both AP) share a colour scale
    scales: dict[str, tuple[float, float, bool]] = {}
    for _name, p in protos:
        m = next(iter(p["measures"]))
        r = p["measures"][m]
        lo, hi, widened = color_range(np.asarray(r["values"], dtype=float), r["best"]["value"])
        if m in scales:
            lo, hi = min(lo, scales[m][0]), max(hi, scales[m][1])
            widened = widened and scales[m][2]
        scales[m] = (lo, hi, widened)
    for ax, (name, p) in zip(axs[0], protos):
        m = next(iter(p["measures"]))
        shared = sum(next(iter(q["measures"])) == m for _, q in protos) > 1
        _panel(fig, ax, axes, p["measures"][m], _title(name, m, p["measures"][m], p),
               f"{m} ({name})" + (" — one scale with the other " + m + " panel" if shared else ""),
               scales[m] if shared else None)
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
