"""Plain-text summaries printed by the CLI."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from ..answer import TASKS, bias_lines, disagreement_lines
from ..evidence import coverage_lines, evidence_lines
from ..index import documents_policy
from ..protocols.highrecall import highrecall_summary  # noqa: F401  (its home before 0.2)
from ..verdict import verdict_text
from .document import to_latex


def manifest_summary(manifest: dict[str, Any], where: str | Path) -> str:
    c = manifest["counts"]
    skipped = ", ".join(f"{k} {v:,}" for k, v in c["skipped"].items() if v) or "none"
    lines = [
        f"index {where}  (fingerprint {manifest['fingerprint'][:12]})",
        f"  sources      {len(manifest['sources'])} file(s)",
    ]
    medline = any(s["format"] == "medline" for s in manifest["sources"])  # (deletions and MeSH: PubMed's alone)
    for s in manifest["sources"]:
        sc = s["counts"]
        lines.append(f"    {s['path']}  [{s['format']}]  seen {sc['seen']:,}  usable {sc['documents']:,}"
                     + (f"  deleted-listed {sc['deleted_pmids']:,}" if s["format"] == "medline" else ""))
    last = (manifest.get("updates") or [{}])[-1].get("records")
    if last:  # (new user, turn 7, F5: the summary's counts were cumulative, the update's own nowhere)
        lines.append(f"  this update  read {last['read']:,} records: {last['added']:,} new, {last['revised']:,} revised, "
                     f"{last['deleted']:,} deleted (the dense vectors of the others are carried: the next encoding "
                     "encodes only the new and revised ones)")
    lines += [
        f"  records      seen {c['seen']:,}  kept {c['kept']:,}  replaced {c['replaced']:,}",
        *([f"  deletions    {c['deleted_pmids']:,} PMIDs listed, {c['deleted_removed']:,} removed"] if medline else []),
        f"  skipped      {skipped}",
        index_counts(manifest),
        store_summary(manifest.get("store", {}), medline),
        "  versions     " + ", ".join(f"{k} {v}" for k, v in manifest["versions"].items()),
    ]
    return "\n".join(lines)


def index_counts(manifest: dict[str, Any]) -> str:
    """What each Lucene index holds and how many documents can be topics (title and abstract)."""
    n_all, n_nt = manifest["indexes"]["all"]["documents"], manifest["indexes"]["nt"]["documents"]
    st = manifest.get("store", {})
    line = (f"  indexes      all/ (title+abstract) {n_all:,} documents, nt/ (abstract only) {n_nt:,}"
            f"  [--documents {documents_policy(manifest)}]")
    if "with_title_and_abstract" in st:
        line += (f"\n  documents    {st['without_title']:,} without a title, {st['without_abstract']:,} without an abstract;"
                 f" {st['with_title_and_abstract']:,} with both (by default, topics are drawn from those with 3+ abstract"
                 " sentences and 3+ title words)")
    return line


def store_summary(store: dict[str, Any], medline: bool = True) -> str:
    """The store line: its format, and what the MeSH and cross-lingual protocols can draw on (for
    PubMed sources: other formats carry neither)."""
    if store.get("format", 1) < 2:
        return "  store        format 1: no MeSH or vernacular-title data (rebuild with nteval index --force for them)"
    if not medline and not store.get("documents_with_mesh") and not store.get("vernacular_titles"):
        return f"  store        format {store['format']}"
    vern = store.get("vernacular_titles", {})
    top = ", ".join(f"{lang} {n:,}" for lang, n in list(vern.items())[:6])
    return (f"  store        format {store['format']}: MeSH on {store.get('documents_with_mesh', 0):,} documents,"
            f" vernacular titles {sum(vern.values()):,}" + (f" ({top}{', ...' if len(vern) > 6 else ''})" if vern else ""))


def _sort_key(results: dict[str, Any], sort_by: str | None) -> str:
    """``sort_by``, else RR if measured, else the first measure."""
    measures = results["measures"]
    return sort_by or ("RR" if "RR" in measures else measures[0])


def results_latex(results: dict[str, Any], sort_by: str | None = None) -> str:
    """The results table as a booktabs LaTeX document (results.tex), for a paper."""
    key = _sort_key(results, sort_by)
    systems = sorted(results["systems"].items(), key=lambda kv: -kv[1][key])
    caption = f"{results['protocol']} protocol: {results['n_topics']:,} topics, seed {results['seed']}, sorted by {key}"
    rows = [[name] + [f"{vals[m]:.4f}" for m in results["measures"]] for name, vals in systems]
    return to_latex([("h2", caption), ("table", ["system"] + results["measures"], rows)], caption)


def results_table(results: dict[str, Any], sort_by: str | None = None) -> str:
    """Systems sorted by ``sort_by`` (default: RR if measured, else the first measure)."""
    measures = results["measures"]
    key = _sort_key(results, sort_by)
    systems = sorted(results["systems"].items(), key=lambda kv: -kv[1][key])
    configs = results.get("system_configs", {})
    width = max([len(n) for n in results["systems"]] + [6])
    lines = [f"{results['protocol']} protocol: {results['n_topics']:,} topics, seed {results['seed']}, sorted by {key}",
             f"{'system':<{width}}  " + "  ".join(f"{m:>8}" for m in measures) + "  empty  algorithm"]
    for name, vals in systems:
        algo = configs.get(name, {}).get("algorithm", "")
        lines.append(f"{name:<{width}}  " + "  ".join(f"{vals[m]:>8.4f}" for m in measures)
                     + f"  {results.get('empty_queries', {}).get(name, 0):>5}  {algo}")
    return "\n".join(lines + system_note_lines(results))


def system_note_lines(results: dict[str, Any]) -> list[str]:
    """What dense and external systems reported, under the table: an approximate index's recall
    against exact search, topics an external system left unanswered, hits outside the collection."""
    out = []
    for name, n in sorted((results.get("system_notes") or {}).items()):
        if n.get("recall_vs_flat") is not None:
            out.append(f"  {name}: {n['index']} index, recall of the top {results.get('depth', 1000)} vs exact (flat) "
                       f"search {n['recall_vs_flat']:.3f}")
        if n.get("topics_without_results"):
            out.append(f"  {name}: no results for {n['topics_without_results']:,} topics (scored 0, as trec_eval -c)")
        if n.get("foreign_hits"):
            out.append(f"  {name}: {n['foreign_hits']:,} hits on {n['foreign_documents']:,} documents outside the "
                       "collection (scored non-relevant)")
    return (["notes:"] + out) if out else []


def sref_summary(res: dict[str, Any], out: Any) -> str:
    lines = [f"S_ref sensitivity over {len(res['systems'])} systems; topics kept: "
             + ", ".join(f"{k} {v}" for k, v in res["n_topics"].items())]
    for pair, stats in res["correlations"].items():
        lines.append(f"{pair}:")
        for m, c in stats.items():
            vals = "  ".join(f"{name} {c[name]['value']:.3f}" if c[name]["value"] is not None else f"{name} n/a"
                             for name in ("pearson", "spearman", "kendall"))
            lines.append(f"  {m:<8} {vals}")
    lines.append(f"(scatter plots and sref_sensitivity.json in {out})")
    return "\n".join(lines)


def _fmt_range(lo: float, hi: float) -> str:
    return f"{lo:g}" if lo == hi else f"{lo:g}–{hi:g}"


def _fmt_values(name: str, near: list[float], axis: list[float]) -> str:
    """An axis's values in the near-best region: a range when they are contiguous on the axis,
    else the values themselves (a range would claim cells that are not near the best)."""
    idx = [axis.index(v) for v in near]
    if max(idx) - min(idx) + 1 == len(idx):
        return f"{name} {_fmt_range(near[0], near[-1])}"
    return f"{name} ∈ {{{', '.join(f'{v:g}' for v in near)}}}"


def _how_computed(t: dict[str, Any]) -> list[str]:
    """How a grid's cells were computed, as the timing line says it."""
    out = []
    if t.get("one_pass"):
        threads = t.get("java_threads")
        out.append(f" in {t['one_pass']} pass{'es' if t['one_pass'] != 1 else ''} over the postings"
                   + (f" ({threads} Java search threads)" if threads else "") + " (--per-cell: one run per cell)")
    if t.get("workers"):
        out.append(f" {'+ ' if out else 'with '}{t['workers']} worker process{'es' if t['workers'] != 1 else ''} "
                   "for per-cell runs" + (" on the Dask cluster" if t.get("scheduler") else ""))
    return out


