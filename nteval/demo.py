"""``nteval demo``: the whole pipeline on the PubMed sample bundled in the package."""
from __future__ import annotations

from importlib import resources
from pathlib import Path

import click

from . import protocols
from .compare import run_compare
from .correlate.agreement import run_correlate
from .experiment import run_focused
from .grid import parse_axis, run_grid
from .index import build_index, read_manifest, sha256_file
from .report.agreement import summary_markdown
from .report.text import answer_lines, grid_summary, manifest_summary, protocol_details, results_table
from .verdict import MIN_TOPICS

SAMPLE = "pubmed21n1298_first2000.xml.gz"


def _progress() -> bool:
    """Progress bars when a person watches (stderr is a terminal), not in a log."""
    import sys

    return sys.stderr.isatty()


def sample_path() -> Path:
    """The bundled byte-exact PubMed slice (see nteval/data/PROVENANCE.md)."""
    return Path(str(resources.files("nteval") / "data" / SAMPLE))


def ensure_sample_index(out: Path) -> Path:
    """Build ``out/index`` from the sample unless an index of the same sample is already there."""
    index_dir = out / "index"
    sample = sample_path()
    if index_dir.exists():
        try:
            m = read_manifest(index_dir)
            if [s["sha256"] for s in m["sources"]] == [sha256_file(sample)]:
                click.echo(f"reusing {index_dir} (built from the same sample)")
                return index_dir
        except Exception:  # an unreadable old demo index is simply rebuilt
            pass
    click.echo(f"indexing the bundled sample {sample.name} → {index_dir}")
    build_index([sample], index_dir, force=True, progress=_progress())
    return index_dir


def run_demo(out: Path, n_topics: int = 300, min_topics: int = MIN_TOPICS) -> None:
    """``min_topics`` lowers the topic floor (tests run the demo on 25 topics)."""
    out = Path(out)
    index_dir = ensure_sample_index(out)
    click.echo(manifest_summary(read_manifest(index_dir), index_dir))
    click.echo()
    click.echo(f"Comparing the `default` systems under both NT protocols on the same {n_topics} sampled documents "
               "(`nteval compare`)…")
    res = run_compare(index_dir, out, n_topics=n_topics, seed=42, systems="default", progress=_progress(),
                      min_topics=min_topics)
    click.echo("\n".join(answer_lines(res["answer"], res)))
    click.echo("\nEvery system and measure behind the verdicts:\n")
    for name in ("focused", "highrecall"):
        click.echo(protocol_details(res[name], protocols.get(name)))
        click.echo()
    skipped = [n for n in protocols.names() if not protocols.get(n).in_demo]
    click.echo(f"(topics, qrels, runs and per-topic scores in {out / 'focused'} and {out / 'highrecall'}; "
               f"the answer in {out / 'answer.md'})")
    if skipped:
        click.echo(f"Also registered: {', '.join(skipped)} (`nteval protocols`); they need a larger Medline index than "
                   f"this sample (vernacular titles, MeSH headings): `nteval run --protocol NAME`.")
    click.echo()
    run_grid_demo(index_dir, out / "grid", n_topics=min(n_topics, 150), min_topics=min_topics)
    click.echo()
    run_dense_demo(index_dir, out / "dense", n_topics=min(n_topics, 200), min_topics=min_topics)
    click.echo()
    run_agreement_demo(out, n_topics=min(n_topics, 200), min_topics=min_topics)
    click.echo(f"\nNext (in this shell: `source .venv/bin/activate` first, or call .venv/bin/nteval):\n"
               f"  nteval compare --index {index_dir} --topics 500 --systems table1 --task known-item --out my-answer\n"
               f"  nteval focused --index {index_dir} --topics auto --systems table1 --out my-focused\n"
               f"  nteval systems            # the shipped system sets and every algorithm's parameters\n"
               f"  nteval export --from {out / 'focused'} --format beir --out my-beir   # run your own system on it,\n"
               f"    then: nteval focused ... --runs DIR_OF_YOUR_RUNS (docs/any-system.md)\n"
               f"  nteval pin --index {index_dir} --topics 300 --out my-pin   # a release gate: pin topics once,\n"
               f"    then: nteval gate --index {index_dir} --pin my-pin --task known-item --baseline LIVE "
               f"--candidate NEXT --out my-gate (docs/gate.md)\n"
               f"  nteval protocols          # every protocol (cross-lingual, MeSH…) and its parameters\n"
               f"Your own corpus: Medline baseline/update files (pubmed*.xml.gz, from NLM's PubMed FTP) or a BEIR "
               f"corpus.jsonl:\n  nteval index FILES... --out my-index")


