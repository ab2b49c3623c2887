"""``nteval pin``, ``gate``, ``check`` and ``history``: a release gate for the search a team runs,
on topics pinned across releases, with a history, trends and alerts (docs/gate.md)."""
from __future__ import annotations

import sys
from pathlib import Path

import click

from ..errors import InputError
from ..gate.gate import GateSpec, run_check, run_gate
from ..gate.outputs import set_aside
from ..gate.pin import PinSpec, extend_pin, pin_topics
from ..gate.report import gate_lines
from ..gate.trend import history_lines, history_report
from .app import _Command, friendly_errors, main
from .options import ALLOW_CODE, INDEX, QUIET, declared, progress

HISTORY = click.option("--history", "history", default=None, metavar="FILE|postgresql://…",
                       help="Append the results to this history: a SQLite file (created when missing) or a PostgreSQL "
                            "URL (password from PGPASSWORD or ~/.pgpass); alert rules are checked on every append.")
SYSTEMS_FILE = click.option("--systems", "systems", default=None, type=click.Path(path_type=Path),
                            help="A systems YAML where the names of --baseline/--candidate are looked up (then the "
                                 "shipped sets).")
PIN = click.option("--pin", "pin", required=True, type=click.Path(path_type=Path), help="A pin directory made by "
                                                                                        "`nteval pin`.")
RUNS_CACHE = click.option("--runs-cache", "runs_dir", default=None, type=click.Path(path_type=Path, file_okay=False),
                          help="Where runs are cached across gates (default: OUT/runs), per pin and task "
                               "(DIR/PIN-ID/PROTOCOL): the live system's runs on the pinned topics are computed once per "
                               "index (a live engine, http or postgres, is asked again each time unless --reuse-answers).")

REUSE = declared(GateSpec, ("reuse_answers",), reuse_answers={"is_flag": True})


@main.command("pin")
@INDEX
@declared(PinSpec, ("n_topics", "seed", "preset", "pool"))
@click.option("--extend", "extend", default=None, type=click.Path(path_type=Path),
              help="A pin to extend: its topics kept exactly, more drawn (the next ones of its seeded order among the "
                   "documents it knew) up to --topics in all.")
@click.option("--out", required=True, type=click.Path(path_type=Path), help="The pin directory to write.")
@click.option("--force", is_flag=True, help="Replace an existing pin at --out.")
@QUIET
@friendly_errors
def pin_cmd(index_dir, out, force, quiet, extend, **kw) -> None:
    """Pin a topic set for release gates: sample documents once and freeze the focused (known-item)
    and high-recall (topical) topics and judgments made from them, with an id and a digest. Later
    gates on the pin ask exactly those topics, even after `nteval index --update`."""
    spec = PinSpec(**kw)
    if extend is not None:
        from click.core import ParameterSource

        if click.get_current_context().get_parameter_source("seed") not in (ParameterSource.DEFAULT, None):
            raise InputError(None, "--seed: an extension keeps its pin's seed (the seeded order its topics came from); "
                                   "leave --seed out with --extend")
        meta = extend_pin(extend, index_dir, out, spec.n_topics, force=force, progress=progress(quiet))
    else:
        meta = pin_topics(index_dir, out, spec, force=force, progress=progress(quiet))
    p = meta["protocols"]
    click.echo(f"pin {meta['id']} (digest {meta['digest']}) in {out}: {p['focused']['topics']:,} known-item topics "
               f"(topic set {p['focused']['topic_set']}), {p['highrecall']['topics']:,} topical topics (topic set "
               f"{p['highrecall']['topic_set']}), seed {meta['spec']['seed']}, index {meta['index']['fingerprint'][:12]}")
    from ..evidence import coverage, coverage_lines
    from ..experiment import collection_counts
    from ..index import read_manifest

    # (new user, turn 7, F7: a third of the slice had no abstract, and neither pin nor gate said so)
    for line in coverage_lines(coverage(collection_counts(read_manifest(Path(index_dir)), "nt"))):
        click.echo(line.strip())
    click.echo(f"next: nteval gate --index {index_dir} --pin {out} --task known-item --baseline LIVE --candidate NEXT "
               "--out OUT")


def _gate_options(fn):
    return _shared(fn, SYSTEMS_FILE, declared(GateSpec, ("mmd", "alpha", "fresh", "label", "depth", "changed")), REUSE)


def _check_options(fn):
    return _shared(fn, click.option("--systems", "systems", default=None, type=click.Path(path_type=Path),
                                    help="A systems YAML where the name of --system is looked up (then the shipped sets)."),
                   click.option("--mmd", default="5%", show_default=True, metavar="SHARE%|DIFF",
                                help="The alert rules' margin: a release below the best earlier one by more than this "
                                     "alerts (a share of that release's score, or an absolute difference)."),
                   declared(GateSpec, ("fresh", "depth")),
                   click.option("--label", default=None, help="The system's version label (default: its system name)."),
                   REUSE)


def _shared(fn, *specific):
    for deco in reversed([
        INDEX, PIN,
        declared(GateSpec, ("task",)),
        *specific,
        HISTORY, RUNS_CACHE,
        click.option("--out", required=True, type=click.Path(path_type=Path), help="Output directory."),
        ALLOW_CODE, QUIET,
    ]):
        fn = deco(fn)
    return fn