def grid_summary(res: dict[str, Any]) -> str:
    """Best cell and the region within 1 % of it, per protocol and measure; then where the
    protocols' best cells sit on each axis (the paper: focused prefers a higher BM25 b)."""
    axes = res["axes"]
    c, t = res["cells"], res["timing"]
    shape = " × ".join(f"{n} ({len(v)} values {_fmt_range(min(v), max(v))})" for n, v in axes.items())
    lines = ([res["answer"]["text"], ""] if res.get("answer") else []) + [f"grid: {res['system']['name']} over {shape}",
             f"cells: {c['total']} ({c['per_protocol']} per protocol) — {c['computed']} computed, {c['reused']} reused"
             + (f"; {t['compute_seconds']:.1f} s" + "".join(_how_computed(t)) if c["computed"] else "")
             + (f", {t['cells_per_minute']:.1f} cells/min" if t.get("cells_per_minute") else "")]
    for name, p in res["protocols"].items():
        lines.append(f"{name} (index {p['index']}, {p['topics']} topics)")
        for m, r in p["measures"].items():
            best = ", ".join(f"{k}={v:g}" for k, v in r["best"]["params"].items())
            nb = r["near_best"]
            region = ", ".join(_fmt_values(k, nb["values"][k], axes[k]) for k in nb["ranges"])
            edge = r["best"].get("on_edge")
            lines.append(f"  {m:<8} best {r['best']['value']:.4f} at {best}; within 1 %: {nb['cells']} cell{'s' if nb['cells'] != 1 else ''} ({region})"
                         + (f" — best on the edge of {', '.join(edge)}: widen the grid there" if edge else ""))
            for ref, v in sorted((r.get("references") or {}).items(), key=lambda kv: -kv[1]):
                better = sum(1 for x in r["values"] if x > v)
                lines.append(f"  {'':<8} reference {ref} {v:.4f}: {better} of {len(r['values'])} cells score higher")
            tied = r.get("indistinguishable_from_best")
            if tied:
                lines.append(f"  {'':<8} cannot be told apart from the best: {tied['cells']} cell{'s' if tied['cells'] != 1 else ''} "
                             f"(paired randomization test vs the best, {tied['correction'].split(' ')[0]}, alpha {tied['alpha']})")
    if len(res["protocols"]) > 1:
        for axis in axes:
            where = [f"{name} {next(iter(p['measures'].values()))['best']['params'][axis]:g}"
                     for name, p in res["protocols"].items()]
            lines.append(f"best {axis} by protocol (first measure): " + ", ".join(where))
    if res.get("disagreement"):
        lines.append("where the protocols disagree: " + res["disagreement"]["text"])
    for name, per in res.get("human_agreement", {}).items():
        at = ", ".join(f"{k}={v:g}" for k, v in per["nt_best"].items())
        for hm, a in per.items():
            if isinstance(a, dict) and "human_at_nt_best" in a:
                rho = "n/a" if a["spearman"] is None else f"{a['spearman']:.3f}"
                lines.append(f"human {hm} at {name}'s best cell ({at}): {a['human_at_nt_best']:.4f} = "
                             f"{a['share_of_human_best'] * 100:.1f} % of the human best {a['human_best']:.4f}; "
                             f"Spearman over the cells {rho}")
    if res.get("plots"):
        lines.append("plots: " + ", ".join(res["plots"]))
    return "\n".join(lines)


