"""``nteval history``: the release line of a history as a table, a picture and a page, with the
alert rules (:mod:`nteval.gate.alerts`) applied at every release."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..atomic import write_text
from ..effects import MMD
from ..errors import InputError
from ..report.document import html_page, inline_html, to_html
from ..report.trend import trend_plot
from .alerts import ALERT_ALPHA, WINDOW, failed_labels, fresh_drift, release_line, timeline, walk
from .history import blank_history, opened
from .outputs import claim_out, mark


def history_report(where: str | Path, task: str | None = None, pin_id: str | None = None, out: str | Path | None = None,
                   mmd: str | None = None, window: int = WINDOW) -> dict[str, Any]:
    """The release line of ``task`` on ``pin_id`` (defaults: the task and pin of the newest
    record), each release with its mean, 95 % interval, decision, the best release before it, and
    the alerts the rules raise there; with ``out``, history.png, history.html and history.json."""
    m = MMD.parse(mmd)
    if out is not None:
        claim_out(Path(out), "history")
    if blank_history(where):  # (opening it would write the schema into a file only read)
        raise InputError(where, "--history: no record yet (a gate or a check with --history adds them)")
    with opened(where, create=False) as h:
        every = h.records(scores=True)
        meta = h.meta()
        place = h.where
    if not every:
        raise InputError(place, "--history: no record yet (a gate or a check with --history adds them)")
    newest = every[-1]
    task = task or newest.task
    pin_id = pin_id or next((r.pin_id for r in reversed(every) if r.task == task), newest.pin_id)
    chosen = [r for r in every if r.task == task and r.pin_id == pin_id]
    if not chosen:
        pins = sorted({(r.task, r.pin_id) for r in every})
        raise InputError(place, f"--history: no record of {task} search on pin {pin_id} (it holds: "
                                + ", ".join(f"{t} on {p}" for t, p in pins) + ")")
    failed = failed_labels([r for r in every if r.pin_id == pin_id])
    fresh_line = release_line(chosen, "fresh", failed)
    fresh_line = [r for r in fresh_line if r.depth == fresh_line[-1].depth] if fresh_line else []
    points: list[dict[str, Any]] = []
    alerts: list[dict[str, Any]] = []
    for r, is_release, earlier, a in walk(timeline(chosen, "pinned"), failed, m, ALERT_ALPHA):
        fired = bool(a and a["fired"])
        if a is not None and fired:
            alerts.append(a)
        ref = max(earlier, key=lambda x: x.mean) if earlier else r
        margin = m.value * ref.mean if m.relative else m.value
        points.append({"record": r.id, "utc": r.utc, "label": r.label, "system": r.system, "role": r.role, "depth": r.depth,
                       "released": is_release, "engine": r.engine, "index_fingerprint": r.index_fingerprint[:12],
                       "index_documents": r.index_documents, "topics": len(r.scores), "mean": round(r.mean, 6),
                       "ci": list(r.ci or (r.mean, r.mean)), "decision": r.decision,
                       "best": round(ref.mean, 6), "best_label": ref.label,
                       "margin": round(margin, 6), "alert": a["text"] if a is not None and fired else None,
                       "note": a.get("note") if a is not None else None})
    fresh_points = [{"record": r.id, "label": r.label, "mean": round(r.mean, 6), "ci": list(r.ci or (r.mean, r.mean)),
                     "topics": len(r.scores), "decision": r.decision} for r in fresh_line]
    for k in range(WINDOW, len(fresh_line) + 1):
        d = fresh_drift(fresh_line[:k], m, ALERT_ALPHA, window)
        if d and d["fired"]:
            alerts.append(d)
    measure = chosen[0].measure
    report = {"history": place, "schema": meta.get("schema_version"), "task": task, "pin": pin_id, "measure": measure,
              "margin": m.describe().replace("the better system's", "the best earlier release's"), "alert_alpha": ALERT_ALPHA, "window": window, "releases": points,
              "fresh": fresh_points, "alerts": alerts,
              "latest_alerts": [a for a in alerts if _concerns_latest(a, points, fresh_points)]}
    if out is not None:
        write_files(Path(out), report)
    return report


def _concerns_latest(alert: dict[str, Any], points: list, fresh: list) -> bool:
    last = {p["record"] for p in points[-1:]} | {f["record"] for f in fresh[-1:]}
    return alert.get("record") in last or bool(set(alert.get("records", [])[-1:]) & last)


def history_lines(report: dict[str, Any]) -> list[str]:
    m = report["measure"]
    lines = [f"HISTORY ({report['task']} search, {m}; pin {report['pin']}) — {report['history']}",
             f"  {'#':>3}  {'release':<22} {'system':<24} {'topics':>6}  {m:>6} [95 % interval]    best so far  decision"]
    for i, p in enumerate(report["releases"], 1):
        lines.append(f"  {i:>3}  {p['label'][:22]:<22} {p['system'][:24]:<24} {p['topics']:>6,}  {p['mean']:.4f} "
                     f"[{p['ci'][0]:.4f}, {p['ci'][1]:.4f}]  {p['best']:.4f}       {p['decision'] or p['role']}"
                     + ("" if p.get("depth", 1000) == 1000 else f" (depth {p['depth']:,})")
                     + ("" if p["released"] else " (not released)") + ("  ALERT" if p["alert"] else ""))
    if report["fresh"]:
        lines.append("  fresh topics: " + ", ".join(f"{f['label']} {f['mean']:.4f} ({f['topics']:,})" for f in report["fresh"]))
    lines.append("  " + rules_text(report))
    for a in report["alerts"]:
        lines.append(f"  ALERT: {a['text']}")
    lines += [f"  note: {p['note']}" for p in report["releases"] if p.get("note")]
    if not report["alerts"]:
        lines.append("  no alert")
    return lines


def rules_text(report: dict[str, Any]) -> str:
    return (f"releases: the candidates that passed every gate of their label, every check, and the gates' baselines (a "
            f"baseline recorded again with the same scores is one release; a failed or undecided candidate is shown, not "
            f"compared with); rules: a release below the best earlier one by more than the margin ({report['margin']}), paired, at "
            f"{report['alert_alpha']:g} / the number of earlier releases (Bonferroni: the best is picked among them); "
            f"fresh-topic means drifting down over {report['window']} checks (weighted least-squares slope, one-sided "
            f"p < {report['alert_alpha']:g}, and a loss of at least the margin)")


def write_files(out: Path, report: dict[str, Any]) -> None:
    out.mkdir(parents=True, exist_ok=True)
    n_rel = sum(1 for r in report["releases"] if r["released"])
    title = (f"{report['task']} search ({report['measure']}), pin {report['pin']}: {_count(n_rel, 'release')}"
             + (f" ({_count(len(report['releases']) - n_rel, 'candidate')} that did not ship)"
                if len(report["releases"]) > n_rel else ""))
    trend_plot(report["releases"], report["fresh"], out / "history.png", title, report["measure"])

    write_text(out / "history.json", json.dumps(mark(report, "history"), indent=2, ensure_ascii=False) + "\n")
    write_text(out / "history.html", html_page(f"nteval history: {report['task']} search", _html(report, out / "history.png")))


def _count(n: int, word: str) -> str:
    return f"{n:,} {word}" + ("" if n == 1 else "s")


FIGURE = ("<figure><img src='data:image/png;base64,{png}' alt='each release&#39;s mean with its 95 % interval, the margin band under "
          "the best release so far, decisions marked'><figcaption>Each release&#39;s mean on the pinned topics with its "
          "95 % interval (betting bounds); the green band is the margin under the best release so far; markers are the "
          "gate&#39;s decisions, red rings the alerts; crosses, fresh topics.</figcaption></figure>")


def _html(report: dict[str, Any], png: Path) -> str:
    """The page: the trend embedded (the page is one file, a CI artifact), alerts, releases, rules."""
    import base64

    m = report["measure"]
    rows = [[p["label"], p["system"], f"{p['topics']:,}", f"{p['mean']:.4f} [{p['ci'][0]:.4f}, {p['ci'][1]:.4f}]",
             f"{p['best']:.4f} ({p['best_label']})",
             (p["decision"] or p["role"]) + ("" if p.get("depth", 1000) == 1000 else f" (depth {p['depth']:,})"),
             "ALERT" if p["alert"] else "",
             p["utc"][:16].replace("T", " "), p["engine"] or ""] for p in report["releases"]]
    blocks = [("table", ["release", "system", "topics", f"{m} [95 % interval]", "best so far", "decision", "alert",
                         "recorded (UTC)", "engine"], rows)]
    alerts: list[tuple[Any, ...]] = [("ul", [[a["text"]] for a in report["alerts"]])] if report["alerts"] else \
        [("p", "No alert.")]
    notes = [[f"note: {p['note']}"] for p in report["releases"] if p.get("note")]
    if notes:
        alerts.append(("ul", notes))
    body = (f"<h1>Release history: {inline_html(report['task'])} search</h1>"
            f"<p class='meta'>{inline_html(report['history'])} · pin {inline_html(report['pin'])} · measure {m} · margin "
            f"{inline_html(report['margin'])}</p>"
            + FIGURE.format(png=base64.b64encode(png.read_bytes()).decode())
            + "<h2>Alerts</h2>" + to_html(alerts) + "<h2>Releases</h2>" + to_html(blocks)
            + "<h2>Rules</h2>" + to_html([("p", rules_text(report)[0].upper() + rules_text(report)[1:] + ".")]))
    return body
