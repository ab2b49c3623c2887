"""``nteval demo`` and ``nteval systems``."""
from __future__ import annotations

from pathlib import Path

import click

from ..demo import run_demo
from ..systems.listing import overview, set_listing
from .app import friendly_errors, main


@main.command("demo")
@click.option("--out", type=click.Path(path_type=Path), default=Path("nteval-demo"), show_default=True)
@friendly_errors
def demo_cmd(out: Path) -> None:
    """Run the pipeline on the PubMed sample bundled with nteval (no other data needed)."""
    run_demo(out)


@main.command("systems")
@click.argument("name", required=False)
@friendly_errors
def systems_cmd(name: str | None) -> None:
    """List the shipped system sets and the algorithms with their parameters and defaults; with
    NAME (a shipped set such as wide, or a systems YAML), that set's systems."""
    click.echo(set_listing(name) if name else overview())
