"""``nteval index`` and ``nteval manifest``: build or update an index, and say what one holds."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from ..errors import InputError
from ..index import build_index, not_applied, read_manifest, update_index
from ..report.text import manifest_summary
from .app import friendly_errors, main


@main.command("index")
@click.argument("sources", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--out", type=click.Path(path_type=Path), help="Index directory to create.")
@click.option("--update", "update", type=click.Path(path_type=Path), metavar="INDEX",
              help="Apply SOURCES (Medline update files, in order) to this existing index instead, in place: "
                   "replacements, DeleteCitations and new records; swapped in only once complete.")
@click.option("--skip-applied", is_flag=True,
              help="With --update: leave out the SOURCES the index already holds (same sha256), saying which, "
                   "instead of refusing them (a nightly job's folder of every update file so far).")
@click.option("--force", is_flag=True, help="Replace an existing index directory (only once the new one is complete).")
@click.option("--documents", type=click.Choice(["any-text", "title+abstract"]), default="any-text", show_default=True,
              help="Which records become documents: every record with a title or an abstract (the whole collection "
                   "is searched; nt holds those with an abstract), or only records with both (Campagne 2008's "
                   "collection). Topics always need both.")
@click.option("--jobs", type=click.IntRange(min=1), default=None,
              help="Parallelism: processes parsing source files and child JVMs indexing them (default: cores; "
                   "each child JVM is capped at 768 MB of heap).")
@click.option("--quiet", is_flag=True, help="No progress bar.")
@friendly_errors
def index_cmd(sources: tuple[Path, ...], out: Path | None, update: Path | None, skip_applied: bool, force: bool,
              documents: str, jobs: int | None, quiet: bool) -> None:
    """Parse Medline XML (.xml/.xml.gz, files or directories) or BEIR corpus.jsonl[.gz] SOURCES
    and build OUT/all (title+abstract), OUT/nt (abstract only), OUT/docs.sqlite, OUT/manifest.json;
    or, with --update INDEX, apply them to INDEX."""
    if (out is None) == (update is None):
        raise InputError(None, "give --out DIR (build an index) or --update INDEX (apply update files to it), not "
                               + ("both" if out is not None else "neither"))
    if update is not None and force:
        raise InputError(None, "--force does not go with --update (an update never replaces the index with another)")
    if update is not None and documents != "any-text":
        raise InputError(None, "--documents does not go with --update (an update keeps the policy the index was built "
                               "with: nteval manifest INDEX says which)")
    if skip_applied and update is None:
        raise InputError(None, "--skip-applied goes with --update (it leaves out the update files an index already holds)")
    progress = not quiet and sys.stderr.isatty()
    if update is not None:
        todo = list(sources)
        if skip_applied:
            todo, held = not_applied(update, todo)
            if held:
                click.echo(f"note: {len(held):,} of the {len(sources):,} sources are already in {update} (same sha256): "
                           f"left out ({', '.join(p.name for p in held[:3])}{', …' if len(held) > 3 else ''})", err=True)
            if not todo:
                click.echo(f"nothing to apply: {update} holds every source given")
                return
        where, manifest = update, update_index(update, todo, jobs=jobs, progress=progress)
    else:
        assert out is not None
        where, manifest = out, build_index(list(sources), out, force=force, jobs=jobs, progress=progress,
                                           documents=documents)
    click.echo(manifest_summary(manifest, where))


@main.command("manifest")
@click.argument("index_dir", type=click.Path(path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print the whole manifest as JSON.")
@friendly_errors
def manifest_cmd(index_dir: Path, as_json: bool) -> None:
    """Show what an index directory was built from (counts, sources, versions)."""
    m = read_manifest(index_dir)
    click.echo(json.dumps(m, indent=2, ensure_ascii=False) if as_json else manifest_summary(m, index_dir))
