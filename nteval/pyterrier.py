"""PyTerrier both ways (``pip install 'nteval[pyterrier]'``).

- :func:`system`: any PyTerrier transformer or pipeline (or a factory of one) as an nteval system,
  scored beside the zoo by ``run_focused``, ``run_compare``, the grid's references…
- :func:`dataset`: an NT topic set (the OUT of ``nteval focused``, ``highrecall``, ``run``) as a
  PyTerrier dataset: ``get_topics()`` (``qid``, ``query``), ``get_qrels()`` (``qid``, ``docno``,
  ``label``) and ``get_corpus_iter()`` (the documents the protocol searched, as Lucene indexed
  them), so that ``pt.Experiment`` over NT topics gives the numbers nteval gives (the same
  ir_measures names)::

      import pyterrier as pt, nteval.pyterrier as ntpt
      ds = ntpt.dataset("out/focused")
      pt.Experiment([pipeline], ds.get_topics(), ds.get_qrels(), eval_metrics=["RR", "nDCG@10"])
"""
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from . import protocols
from .corpus.store import index_texts
from .errors import InputError, read_json_file, short
from .formats.trec import read_qrels, read_topics
from .systems.engines import require
from .systems.system import System, check_name

__all__ = ["NTDataset", "dataset", "system"]


def system(name: str, pipeline: Any, version: str) -> System:
    """A PyTerrier transformer — or a factory ``f(collection) -> transformer`` called with the
    :class:`~nteval.systems.pyterrier.Collection` a protocol searches — as an nteval system. Its
    runs are cached under ``version``: change it when the pipeline changes."""
    check_name(name, None, "name")
    if not callable(pipeline):
        raise InputError(None, f"system {short(name)}: {short(pipeline)} is neither a PyTerrier transformer nor a factory")
    return System(name, "pyterrier", {"version": str(version)}, fn=pipeline)


class NTDataset:
    """One NT topic set as PyTerrier reads a dataset (see the module docstring)."""

    def __init__(self, out: Path, protocol: str, index_dir: Path, index_name: str):
        self.out, self.protocol, self.index_dir, self.index_name = out, protocol, index_dir, index_name

    def get_topics(self, variant: str | None = None) -> Any:
        import pandas as pd

        topics = read_topics(self.out / "topics.tsv")
        return pd.DataFrame({"qid": list(topics), "query": list(topics.values())})

    def get_qrels(self, variant: str | None = None) -> Any:
        import pandas as pd

        rows = [(q, d, r) for q, docs in read_qrels(self.out / "qrels.txt").items() for d, r in docs.items()]
        return pd.DataFrame(rows, columns=["qid", "docno", "label"])

    def get_corpus_iter(self, verbose: bool = False) -> Iterator[dict[str, str]]:
        for docid, text in index_texts(self.index_dir, self.index_name):
            yield {"docno": docid, "text": text}

    @property
    def cache_dir(self) -> Path:
        """A directory under OUT for a pipeline's own indexes (so a factory of :func:`system` can be
        given this dataset as its collection)."""
        return self.out / "pyterrier-cache"

    def info_url(self) -> None:
        return None

    def __repr__(self) -> str:
        return f"NTDataset({str(self.out)!r}, protocol={self.protocol!r}, searches={self.index_name!r})"


def dataset(out: str | Path) -> NTDataset:
    """The NT topic set a protocol run wrote to ``out`` (its results.json says which index)."""
    require("pandas", "pyterrier", "the PyTerrier dataset")

    out = Path(out)
    for name in ("topics.tsv", "qrels.txt", "results.json"):
        if not (out / name).is_file():
            raise InputError(out, f"not the OUT of a protocol run (no {name})")
    res = read_json_file(out / "results.json", "unreadable results.json", "run the protocol again")

    proto = protocols.get(str(res.get("protocol")))
    index_dir = Path(str(res.get("index")))
    if not index_dir.is_dir():
        raise InputError(index_dir, "the run's index is not there any more (the corpus is read from it)")
    return NTDataset(out, proto.name, index_dir, proto.searches)

