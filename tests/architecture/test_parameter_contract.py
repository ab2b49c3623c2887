"""One parameter table: the command-line options, the listings and the docs say what the
declarations in the code say (a help text or a documented default that drifts fails here)."""
from __future__ import annotations

import dataclasses
from pathlib import Path

import click
import pytest

from nteval.cli import HIGHRECALL_OPTIONS, main
from nteval.protocols import get, names
from nteval.systems import registry

DOCS = Path(__file__).resolve().parents[2] / "docs"
SAMPLE_FILTERS = ("language", "year_min", "year_max", "min_sentences", "min_title_tokens")


def _options(command: str) -> dict[str, click.Option]:
    return {p.name: p for p in main.commands[command].params if isinstance(p, click.Option)}


@pytest.mark.parametrize("command, fields", [
    ("highrecall", ("sref", *HIGHRECALL_OPTIONS, *SAMPLE_FILTERS)),
    ("grid", ("sref", *HIGHRECALL_OPTIONS, *SAMPLE_FILTERS)),
    ("correlate", ("sref", *HIGHRECALL_OPTIONS)),
    ("focused", SAMPLE_FILTERS),
    ("compare", ("sref", *SAMPLE_FILTERS)),
    ("sref-sensitivity", (*HIGHRECALL_OPTIONS, *SAMPLE_FILTERS)),
])
def test_protocol_options_are_the_declarations(command, fields):
    spec = {f.name: f for f in dataclasses.fields(get("highrecall").Spec)}
    opts = _options(command)
    for name in fields:
        f, opt = spec[name], opts[name]
        assert opt.help.rstrip(".").lower() == f.metadata["help"].lower(), (command, name)
        if isinstance(f.default, tuple):
            assert opt.multiple and not opt.show_default
        else:
            assert opt.default == f.default, (command, name, opt.default, f.default)
        if f.metadata.get("choices"):
            assert sorted(opt.type.choices) == sorted(f.metadata["choices"]), (command, name)


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
