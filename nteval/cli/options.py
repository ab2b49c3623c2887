"""Command-line options made from the declarations (:func:`nteval.params.param`), and the option
sets several commands share.

:func:`declared` turns fields of a spec object — a protocol spec, :class:`~nteval.settings.RunSettings`,
:class:`~nteval.settings.Execution`, :class:`~nteval.settings.HumanJudgments`,
:class:`~nteval.grid.spec.GridSpec`, :class:`~nteval.correlate.spec.CorrelateSpec` — into click
options with the declared flag, default, choices, bounds and help: an option is never written by
hand twice, and ``tests/architecture/test_parameter_contract.py`` fails when one drifts from its
declaration. Validation stays the spec object's own; click only parses.
"""
from __future__ import annotations

import dataclasses
import sys
import typing
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import click

from ..errors import InputError
from ..protocols import get
from ..protocols.base import ProtocolSpec
from ..settings import AUTO_BATCH, Execution, RunSettings, SystemSet
from ..systems.base import ALLOW_CODE_ENV
from ..systems.external import runs_from_dir
from ..systems.sets import builtin_systems, find_named_system, resolve_systems, suggest_system

#: Options every command that writes OUT has (the rest of a command's options are its own).
LOCAL = ("index_dir", "out", "quiet")


def _help(meta: Mapping[str, Any], extra: str = "") -> str:
    text = meta["help"]
    first = text.split(":")[0]
    code = "_" in text.split()[0] or first in (meta.get("choices") or ())  # (a name: its case is its spelling)
    shown = text if code else text[:1].upper() + text[1:]
    if "  [default:" in shown:  # a documented default stays last, as click puts its own
        head, _, tail = shown.partition("  [default:")
        return f"{head}{extra}.  [default:{tail}"
    return shown + extra + "."


def option_for(f: dataclasses.Field, hint: Any, dest: str | None = None, extra_help: str = "",
               type_: Any = None, **overrides: Any) -> Callable:
    """The click option of one declared field (``dest``: the keyword the command receives)."""
    meta = f.metadata
    flag = meta.get("flag") or "--" + f.name.replace("_", "-")
    kwargs: dict[str, Any] = {"help": _help(meta, extra_help)}
    if meta.get("metavar"):
        kwargs["metavar"] = meta["metavar"]
    args = [a for a in typing.get_args(hint) if a is not type(None)] or [hint]
    base = args[0]
    if isinstance(f.default, tuple) and not meta.get("sep"):
        kwargs["multiple"] = True
    elif isinstance(f.default, tuple):
        kwargs.update(default=meta["sep"].join(f.default), show_default=True)
    else:
        kwargs.update(default=f.default, show_default=f.default is not None)
        if meta.get("choices"):
            kwargs["type"] = click.Choice(list(meta["choices"]))
        elif "/" in flag:
            pass
        elif base is int and (meta.get("min") is not None or meta.get("max") is not None):
            kwargs["type"] = click.IntRange(meta.get("min"), meta.get("max"))
        elif base in (int, float, str):
            kwargs["type"] = base
        elif base is Path:
            kwargs["type"] = click.Path(path_type=Path)
    if type_ is not None:
        kwargs["type"] = type_
    kwargs.update(overrides)
    return click.option(flag, dest or f.name, **kwargs)


def declared(cls: type, names: tuple[str, ...], dest: dict[str, str] | None = None,
             **per_name: dict[str, Any]) -> Callable:
    """A decorator adding the options of ``cls``'s declared fields ``names`` (in that order).
    ``dest``: {field: keyword the command receives} when not the field's name; ``per_name``:
    {field: overrides of :func:`option_for`}."""
    fields = {f.name: f for f in dataclasses.fields(cls)}
    hints = typing.get_type_hints(cls)

    def decorate(fn: Callable) -> Callable:
        for name in reversed(names):
            fn = option_for(fields[name], hints[name], (dest or {}).get(name), **per_name.get(name, {}))(fn)
        return fn

    return decorate


def stack(*decorators: Callable) -> Callable:
    """Several option decorators as one (applied so that --help lists them in this order)."""

    def decorate(fn: Callable) -> Callable:
        for d in reversed(decorators):
            fn = d(fn)
        return fn

    return decorate


