"""The ``nteval`` command line: a thin shell over the Python API.

Imports are deferred into each command so ``nteval --help`` and commands that never search start
fast (no JVM, no Lucene).
"""
from __future__ import annotations

import functools
import json
import sys
from pathlib import Path

import click


def _friendly_errors(fn):
    """Bad input → one line on stderr naming the file and place, exit status 2."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        from .errors import InputError

        try:
            return fn(*args, **kwargs)
        except (InputError, FileExistsError, FileNotFoundError) as err:
            click.echo(f"nteval: error: {err}", err=True)
            sys.exit(2)

    return wrapper


def _terminate(signum, _frame):
    # SIGTERM unwinds like Ctrl-C so atomic builds remove their temporary directories.
    raise KeyboardInterrupt(f"signal {signum}")


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="nteval")
def main() -> None:
    """Evaluate search engines without human relevance judgments (No-Title protocols)."""
    import signal

    signal.signal(signal.SIGTERM, _terminate)


@main.command("index")
@click.argument("sources", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--out", required=True, type=click.Path(path_type=Path), help="Index directory to create.")
@click.option("--force", is_flag=True, help="Replace an existing index directory (only once the new one is complete).")
@click.option("--jobs", type=int, default=None, help="Processes parsing source files in parallel (default: cores).")
@click.option("--quiet", is_flag=True, help="No progress bar.")
@_friendly_errors
def index_cmd(sources: tuple[Path, ...], out: Path, force: bool, jobs: int | None, quiet: bool) -> None:
    """Parse Medline XML (.xml/.xml.gz, files or directories) or BEIR corpus.jsonl[.gz] SOURCES
    and build OUT/all (title+abstract), OUT/nt (abstract only), OUT/docs.sqlite, OUT/manifest.json."""
    from .index import build_index
    from .report.text import manifest_summary

    manifest = build_index(list(sources), out, force=force, jobs=jobs, progress=not quiet and sys.stderr.isatty())
    click.echo(manifest_summary(manifest, out))


@main.command("demo")
@click.option("--out", type=click.Path(path_type=Path), default=Path("nteval-demo"), show_default=True)
@_friendly_errors
def demo_cmd(out: Path) -> None:
    """Run the pipeline on the bundled PubMed sample (no ../shared data needed)."""
    from .demo import run_demo

    run_demo(out)


@main.command("manifest")
@click.argument("index_dir", type=click.Path(path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print the whole manifest as JSON.")
@_friendly_errors
def manifest_cmd(index_dir: Path, as_json: bool) -> None:
    """Show what an index directory was built from (counts, sources, versions)."""
    from .index import read_manifest
    from .report.text import manifest_summary

    m = read_manifest(index_dir)
    click.echo(json.dumps(m, indent=2, ensure_ascii=False) if as_json else manifest_summary(m, index_dir))


if __name__ == "__main__":  # pragma: no cover
    main()
