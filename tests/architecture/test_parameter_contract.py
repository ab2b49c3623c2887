"""One parameter table: the command-line options, the listings and the docs say what the
declarations in the code say (a help text or a documented default that drifts fails here)."""
from __future__ import annotations

import dataclasses
from pathlib import Path

import click
import pytest

from nteval.cli import HIGHRECALL_OPTIONS, SAMPLE_FILTERS, main
from nteval.protocols import get, names
from nteval.systems import registry

DOCS = Path(__file__).resolve().parents[2] / "docs"


def _options(command: str) -> dict[str, click.Option]:
    return {p.name: p for p in main.commands[command].params if isinstance(p, click.Option)}


def _declarations() -> dict[str, list[dataclasses.Field]]:
    """Every declared field of every spec object, by its command-line flag."""
    from nteval.correlate.spec import CorrelateSpec
    from nteval.gate.gate import GateSpec
    from nteval.gate.pin import PinSpec
    from nteval.grid.spec import GridSpec
    from nteval.params import declared, flag_of
    from nteval.settings import Execution, HumanJudgments, RunSettings, SystemSet
    from nteval.tune import TuneSpec

    out: dict[str, list[dataclasses.Field]] = {}
    for cls in (RunSettings, Execution, HumanJudgments, SystemSet, GridSpec, CorrelateSpec, TuneSpec, GateSpec, PinSpec,
                *(get(n).Spec for n in names())):
        for f in declared(cls):
            if f.metadata.get("option", True):
                out.setdefault(flag_of(f), []).append(f)
    return out


#: options a command owns (not a parameter of any spec object): (command or "*", flag)
OWN = {("*", "--index"), ("*", "--out"), ("*", "--quiet"), ("*", "--allow-code"), ("*", "--runs"), ("*", "--json"),
       ("*", "--protocol-param"), ("*", "--force"), ("evaluate", "--measures"), ("rank-baselines", "--measures"),
       ("rank-baselines", "--seed"), ("rank-baselines", "--runs"), ("rank-baselines", "--out"),
       ("index", "--update"), ("index", "--documents"), ("index", "--jobs"), ("run", "--protocol"), ("run", "--param"),
       ("grid", "--param"), ("grid", "--reference"), ("tune", "--param"), ("sref-sensitivity", "--sref"), ("evaluate", "--qrels"),
       ("evaluate", "--per-query"), ("evaluate", "--names"), ("rank-baselines", "--qrels"),
       ("rank-baselines", "--pool-depth"), ("rank-baselines", "--trials"), ("export", "--from"),
       ("export", "--format"), ("demo", "--out"), ("--config", "--config"),
       ("gate", "--baseline"), ("gate", "--candidate"), ("check", "--system"), ("gate", "--systems"),
       ("check", "--systems"), ("*", "--history"), ("*", "--pin"), ("*", "--runs-cache"), ("pin", "--extend"),
       ("check", "--mmd"), ("check", "--label"), ("encode", "--system"), ("encode", "--systems"),
       ("encode", "--export-texts"), ("encode", "--import"),
       ("index", "--skip-applied")}  # (check decides nothing: its margin is the alerts', its label the system's)


def _same_help(option_help: str, declared_help: str) -> bool:
    return option_help.lower().startswith(declared_help.split("  [default:")[0].lower())


def test_every_option_is_its_declaration():
    """An option spelled like a declared parameter has that parameter's help, default and
    choices; any other option is one a command owns (listed in OWN, on purpose)."""
    decl = _declarations()
    checked = 0
    for command, cmd in main.commands.items():
        for opt in cmd.params:
            if not isinstance(opt, click.Option):
                continue
            flag = next(o for o in opt.opts if o.startswith("--"))
            fields = [] if (command, flag) in OWN else decl.get(flag, [])
            if not fields:
                assert ("*", flag) in OWN or (command, flag) in OWN, (
                    f"nteval {command} {flag} is written by hand: declare it (nteval.params.param) or list it in OWN")
                continue
            ok = [f for f in fields if _same_help(opt.help or "", f.metadata["help"])]
            assert ok, (command, flag, opt.help, [f.metadata["help"] for f in fields])
            f = ok[0]
            if isinstance(f.default, tuple):
                assert opt.multiple or opt.default == f.metadata["sep"].join(f.default), (command, flag)
            else:
                assert opt.default == f.default, (command, flag, opt.default, f.default)
            if f.metadata.get("choices"):
                assert sorted(opt.type.choices) == sorted(f.metadata["choices"]), (command, flag)
            if f.metadata.get("min") is not None and isinstance(opt.type, click.IntRange):
                assert opt.type.min == f.metadata["min"] and opt.type.max == f.metadata.get("max"), (command, flag)
            checked += 1
    assert checked >= 150  # (the protocol, grid and correlate commands: most of their options)


@pytest.mark.parametrize("command, fields", [
    ("highrecall", ("sref", *HIGHRECALL_OPTIONS, *SAMPLE_FILTERS)),
    ("grid", ("sref", *HIGHRECALL_OPTIONS, *SAMPLE_FILTERS)),
    ("correlate", ("sref", *HIGHRECALL_OPTIONS)),
    ("focused", SAMPLE_FILTERS),
    ("compare", ("sref", *SAMPLE_FILTERS)),
    ("sref-sensitivity", (*HIGHRECALL_OPTIONS, *SAMPLE_FILTERS)),
])
def test_protocol_commands_have_the_protocol_options(command, fields):
    opts = _options(command)
    assert set(fields) <= set(opts), set(fields) - set(opts)


def test_sref_help_names_the_real_default():
    from nteval.protocols.highrecall import DEFAULT_SREFS

    for command in ("highrecall", "grid", "correlate", "compare"):
        text = _options(command)["sref"].help
        assert all(s in text for s in DEFAULT_SREFS), (command, text)
        assert "k1=0.9 b=0.4]" not in text


def test_every_declared_parameter_has_help_and_bounds_that_hold():
    for name in names():
        spec = get(name).Spec
        for f in dataclasses.fields(spec):
            assert f.metadata.get("help"), f"{name}.{f.name} has no help"
        spec()  # the defaults pass the spec's own validation
    for name in registry.names():
        for p in registry.get(name).params:
            assert p.help, f"system kind {name}.{p.name} has no help"


def test_protocols_listing_comes_from_the_declarations():
    from click.testing import CliRunner

    for name in names():
        out = CliRunner().invoke(main, ["protocols", name]).output
        for f in dataclasses.fields(get(name).Spec):
            assert f.name in out and f.metadata["help"][:40] in out, (name, f.name)


def test_systems_listing_comes_from_the_declarations():
    from click.testing import CliRunner

    out = CliRunner().invoke(main, ["systems"]).output
    table = out.split("algorithms (")[1]
    for name in registry.algorithms():
        line = next(x for x in table.splitlines() if x.strip().startswith(name + " "))
        for p in registry.get(name).params:
            assert p.shown() in line, (name, p.name, line)


def test_docs_parameter_page_is_current():
    from nteval.report.reference import parameters_markdown

    page = (DOCS / "parameters.md").read_text(encoding="utf-8")
    assert page == parameters_markdown() + "\n", "docs/parameters.md is stale: run python scripts/parameters_page.py"