def run_grid_demo(index_dir: Path, out: Path, n_topics: int = 150, min_topics: int = MIN_TOPICS) -> None:
    """A small BM25 k1 × b grid under both NT protocols (judge-free tuning)."""
    click.echo("Tuning BM25 without judges: a 3 × 3 k1 × b grid under both NT protocols (try a 10 × 10 with `nteval grid`)")
    res = run_grid(index_dir, out, [parse_axis("k1=0.6,1.2,2.0"), parse_axis("b=0.3,0.6,0.9")], protocol="both",
                   n_topics=n_topics, seed=42, jobs=2, progress=_progress(), min_topics=min_topics)
    click.echo(grid_summary(res))
    click.echo(f"(contour maps in {out})")


def run_dense_demo(index_dir: Path, out: Path, n_topics: int = 200, min_topics: int = MIN_TOPICS) -> None:
    """Sparse vs dense vs hybrid under the focused protocol (the shipped ``dense`` set)."""
    click.echo("Any system under NT: BM25 vs an offline dense encoder (wordllama, shipped in its wheel) vs hybrids, "
               "focused protocol")
    res = run_focused(index_dir, out, n_topics=n_topics, seed=42, systems="dense", progress=_progress(),
                      min_topics=min_topics)
    click.echo(results_table(res))
    notes = res.get("system_notes", {}).get("dense", {})
    if notes:
        click.echo(f"(document vectors: {notes['documents']:,} abstracts, {notes['cache_bytes'] / 1e6:.1f} MB, cached in "
                   f"{notes['cache']})")


def scifact_slice() -> Path:
    """500 SciFact abstracts with 30 human-judged claims (see nteval/data/PROVENANCE.md)."""
    return Path(str(resources.files("nteval") / "data" / "scifact_slice"))


def run_agreement_demo(out: Path, n_topics: int = 200, min_topics: int = MIN_TOPICS) -> None:
    """NT scores, human scores and their agreement on the bundled judged SciFact slice."""
    sl = scifact_slice()
    index_dir = Path(out) / "scifact-index"
    corpus = sl / "corpus.jsonl.gz"
    try:
        fresh = [s["sha256"] for s in read_manifest(index_dir)["sources"]] == [sha256_file(corpus)]
    except Exception:
        fresh = False
    if not fresh:
        click.echo(f"indexing the bundled SciFact slice → {index_dir}")
        build_index([corpus], index_dir, force=True, progress=_progress())
    rep = run_correlate(index_dir, sl / "queries.jsonl", sl / "qrels.tsv", Path(out) / "agreement", systems="default",
                        n_topics=n_topics, seed=42, n_boot=300, progress=_progress(), min_topics=min_topics)
    click.echo("SciFact slice (500 abstracts, 30 human-judged claims): can NT rank these systems like humans do?\n"
               "This is the check in miniature: 6 systems and 30 claims are too few for most figures to mean anything, "
               "and the report says which (\"Read with care\"). The real check: `nteval correlate` on a judged "
               "collection with its full topics and `--systems wide` (docs/correlate.md).")
    click.echo(summary_markdown(rep))
    click.echo(f"(full report: {Path(out) / 'agreement' / 'report.html'})")
