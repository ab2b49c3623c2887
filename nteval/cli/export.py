"""``nteval export``: the collection a protocol run searched, for outside systems."""
from __future__ import annotations

import sys
from pathlib import Path

import click

from ..export import export_collection
from .app import friendly_errors, main


@main.command("export")
@click.option("--from", "from_dir", required=True, type=click.Path(path_type=Path),
              help="OUT of a protocol run (nteval focused, highrecall, run; or a correlate subdirectory such as OUT/focused), "
                   "or a pin's topic set (PIN/focused: known-item; PIN/highrecall: topical).")
@click.option("--format", "fmt", required=True, metavar="beir|trec",
              help="beir: corpus.jsonl, queries.jsonl, qrels/test.tsv; trec: corpus/docs.jsonl (Anserini "
                   "JsonCollection), topics.tsv, qrels.txt.")
@click.option("--out", required=True, type=click.Path(path_type=Path), help="Directory to create.")
@click.option("--index", "index_dir", default=None, type=click.Path(path_type=Path),
              help="The run's index directory, if it moved since the run (its fingerprint must match).")
@click.option("--force", is_flag=True, help="Replace an earlier export at --out (never anything else).")
@click.option("--quiet", is_flag=True, help="No progress bar.")
@friendly_errors
def export_cmd(from_dir: Path, fmt: str, out: Path, index_dir: Path | None, force: bool, quiet: bool) -> None:
    """Export the collection a protocol run or a pin searched (corpus, topics, qrels) for outside
    systems, with EXPORT.md and export.json saying what it is."""
    info = export_collection(from_dir, out, fmt, index=index_dir, force=force,
                             progress=not quiet and sys.stderr.isatty())
    size = sum(f["bytes"] for f in info["files"].values())
    click.echo(f"{out}: {info['format']} export of {info['protocol']} ({info['searches']} index): "
               f"{info['documents']:,} documents, {info['topics']:,} topics, {info['qrels_rows']:,} qrels rows, "
               f"{size / 1e6:.1f} MB (EXPORT.md says what it is)")
    if info["holdout"]:
        click.echo("note: source documents were held out per topic; the corpus holds them (see EXPORT.md)")
