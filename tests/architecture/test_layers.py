"""The package's import graph against its declared layer order: no cycles, no upward imports.

Every import of an nteval module counts, at module level or inside a function (a deferred import
hides a cycle; it does not remove it). Imports under ``if TYPE_CHECKING:`` are types only and do
not count. Deferred imports of heavy *third-party* libraries (Lucene, torch, FAISS, Dask) are
allowed anywhere: they are not nteval modules. A module-level ``__getattr__`` that serves a name
moved elsewhere for one release (with a DeprecationWarning) may import where the name went. The order is written down in
docs/contributing.md ("Layer rules"); change both together.
"""
from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2] / "nteval"
sys.path.insert(0, str(ROOT.parent / "scripts"))
from hoist_imports import sccs  # noqa: E402  (Tarjan's strongly connected components: one copy, the tool's)

#: low → high; a module may import its own layer or lower ones. Prefixes match packages.
LAYERS: list[tuple[str, ...]] = [
    ("nteval._version", "nteval.errors", "nteval.settings", "nteval.params", "nteval.plugins", "nteval.progress", "nteval.lifecycle", "nteval.atomic",
     "nteval.stats", "nteval.significance", "nteval.effects", "nteval.reliability",
     "nteval.gate.decide"),
    ("nteval.corpus",),
    ("nteval.formats",),
    ("nteval.lucene",),
    ("nteval.index",),
    ("nteval.topics",),
    ("nteval.encoders",),
    ("nteval.systems",),
    ("nteval.cluster",),
    ("nteval.runs", "nteval.session", "nteval.evaluate", "nteval.scores", "nteval.traits", "nteval.leak"),
    ("nteval.protocols",),
    ("nteval.verdict", "nteval.evidence", "nteval.answer", "nteval.gate.families"),
    ("nteval.report",),
    ("nteval.experiment", "nteval.compare", "nteval.export", "nteval.pyterrier", "nteval.encode"),
    ("nteval.correlate",),
    ("nteval.grid",),
    ("nteval.tune",),
    ("nteval.gate",),
    ("nteval.demo",),
    ("nteval.cli", "nteval.__main__"),
]
#: The package's front door re-exports the public verbs; it sits above everything.
TOP = ("nteval",)
#: Old module paths kept for one release (they warn and re-export): not part of the layering.
SHIMS = {"nteval.correlate.stats", "nteval.correlate.caveats"}


def module_name(path: Path) -> str:
    rel = path.relative_to(ROOT.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def layer(mod: str) -> int:
    if mod == "nteval":
        return len(LAYERS)
    best = None
    for i, prefixes in enumerate(LAYERS):
        for p in prefixes:
            if mod == p or mod.startswith(p + "."):
                if best is None or len(p) > best[1]:
                    best = (i, len(p))
    if best is None:
        raise AssertionError(f"{mod} is in no declared layer: add it to LAYERS (and docs/contributing.md)")
    return best[0]


def _type_checking(node: ast.If) -> bool:
    t = node.test
    return (isinstance(t, ast.Name) and t.id == "TYPE_CHECKING") or (
        isinstance(t, ast.Attribute) and t.attr == "TYPE_CHECKING")


def imports(path: Path, mod: str) -> set[str]:
    """The nteval modules ``mod`` imports anywhere in its code (not under TYPE_CHECKING)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
    out: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.FunctionDef) and node.name == "__getattr__" and node in tree.body:
            return  # (a deprecation shim for moved names)
        if isinstance(node, ast.If) and _type_checking(node):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name.split(".")[0] == "nteval")
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] == "nteval":
                for a in node.names:  # `from . import protocols` imports a module
                    sub = f"{target}.{a.name}"
                    out.add(sub if (ROOT.parent / (sub.replace(".", "/") + ".py")).exists()
                            or (ROOT.parent / sub.replace(".", "/")).is_dir() else target)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    out.discard(mod)
    return out


def graph() -> dict[str, set[str]]:
    g = {}
    for path in sorted(ROOT.rglob("*.py")):
        mod = module_name(path)
        g[mod] = imports(path, mod)
    return g


#: the import graph, read once for all the tests of this module
graph_cache = graph()


def test_every_module_has_a_layer():
    for mod in graph_cache:
        if mod not in SHIMS:
            layer(mod)


def test_no_upward_imports():
    bad = []
    for mod, deps in graph_cache.items():
        if mod in SHIMS:
            continue
        for dep in sorted(deps):
            if dep in SHIMS:
                bad.append(f"{mod} imports the deprecated {dep}")
            elif dep != "nteval" and layer(dep) > layer(mod):
                bad.append(f"{mod} (layer {layer(mod)}) imports {dep} (layer {layer(dep)})")
            elif dep == "nteval" and mod != "nteval.__main__":
                bad.append(f"{mod} imports the package front door nteval")
    assert not bad, "imports against the layer order:\n" + "\n".join(bad)


def test_no_cycles():
    g = {m: {d for d in deps if d in graph_cache} for m, deps in graph_cache.items()}
    cycles = [sorted(c) for c in sccs(g)]
    assert not cycles, "import cycles:\n" + "\n".join(" ↔ ".join(c) for c in cycles)


def test_the_checker_sees_deferred_imports(tmp_path):
    """The scan counts an import inside a function and skips one under TYPE_CHECKING, so a cycle
    hidden by a deferred import is found."""
    q = tmp_path / "runs.py"
    q.write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .grid import run\n"
                 "def f():\n    from .cluster import session\n")
    assert imports(q, "nteval.runs") == {"nteval.cluster"}
