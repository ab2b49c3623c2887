"""The ``nteval`` group: one-line errors for bad input, ``--config``, signals; every command
module under :mod:`nteval.cli` adds its commands to :data:`main`."""
from __future__ import annotations

import functools
import sys
from pathlib import Path

import click

from .._version import __version__
from ..atomic import out_dir_lock
from ..errors import InputError, LuceneError, explain_failure, explain_lucene_failure, suggest
from ..progress import plain_lines
from ..systems.base import read_yaml


def friendly_errors(fn):
    """Bad input → one line on stderr naming the file and place, exit status 2; a Lucene builder
    that failed → one line, exit status 1."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            with plain_lines(not kwargs.get("quiet")):  # (off a terminal: a plain progress line every 30 s)
                return fn(*args, **kwargs)
        except (InputError, FileExistsError, FileNotFoundError) as err:
            click.echo(f"nteval: error: {err}", err=True)
            sys.exit(2)
        except LuceneError as err:  # a tool failed, not the input: exit 1
            click.echo(f"nteval: error: {explain_lucene_failure(err, kwargs.get('out'))}", err=True)
            sys.exit(1)
        except KeyboardInterrupt as err:  # Ctrl-C: 128 + SIGINT, as shells report it (SIGTERM: 143)
            click.echo("nteval: interrupted", err=True)
            sys.exit(143 if str(err) == "signal 15" else 130)
        except Exception as err:  # a full disk, a read-only place, damaged index files: one line too
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


def locks_out(fn):
    """Check the counts every OUT-writing command shares (--topics, --depth ≥ 1), then hold a lock
    on its --out for the whole run: two nteval processes writing the same OUT would mix their
    runs, cells and results (one-line error for the second one)."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        for opt, key in (("--topics", "n_topics"), ("--depth", "depth")):
            given = kwargs.get(key)
            for v in (given.values() if isinstance(given, dict) else [given] if key in kwargs else []):
                if v != "auto" and v < 1:
                    raise InputError(None, f"{opt} must be ≥ 1, got {v}")
        with out_dir_lock(kwargs["out"]):
            return fn(*args, **kwargs)

    return wrapper


def fmt(value: float | None) -> str:
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


def _takes(opt: click.Option, rest: list[str]) -> int:
    """How many of the tokens ``rest`` after option ``opt`` (given without ``=value``) click takes
    as its value: none for a flag; none for an option whose value is optional when the next token
    is an option; else its nargs."""
    if opt.is_flag or opt.count:
        return 0
    if getattr(opt, "_flag_needs_value", False) and rest and rest[0][:1] == "-" and len(rest[0]) > 1:
        return 0
    return opt.nargs


def _refuse_repeats(cmd: click.Command, ctx: click.Context, args: list[str]) -> None:
    """A single-valued option given more than once is refused in one line (click would keep the
    last silently): ``--baseline bm25 --baseline disjunctive_1``, ``-q --quiet``, ``--x --no-x``.
    Options declared ``multiple=True`` and counted flags may repeat. The tokens are read as click
    reads them: ``--opt value``, ``--opt=value``, short options (``-q``, ``-qv``, ``-ovalue``),
    ``--`` ending the options, a group's options ending at its subcommand. With ``-h``/``--help``
    among them nothing is refused (the help is shown)."""
    opts: dict[str, click.Option] = {}
    for param in cmd.get_params(ctx):
        if isinstance(param, click.Option):
            for o in (*param.opts, *param.secondary_opts):
                opts[o] = param
    given: dict[str, list[tuple[str, str | None]]] = {}

    def seen(opt: click.Option, spelled: str, value: str | None) -> None:
        if not (opt.multiple or opt.count or (opt.is_flag and opt.is_eager)):
            given.setdefault(opt.name or spelled, []).append((spelled, value))

    i = 0
    while i < len(args):
        tok = args[i]
        i += 1
        if tok == "--":
            break
        if tok in ctx.help_option_names:
            return
        if tok[:1] != "-" or tok == "-":
            if isinstance(cmd, click.Group):
                break  # (the subcommand: its options are its own)
            continue
        name, eq, inline = tok.partition("=")
        if name in opts or tok.startswith("--"):
            opt = opts.get(name)
            if opt is None:
                continue  # (click says it has no such option)
            n = 0 if eq else _takes(opt, args[i:])
            seen(opt, name, inline if eq else " ".join(args[i:i + n]) if n else None)
            i += n
            continue
        for j in range(1, len(tok)):  # -abc: flags, then perhaps one taking the rest (or the next token)
            opt = opts.get(f"-{tok[j]}")
            if opt is None:
                break
            if _takes(opt, args[i:] if j == len(tok) - 1 else [tok[j + 1:]]):
                if j < len(tok) - 1:
                    seen(opt, f"-{tok[j]}", tok[j + 1:])
                else:
                    seen(opt, f"-{tok[j]}", " ".join(args[i:i + opt.nargs]))
                    i += opt.nargs
                break
            seen(opt, f"-{tok[j]}", None)
    for uses in given.values():
        if len(uses) < 2:
            continue
        spelled = list(dict.fromkeys(s for s, _ in uses))
        times = "twice" if len(uses) == 2 else f"{len(uses)} times"
        values = [v for _, v in uses if v is not None]
        shown = f" ({', '.join(repr(v) for v in values)})" if values else ""
        if len(spelled) == 1:
            raise _OneLineUsageError(f"{spelled[0]} given {times}{shown}: give it once", ctx)
        raise _OneLineUsageError(f"{' and '.join(spelled)} given together{shown}: they set the same option; give one "
                                 "of them once", ctx)


class _Command(click.Command):
    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        _refuse_repeats(self, ctx, args)
        return super().parse_args(ctx, args)

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
    if not isinstance(sys.stdout, _PipeSafe):
        sys.stdout = _PipeSafe(sys.stdout)


class _PipeSafe:
    """stdout whose reader may go away (``nteval pin … | head -1``): the rest of the output is
    dropped, the command finishes its work and exits with its own status (a broken pipe is not an
    error of the command: the pin was written, the gate decided)."""

    def __init__(self, stream) -> None:
        self._stream = stream
        self._gone = False

    def write(self, text: str) -> int:
        if not self._gone:
            try:
                return self._stream.write(text)
            except BrokenPipeError:
                self._went()
        return len(text)

    def flush(self) -> None:
        if not self._gone:
            try:
                self._stream.flush()
            except BrokenPipeError:
                self._went()

    def _went(self) -> None:
        import os

        self._gone = True
        try:  # (what is still buffered must not fail again at exit)
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, self._stream.fileno())
        except (OSError, ValueError, AttributeError):
            pass

    def __getattr__(self, name: str):
        return getattr(self._stream, name)

