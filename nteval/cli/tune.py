"""``nteval tune``: tune a system's parameters without a full grid (Optuna), topics split for honesty."""
from __future__ import annotations

from pathlib import Path

import click

from ..report.text import tune_summary
from ..tune import TuneSpec, run_tune
from .app import friendly_errors, locks_out, main
from .options import ALLOW_CODE, INDEX, QUIET, declared, progress, sample_filter_options


@main.command("tune")
@INDEX
@declared(TuneSpec, ("protocol", "system", "systems"))
@click.option("--param", "params", multiple=True, required=True, metavar="NAME=LOW:HIGH",
              help="A parameter of the system and its range, e.g. k1=0.2:2.0 (repeatable; integers for an integer "
                   "parameter).")
@declared(TuneSpec, ("trials", "folds", "measure", "n_topics", "seed", "depth", "min_topics"), n_topics={"type_": int})
@sample_filter_options
@click.option("--out", required=True, type=click.Path(path_type=Path),
              help="Output directory (its tune.sqlite3 holds the studies: a killed tuning resumes; a tuning of other "
                   "inputs is refused, see --force).")
@click.option("--force", is_flag=True,
              help="Start afresh when OUT holds a tuning of other inputs: delete its studies, tune.json, trace plots "
                   "and score caches (never anything else).")
@ALLOW_CODE
@QUIET
@friendly_errors
@locks_out
def tune_cmd(params, quiet, **kw) -> None:
    """Tune a system's parameters with Optuna's seeded TPE under an NT protocol, the topics split
    into folds: each fold's best setting is scored on topics its study never saw (the held-out
    score), then tuned vs defaults vs the recommended setting with paired tests. OUT/tune.json,
    tune_trace_<protocol>.png."""
    res = run_tune(kw.pop("index_dir"), kw.pop("out"), list(params), progress=progress(quiet), **kw)
    click.echo(tune_summary(res))