def task_hint(protocol: str) -> str:
    """For a run without a declared task: which task this verdict answers, and how to get the other."""
    mine = next((t for t, (p, _) in TASKS.items() if p == protocol), None)
    if mine is None:
        return f"task: this verdict answers the {protocol} protocol's own question (above); --task applies to focused and highrecall"
    other = next(t for t in TASKS if t != mine)
    return (f"task: this verdict answers {mine} search ({TASKS[mine][1]}); for {other} search run "
            f"`nteval {TASKS[other][0]}`, or `nteval compare` for both and where they disagree; declare "
            f"--task {mine} to lead with one headline answer")


def protocol_report(res: dict[str, Any], proto: Any) -> str:
    """What a protocol command prints: the declared task's headline answer first, then the verdict
    with its sizes, the study's evidence (not this run's), the bias notes on this run's systems,
    the protocol's own lines, and the full table."""
    lines: list[str] = []
    if res.get("answer"):
        lines += [res["answer"]["text"], ""]
    if res.get("verdict"):
        lines.append(verdict_text(proto.name, res["verdict"], counts=res["topic_counts"]))
    lines += coverage_lines(res.get("coverage"))
    lines += evidence_lines(proto.name, (res.get("evidence") or {}).get("side"))
    lines += bias_lines({proto.name: res}, [proto.name])
    if not res.get("task"):
        lines.append("  " + task_hint(proto.name))
    lines.append("")
    lines.append(protocol_details(res, proto))
    return "\n".join(lines)


