"""No function of the package over 80 lines or 8 parameters (issue 50, code health): a longer one
is a pipeline stage to split, a longer parameter list a spec object to make."""
from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "nteval"
MAX_LINES, MAX_PARAMS = 80, 8


def _functions():
    for f in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(f.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                a = node.args
                names = [x.arg for x in (*a.posonlyargs, *a.args, *a.kwonlyargs)]
                params = len(names) - (1 if names and names[0] in ("self", "cls") else 0)
                yield f"{f.relative_to(PACKAGE.parent)}:{node.lineno} {node.name}", node.end_lineno - node.lineno + 1, params


def test_no_function_is_over_80_lines_or_8_parameters():
    found = list(_functions())
    assert len(found) > 500   # (the walk sees the package)
    long = [(where, n) for where, n, _ in found if n > MAX_LINES]
    wide = [(where, p) for where, _, p in found if p > MAX_PARAMS]
    assert not long, f"functions over {MAX_LINES} lines: {long}"
    assert not wide, f"functions over {MAX_PARAMS} parameters: {wide}"
