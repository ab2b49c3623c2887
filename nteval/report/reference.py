"""The docs' parameter tables, made from the declarations (protocol specs and system kinds): the
page ``docs/parameters.md`` is this text, and a test fails when they differ."""
from __future__ import annotations

import dataclasses
from typing import Any


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
    from ..protocols import get, names
    from ..systems import registry

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
    lines += ["## System kinds", "", "The `algorithm:` of a systems YAML (`nteval systems` lists them too).", ""]
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