def protocol_details(res: dict[str, Any], proto: Any) -> str:
    """The part of a protocol's report after its verdict: the protocol's own lines, the full table
    (sorted by the verdict's measure) and how many runs were computed or reused."""
    lines = list(proto.report_lines(res))
    vm = proto.verdict.measure
    lines.append(results_table(res, sort_by=vm if vm in res["measures"] else None))
    runs = runs_line(res)
    if runs:
        lines.append(runs)
    return "\n".join(lines)


def runs_line(res: dict[str, Any]) -> str:
    """How many runs were computed and how many reused from OUT/runs (a cached run is reused only for
    the same index fingerprint, topics, depth and system)."""
    timing = res.get("timing") or {}
    reused = sum(1 for t in timing.values() if t.get("reused"))
    if not timing:
        return ""
    if not reused:
        return f"(runs: {len(timing)} computed)"
    return (f"(runs: {len(timing) - reused} computed, {reused} reused from the cache of earlier runs with the same "
            "index, topics, depth and system)")


def answer_lines(answer: dict[str, Any], res: dict[str, dict[str, Any]]) -> list[str]:
    """What ``nteval compare`` prints (and answer.md holds): the answer first, then the details."""
    lines: list[str] = []
    if answer.get("headline"):
        lines += [answer["headline"]["text"], ""]
    else:
        lines += ["No task declared: both verdicts, then where they disagree.",
                  f"  known-item search (focused, {answer['verdicts']['focused']['measure']}): "
                  + answer["verdicts"]["focused"]["headline"]["text"].split(", ", 1)[1],
                  f"  topical search (high-recall, {answer['verdicts']['highrecall']['measure']}): "
                  + answer["verdicts"]["highrecall"]["headline"]["text"].split(", ", 1)[1], ""]
    shown = [TASKS[answer["task"]][0]] if answer.get("task") else ["focused", "highrecall"]
    for name in shown:  # the verdict behind the answer: groups, sizes, ceiling, stability; evidence; biases
        lines.append(verdict_text(name, res[name]["verdict"], counts=res[name].get("topic_counts")))
        lines += coverage_lines(res[name].get("coverage"))
        lines += evidence_lines(name, (res[name].get("evidence") or {}).get("side"))
        lines += bias_lines(res, [name])
        lines.append("")
    lines += disagreement_lines(answer["disagreements"])
    if answer.get("how_to_choose"):
        lines += ["", answer["how_to_choose"]]
    where = Path(answer.get("out") or ".")
    timing = {f"{name}/{k}": t for name in ("focused", "highrecall") for k, t in (res[name].get("timing") or {}).items()}
    lines += ["", f"tables of every system and measure: {where / 'focused' / 'results.tsv'}, "
                  f"{where / 'highrecall' / 'results.tsv'} " + runs_line({"timing": timing})]
    return lines


