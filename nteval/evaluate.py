"""Score runs against qrels with ir_measures (trec_eval via pytrec_eval underneath).

Measure names are ir_measures' (``AP``, ``Bpref``, ``RR``, ``P@10``, ``nDCG@10``, ``R@1000``).
Topics in the qrels but missing from a run score 0 and count in the mean, as ``trec_eval -c``.
Rankings are taken in trec_eval's order (see :mod:`nteval.formats.trec`).
"""
from __future__ import annotations

from collections.abc import Sequence

from .errors import InputError
from .formats.trec import Qrels, Run

DEFAULT_MEASURES = ("RR", "AP", "Bpref", "P@10", "nDCG@10", "R@1000")


def parse_measures(names: Sequence[str] | str) -> list:
    import ir_measures

    if isinstance(names, str):
        names = names.replace(",", " ").split()
    out = []
    for n in names:
        try:
            out.append(ir_measures.parse_measure(n))
        except Exception:
            raise InputError(None, f"unknown measure {n!r} (ir_measures names, e.g. AP Bpref RR P@10 nDCG@10 R@1000)") from None
    return out


def evaluate_run(qrels: Qrels, run: Run, measures: Sequence[str] | str = DEFAULT_MEASURES
                 ) -> tuple[dict[str, float], dict[str, dict[str, float]]]:
    """(mean per measure over all qrels topics, per-topic values)."""
    import ir_measures

    ms = parse_measures(measures)
    names = [str(m) for m in ms]
    per_topic: dict[str, dict[str, float]] = {q: {n: 0.0 for n in names} for q in qrels}
    run_dict = {q: {d: float(s) for d, s in ranking} for q, ranking in run.items() if q in qrels and ranking}
    if run_dict:
        for m in ir_measures.iter_calc(ms, qrels, run_dict):
            per_topic[m.query_id][str(m.measure)] = float(m.value)
    n = len(per_topic)
    means = {name: (sum(v[name] for v in per_topic.values()) / n if n else 0.0) for name in names}
    return means, per_topic
