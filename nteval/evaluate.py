"""Score runs against qrels with ir_measures (trec_eval via pytrec_eval underneath).

Measure names are ir_measures' (``AP``, ``Bpref``, ``RR``, ``P@10``, ``nDCG@10``, ``R@1000``).
Topics in the qrels but missing from a run score 0 and count in the mean, as ``trec_eval -c``.
Rankings are taken in trec_eval's order (see :mod:`nteval.formats.trec`).
"""
from __future__ import annotations

import sys
from collections.abc import Sequence

from .errors import InputError, short, suggest
from .formats.topics import load_qrels
from .formats.trec import Qrels, Run, read_run
from .progress import shown, tqdm

DEFAULT_MEASURES = ("RR", "AP", "Bpref", "P@10", "nDCG@10", "R@1000")

#: The largest cutoff a measure may have (deeper than any run nteval makes: --depth is at most
#: this) and the largest relevance level (graded qrels use a handful); larger values crashed the
#: evaluator after every run was made.
MAX_CUTOFF = 100_000
MAX_REL = 1_000

#: trec_eval's measure names (``trec_eval -m``) → ir_measures' (what nteval writes).
TREC_EVAL_NAMES = {"map": "AP", "recip_rank": "RR", "bpref": "Bpref", "ndcg": "nDCG", "Rprec": "Rprec",
                   "num_rel_ret": "NumRelRet", "num_ret": "NumRet", "num_rel": "NumRel", "set_P": "SetP",
                   "set_recall": "SetR", "infAP": "infAP"}
_TREC_EVAL_CUT = {"P": "P@{}", "recall": "R@{}", "ndcg_cut": "nDCG@{}", "map_cut": "AP@{}", "success": "Success@{}",
                  "Rndcg": "nDCG@{}"}
#: Names a misspelling is matched against (did you mean …?).
KNOWN_MEASURES = ("AP", "RR", "Bpref", "P@10", "R@1000", "nDCG@10", "nDCG", "Success@10", "Success@1", "Rprec",
                  "NumRelRet", "Judged@10", "AP@10", "infAP", "ERR@10", "RBP", "SetP", "SetR", "SetF")
_NOTED: set[str] = set()


def from_trec_eval(name: str) -> str:
    """``name`` in ir_measures' spelling when it is trec_eval's (``map`` → ``AP``, ``P.10`` or
    ``P_10`` → ``P@10``, ``ndcg_cut.10`` → ``nDCG@10``), else unchanged."""
    import re

    if name in TREC_EVAL_NAMES:
        return TREC_EVAL_NAMES[name]
    m = re.fullmatch(r"(P|recall|ndcg_cut|map_cut|success|Rndcg)[._](\d+)", name)
    return _TREC_EVAL_CUT[m.group(1)].format(m.group(2)) if m else name


def _check_measure(name: str, m) -> None:
    """Refuse parameter values trec_eval/pytrec_eval cannot take (``P@0`` aborts the interpreter
    inside pytrec_eval, ``Judged@0`` divides by zero, ``nDCG@1e3`` trips an assertion) and
    measures no installed provider computes, before any work is done."""
    from ir_measures import DefaultPipeline

    for key, value in m.params.items():
        if key in ("cutoff", "rel") and value is not None:
            top = MAX_CUTOFF if key == "cutoff" else MAX_REL
            if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= top:
                what = "cutoff" if key == "cutoff" else "relevance level (rel=)"
                raise InputError(None, f"measure {short(name)}: the {what} must be a whole number within [1, {top:,}], "
                                       f"got {short(value)}")
    try:  # ir_measures' own parameter checks (RBP's p in (0, 1), …) are assertions: one line each
        m.validate_params()
    except (AssertionError, ValueError, TypeError) as err:
        import re

        said = re.fullmatch(r"invalid param (\w+)=(.*)", str(err), re.S)
        if said and said.group(2).startswith("<object object"):  # ir_measures' marker of a parameter not given
            what = f"its parameter {said.group(1)} must be given"
        elif said:
            what = f"its parameter {said.group(1)} cannot be {said.group(2)[:40]}"
        else:
            what = f"invalid parameters ({short(str(err))})"
        raise InputError(None, f"measure {short(name)}: {what} (see ir_measures' documentation of the measure)") from None

    def computes(provider) -> bool:
        try:
            return provider.supports(m) and provider.is_available()
        except (AssertionError, ValueError, TypeError):
            return False

    if not any(computes(p) for p in DefaultPipeline.providers):
        raise InputError(None, f"measure {short(name)}: no installed evaluator computes it "
                               "(use trec_eval measures, e.g. AP Bpref RR P@10 nDCG@10 R@1000)")


