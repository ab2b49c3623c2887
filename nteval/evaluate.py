"""Score runs against qrels with ir_measures (trec_eval via pytrec_eval underneath).

Measure names are ir_measures' (``AP``, ``Bpref``, ``RR``, ``P@10``, ``nDCG@10``, ``R@1000``).
Topics in the qrels but missing from a run score 0 and count in the mean, as ``trec_eval -c``.
Rankings are taken in trec_eval's order (see :mod:`nteval.formats.trec`).
"""
from __future__ import annotations

from collections.abc import Sequence

from .errors import InputError, short
from .formats.trec import Qrels, Run

DEFAULT_MEASURES = ("RR", "AP", "Bpref", "P@10", "nDCG@10", "R@1000")


def _check_measure(name: str, m) -> None:
    """Refuse parameter values trec_eval/pytrec_eval cannot take (``P@0`` aborts the interpreter
    inside pytrec_eval, ``Judged@0`` divides by zero, ``nDCG@1e3`` trips an assertion) and
    measures no installed provider computes, before any work is done."""
    from ir_measures import DefaultPipeline

    for key, value in m.params.items():
        if key in ("cutoff", "rel") and value is not None:
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                what = "cutoff" if key == "cutoff" else "relevance level (rel=)"
                raise InputError(None, f"measure {short(name)}: the {what} must be a positive whole number, "
                                       f"got {short(value)}")
    if not any(p.supports(m) and p.is_available() for p in DefaultPipeline.providers):
        raise InputError(None, f"measure {short(name)}: no installed evaluator computes it "
                               "(use trec_eval measures, e.g. AP Bpref RR P@10 nDCG@10 R@1000)")


def parse_measures(names: Sequence[str] | str) -> list:
    """ir_measures names → measure objects, validated (one-line InputError on the first bad one)."""
    import ir_measures

    if isinstance(names, str):
        names = names.replace(",", " ").split()
    out = []
    for n in names:
        try:
            m = ir_measures.parse_measure(n)
        except Exception:
            raise InputError(None, f"unknown measure {short(n)} (ir_measures names, e.g. AP Bpref RR P@10 nDCG@10 R@1000)") from None
        _check_measure(n, m)
        out.append(m)
    if not out:
        raise InputError(None, "no measure given (e.g. --measures \"AP nDCG@10\")")
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
