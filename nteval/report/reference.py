"""The docs' parameter tables, made from the declarations (protocol specs, system kinds, run
settings, execution, grid and correlate specs): the page ``docs/parameters.md`` is this text, and
a test fails when they differ."""
from __future__ import annotations

import dataclasses
from typing import Any

from ..params import declared, flag_of
from ..protocols import get, names
from ..systems import registry


def _cell(value: Any) -> str:
    if isinstance(value, (tuple, list)):
        return "(" + ", ".join(map(str, value)) + ")" if value else "(none)"
    return f"`{value}`" if value is not None else "none"


def _bounds(meta: Any) -> str:
    """A spec field's bounds from its metadata (:func:`nteval.protocols.base.param`)."""
    parts = [" \\| ".join(meta["choices"])] if meta.get("choices") else []
    parts += [f"≥ {meta['min']:g}"] if meta.get("min") is not None else []
    parts += [f"≤ {meta['max']:g}"] if meta.get("max") is not None else []
    return ", ".join(parts)


def parameters_markdown() -> str:
    lines = ["# Parameters", "",
             "Every parameter nteval's protocols and system kinds declare, with its default and bounds. This page is "
             "generated from the declarations in the code (`python scripts/parameters_page.py` rewrites it; a test "
             "fails when it is stale). Protocol parameters are `--param NAME=VALUE` of `nteval run` (and "
             "`--protocol-param PROTOCOL.NAME=VALUE` of `grid` and `correlate`); the high-recall and sampling ones are "
             "also options of the protocol commands (`--zt 2.5`, `--min-sentences 3`). System parameters are "
             "`params:` of a systems YAML and the axes of `nteval grid --param`.", "", "## Protocols", ""]
    for name in names():
        p = get(name)
        lines += [f"### {name}", "", f"{p.summary}. Verdict: {p.verdict.measure}; default measures: "
                  f"{', '.join(p.measures)}.", "", "| parameter | default | bounds | what it is |", "|---|---|---|---|"]
        for f in dataclasses.fields(p.Spec):
            lines.append(f"| `{f.name}` | {_cell(f.default)} | {_bounds(f.metadata)} | "
                         f"{f.metadata.get('help', '').replace('|', '/')} |")
        lines.append("")
    lines += _settings_sections()
    lines += ["## System kinds", "", "The `algorithm:` of a systems YAML (`nteval systems` lists them too). Every kind, "
              "and every system nteval does not compute (`run`, `callable`, `command`, `pyterrier`), also accepts "
              "`family`: the system's declared family (docs/gate.md, \"Across families\").", ""]
    for name in registry.names():
        kind = registry.get(name)
        keys = f" (declared by `{'` or `'.join(kind.yaml_keys)}:`)" if kind.yaml_keys else ""
        lines += [f"### {name}", "", f"{kind.summary}{keys}.", ""]
        if kind.params:
            lines += ["| parameter | default | bounds | what it is |", "|---|---|---|---|"]
            for prm in kind.params:
                bounds = [" \\| ".join(prm.choices)] if prm.choices else []
                bounds += ["> 0"] if prm.positive else []
                bounds += [f"≥ {prm.min:g}"] if prm.min is not None else []
                bounds += [f"≤ {prm.max:g}"] if prm.max is not None else []
                lines.append(f"| `{prm.name}` | {_cell(prm.default)} | {', '.join(bounds)} | {prm.help} |")
            lines.append("")
    return "\n".join(lines)


#: the spec objects of every run beside the protocols' own: (heading, module, class, what it is)
SETTINGS = (
    ("Run settings", "nteval.settings", "RunSettings", "What a protocol run measures and how strictly it judges "
     "(`nteval.RunSettings`; options of the protocol commands, `run`, `compare` and `correlate`)."),
    ("Execution", "nteval.settings", "Execution", "How the work runs, never what it computes (`nteval.Execution`)."),
    ("Systems", "nteval.settings", "SystemSet", "The systems to run (`nteval.SystemSet`: a YAML, a shipped set or "
     "a list of Systems, with the external runs of `--runs` after them)."),
    ("Human judgments", "nteval.settings", "HumanJudgments", "Judged topics of `grid` and `correlate` "
     "(`nteval.HumanJudgments`)."),
    ("Grid", "nteval.grid.spec", "GridSpec", "What `nteval grid` evaluates beside its axes (`nteval.GridSpec`)."),
    ("Correlate", "nteval.correlate.spec", "CorrelateSpec", "What `nteval correlate` compares "
     "(`nteval.CorrelateSpec`)."),
    ("Tune", "nteval.tune", "TuneSpec", "What `nteval tune` searches (`nteval.tune.TuneSpec`; the ranges are "
     "`--param NAME=LOW:HIGH`)."),
)


def _settings_sections() -> list[str]:
    import importlib

    lines = ["## Run settings, execution, grid, correlate and tune", "",
             "The spec objects the pipelines take (`nteval.run_protocol(..., settings=RunSettings(depth=100))`, or "
             "their fields as plain keywords). The option is the command-line spelling; a field without one is "
             "Python only.", ""]
    for heading, module, name, what in SETTINGS:
        cls = getattr(importlib.import_module(module), name)
        lines += [f"### {heading}", "", what, "", "| field | option | default | bounds | what it is |",
                  "|---|---|---|---|---|"]
        for f in declared(cls):
            option = f"`{flag_of(f)}`" if f.metadata.get("option", True) else "—"
            lines.append(f"| `{f.name}` | {option} | {_cell(f.default)} | {_bounds(f.metadata)} | "
                         f"{f.metadata['help'].replace('|', '/')} |")
        lines.append("")
    return lines