def spec_options(protocol: str, names: tuple[str, ...]) -> Callable:
    """The options of a registered protocol's spec fields ``names``."""
    return declared(get(protocol).Spec, names)


def settings_options(*names: str) -> Callable:
    """Options of :class:`~nteval.settings.RunSettings` (``--depth``, ``--min-topics``…)."""
    return declared(RunSettings, names, measures={"type": str})


def progress(quiet: bool) -> bool:
    """``--quiet`` → the ``progress`` of :class:`~nteval.settings.Execution`: bars only on a terminal."""
    return not quiet and sys.stderr.isatty()


def measure_names(text: str | tuple[str, ...] | None) -> tuple[str, ...] | None:
    """``--measures "RR AP"`` (or repeated ``--measure``) → the names, or None for the default."""
    if not text:
        return None
    parts = [text] if isinstance(text, str) else list(text)
    return tuple(m for part in parts for m in part.replace(",", " ").split()) or None


class TopicsType(click.ParamType):
    """``--topics``: a whole number, or ``auto`` (batches until the ranking is stable); for
    ``nteval compare``, also one per protocol, ``focused=750,highrecall=250`` (what auto chose
    for each, to bring runs back on exactly those topics)."""

    name = "N|auto"

    def convert(self, value, param, ctx):
        if isinstance(value, (int, dict)) or value == "auto":
            return value
        text = str(value)
        if "=" in text:
            if ctx is None or ctx.info_name != "compare":
                self.fail(f"{text!r}: one number of topics per protocol (PROTOCOL=N,...) is for nteval compare; "
                          "give a whole number or auto", param, ctx)
            out: dict[str, int | str] = {}
            for part in text.split(","):
                name, _, n = part.partition("=")
                name, n = name.strip(), n.strip()
                if name not in ("focused", "highrecall") or name in out or not (n == "auto" or n.isdigit()):
                    self.fail(f"{text!r}: write focused=N,highrecall=M (each a whole number or auto)", param, ctx)
                out[name] = n if n == "auto" else int(n)
            if set(out) != {"focused", "highrecall"}:
                self.fail(f"{text!r}: give both, focused=N,highrecall=M", param, ctx)
            return out
        try:
            return int(text)
        except ValueError:
            self.fail(f"{value!r} is not a whole number or auto", param, ctx)


def _allow_code(_ctx, _param, value: bool) -> None:
    if value:
        import os

        os.environ[ALLOW_CODE_ENV] = "1"


INDEX = click.option("--index", "index_dir", required=True, type=click.Path(path_type=Path),
                     help="Directory made by `nteval index`.")
QUIET = click.option("--quiet", is_flag=True, help="No progress bar.")
RUNS = click.option(
    "--runs", "runs_dir", default=None, type=click.Path(path_type=Path),
    help="Directory of external TREC runs over this experiment's topics (see `nteval export`), each named by its run "
         "tag, scored beside the systems (or one run file).")
ALLOW_CODE = click.option(
    "--allow-code", is_flag=True, expose_value=False, callback=_allow_code, is_eager=True,
    help="Let the systems file run code (callable: and command: systems run with your rights, like a Makefile).")


def _systems_option() -> Callable:
    return declared(SystemSet, ("source",), dest={"source": "systems"}, source={"show_default": False})


SYSTEMS = _systems_option()


def _scheduler_option() -> Callable:
    return declared(Execution, ("scheduler",), scheduler={
        "envvar": "NTEVAL_SCHEDULER", "callback": lambda ctx, param, value: (value or "").strip() or None,
        "help": _help(next(f for f in dataclasses.fields(Execution) if f.name == "scheduler").metadata,
                      "")[:-1] + ".  [env: NTEVAL_SCHEDULER]"})


SCHEDULER = _scheduler_option()


def external(kw: dict) -> dict:
    """``--runs DIR`` → ``extra_systems`` (one external system per run file)."""
    runs_dir = kw.pop("runs_dir", None)
    if runs_dir is not None:
        kw["extra_systems"] = runs_from_dir(runs_dir)
    return kw


def key_values(items: tuple[str, ...], option: str) -> dict[str, str]:
    """``NAME=VALUE`` options as a dict (one-line error naming the option otherwise)."""
    out: dict[str, str] = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            raise InputError(None, f"{option} {item!r}: write NAME=VALUE")
        out[name.strip()] = value.strip()
    return out