def tune_summary(res: dict[str, Any]) -> str:
    """``nteval tune``'s answer: per protocol, the held-out score of the tuned setting beside the
    defaults, each fold's choice, the recommended setting and the paired tests' groups."""
    fmt = lambda p: ", ".join(f"{k}={v:g}" if isinstance(v, (int, float)) else f"{k}={v}" for k, v in p.items())  # noqa: E731
    # a tuned setting at the precision its evidence supports (tune.json has it to 6 decimals)
    short = lambda p: ", ".join(f"{k}={v:.3g}" if isinstance(v, float) else f"{k}={v}" for k, v in p.items())  # noqa: E731
    lines = [f"tuning {res['system']['name']} ({res['system']['algorithm']}) over "
             + ", ".join(f"{n} in [{r[0]:g}, {r[1]:g}]" for n, r in res["ranges"].items())
             + f": {res['trials_per_fold']} TPE trials in each of {res['folds']} topic folds, seed {res['seed']}"]
    for name, p in res["protocols"].items():
        m = p["measure"]
        advice = p.get("advice") or {}
        lines.append(f"\n{name} ({p['topics']} topics, {m}):")
        gain = f" ({advice['held_out_gain_text']})" if advice.get("held_out_gain_text") else ""
        lines.append(f"  held-out {m} of the tuned setting {p['held_out_score']:.4f}{gain} vs defaults "
                     f"({fmt(p['default']['params'])}) {p['default']['score']:.4f} (each topic scored by the setting "
                     "its fold's study chose without it)")
        for fo in p["folds"]:
            lines.append(f"  fold {fo['fold']}: best {short(fo['best'])} — {fo['train_score']:.4f} on its "
                         f"{fo['train_topics']} training topics, {fo['held_score']:.4f} on its {fo['held_topics']} "
                         "held-out ones")
        rec = p["recommended"]
        best = (f"{short(rec['params'])} ({rec['score_in_sample']:.4f} over all topics: in-sample, optimistic; the "
                "held-out score above is the honest one)")
        if advice.get("keep_defaults"):
            lines.append(f"  advice: keep the defaults ({fmt(p['default']['params'])}): " + "; and ".join(advice["reasons"])
                         + f". The best setting tried was {best}")
        else:
            lines.append(f"  advice: use {best}: it beats the defaults on held-out topics by a paired test and by at "
                         f"least the minimum meaningful difference ({advice.get('mmd', '5 %')})" if advice else
                         f"  recommended: {best}")
        for e in advice.get("on_edge", []):
            lines.append(f"  edge: the best {e['param']} ({e['value']:.3g}) is at the {e['side']} end of the range "
                         f"searched ({e['bound']:g}): the optimum may lie beyond; widen the range there and tune again")
        groups = p["comparison"]["groups"]
        lines.append(f"  groups that cannot be told apart, best first, separated by | ({p['comparison']['test']}, "
                     f"{p['comparison']['correction']}): " + " | ".join(", ".join(g) for g in groups)
                     + ("  (one group: tuning cannot be told apart from the defaults)" if len(groups) == 1 else ""))
        if p.get("trace"):
            lines.append(f"  trace: {p['trace']}")
    return "\n".join(lines)