class _SetsAsideOut(_Command):
    """``gate`` and ``check``: a run stopped by an error click finds in the options (a bad --task, a
    missing --baseline) also moves OUT's earlier files to OUT/previous/, as every other bad input
    does, so no earlier pass is left for a pipeline to post."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        try:
            return super().parse_args(ctx, list(args))
        except click.UsageError:
            out = _out_of(args)
            if out is not None:
                set_aside(Path(out), "gate")
            raise


def _out_of(args: list[str]) -> str | None:
    """The value of --out in raw arguments (the last one given), if any."""
    found = None
    for i, a in enumerate(args):
        if a == "--out" and i + 1 < len(args):
            found = args[i + 1]
        elif a.startswith("--out="):
            found = a.split("=", 1)[1]
    return found


@main.command("gate", cls=_SetsAsideOut)
@click.option("--baseline", required=True, metavar="SYSTEM",
              help="What is live: a system name (in --systems or the shipped sets), a one-system YAML, or a TREC run "
                   "file over the pin's topics.")
@click.option("--candidate", "candidates", multiple=True, required=True, metavar="SYSTEM",
              help="The release to check, like --baseline; repeat for several (Bonferroni over them).")
@declared(GateSpec, ("baseline_label",))
@_gate_options
@friendly_errors
def gate_cmd(baseline, candidates, quiet, **kw) -> None:
    """Is the candidate at least as good as what is live, for your users' task? Decides better,
    non-inferior, worse or inconclusive on a pinned topic set (the margin: the minimum meaningful
    difference), and says what changed. Exit status: 0 pass, 3 regression, 4 inconclusive, 5 pass
    with a history alert, 2 bad input. OUT/gate.json, gate.md, junit.xml."""
    res = run_gate(kw.pop("index_dir"), kw.pop("pin"), kw.pop("out"), baseline, list(candidates),
                   progress=progress(quiet), **kw)
    click.echo("\n".join(gate_lines(res)))
    _reuse_note(kw.get("reuse_answers"), res, "gate")
    sys.exit(res["exit"])


def _reuse_note(asked: bool | None, res: dict, what: str) -> None:
    """One line (stderr) when --reuse-answers was given and no system of the gate or check is a
    live engine: it changed nothing (a note, not a refusal: a pipeline may pass it to every job)."""
    if asked and not res["answers"]["systems"]:
        click.echo(f"nteval: note: --reuse-answers applies to http and postgres systems only; none of this {what}'s "
                   "systems is one, so it changed nothing", err=True)


@main.command("check", cls=_SetsAsideOut)
@click.option("--system", required=True, metavar="SYSTEM",
              help="The system to check (a name, a one-system YAML or a run file), e.g. what is live.")
@_check_options
@friendly_errors
def check_cmd(system, quiet, **kw) -> None:
    """Score one system on a pin's topics and append it to the history (--history, required):
    no decision, only the record and the alert rules. Exit status 0, or 5 on an alert. OUT/check.json,
    check.md, junit.xml."""
    res = run_check(kw.pop("index_dir"), kw.pop("pin"), kw.pop("out"), system, kw.pop("history"),
                    progress=progress(quiet), **kw)
    _reuse_note(kw.get("reuse_answers"), res, "check")
    if res.get("encoder_note"):   # (issue 55: an encoder the references do not contain is said first)
        click.echo(f"{res['system']}: {res['encoder_note']}")
    if res["answers"]["note"]:
        click.echo(res["answers"]["note"])
    for kind, st in res["sets"].items():
        if "mean" in st:
            click.echo(f"{res['labels'][res['system']]} ({res['system']}) on {st['topics']:,} {kind} topics: "
                       f"{res['measure']} {st['mean']:.4f} [{st['ci95'][0]:.4f}, {st['ci95'][1]:.4f}]")
    click.echo(f"recorded in {res['history']['where']} (records {', '.join(map(str, res['history']['records']))}); "
               f"wrote {Path(res['out']) / 'check.md'} and junit.xml")
    for a in res["history"]["alerts"]:
        click.echo(f"ALERT: {a['text']}")
    for n in res["history"]["notes"]:
        click.echo(f"note: {n}")
    sys.exit(res["exit"])


@main.command("history")
@click.argument("history", metavar="HISTORY")
@declared(GateSpec, ("task",), task={"extra_help": " (default: the newest record's task)"})
@click.option("--pin", "pin_id", default=None, metavar="PIN-ID",
              help="Which pin's releases, by its id (default: the newest record's).")
@declared(GateSpec, ("mmd",))
@click.option("--out", default=None, type=click.Path(path_type=Path),
              help="Write history.png, history.html and history.json here.")
@friendly_errors
def history_cmd(history, task, pin_id, mmd, out) -> None:
    """The trend of a history (a SQLite file or a postgresql:// URL): each release's mean with its
    95 % interval, the best release so far, the decisions, and the alert rules at every release.
    Exit status 5 when the newest release raises an alert."""
    rep = history_report(history, task, pin_id, out, mmd)
    click.echo("\n".join(history_lines(rep)))
    if out is not None:
        click.echo(f"wrote {Path(out) / 'history.png'} and {Path(out) / 'history.html'}")
    sys.exit(5 if rep["latest_alerts"] else 0)
