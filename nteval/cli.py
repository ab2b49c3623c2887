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

#: The deepest ranking a system is asked for (a bigger --depth crashed Lucene after the first runs).
MAX_DEPTH = 100_000


def _friendly_errors(fn):
    """Bad input → one line on stderr naming the file and place, exit status 2; a Lucene builder
    that failed → one line, exit status 1."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        from .errors import InputError, LuceneError

        try:
            return fn(*args, **kwargs)
        except (InputError, FileExistsError, FileNotFoundError) as err:
            click.echo(f"nteval: error: {err}", err=True)
            sys.exit(2)
        except LuceneError as err:  # a tool failed, not the input: exit 1
            from .errors import explain_lucene_failure

            click.echo(f"nteval: error: {explain_lucene_failure(err, kwargs.get('out'))}", err=True)
            sys.exit(1)
        except KeyboardInterrupt as err:  # Ctrl-C: 128 + SIGINT, as shells report it (SIGTERM: 143)
            click.echo("nteval: interrupted", err=True)
            sys.exit(143 if str(err) == "signal 15" else 130)
        except Exception as err:  # a full disk, a read-only place, damaged index files: one line too
            from .errors import explain_failure

            explained = explain_failure(err, kwargs.get("index_dir") or kwargs.get("update"), kwargs.get("out"))
            if explained is None:
                _internal_error(err)
            click.echo(f"nteval: error: {explained[0]}", err=True)
            sys.exit(explained[1])

    return wrapper


def _internal_error(err: Exception) -> None:
    """A bug in nteval (not the input, not the machine): one line naming the error and a file that
    keeps the traceback, exit status 1. ``NTEVAL_TRACEBACK=1`` shows the traceback instead."""
    import os
    import tempfile
    import time
    import traceback

    if os.environ.get("NTEVAL_TRACEBACK"):
        raise err
    from ._version import __version__

    text = "".join(traceback.format_exception(err))
    try:
        fd, path = tempfile.mkstemp(prefix=time.strftime("nteval-crash-%Y%m%d-%H%M%S-"), suffix=".txt")
        with os.fdopen(fd, "w") as fh:
            fh.write(f"nteval {__version__}, python {sys.version.split()[0]}\n$ {' '.join(sys.argv)}\n\n{text}")
        where = f"the traceback is in {path}"
    except OSError:
        where = "set NTEVAL_TRACEBACK=1 to see the traceback"
    click.echo(f"nteval: internal error (a bug in nteval, not in your input): {type(err).__name__}: {err} — {where}; "
               "please report it. Files finished before it are kept.", err=True)
    sys.exit(1)


def _locks_out(fn):
    """Check the counts every OUT-writing command shares (--topics, --depth ≥ 1), then hold a lock
    on its --out for the whole run: two nteval processes writing the same OUT would mix their
    runs, cells and results (one-line error for the second one)."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        from .atomic import out_dir_lock
        from .errors import InputError

        for opt, key in (("--topics", "n_topics"), ("--depth", "depth")):
            if key in kwargs and kwargs[key] != "auto" and kwargs[key] < 1:
                raise InputError(None, f"{opt} must be ≥ 1, got {kwargs[key]}")
        with out_dir_lock(kwargs["out"]):
            return fn(*args, **kwargs)

    return wrapper


def _fmt(value: float | None) -> str:
    """A correlation for the terminal; None (undefined: a ranking with no variation) as n/a."""
    return "n/a" if value is None else f"{value:.3f}"


def _terminate(signum, _frame):
    # SIGTERM unwinds like Ctrl-C so atomic builds remove their temporary directories.
    raise KeyboardInterrupt(f"signal {signum}")


class _OneLineUsageError(click.UsageError):
    """A bad option or argument as one line on stderr (exit 2), like every other input error."""

    def show(self, file=None) -> None:
        name = self.ctx.command_path if self.ctx is not None else "nteval"
        click.echo(f"nteval: error: {self.format_message()} (see {name} --help)", err=True)


#: ``nteval`` alone prints its help (click ≥ 8.2 raises this usage error for it)
_NO_ARGS_IS_HELP = getattr(click.exceptions, "NoArgsIsHelpError", ())


class _Command(click.Command):
    def make_context(self, *args, **kwargs):
        try:
            return super().make_context(*args, **kwargs)
        except click.UsageError as e:
            if isinstance(e, (_OneLineUsageError, _NO_ARGS_IS_HELP)):
                raise
            raise _OneLineUsageError(e.format_message(), e.ctx) from None


class _Group(_Command, click.Group):
    command_class = _Command

    def resolve_command(self, ctx, args):
        try:
            return super().resolve_command(ctx, args)
        except click.UsageError as e:
            raise _OneLineUsageError(e.format_message(), e.ctx) from None


_Group.group_class = _Group


