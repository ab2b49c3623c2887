"""``nteval focused``, ``highrecall``, ``sref-sensitivity``, ``run``, ``compare`` and ``protocols``:
the NT protocols, run over every system of a set."""
from __future__ import annotations

import click

from ..compare import run_compare
from ..experiment import run_focused, run_highrecall, run_protocol, run_sref_sensitivity
from ..protocols import get, names
from ..report.text import answer_lines, protocol_report, sref_summary
from .app import friendly_errors, locks_out, main
from .options import (
    INDEX,
    RUNS,
    SYSTEMS,
    external,
    highrecall_options,
    key_values,
    measure_names,
    progress,
    protocol_kwargs,
    protocol_options,
    run_tail,
    settings_options,
    sref_option,
)


@main.command("focused")
@protocol_options
@friendly_errors
@locks_out
def focused_cmd(**kw) -> None:
    """Focused NT protocol: sampled titles search the title-less index; each title's own abstract
    is its one relevant document. Prints systems sorted by MRR (RR)."""
    kw = protocol_kwargs(kw)
    res = run_focused(kw.pop("index_dir"), kw.pop("out"), **kw)
    click.echo(protocol_report(res, get("focused")))


@main.command("highrecall")
@protocol_options
@sref_option
@highrecall_options
@friendly_errors
@locks_out
def highrecall_cmd(**kw) -> None:
    """High-recall NT protocol: S_ref searches the WITH-title index with each title; hits with
    z ≥ ZT are pseudo-relevant; the n-th abstract sentence is the query over the title-less index."""
    kw = protocol_kwargs(kw)
    kw["sref"] = list(kw["sref"]) or None
    res = run_highrecall(kw.pop("index_dir"), kw.pop("out"), **kw)
    click.echo(protocol_report(res, get("highrecall")))


@main.command("sref-sensitivity")
@protocol_options
@click.option("--sref", "srefs", multiple=True, required=True, help="A reference system (give two or more).")
@highrecall_options
@friendly_errors
@locks_out
def sref_sensitivity_cmd(srefs, **kw) -> None:
    """Evaluate the systems under two S_ref choices and correlate their scores (paper's Figure 3)."""
    kw = protocol_kwargs(kw)
    out = kw.pop("out")
    click.echo(sref_summary(run_sref_sensitivity(kw.pop("index_dir"), out, list(srefs), **kw), out))


@main.command("run")
@click.option("--protocol", required=True, help="A protocol from `nteval protocols` (focused, highrecall, crosslingual, mesh…).")
@click.option("--param", "params", multiple=True, metavar="NAME=VALUE",
              help="A parameter of the protocol's spec (see `nteval protocols NAME`), e.g. --param n_topics=500.")
@INDEX
@SYSTEMS
@RUNS
@settings_options("depth", "measures", "min_topics", "correction")
@run_tail
@friendly_errors
@locks_out
def run_cmd(protocol: str, params: tuple[str, ...], measures: str | None, quiet: bool, **kw) -> None:
    """Run every system under any registered protocol: topics.tsv, qrels.txt, runs/, results.json
    with the verdict; prints the verdict, then the table. --param n_topics=auto draws topics in
    batches until the ranking is stable (protocols that sample documents)."""
    proto = get(protocol)
    given = key_values(params, "--param")
    if given.get("n_topics") == "auto":
        kw["n_topics"] = given.pop("n_topics")
        typed = proto.Spec.from_params(given)  # (the other parameters, parsed and validated as usual)
        kw.update({k: getattr(typed, k) for k in given})
        spec = None
    else:
        spec = proto.Spec.from_params(given)
    external(kw)
    res = run_protocol(proto, kw.pop("index_dir"), kw.pop("out"), spec=spec, measures=measure_names(measures),
                       progress=progress(quiet), **kw)
    click.echo(protocol_report(res, proto))


@main.command("compare")
@protocol_options
@sref_option
@friendly_errors
@locks_out
def compare_cmd(**kw) -> None:
    """One answer: the focused and the high-recall protocol on the same sampled documents. With
    --task, its headline answer first; without, both verdicts, the pairs of systems they order in
    opposite directions (with the likely reason) and how to choose. OUT/answer.json, answer.md,
    OUT/focused/, OUT/highrecall/."""
    kw = protocol_kwargs(kw)
    sref = list(kw.pop("sref")) or None
    res = run_compare(kw.pop("index_dir"), kw.pop("out"), highrecall={"sref": sref} if sref else None, **kw)
    click.echo("\n".join(answer_lines(res["answer"], res)))
    same = res["answer"].get("same_topics")
    if same:
        click.echo(f"\nYour own runs on exactly these topics: the same command with --topics "
                   f"{','.join(f'{p}={n}' for p, n in same.items())} and --runs DIR (the systems' runs are put "
                   "together from the --topics auto batches, not searched again).")


@main.command("protocols")
@click.argument("name", required=False)
@friendly_errors
def protocols_cmd(name: str | None) -> None:
    """List the registered protocols; with NAME, its parameters (types, defaults, help)."""
    if name is None:
        for n in names():
            p = get(n)
            click.echo(f"{n:<13} {p.verdict.measure:<5} searches {p.searches:<4} {p.summary}")
        click.echo("\n`nteval protocols NAME` lists a protocol's parameters; `nteval run --protocol NAME --param k=v` runs it.")
        return
    p = get(name)
    click.echo(f"{p.name}: {p.summary}\n  verdict: {p.verdict.measure} — {p.verdict.task}\n"
               f"  measures: {' '.join(p.measures)}\n  parameters (--param NAME=VALUE):")
    for fname, tname, default, help_text in p.Spec.describe():
        shown = ",".join(map(str, default)) if isinstance(default, tuple) else default
        click.echo(f"    {fname:<17} {tname:<16} default {shown!s:<18} {help_text}")
