"""``nteval grid``: tune a system's parameters without human judgments."""
from __future__ import annotations

from pathlib import Path

import click

from ..grid import parse_axis, run_grid
from ..grid.spec import GridSpec
from ..report.text import grid_summary
from ..settings import Execution, HumanJudgments
from .app import friendly_errors, locks_out, main
from .options import (
    ALLOW_CODE,
    INDEX,
    PROTOCOL_PARAM,
    QUIET,
    SCHEDULER,
    declared,
    external,
    highrecall_options,
    measure_names,
    progress,
    protocol_params,
    references,
    sample_filter_options,
    sref_option,
)


@main.command("grid")
@INDEX
@declared(GridSpec, ("protocol",))
@PROTOCOL_PARAM
@declared(GridSpec, ("system", "systems"))
@click.option("--runs", "runs_dir", default=None, type=click.Path(path_type=Path),
              help="External runs scored beside the grid as references (DIR/<protocol>/*.run when several protocols).")
@click.option("--reference", "reference_names", multiple=True,
              help="A system of --systems (or the shipped sets) scored beside the grid, e.g. a dense model (repeatable).")
@click.option("--param", "params", multiple=True, required=True,
              help="NAME=START:STOP:STEP or NAME=V1,V2,... (one or two), e.g. k1=0.2:2.0:0.2.")
@declared(GridSpec, ("measures", "n_topics", "seed", "depth"), n_topics={"type_": int})
@declared(HumanJudgments, ("queries", "qrels", "field", "index"), dest={"index": "human_index"})
@sref_option
@highrecall_options
@sample_filter_options
@declared(Execution, ("jobs",))
@SCHEDULER
@declared(GridSpec, ("min_topics",))
@click.option("--out", required=True, type=click.Path(path_type=Path), help="Output directory (finished cells there are reused).")
@declared(GridSpec, ("task", "one_pass"))
@ALLOW_CODE
@QUIET
@friendly_errors
@locks_out
def grid_cmd(params, measures, quiet, **kw) -> None:
    """Tune a system's parameters without human judgments: evaluate every cell of a 1–2 parameter
    grid under the NT protocols; grid.tsv, grid.json, contour PNGs; prints the best cell and the
    region within 1 % of it. Interrupt and re-run: finished cells are kept."""
    axes = [parse_axis(p) for p in params]
    per_protocol = protocol_params(kw.pop("protocol_params"))
    kw["references"] = references(kw.pop("reference_names"), kw.get("systems")) + (
        external(kw).pop("extra_systems", None) or [])
    res = run_grid(kw.pop("index_dir"), kw.pop("out"), axes, measures=measure_names(measures),
                   progress=progress(quiet), protocol_params=per_protocol, **kw)
    click.echo(grid_summary(res))