def protocol_params(items: tuple[str, ...]) -> dict[str, dict[str, object]]:
    """``--protocol-param PROTOCOL.NAME=VALUE`` options → {protocol: {name: typed value}}."""
    texts: dict[str, dict[str, str]] = {}
    for name, text in key_values(items, "--protocol-param").items():
        proto, _, key = name.partition(".")
        if not key:
            raise InputError(None, f"--protocol-param {name}={text}: write PROTOCOL.NAME=VALUE, e.g. mesh.max_docs=200")
        texts.setdefault(proto, {})[key] = text
    # one spec per protocol from all its values at once (bounds between them checked together)
    specs = {proto: get(proto).Spec.from_params(given) for proto, given in texts.items()}
    return {proto: {key: getattr(specs[proto], key) for key in given} for proto, given in texts.items()}


PROTOCOL_PARAM = click.option("--protocol-param", "protocol_params", multiple=True, metavar="PROTOCOL.NAME=VALUE",
                              help="A parameter of one protocol's spec (see `nteval protocols`), e.g. "
                                   "mesh.max_docs=200.")


def protocol_names(text: str) -> tuple[str, ...]:
    names = tuple(n.strip() for n in text.split(",") if n.strip())
    for n in names:
        get(n)  # one-line error for an unknown name
    return names


#: the high-recall options every command that runs the protocol has (--sref apart)
HIGHRECALL_OPTIONS = ("k", "zt", "sentence", "fallback", "judged", "std", "combine", "graded", "holdout", "pool", "share", "preset")
#: which documents may become NT topics (every command that samples D0 has these)
SAMPLE_FILTERS = ("language", "year_min", "year_max", "min_sentences", "min_title_tokens")

highrecall_options = spec_options("highrecall", HIGHRECALL_OPTIONS)
sref_option = spec_options("highrecall", ("sref",))
sample_filter_options = spec_options("focused", SAMPLE_FILTERS)


def _protocol_options() -> Callable:
    """Options shared by the NT protocol commands (same sample ⇒ same D0 across protocols)."""
    auto = (f", or auto: seeded batches of {AUTO_BATCH} until the ranking is stable (split-half Kendall tau ≥ 0.9), "
            "the eligible documents or --topics-budget run out")
    return stack(
        INDEX,
        declared(ProtocolSpec, ("n_topics",), n_topics={"type_": TopicsType(), "extra_help": auto}),
        settings_options("topics_budget"),
        declared(ProtocolSpec, ("seed",)),
        SYSTEMS, RUNS,
        click.option("--out", required=True, type=click.Path(path_type=Path),
                     help="Output directory (runs there are reused)."),
        SCHEDULER,
        settings_options("depth", "measures", "min_topics", "correction", "mmd", "task"),
        ALLOW_CODE, sample_filter_options, QUIET)


protocol_options = _protocol_options()


def _run_tail() -> Callable:
    """The last options of ``run`` and ``correlate``: where the results go, how the work runs, how the
    verdict judges."""
    return stack(click.option("--out", required=True, type=click.Path(path_type=Path), help="Output directory."),
                 SCHEDULER, settings_options("mmd", "task"), ALLOW_CODE, QUIET)


run_tail = _run_tail()


def protocol_kwargs(kw: dict) -> dict:
    """The keywords of a protocol command as the Python API takes them."""
    external(kw)
    kw["measures"] = measure_names(kw.pop("measures"))
    kw["progress"] = progress(kw.pop("quiet"))
    return kw


def references(names: tuple[str, ...], systems: str | None) -> list:
    """``--reference NAME``: systems looked up like ``--system`` (fusions need their inputs: refused)."""
    out = []
    for name in names:
        files = [resolve_systems(systems)[0] if systems else None, builtin_systems("table1"), builtin_systems("wide"),
                 builtin_systems("default")]
        found = find_named_system(name, files)
        if found is None:
            raise InputError(None, f"--reference {name!r}{suggest_system(name, files)}: no such system in --systems or "
                                   "the shipped sets")
        if found[0].kind.fusion:
            raise InputError(found[1], f"--reference {name}: a fusion needs its input systems; give them as references "
                                       "or compare it with `nteval focused`")
        out.append(found[0])
    return out