def _load_config(ctx: click.Context, _param, path: str | None) -> None:
    """``--config FILE``: option values from YAML, per command (``compare: {task: topical, topics:
    auto}``) or for every command that has the option (``task: topical`` at the top). Options given
    on the command line win. Names as on the command line, without the dashes."""
    if not path:
        return
    from .errors import InputError
    from .systems.base import read_yaml

    try:
        data = read_yaml(Path(path), "config file")
    except OSError as err:
        raise _OneLineUsageError(f"--config {path}: {err.strerror}", ctx) from None
    except InputError as err:
        raise _OneLineUsageError(f"--config {err}", ctx) from None
    if data is None:
        return
    if not isinstance(data, dict):
        raise _OneLineUsageError(f"--config {path}: a mapping of option names (or command names) to values is expected", ctx)
    commands = ctx.command.commands  # type: ignore[attr-defined]
    for where, values in [("", data)] + [(f"{k}: ", v) for k, v in data.items() if k in commands and isinstance(v, dict)]:
        if any(str(k).replace("_", "-") == "allow-code" for k in values):
            raise _OneLineUsageError(f"--config {path}: {where}allow_code cannot come from a config file: give --allow-code "
                                     f"on the command line (or set NTEVAL_ALLOW_CODE=1), so that letting a systems "
                                     "file run code is always your own explicit choice", ctx)
    shared = {k: v for k, v in data.items() if k not in commands}
    default_map: dict[str, dict] = {}
    for name, cmd in commands.items():
        by_option = {o.lstrip("-").replace("_", "-"): p.name for p in cmd.params for o in getattr(p, "opts", [])
                     if o.startswith("--")}
        given = data.get(name) or {}
        if not isinstance(given, dict):
            raise _OneLineUsageError(f"--config {path}: {name}: a mapping of its options to values is expected", ctx)
        values = {}
        for key, value in {**shared, **given}.items():
            opt = str(key).replace("_", "-")
            if opt in by_option:
                values[by_option[opt]] = list(value) if isinstance(value, (list, tuple)) else value
            elif key in given:
                from .errors import suggest

                raise _OneLineUsageError(f"--config {path}: {name} has no option --{opt[:80]}{suggest(opt, by_option)}", ctx)
        if values:
            default_map[name] = values
    every = {o.lstrip("-") for c in commands.values() for p in c.params for o in getattr(p, "opts", [])}
    unknown = [k for k in shared if str(k).replace("_", "-") not in every]
    if unknown:
        raise _OneLineUsageError(f"--config {path}: no command has the option --{str(unknown[0])[:80]}", ctx)
    ctx.default_map = default_map


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="nteval")
@click.option("--config", type=click.Path(dir_okay=False), callback=_load_config, expose_value=False, is_eager=True,
              help="A YAML file of option values, per command (compare: {task: topical, topics: auto}) or for every "
                   "command that has the option; options on the command line win.")
def main() -> None:
    """Evaluate search engines without human relevance judgments (No-Title protocols)."""
    import signal

    signal.signal(signal.SIGTERM, _terminate)


