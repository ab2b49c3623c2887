"""``nteval correlate`` and ``rank-baselines``: how far NT rankings agree with human judgments."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from ..atomic import check_writable, write_text
from ..correlate.agreement import run_correlate
from ..correlate.rank_baselines import rank_baselines, read_runs
from ..correlate.spec import CorrelateSpec
from ..errors import InputError
from ..evaluate import parse_measures
from ..formats.topics import load_qrels
from ..report.agreement import summary_markdown
from ..settings import HumanJudgments
from .app import fmt, friendly_errors, locks_out, main
from .options import (
    HIGHRECALL_OPTIONS,
    PROTOCOL_PARAM,
    SYSTEMS,
    declared,
    external,
    highrecall_options,
    progress,
    protocol_params,
    run_tail,
    settings_options,
    sref_option,
)
from .options import protocol_names as parse_protocols


@main.command("correlate")
@click.option("--index", "index_dir", required=True, type=click.Path(path_type=Path),
              help="Index of the judged collection's corpus.")
@declared(HumanJudgments, ("queries", "qrels"), queries={"required": True}, qrels={"required": True})
@declared(HumanJudgments, ("field",))
@SYSTEMS
@click.option("--runs", "runs_dir", default=None, type=click.Path(path_type=Path),
              help="External runs: DIR/<topic set>/*.run, one subdirectory per protocol and human/ (see `nteval export`).")
@declared(CorrelateSpec, ("n_topics", "seed"), n_topics={"type_": int})
@settings_options("depth")
@declared(CorrelateSpec, ("n_boot",))
@settings_options("min_topics")
@declared(CorrelateSpec, ("min_human_topics", "min_systems"))
@settings_options("correction")
@sref_option
@highrecall_options
@declared(CorrelateSpec, ("protocols",), dest={"protocols": "protocol_names"})
@PROTOCOL_PARAM
@run_tail
@friendly_errors
@locks_out
def correlate_cmd(queries, qrels, sref, protocol_names: str, quiet: bool, **kw) -> None:
    """Agreement of NT (focused, high-recall) rankings with human judgments, with the human-vs-human
    ceiling and run-based judgment-free baselines; report.json, report.md, report.html."""
    hr = {k: kw.pop(k) for k in HIGHRECALL_OPTIONS}
    out = kw.pop("out")
    rep = run_correlate(kw.pop("index_dir"), queries, qrels, out, progress=progress(quiet),
                        highrecall={"sref": list(sref) or None, **hr}, protocols=parse_protocols(protocol_names),
                        protocol_params=protocol_params(kw.pop("protocol_params")), **external(kw))
    click.echo(summary_markdown(rep))
    click.echo(f"(report.md, report.html, report.json and scatter plots in {out})")


@main.command("rank-baselines")
@click.option("--runs", "runs_src", required=True, type=click.Path(path_type=Path), help="Directory (or .tar.gz) of TREC runs.")
@click.option("--qrels", required=True, type=click.Path(path_type=Path), help="Official qrels (TREC or BEIR layout).")
@click.option("--measures", default="AP nDCG@10", show_default=True)
@click.option("--pool-depth", default=100, show_default=True, help="Top documents per run pooled per topic.")
@click.option("--trials", default=10, show_default=True, help="Random draws for the Soboroff baseline.")
@click.option("--seed", default=0, show_default=True, type=click.IntRange(min=0))
@click.option("--out", type=click.Path(path_type=Path), default=None,
              help="A JSON file (not a directory, unlike other commands' --out) for the full report.")
@friendly_errors
def rank_baselines_cmd(runs_src, qrels, measures, pool_depth, trials, seed, out) -> None:
    """Judgment-free baselines (Soboroff random pseudo-qrels, reference count) on any set of runs,
    each correlated with the ranking the official qrels give."""
    if out is not None and out.is_dir():
        raise InputError(out, "--out is a directory; rank-baselines writes one JSON file (give a file name)")
    if out is not None:
        check_writable(out)
    names = [str(m) for m in parse_measures(measures)]
    res = rank_baselines(read_runs(runs_src), load_qrels(qrels), names, pool_depth=pool_depth, trials=trials, seed=seed,
                         progress=sys.stderr.isatty())
    click.echo(f"{res['runs']} runs, {res['topics']} topics, pool depth {pool_depth}, "
               f"{res['n_relevant_per_topic']} pseudo-relevant per topic")
    for base, per in res["correlations_vs_official"].items():
        for m, c in per.items():
            click.echo(f"{base:<16} {m:<8} " + "  ".join(
                f"{label} {fmt(c[key]['value'])}" for label, key in
                (("Kendall", "kendall"), ("Spearman", "spearman"), ("Pearson", "pearson"), ("tau_AP", "tau_ap"))))
    if any(c[key]["value"] is None for per in res["correlations_vs_official"].values() for c in per.values()
           for key in ("kendall", "spearman", "pearson", "tau_ap")):
        click.echo("n/a: undefined, one of the two rankings has every run tied")
    if out:
        write_text(Path(out), json.dumps(res, indent=2) + "\n")
