"""Any PyTerrier transformer or pipeline as an nteval system (``pip install 'nteval[pyterrier]'``).

In a systems YAML: ``{name: mine, pyterrier: "mypkg.pipelines:bm25_then_rerank", version: "3"}``
(needs ``--allow-code``, like ``callable:``); from Python:
:func:`nteval.pyterrier.system` ``("mine", pipeline_or_factory, version="3")``.

The target names a **factory**: called with the :class:`Collection` the protocol searches (its
documents as PyTerrier's ``get_corpus_iter()`` gives them, and a directory to keep the pipeline's
own indexes in), it returns the transformer; a factory that takes no argument, or a transformer
given directly from Python, is used as it is. nteval calls ``transform`` on a frame of ``qid``,
``query`` and reads ``qid``, ``docno``, ``score`` back; the rankings are validated like any run
nteval did not compute (topics, documents of the collection) and cached under ``version``: change
it when the pipeline changes.
"""
from __future__ import annotations

import inspect
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..corpus.store import index_docids, index_texts
from ..errors import InputError, short
from .engines import require
from .external import _call_user, _import, validate
from .kind import RunContext, SystemKind

if TYPE_CHECKING:
    from ..formats.trec import Run
    from .system import System


@dataclass(frozen=True)
class Collection:
    """What a factory may build its pipeline from: the documents of Lucene index ``index_name``
    of the nteval index ``index_dir`` (the texts Lucene indexed), and ``cache_dir``, a directory
    (made on first use) for the pipeline's own indexes, keyed by the index's content fingerprint
    and the system's name and version."""

    index_dir: Path
    index_name: str
    fingerprint: str
    cache_dir: Path

    def get_corpus_iter(self, verbose: bool = False) -> Iterator[dict[str, str]]:
        """``{"docno", "text"}`` of every document, in the store's order (PyTerrier's convention)."""
        for docid, text in index_texts(self.index_dir, self.index_name):
            yield {"docno": docid, "text": text}

    def __len__(self) -> int:
        return len(index_docids(self.index_dir, self.index_name))


def collection(target: Any, system: System) -> Collection:
    root = Path(os.environ["NTEVAL_ENGINE_CACHE"]) if os.environ.get("NTEVAL_ENGINE_CACHE") else \
        Path(target.index_dir) / "engines"
    tag = "".join(c if c.isalnum() or c in "-_." else "_" for c in f"{system.name}-{system.params['version']}")
    return Collection(Path(target.index_dir), target.index_name, target.fingerprint,
                      root / f"{target.index_name}-pyterrier-{tag}-{target.fingerprint[:16]}")


def transformer_of(system: System, coll: Collection) -> Any:
    """The system's transformer: its object (from Python), or what its factory returns."""
    pt = require("pyterrier", "pyterrier", "pyterrier")
    obj = system.fn if system.fn is not None else _import(system)
    if not isinstance(obj, pt.Transformer):
        try:
            takes = len(inspect.signature(obj).parameters)
        except (TypeError, ValueError):
            takes = 0
        obj = _call_user(system, obj, coll) if takes else _call_user(system, obj)
    if not isinstance(obj, pt.Transformer):
        raise InputError(None, f"system {short(system.name)}: its factory returned {short(type(obj).__name__)}, not a "
                               "PyTerrier transformer")
    return obj


class PyTerrierKind(SystemKind):
    name = "pyterrier"
    yaml_keys = ("pyterrier",)
    runs_code = True
    computed = False
    extra = "pyterrier"
    needs_lucene = False
    summary = "a PyTerrier transformer or pipeline (pip install 'nteval[pyterrier]'), cached under its version"

    def run(self, target: Any, system: System, topics: dict[str, str], depth: int, ctx: RunContext) -> Run:
        import pandas as pd

        coll = collection(target, system)
        pipeline = transformer_of(system, coll)
        qids = list(topics)
        frame = _call_user(system, pipeline.transform, pd.DataFrame({"qid": qids, "query": [topics[q] for q in qids]}))
        if not isinstance(frame, pd.DataFrame) or not {"qid", "docno", "score"} <= set(frame.columns):
            raise InputError(None, f"system {short(system.name)}: its pipeline must return a frame with qid, docno and "
                                   f"score columns (got {short(type(frame).__name__)})")
        # every row kept as it came (a docno twice, a score that is not a number): validate refuses them
        raw: dict[str, list[tuple[str, Any]]] = {}
        for qid, docno, score in zip(frame["qid"].astype(str), frame["docno"].astype(str), frame["score"]):
            raw.setdefault(qid, []).append((docno, score))
        run, notes = validate(system, raw, topics, depth, target.index_dir, target.index_name, target.label)
        target.notes[system.name] = {**notes, "pipeline": short(repr(pipeline), 120)}
        ctx.tick(len(topics))
        return run

    def describe(self, system: System) -> str:
        what = system.params.get("target") or type(system.fn).__name__
        return f"pyterrier {short(what, 40)} (version {system.params.get('version')})"
