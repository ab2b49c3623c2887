"""The index directory: ``all/`` and ``nt/`` Lucene indexes, the document store, ``manifest.json``.

:mod:`.manifest` reads an index back (manifest, documents policy, fingerprint, store features);
:mod:`.build` builds one from Medline/BEIR sources and applies updates. The readers load with
this package; the builders (and the parsers they use) only when first asked for, so a command that
only reads an index never imports them.
"""
from __future__ import annotations

from typing import Any

from . import manifest
from .manifest import *  # noqa: F403  (the readers, listed in manifest.__all__)

#: what :mod:`.build` offers, one attribute away (``nteval.index.build_index``)
_BUILD = ("build_index", "update_index", "not_applied", "parse_file", "load_store", "index_parameters", "PARAMETERS",
          "UPDATABLE_STORE_FORMAT", "totals")

__all__ = [*manifest.__all__, *_BUILD]


def __getattr__(name: str) -> Any:
    if name in _BUILD:
        from . import build

        return getattr(build, name)
    raise AttributeError(f"module 'nteval.index' has no attribute {name!r}")
