"""What a protocol is: a spec of its parameters, a builder of topics and qrels, the index its
queries search, its default measures and the verdict it gives.

Everything downstream (running systems, evaluating, the verdict, the grid, correlate, reports)
is generic over this interface, so a new protocol is one module: a :class:`ProtocolSpec`
subclass and a :class:`Protocol` subclass registered in :mod:`nteval.protocols`.
"""
from __future__ import annotations

import dataclasses
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Generic, TypeVar

from ..errors import InputError, short
from ..formats.trec import Qrels
from ..index import require_store_features
from ..params import check_declared, param

__all__ = ["Protocol", "ProtocolSpec", "TopicSet", "VerdictSpec", "param"]


@dataclass(frozen=True)
class VerdictSpec:
    """The verdict a protocol gives: its measure, the search task it stands for, and the human
    judgments it was measured to agree with."""

    protocol: str
    measure: str
    task: str
    agrees_with: str



@dataclass(frozen=True)
class ProtocolSpec:
    """Parameters every protocol has. Subclasses add theirs with :func:`param`."""

    n_topics: int = param(1000, "documents sampled as topics (D0)", min=1, flag="--topics")
    seed: int = param(42, "sampling seed (same seed + same index = byte-identical topics and qrels)", min=0)

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> None:
        """One-line error naming the parameter when a value is out of its bounds or choices."""
        check_declared(self)

    def as_dict(self) -> dict[str, Any]:
        return {k: list(v) if isinstance(v, tuple) else v for k, v in dataclasses.asdict(self).items()}

    @classmethod
    def describe(cls) -> list[tuple[str, str, Any, str]]:
        """(name, type, default, help) of every parameter, for ``nteval protocols``."""
        hints = typing.get_type_hints(cls)
        return [(f.name, _type_name(hints[f.name]), f.default, f.metadata.get("help", "")) for f in dataclasses.fields(cls)]

    @classmethod
    def from_params(cls, params: dict[str, str] | None = None, **typed: Any) -> ProtocolSpec:
        """A spec from ``--param name=value`` strings (parsed by each field's type) and typed values."""
        hints = typing.get_type_hints(cls)
        names = {f.name for f in dataclasses.fields(cls)}
        values: dict[str, Any] = {}
        for name, text in (params or {}).items():
            if name not in names:
                raise InputError(None, f"--param {short(name)}: {cls.__name__} has no such parameter "
                                       f"(it has: {', '.join(sorted(names))})")
            values[name] = _parse(name, text, hints[name])
        unknown = set(typed) - names
        if unknown:
            raise InputError(None, f"{cls.__name__} has no parameter {', '.join(sorted(unknown))}")
        return cls(**{**typed, **values})


def _type_name(t: Any) -> str:
    args = [a for a in typing.get_args(t) if a is not type(None)]
    if typing.get_origin(t) in (typing.Union, types.UnionType):
        return _type_name(args[0]) + " or none"
    if typing.get_origin(t) is tuple:
        return "list of " + _type_name(args[0])
    return getattr(t, "__name__", str(t))


def _parse(name: str, text: str, t: Any) -> Any:
    """``text`` as a value of type ``t`` (int, float, bool, str, tuple of str, or optional)."""
    origin, args = typing.get_origin(t), [a for a in typing.get_args(t) if a is not type(None)]
    if origin in (typing.Union, types.UnionType):
        return None if text.lower() in ("", "none", "null") else _parse(name, text, args[0])
    if origin is tuple:
        return tuple(_parse(name, part.strip(), args[0]) for part in text.split(",") if part.strip())
    try:
        if t is bool:
            if text.lower() not in ("true", "false", "yes", "no", "1", "0"):
                raise ValueError(text)
            return text.lower() in ("true", "yes", "1")
        return t(text)
    except ValueError:
        kind = {int: "a whole number", float: "a number", bool: "true or false"}.get(t, _type_name(t))
        raise InputError(None, f"--param {name}={text[:80]}: not {kind}") from None


@dataclass
class TopicSet:
    """What a protocol built: the queries systems run, the qrels, and how they came about.

    ``run_topics`` may hold more queries than ``topics`` (high-recall runs every sampled
    sentence, so runs are shared across S_ref choices); evaluation uses ``qrels``' topics.
    ``strata`` groups topics for per-group results ({"language": {"ger": [qid, ...]}}).
    ``sources``: the document each topic is made from, where the topic id is not that docid
    (:mod:`nteval.topics.ids`); a held-out run hides it from its topic.
    """

    topics: dict[str, str]
    qrels: Qrels
    counts: dict[str, int]                       # requested, eligible, used
    stats: dict[str, Any] = field(default_factory=dict)
    run_topics: dict[str, str] | None = None
    strata: dict[str, dict[str, list[str]]] = field(default_factory=dict)
    holdout: bool = False
    sources: dict[str, str] | None = None

    @property
    def queries(self) -> dict[str, str]:
        return self.run_topics if self.run_topics is not None else self.topics

    def source(self, qid: str) -> str:
        """The docid topic ``qid`` is made from."""
        return self.sources.get(qid, qid) if self.sources else qid


#: the spec type a protocol's :meth:`Protocol.build` takes (its ``Spec``)
SpecT = TypeVar("SpecT", bound=ProtocolSpec)


class Protocol(Generic[SpecT]):
    """One NT protocol. Subclasses set the class attributes and implement :meth:`build`."""

    name: ClassVar[str]
    Spec: ClassVar[type[ProtocolSpec]]
    searches: ClassVar[str]                      # the index systems search: "nt" or "all"
    measures: ClassVar[tuple[str, ...]]          # default measures (the verdict's first)
    verdict: ClassVar[VerdictSpec]
    summary: ClassVar[str]                       # one line: query, relevant documents, index
    #: document-store features the index must have (see nteval.corpus.store.FEATURES)
    requires: ClassVar[tuple[str, ...]] = ()
    #: run by ``nteval demo`` on the bundled 2,000-record sample
    in_demo: ClassVar[bool] = False
    #: measures ``nteval grid`` maps when --measure is not given (default: the verdict's)
    grid_measures: ClassVar[tuple[str, ...]] = ()
    #: (NT measure, human measure) pairs ``nteval correlate`` reports (default: verdict measure vs AP)
    correlate_pairs: ClassVar[tuple[tuple[str, str], ...]] = ()

    def build(self, index_dir: Path, spec: SpecT, out: Path, progress: bool | None = None,
              systems_path: Path | None = None) -> TopicSet:
        """Topics and qrels (deterministic for a spec and an index). May write protocol files
        under ``out`` (the caller writes topics.tsv and qrels.txt). ``systems_path``: the systems
        file in use (where a protocol looks up systems it names, e.g. an S_ref)."""
        raise NotImplementedError

    def check_index(self, index_dir: Path) -> None:
        """One-line error, before any work, when the index lacks what this protocol reads."""
        if self.requires:
            require_store_features(index_dir, self.requires)

    def __init_subclass__(cls, **kw: Any) -> None:
        super().__init_subclass__(**kw)
        if not cls.__dict__.get("grid_measures") and hasattr(cls, "verdict"):
            cls.grid_measures = (cls.verdict.measure,)
        if not cls.__dict__.get("correlate_pairs") and hasattr(cls, "verdict"):
            cls.correlate_pairs = ((cls.verdict.measure, "AP"),)

    def report_lines(self, results: dict[str, Any]) -> list[str]:
        """Protocol-specific lines printed after the verdict (e.g. pseudo-qrels statistics)."""
        return []
