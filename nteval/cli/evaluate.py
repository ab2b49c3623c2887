"""``nteval evaluate``: score TREC run files against qrels (trec_eval's habits, ir_measures' names)."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from ..evaluate import DEFAULT_MEASURES, evaluate_files, format_results
from .app import friendly_errors, main


@main.command("evaluate")
@click.option("--qrels", required=True, type=click.Path(path_type=Path), help="Qrels file (TREC or BEIR layout).")
@click.option("--measures", default=None, help='ir_measures names.  [default: "RR AP Bpref P@10 nDCG@10 R@1000"]')
@click.option("-q", "--per-query", is_flag=True, help="Per-topic values too, as trec_eval -q (measure, topic, value).")
@click.option("--names", type=click.Choice(["tag", "file"]), default="tag", show_default=True,
              help="Name runs by their tag (6th column; the file name when not unique) or by file name.")
@click.option("--json", "as_json", is_flag=True, help='Print {run_name: {measure: value}} as JSON (with -q: per topic too).')
@click.argument("runs", nargs=-1, required=True, type=click.Path(path_type=Path))
@friendly_errors
def evaluate_cmd(qrels: Path, measures: str | None, per_query: bool, names: str, as_json: bool, runs: tuple[Path, ...]) -> None:
    """Score TREC RUN files (topics missing from a run score 0, as trec_eval -c)."""
    ms = measures or " ".join(DEFAULT_MEASURES)
    results = evaluate_files(qrels, runs, ms, names=names, progress=sys.stderr.isatty())
    if as_json:
        out = {r: ({"means": {m: round(v, 6) for m, v in x["means"].items()},
                    "per_query": {q: {m: round(v, 6) for m, v in vals.items()} for q, vals in x["per_query"].items()}}
                   if per_query else {m: round(v, 6) for m, v in x["means"].items()}) for r, x in results.items()}
        click.echo(json.dumps(out, indent=2))
        return
    click.echo(format_results(results, ms.replace(",", " ").split(), per_query))
