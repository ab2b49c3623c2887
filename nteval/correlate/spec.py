"""What one ``correlate`` call compares: :class:`CorrelateSpec`."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import InputError
from ..params import check_declared, param
from ..report.caveats import MIN_SYSTEMS
from ..settings import HumanJudgments

#: Fewer human topics than this and the human ranking itself is noise (see the human ceiling).
MIN_HUMAN_TOPICS = 20
#: the protocols correlate runs by default
DEFAULT_PROTOCOLS = ("focused", "highrecall")


@dataclass(frozen=True)
class CorrelateSpec:
    """NT rankings set against a human one. ``human``: the judged topics; ``protocols``:
    registered protocols run on the same systems (each with its declared (NT measure, human
    measure) pairs unless ``pairs`` is given); ``protocol_params``: {protocol: spec parameters};
    ``n_topics``/``seed``: the NT topics of each protocol; ``n_boot``: topic-bootstrap replicates
    of every interval; ``splits``: random halves of the human topics for the human-vs-human
    ceiling; ``pool_depth``/``trials``: the run-based judgment-free baselines (reference count,
    Soboroff); ``min_systems``/``min_human_topics``: below them, a one-line error."""

    human: HumanJudgments
    protocols: tuple[str, ...] = param(DEFAULT_PROTOCOLS, "protocols (see `nteval protocols`) whose rankings are set "
                                                          "against the human one, joined by commas", sep=",")
    protocol_params: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    n_topics: int = param(1000, "NT topics per protocol", min=1, flag="--topics")
    seed: int = param(42, "sampling seed (same seed + same index = byte-identical topics and qrels)", min=0)
    n_boot: int = param(1000, "bootstrap replicates (topics resampled)", min=10, max=20_000, flag="--bootstrap")
    splits: int = param(20, "random halves of the human topics for the human-vs-human ceiling", min=2, flag="")
    pool_depth: int = param(100, "top documents per run pooled for the run-based baselines", min=1, flag="")
    trials: int = param(10, "random draws of the Soboroff baseline", min=1, flag="")
    pairs: tuple[tuple[str, str, str], ...] | None = None
    min_systems: int = param(MIN_SYSTEMS, "fail when fewer systems are compared", min=1)
    min_human_topics: int = param(MIN_HUMAN_TOPICS, "fail when fewer human topics are judged", min=1)

    def __post_init__(self) -> None:
        object.__setattr__(self, "protocols", tuple(self.protocols))
        if self.pairs is not None:
            object.__setattr__(self, "pairs", tuple(tuple(p) for p in self.pairs))
        if isinstance(self.n_topics, int) and not isinstance(self.n_topics, bool) and self.n_topics < 1:
            raise InputError(None, f"--topics must be ≥ 1, got {self.n_topics}")
        check_declared(self, as_options=True)
