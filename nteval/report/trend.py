"""The release history as a picture: each release's mean with its 95 % interval, the margin band
under the best release so far, the gate's decisions marked, alerts ringed; fresh topics beside
pinned ones. Plain data in (:func:`nteval.gate.trend.history_report` makes it), a PNG out."""
from __future__ import annotations

from pathlib import Path
from typing import Any

#: marker and colour of each decision (None: a baseline's or a check's record)
STYLE = {"better": ("^", "#1a9850", "better"), "non-inferior": ("o", "#2166ac", "non-inferior"),
         "worse": ("v", "#d73027", "worse"), "inconclusive": ("D", "#f46d43", "inconclusive"),
         None: ("s", "#636363", "baseline / check")}


def trend_plot(points: list[dict[str, Any]], fresh: list[dict[str, Any]], path: Path, title: str,
               measure: str) -> None:
    """``points``: the pinned timeline, oldest first, each {label, mean, ci, decision, released,
    best, margin, alert} (the grey line joins the releases; a candidate not released is hollow); ``fresh``: the same for fresh topics (may be empty). Writes ``path`` (PNG)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    n = len(points)
    width = min(18.0, max(9.5, 0.42 * n + 5))  # (the legend sits to the right of the axes)
    fig, ax = plt.subplots(figsize=(width, 5.2), dpi=130)
    xs = list(range(n))
    if n:
        best = [p["best"] for p in points]
        low = [p["best"] - p["margin"] for p in points]
        ax.fill_between(xs, low, best, step="mid", color="#b2df8a", alpha=0.45, linewidth=0,
                        label="margin under the best release so far")
        ax.step(xs, best, where="mid", color="#33a02c", linewidth=1.2)
        live = [(x, p["mean"]) for x, p in zip(xs, points) if p.get("released", True)]
        ax.plot([x for x, _ in live], [y for _, y in live], color="#9e9e9e", linewidth=0.8, zorder=1)
        for x, p in zip(xs, points):
            marker, colour, _ = STYLE.get(p["decision"], STYLE[None])
            ax.errorbar([x], [p["mean"]], yerr=[[p["mean"] - p["ci"][0]], [p["ci"][1] - p["mean"]]], fmt=marker,
                        color=colour, ecolor=colour, elinewidth=1.2, capsize=3, markersize=7, zorder=3,
                        markerfacecolor=colour if p.get("released", True) else "white", alpha=1 if p.get("released", True)
                        else 0.75)
            if p.get("alert"):
                ax.plot([x], [p["mean"]], marker="o", markersize=17, markerfacecolor="none", markeredgecolor="#d73027",
                        markeredgewidth=2, zorder=4)
    if fresh:
        fx = [next((i for i, p in enumerate(points) if p["label"] == f["label"]), None) for f in fresh]
        pts = [(x + 0.18, f) for x, f in zip(fx, fresh) if x is not None]
        if pts:
            ax.errorbar([x for x, _ in pts], [f["mean"] for _, f in pts],
                        yerr=[[f["mean"] - f["ci"][0] for _, f in pts], [f["ci"][1] - f["mean"] for _, f in pts]],
                        fmt="x", color="#6a3d9a", elinewidth=1, capsize=2, markersize=6, linestyle="--", linewidth=0.8,
                        label="fresh topics (documents added since the pin)", zorder=2)
    from matplotlib.lines import Line2D

    handles, labels = ax.get_legend_handles_labels()
    seen = {p["decision"] for p in points}
    for key, (marker, colour, text) in STYLE.items():
        if key in seen:
            handles.append(Line2D([], [], marker=marker, color=colour, linestyle="none", markersize=7))
            labels.append(text)
    if any(not p.get("released", True) for p in points):
        handles.append(Line2D([], [], marker="o", color="#636363", markerfacecolor="white", linestyle="none",
                              markersize=7))
        labels.append("not released (hollow)")
    if any(p.get("alert") for p in points):
        handles.append(Line2D([], [], marker="o", markersize=12, markerfacecolor="none", markeredgecolor="#d73027",
                              markeredgewidth=2, linestyle="none"))
        labels.append("alert")
    ax.legend(handles, labels, fontsize=8.5, loc="upper left", bbox_to_anchor=(1.01, 1.0), framealpha=0.92,
              borderaxespad=0)
    ax.set_xticks(xs)
    ax.set_xticklabels([p["label"] for p in points], rotation=35 if n > 6 else 0, ha="right" if n > 6 else "center",
                       fontsize=9)
    ax.set_xlim(-0.6, max(n - 0.4, 0.6))
    ax.set_ylabel(f"mean {measure} (95 % interval)", fontsize=10)
    ax.set_xlabel("release (in the order they were recorded)", fontsize=10)
    ax.set_title(title, fontsize=11)
    ax.grid(axis="y", color="#e0e0e0", linewidth=0.6)
    fig.tight_layout()
    tmp = path.with_name(f".{path.name}.tmp.png")
    fig.savefig(tmp)
    plt.close(fig)
    tmp.replace(path)