@main.command("index")
@click.argument("sources", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--out", type=click.Path(path_type=Path), help="Index directory to create.")
@click.option("--update", "update", type=click.Path(path_type=Path), metavar="INDEX",
              help="Apply SOURCES (Medline update files, in order) to this existing index instead, in place: "
                   "replacements, DeleteCitations and new records; swapped in only once complete.")
@click.option("--force", is_flag=True, help="Replace an existing index directory (only once the new one is complete).")
@click.option("--documents", type=click.Choice(["any-text", "title+abstract"]), default="any-text", show_default=True,
              help="Which records become documents: every record with a title or an abstract (the whole collection "
                   "is searched; nt holds those with an abstract), or only records with both (Campagne 2008's "
                   "collection). Topics always need both.")
@click.option("--jobs", type=click.IntRange(min=1), default=None,
              help="Parallelism: processes parsing source files and child JVMs indexing them (default: cores; "
                   "each child JVM is capped at 768 MB of heap).")
@click.option("--quiet", is_flag=True, help="No progress bar.")
@_friendly_errors
def index_cmd(sources: tuple[Path, ...], out: Path | None, update: Path | None, force: bool, documents: str,
              jobs: int | None, quiet: bool) -> None:
    """Parse Medline XML (.xml/.xml.gz, files or directories) or BEIR corpus.jsonl[.gz] SOURCES
    and build OUT/all (title+abstract), OUT/nt (abstract only), OUT/docs.sqlite, OUT/manifest.json;
    or, with --update INDEX, apply them to INDEX."""
    from .errors import InputError
    from .index import build_index, update_index
    from .report.text import manifest_summary

    if (out is None) == (update is None):
        raise InputError(None, "give --out DIR (build an index) or --update INDEX (apply update files to it), not "
                               + ("both" if out is not None else "neither"))
    if update is not None and force:
        raise InputError(None, "--force does not go with --update (an update never replaces the index with another)")
    if update is not None and documents != "any-text":
        raise InputError(None, "--documents does not go with --update (an update keeps the policy the index was built "
                               "with: nteval manifest INDEX says which)")
    progress = not quiet and sys.stderr.isatty()
    if update is not None:
        manifest = update_index(update, list(sources), jobs=jobs, progress=progress)
    else:
        manifest = build_index(list(sources), out, force=force, jobs=jobs, progress=progress, documents=documents)
    click.echo(manifest_summary(manifest, out or update))


_RUNS_OPTION = click.option(
    "--runs", "runs_dir", default=None, type=click.Path(path_type=Path),
    help="Directory of external TREC runs over this experiment's topics (see `nteval export`), each named by its run "
         "tag, scored beside the systems.")

_SCHEDULER_OPTION = click.option(
    "--scheduler", envvar="NTEVAL_SCHEDULER", default=None, metavar="tcp://HOST:PORT",
    callback=lambda ctx, param, value: (value or "").strip() or None,
    help="A Dask scheduler: its workers compute the runs (grid: the cells) instead of this machine; the index must "
         "be at the same path on every worker (docs/dask.md).  [env: NTEVAL_SCHEDULER]")


def _external(kw: dict) -> dict:
    """``--runs DIR`` → ``extra_systems`` (one external system per run file)."""
    runs_dir = kw.pop("runs_dir", None)
    if runs_dir is not None:
        from .systems.external import runs_from_dir

        kw["extra_systems"] = runs_from_dir(runs_dir)
    return kw


class _Topics(click.ParamType):
    """``--topics``: a whole number, or ``auto`` (batches until the ranking is stable)."""

    name = "N|auto"

    def convert(self, value, param, ctx):
        if isinstance(value, int) or value == "auto":
            return value
        try:
            return int(str(value))
        except ValueError:
            self.fail(f"{value!r} is not a whole number or auto", param, ctx)


def _allow_code(_ctx, _param, value: bool) -> None:
    if value:
        import os

        from .systems.base import ALLOW_CODE_ENV

        os.environ[ALLOW_CODE_ENV] = "1"


_ALLOW_CODE_OPTION = click.option(
    "--allow-code", is_flag=True, expose_value=False, callback=_allow_code, is_eager=True,
    help="Let the systems file run code (callable: and command: systems run with your rights, like a Makefile).")

_TASK_OPTION = click.option(
    "--task", type=click.Choice(["known-item", "topical"]), default=None,
    help="The search task your users do: known-item (find the one document a description points to: the focused "
         "verdict) or topical (find everything on a topic: the high-recall verdict). Its headline answer leads.")

_MMD_OPTION = click.option(
    "--mmd", default="5%", show_default=True, metavar="SHARE%|DIFF",
    help="Minimum meaningful difference between two systems: a share of the better score (5%: Sparck Jones 1974's "
         "'noticeable') or an absolute difference in the measure's units (0.01).")


def spec_options(protocol: str, names: tuple[str, ...]):
    """Command-line options made from a protocol spec's declared parameters (their defaults,
    choices and help: one table, :func:`nteval.protocols.base.param`); validation stays the spec's."""
    import dataclasses
    import typing

    from .protocols import get

    spec = get(protocol).Spec
    fields = {f.name: f for f in dataclasses.fields(spec)}
    hints = typing.get_type_hints(spec)

    def decorate(fn):
        for name in reversed(names):
            f, meta = fields[name], fields[name].metadata
            flag = meta.get("flag") or "--" + name.replace("_", "-")
            text = meta["help"]
            first = text.split(":")[0]
            kwargs: dict = {"help": (text if first in (meta.get("choices") or ()) else text[:1].upper() + text[1:]) + "."}
            t = typing.get_args(hints[name]) or (hints[name],)
            if isinstance(f.default, tuple):
                kwargs["multiple"] = True
            else:
                kwargs.update(default=f.default, show_default=f.default is not None)
                if meta.get("choices"):
                    kwargs["type"] = click.Choice(list(meta["choices"]))
                elif "/" not in flag:
                    kwargs["type"] = t[0]
            fn = click.option(flag, name, **kwargs)(fn)
        return fn

    return decorate


def _protocol_options(fn):
    """Options shared by the NT protocol commands (same sample ⇒ same D0 across protocols)."""
    opts = [
        click.option("--index", "index_dir", required=True, type=click.Path(path_type=Path), help="Directory made by `nteval index`."),
        click.option("--topics", "n_topics", type=_Topics(), default=1000, show_default=True,
                     help="Documents sampled as topics (D0), or auto: seeded batches of 250 until the ranking is stable "
                          "(split-half Kendall tau ≥ 0.9), the eligible documents or --topics-budget run out."),
        click.option("--topics-budget", default=5000, show_default=True, type=click.IntRange(min=1),
                     help="With --topics auto: sample at most this many documents."),
        click.option("--seed", default=42, show_default=True, type=click.IntRange(min=0),
                     help="Sampling seed (same seed + index = same topics)."),
        click.option("--systems", default=None, help="Systems YAML, or a shipped set: default, table1.  [default: default]"),
        _RUNS_OPTION,
        click.option("--out", required=True, type=click.Path(path_type=Path), help="Output directory (runs there are reused)."),
        _SCHEDULER_OPTION,
        click.option("--depth", default=1000, show_default=True, type=click.IntRange(1, MAX_DEPTH),
                     help="Hits kept per query."),
        click.option("--measures", default=None, help='ir_measures names, e.g. "RR AP nDCG@10".'),
        click.option("--min-topics", default=50, show_default=True,
                     help="Fail when fewer topics are usable: below it a system ranking is mostly noise."),
        click.option("--correction", type=click.Choice(["holm", "bh"]), default="holm", show_default=True,
                     help="Multiple-comparison correction of the paired tests between systems (Holm: FWER; BH: FDR)."),
        _MMD_OPTION,
        _TASK_OPTION,
        _ALLOW_CODE_OPTION,
        _sample_filter_options,
        click.option("--quiet", is_flag=True, help="No progress bar."),
    ]
    for opt in reversed(opts):
        fn = opt(fn)
    return fn


#: which documents may become NT topics (every command that samples D0 has these)
_sample_filter_options = spec_options("focused", ("language", "year_min", "year_max", "min_sentences", "min_title_tokens"))


def _protocol_kwargs(kw: dict) -> dict:
    _external(kw)
    m = kw.pop("measures")
    quiet = kw.pop("quiet")
    kw["measures"] = m.replace(",", " ").split() if m else None
    kw["progress"] = not quiet and sys.stderr.isatty()
    return kw


@main.command("focused")
@_protocol_options
@_friendly_errors
@_locks_out
def focused_cmd(**kw) -> None:
    """Focused NT protocol: sampled titles search the title-less index; each title's own abstract
    is its one relevant document. Prints systems sorted by MRR (RR)."""
    from .experiment import run_focused
    from .protocols import get
    from .report.text import protocol_report

    kw = _protocol_kwargs(kw)
    res = run_focused(kw.pop("index_dir"), kw.pop("out"), **kw)
    click.echo(protocol_report(res, get("focused")))


#: the high-recall options every command that runs the protocol has (--sref apart)
HIGHRECALL_OPTIONS = ("k", "zt", "sentence", "fallback", "judged", "std", "combine", "graded", "holdout", "preset")
_highrecall_options = spec_options("highrecall", HIGHRECALL_OPTIONS)
_sref_option = spec_options("highrecall", ("sref",))


@main.command("highrecall")
@_protocol_options
@_sref_option
@_highrecall_options
@_friendly_errors
@_locks_out
def highrecall_cmd(**kw) -> None:
    """High-recall NT protocol: S_ref searches the WITH-title index with each title; hits with
    z ≥ ZT are pseudo-relevant; the n-th abstract sentence is the query over the title-less index."""
    from .experiment import run_highrecall
    from .protocols import get
    from .report.text import protocol_report

    kw = _protocol_kwargs(kw)
    kw["measures"] = kw["measures"] or None
    kw["sref"] = list(kw["sref"]) or None
    res = run_highrecall(kw.pop("index_dir"), kw.pop("out"), **kw)
    click.echo(protocol_report(res, get("highrecall")))


@main.command("sref-sensitivity")
@_protocol_options
@click.option("--sref", "srefs", multiple=True, required=True, help="A reference system (give two or more).")
@_highrecall_options
@_friendly_errors
@_locks_out
def sref_sensitivity_cmd(srefs, **kw) -> None:
    """Evaluate the systems under two S_ref choices and correlate their scores (paper's Figure 3)."""
    from .experiment import run_sref_sensitivity
    from .report.text import sref_summary

    kw = _protocol_kwargs(kw)
    out = kw.pop("out")
    click.echo(sref_summary(run_sref_sensitivity(kw.pop("index_dir"), out, list(srefs), **kw), out))


@main.command("grid")
@click.option("--index", "index_dir", required=True, type=click.Path(path_type=Path), help="Directory made by `nteval index`.")
@click.option("--protocol", default="both", show_default=True,
              help="Protocol(s) to evaluate the grid under: a name from `nteval protocols`, several joined by commas, "
                   "both (focused,highrecall) or none (human judgments only).")
@click.option("--protocol-param", "protocol_params", multiple=True, metavar="PROTOCOL.NAME=VALUE",
              help="A parameter of one protocol's spec (see `nteval protocols`), e.g. mesh.max_docs=200.")
@click.option("--system", default="bm25", show_default=True,
              help="An algorithm (bm25, qld, bm25_rm3, ...) or a system name from --systems / the shipped sets.")
@click.option("--systems", default=None, help="Systems YAML where --system is looked up.")
@click.option("--runs", "runs_dir", default=None, type=click.Path(path_type=Path),
              help="External runs scored beside the grid as references (DIR/<protocol>/*.run when several protocols).")
@click.option("--reference", "reference_names", multiple=True,
              help="A system of --systems (or the shipped sets) scored beside the grid, e.g. a dense model (repeatable).")
@click.option("--param", "params", multiple=True, required=True,
              help="NAME=START:STOP:STEP or NAME=V1,V2,... (one or two), e.g. k1=0.2:2.0:0.2.")
@click.option("--measure", "measures", multiple=True,
              help="ir_measures name(s) for every protocol.  [default: focused RR; highrecall AP Bpref; human AP nDCG@10]")
@click.option("--topics", "n_topics", default=1000, show_default=True, help="Documents sampled as NT topics (D0).")
@click.option("--seed", default=42, show_default=True, type=click.IntRange(min=0), help="Sampling seed.")
@click.option("--depth", default=1000, show_default=True, type=click.IntRange(1, MAX_DEPTH), help="Hits kept per query.")
@click.option("--queries", default=None, type=click.Path(path_type=Path), help="Human topics (to evaluate the grid against human judgments too).")
@click.option("--qrels", default=None, type=click.Path(path_type=Path), help="Human qrels (TREC or BEIR layout).")
@click.option("--field", default=None, help="Topic field(s) for XML topics.")
@click.option("--human-index", type=click.Choice(["all", "nt"]), default="all", show_default=True,
              help="Index the human queries search.")
@_sref_option
@_highrecall_options
@_sample_filter_options
@click.option("--jobs", default=1, show_default=True, help="Worker processes (each starts its JVM once).")
@_SCHEDULER_OPTION
@click.option("--min-topics", default=50, show_default=True, help="Fail when fewer topics are usable.")
@click.option("--out", required=True, type=click.Path(path_type=Path), help="Output directory (finished cells there are reused).")
@_TASK_OPTION
@_ALLOW_CODE_OPTION
@click.option("--quiet", is_flag=True, help="No progress bar.")
@_friendly_errors
@_locks_out
def grid_cmd(params, measures, quiet, **kw) -> None:
    """Tune a system's parameters without human judgments: evaluate every cell of a 1–2 parameter
    grid under the NT protocols; grid.tsv, grid.json, contour PNGs; prints the best cell and the
    region within 1 % of it. Interrupt and re-run: finished cells are kept."""
    from .grid import parse_axis, run_grid
    from .report.text import grid_summary

    axes = [parse_axis(p) for p in params]
    names = [m for spec in measures for m in spec.replace(",", " ").split()]
    per_protocol = _protocol_params(kw.pop("protocol_params"))
    kw["references"] = _references(kw.pop("reference_names"), kw.get("systems")) + (_external(kw).pop("extra_systems", None) or [])
    res = run_grid(kw.pop("index_dir"), kw.pop("out"), axes, measures=names or None,
                   progress=not quiet and sys.stderr.isatty(), protocol_params=per_protocol, **kw)
    click.echo(grid_summary(res))


def _references(names: tuple[str, ...], systems: str | None) -> list:
    """``--reference NAME``: systems looked up like ``--system`` (fusions need their inputs: refused)."""
    from .errors import InputError
    from .systems.sets import builtin_systems, find_named_system, resolve_systems

    out = []
    for name in names:
        files = [resolve_systems(systems)[0] if systems else None, builtin_systems("table1"), builtin_systems("wide"),
                 builtin_systems("default")]
        found = find_named_system(name, files)
        if found is None:
            from .systems.sets import suggest_system

            raise InputError(None, f"--reference {name!r}{suggest_system(name, files)}: no such system in --systems or "
                                   "the shipped sets")
        if found[0].kind.fusion:
            raise InputError(found[1], f"--reference {name}: a fusion needs its input systems; give them as references "
                                       "or compare it with `nteval focused`")
        out.append(found[0])
    return out


def _key_values(items: tuple[str, ...], option: str) -> dict[str, str]:
    """``NAME=VALUE`` options as a dict (one-line error naming the option otherwise)."""
    from .errors import InputError

    out: dict[str, str] = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            raise InputError(None, f"{option} {item!r}: write NAME=VALUE")
        out[name.strip()] = value.strip()
    return out


def _protocol_params(items: tuple[str, ...]) -> dict[str, dict[str, object]]:
    """``--protocol-param PROTOCOL.NAME=VALUE`` options → {protocol: {name: typed value}}."""
    from .errors import InputError
    from .protocols import get

    texts: dict[str, dict[str, str]] = {}
    for name, text in _key_values(items, "--protocol-param").items():
        proto, _, key = name.partition(".")
        if not key:
            raise InputError(None, f"--protocol-param {name}={text}: write PROTOCOL.NAME=VALUE, e.g. mesh.max_docs=200")
        texts.setdefault(proto, {})[key] = text
    # one spec per protocol from all its values at once (bounds between them checked together)
    specs = {proto: get(proto).Spec.from_params(given) for proto, given in texts.items()}
    return {proto: {key: getattr(specs[proto], key) for key in given} for proto, given in texts.items()}


def _protocol_names(text: str) -> tuple[str, ...]:
    from .protocols import get

    names = tuple(n.strip() for n in text.split(",") if n.strip())
    for n in names:
        get(n)  # one-line error for an unknown name
    return names


@main.command("run")
@click.option("--protocol", required=True, help="A protocol from `nteval protocols` (focused, highrecall, crosslingual, mesh…).")
@click.option("--param", "params", multiple=True, metavar="NAME=VALUE",
              help="A parameter of the protocol's spec (see `nteval protocols NAME`), e.g. --param n_topics=500.")
@click.option("--index", "index_dir", required=True, type=click.Path(path_type=Path), help="Directory made by `nteval index`.")
@click.option("--systems", default=None, help="Systems YAML, or a shipped set: default, table1, wide.  [default: default]")
@_RUNS_OPTION
@click.option("--depth", default=1000, show_default=True, type=click.IntRange(1, MAX_DEPTH), help="Hits kept per query.")
@click.option("--measures", default=None, help="ir_measures names.  [default: the protocol's]")
@click.option("--min-topics", default=50, show_default=True,
              help="Fail when fewer topics are usable: below it a system ranking is mostly noise.")
@click.option("--correction", type=click.Choice(["holm", "bh"]), default="holm", show_default=True,
              help="Multiple-comparison correction of the paired tests between systems.")
@click.option("--out", required=True, type=click.Path(path_type=Path), help="Output directory.")
@_SCHEDULER_OPTION
@_MMD_OPTION
@_TASK_OPTION
@_ALLOW_CODE_OPTION
@click.option("--quiet", is_flag=True, help="No progress bar.")
@_friendly_errors
@_locks_out
def run_cmd(protocol: str, params: tuple[str, ...], measures: str | None, quiet: bool, **kw) -> None:
    """Run every system under any registered protocol: topics.tsv, qrels.txt, runs/, results.json
    with the verdict; prints the verdict, then the table. --param n_topics=auto draws topics in
    batches until the ranking is stable (protocols that sample documents)."""
    from .experiment import run_protocol
    from .protocols import get
    from .report.text import protocol_report

    proto = get(protocol)
    given = _key_values(params, "--param")
    if given.get("n_topics") == "auto":
        kw["n_topics"] = given.pop("n_topics")
        typed = proto.Spec.from_params(given)  # (the other parameters, parsed and validated as usual)
        kw.update({k: getattr(typed, k) for k in given})
        spec = None
    else:
        spec = proto.Spec.from_params(given)
    _external(kw)
    res = run_protocol(proto, kw.pop("index_dir"), kw.pop("out"), spec=spec,
                       measures=measures.replace(",", " ").split() if measures else None,
                       progress=not quiet and sys.stderr.isatty(), **kw)
    click.echo(protocol_report(res, proto))


@main.command("compare")
@_protocol_options
@_sref_option
@_friendly_errors
@_locks_out
def compare_cmd(**kw) -> None:
    """One answer: the focused and the high-recall protocol on the same sampled documents. With
    --task, its headline answer first; without, both verdicts, the pairs of systems they order in
    opposite directions (with the likely reason) and how to choose. OUT/answer.json, answer.md,
    OUT/focused/, OUT/highrecall/."""
    from .compare import run_compare
    from .report.text import answer_lines

    kw = _protocol_kwargs(kw)
    sref = list(kw.pop("sref")) or None
    res = run_compare(kw.pop("index_dir"), kw.pop("out"), highrecall={"sref": sref} if sref else None, **kw)
    click.echo("\n".join(answer_lines(res["answer"], res)))


@main.command("protocols")
@click.argument("name", required=False)
@_friendly_errors
def protocols_cmd(name: str | None) -> None:
    """List the registered protocols; with NAME, its parameters (types, defaults, help)."""
    from .protocols import get, names

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


@main.command("evaluate")
@click.option("--qrels", required=True, type=click.Path(path_type=Path), help="Qrels file (TREC or BEIR layout).")
@click.option("--measures", default=None, help='ir_measures names.  [default: "RR AP Bpref P@10 nDCG@10 R@1000"]')
@click.option("-q", "--per-query", is_flag=True, help="Per-topic values too, as trec_eval -q (measure, topic, value).")
@click.option("--names", type=click.Choice(["tag", "file"]), default="tag", show_default=True,
              help="Name runs by their tag (6th column; the file name when not unique) or by file name.")
@click.option("--json", "as_json", is_flag=True, help='Print {run_name: {measure: value}} as JSON (with -q: per topic too).')
@click.argument("runs", nargs=-1, required=True, type=click.Path(path_type=Path))
@_friendly_errors
def evaluate_cmd(qrels: Path, measures: str | None, per_query: bool, names: str, as_json: bool, runs: tuple[Path, ...]) -> None:
    """Score TREC RUN files (topics missing from a run score 0, as trec_eval -c)."""
    from .evaluate import DEFAULT_MEASURES, evaluate_files, format_results

    ms = measures or " ".join(DEFAULT_MEASURES)
    results = evaluate_files(qrels, runs, ms, names=names, progress=sys.stderr.isatty())
    if as_json:
        out = {r: ({"means": {m: round(v, 6) for m, v in x["means"].items()},
                    "per_query": {q: {m: round(v, 6) for m, v in vals.items()} for q, vals in x["per_query"].items()}}
                   if per_query else {m: round(v, 6) for m, v in x["means"].items()}) for r, x in results.items()}
        click.echo(json.dumps(out, indent=2))
        return
    click.echo(format_results(results, ms.replace(",", " ").split(), per_query))


@main.command("correlate")
@click.option("--index", "index_dir", required=True, type=click.Path(path_type=Path), help="Index of the judged collection's corpus.")
@click.option("--queries", required=True, type=click.Path(path_type=Path), help="Human topics: TSV, BEIR queries.jsonl, TREC-COVID XML, Genomics 2004/2005.")
@click.option("--qrels", required=True, type=click.Path(path_type=Path), help="Human qrels (TREC or BEIR layout).")
@click.option("--field", default=None, help="Topic field(s) for XML topics, e.g. query, question, query+question.")
@click.option("--systems", default=None, help="Systems YAML or shipped set.  [default: default]")
@click.option("--runs", "runs_dir", default=None, type=click.Path(path_type=Path),
              help="External runs: DIR/<topic set>/*.run, one subdirectory per protocol and human/ (see `nteval export`).")
@click.option("--topics", "n_topics", default=1000, show_default=True, help="NT topics per protocol.")
@click.option("--seed", default=42, show_default=True, type=click.IntRange(min=0))
@click.option("--depth", default=1000, show_default=True, type=click.IntRange(1, MAX_DEPTH))
@click.option("--bootstrap", "n_boot", default=1000, show_default=True, type=click.IntRange(10, 20_000),
              help="Bootstrap replicates (topics resampled).")
@click.option("--min-topics", default=50, show_default=True, help="Fail when fewer NT topics are usable.")
@click.option("--min-human-topics", default=20, show_default=True, help="Fail when fewer human topics are judged.")
@click.option("--min-systems", default=5, show_default=True, help="Fail when fewer systems are compared.")
@click.option("--correction", type=click.Choice(["holm", "bh"]), default="holm", show_default=True,
              help="Multiple-comparison correction of the paired tests between systems.")
@_sref_option
@_highrecall_options
@click.option("--protocols", "protocol_names", default="focused,highrecall", show_default=True,
              help="Protocols (see `nteval protocols`) whose rankings are set against the human one, joined by commas.")
@click.option("--protocol-param", "protocol_params", multiple=True, metavar="PROTOCOL.NAME=VALUE",
              help="A parameter of one protocol's spec, e.g. mesh.max_docs=200.")
@click.option("--out", required=True, type=click.Path(path_type=Path))
@_SCHEDULER_OPTION
@_MMD_OPTION
@_TASK_OPTION
@_ALLOW_CODE_OPTION
@click.option("--quiet", is_flag=True)
@_friendly_errors
@_locks_out
def correlate_cmd(index_dir, queries, qrels, field, systems, runs_dir, n_topics, seed, depth, n_boot, min_topics, min_human_topics,
                  min_systems, correction, sref, protocol_names, protocol_params, out, scheduler, mmd, task, quiet, **hr) -> None:
    """Agreement of NT (focused, high-recall) rankings with human judgments, with the human-vs-human
    ceiling and run-based judgment-free baselines; report.json, report.md, report.html."""
    from .correlate.agreement import run_correlate
    from .report.agreement import summary_markdown

    rep = run_correlate(index_dir, queries, qrels, out, systems=systems, n_topics=n_topics, seed=seed, field=field,
                        depth=depth, n_boot=n_boot, progress=not quiet and sys.stderr.isatty(), min_topics=min_topics,
                        min_human_topics=min_human_topics, min_systems=min_systems, correction=correction,
                        highrecall={"sref": list(sref) or None, **hr},
                        protocols=_protocol_names(protocol_names),
                        protocol_params=_protocol_params(protocol_params), scheduler=scheduler, task=task, mmd=mmd,
                        **_external({"runs_dir": runs_dir}))
    click.echo(summary_markdown(rep))
    click.echo(f"(report.md, report.html, report.json and scatter plots in {out})")


@main.command("rank-baselines")
@click.option("--runs", "runs_src", required=True, type=click.Path(path_type=Path), help="Directory (or .tar.gz) of TREC runs.")
@click.option("--qrels", required=True, type=click.Path(path_type=Path), help="Official qrels (TREC or BEIR layout).")
@click.option("--measures", default="AP nDCG@10", show_default=True)
@click.option("--pool-depth", default=100, show_default=True, help="Top documents per run pooled per topic.")
@click.option("--trials", default=10, show_default=True, help="Random draws for the Soboroff baseline.")
@click.option("--seed", default=0, show_default=True, type=click.IntRange(min=0))
@click.option("--out", type=click.Path(path_type=Path), default=None,
              help="A JSON file (not a directory, unlike other commands' --out) for the full report.")
@_friendly_errors
def rank_baselines_cmd(runs_src, qrels, measures, pool_depth, trials, seed, out) -> None:
    """Judgment-free baselines (Soboroff random pseudo-qrels, reference count) on any set of runs,
    each correlated with the ranking the official qrels give."""
    from .atomic import check_writable, write_text
    from .correlate.rank_baselines import rank_baselines, read_runs
    from .errors import InputError
    from .evaluate import parse_measures
    from .formats.topics import load_qrels

    if out is not None and out.is_dir():
        raise InputError(out, "--out is a directory; rank-baselines writes one JSON file (give a file name)")
    if out is not None:
        check_writable(out)
    names = [str(m) for m in parse_measures(measures)]
    res = rank_baselines(read_runs(runs_src), load_qrels(qrels), names, pool_depth=pool_depth, trials=trials, seed=seed,
                         progress=sys.stderr.isatty())
    click.echo(f"{res['runs']} runs, {res['topics']} topics, pool depth {pool_depth}, "
               f"{res['n_relevant_per_topic']} pseudo-relevant per topic")
    for base, per in res["correlations_vs_official"].items():
        for m, c in per.items():
            click.echo(f"{base:<16} {m:<8} " + "  ".join(
                f"{label} {_fmt(c[key]['value'])}" for label, key in
                (("Kendall", "kendall"), ("Spearman", "spearman"), ("Pearson", "pearson"), ("tau_AP", "tau_ap"))))
    if any(c[key]["value"] is None for per in res["correlations_vs_official"].values() for c in per.values()
           for key in ("kendall", "spearman", "pearson", "tau_ap")):
        click.echo("n/a: undefined, one of the two rankings has every run tied")
    if out:
        write_text(Path(out), json.dumps(res, indent=2) + "\n")


@main.command("demo")
@click.option("--out", type=click.Path(path_type=Path), default=Path("nteval-demo"), show_default=True)
@_friendly_errors
def demo_cmd(out: Path) -> None:
    """Run the pipeline on the PubMed sample bundled with nteval (no other data needed)."""
    from .demo import run_demo

    run_demo(out)


@main.command("systems")
@click.argument("name", required=False)
@_friendly_errors
def systems_cmd(name: str | None) -> None:
    """List the shipped system sets and the algorithms with their parameters and defaults; with
    NAME (a shipped set such as wide, or a systems YAML), that set's systems."""
    from .systems.listing import overview, set_listing

    click.echo(set_listing(name) if name else overview())


@main.command("export")
@click.option("--from", "from_dir", required=True, type=click.Path(path_type=Path),
              help="OUT of a protocol run (nteval focused, highrecall, run; or a correlate subdirectory such as OUT/focused).")
@click.option("--format", "fmt", required=True, metavar="beir|trec",
              help="beir: corpus.jsonl, queries.jsonl, qrels/test.tsv; trec: corpus/docs.jsonl (Anserini "
                   "JsonCollection), topics.tsv, qrels.txt.")
@click.option("--out", required=True, type=click.Path(path_type=Path), help="Directory to create.")
@click.option("--index", "index_dir", default=None, type=click.Path(path_type=Path),
              help="The run's index directory, if it moved since the run (its fingerprint must match).")
@click.option("--force", is_flag=True, help="Replace an earlier export at --out (never anything else).")
@click.option("--quiet", is_flag=True, help="No progress bar.")
@_friendly_errors
def export_cmd(from_dir: Path, fmt: str, out: Path, index_dir: Path | None, force: bool, quiet: bool) -> None:
    """Export the collection a protocol run searched (corpus, topics, qrels) for outside systems,
    with EXPORT.md and export.json saying what it is."""
    from .export import export_collection

    info = export_collection(from_dir, out, fmt, index=index_dir, force=force,
                             progress=not quiet and sys.stderr.isatty())
    size = sum(f["bytes"] for f in info["files"].values())
    click.echo(f"{out}: {info['format']} export of {info['protocol']} ({info['searches']} index): "
               f"{info['documents']:,} documents, {info['topics']:,} topics, {info['qrels_rows']:,} qrels rows, "
               f"{size / 1e6:.1f} MB (EXPORT.md says what it is)")
    if info["holdout"]:
        click.echo("note: source documents were held out per topic; the corpus holds them (see EXPORT.md)")


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