def parse_measures(names: Sequence[str] | str) -> list:
    """ir_measures names → measure objects, validated (one-line InputError on the first bad one)."""
    import ir_measures

    if isinstance(names, str):
        names = names.replace(",", " ").split()
    out = []
    renamed = []
    for given in names:
        n = from_trec_eval(given)
        if n != given and given not in _NOTED:
            _NOTED.add(given)
            renamed.append(f"{given} → {n}")
        try:
            m = ir_measures.parse_measure(n)
        except Exception:
            raise InputError(None, f"unknown measure {short(n)}{suggest(n, KNOWN_MEASURES)} (ir_measures names, e.g. AP "
                                   "Bpref RR P@10 nDCG@10 R@1000; trec_eval's map, P.10, ndcg_cut.10 work too)") from None
        _check_measure(n, m)
        out.append(m)
    if renamed:  # (said once per name and process)
        print(f"note: trec_eval's measure names read as ir_measures' (what nteval writes): {', '.join(renamed)}",
              file=sys.stderr)
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


def evaluate_files(qrels_path, run_paths, measures: Sequence[str] | str = DEFAULT_MEASURES, names: str = "tag",
                   progress: bool | None = None) -> dict[str, dict]:
    """``nteval evaluate``: score run files against a qrels file (TREC or BEIR layout).

    Returns ``{run name: {"file", "means", "per_query"}}``. A run is named by its tag (6th column)
    when the file has one tag and no other run uses it, else by its file name (``names="file"``:
    always the file name)."""
    from pathlib import Path

    ms = [str(m) for m in parse_measures(measures)]
    qrels = load_qrels(qrels_path)
    scored = []

    for path in tqdm(run_paths, desc="evaluate", unit=" run", disable=not shown(progress) or len(run_paths) < 2,
                     file=sys.stderr, leave=False):
        tags: set[str] = set()
        run = read_run(Path(path), tags)
        means, per_query = evaluate_run(qrels, run, ms)
        scored.append((Path(path), tags, means, per_query))
    tag_count: dict[str, int] = {}
    for _p, tags, _m, _q in scored:
        if len(tags) == 1:
            tag_count[next(iter(tags))] = tag_count.get(next(iter(tags)), 0) + 1
    out: dict[str, dict] = {}
    for path, tags, means, per_query in scored:
        name = path.name
        if names == "tag" and len(tags) == 1 and tag_count[next(iter(tags))] == 1:
            name = next(iter(tags))
        if name in out:  # the same file (or name) twice: keep both apart
            name = str(path)
        out[name] = {"file": str(path), "means": means, "per_query": per_query}
    return out


def format_results(results: dict[str, dict], measures: Sequence[str], per_query: bool = False) -> str:
    """A table (run × measure); with ``per_query``, trec_eval ``-q`` lines instead:
    ``measure<TAB>qid<TAB>value`` per topic then ``all``, prefixed by the run name when there are
    several runs."""
    names = [str(m) for m in parse_measures(list(measures))]
    if per_query:
        lines = []
        for run, r in results.items():
            prefix = f"{run}\t" if len(results) > 1 else ""
            for qid, vals in r["per_query"].items():
                lines += [f"{prefix}{m}\t{qid}\t{vals[m]:.4f}" for m in names]
            lines += [f"{prefix}{m}\tall\t{r['means'][m]:.4f}" for m in names]
        return "\n".join(lines)
    width = max(len(r) for r in results)
    lines = [f"{'run':<{width}}  " + "  ".join(f"{m:>8}" for m in names)]
    for run, r in results.items():
        lines.append(f"{run:<{width}}  " + "  ".join(f"{r['means'][m]:>8.4f}" for m in names))
    return "\n".join(lines)
