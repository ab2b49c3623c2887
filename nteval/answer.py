"""One answer a user can act on: the declared task's verdict as a headline, or both verdicts, where
they disagree and why, and how to choose.

A search task is what the user of the engine does. **known-item**: find the one document a short
description points to (a citation, a claim's source, a fact) — the focused protocol measures it.
**topical**: find everything on a topic (ad hoc search, a systematic review) — the high-recall
protocol measures it. Declare it (``--task``) and one headline leads every output, one sentence:
the best group (:data:`BEST_GROUP_RULE`, the verdict's group 1) with a bias flag on any of its
systems whose family the validation study found the verdict misjudging, the lead over the next
system the paired test separates, and (above the coverage caveat's share) how much of the
collection NT cannot see:

    For topical search on IDX (33,272 documents searched; 34 % of its 50,729 records lack a title or
    an abstract, outside what NT sees), the best system is bm25_rm3 [bias flag] (AP 0.206, 95 % CI
    [0.195, 0.218]); bm25_rm3 is ahead of rrf_bm25_qld_rm3 by 0.0345 AP (…); bias flag: bm25_rm3:
    query expansion's advantage over BM25 is overstated by the high-recall verdict against human AP
    in nteval's validation study (+10 points on CISI and +20 points on CF, the kind of collections this verdict
    is for; …).

Without a declared task, both verdicts lead, then the pairs of systems the two verdicts order
in opposite directions (both significantly), grouped by likely reason — given only where the
pair's own direction is the one the reason predicts — then how to choose.
"""
from __future__ import annotations

from typing import Any

from .errors import InputError, suggest
from .evidence import bias_flags, families, grid_fact, uses

#: task → (protocol, what the task is)
TASKS: dict[str, tuple[str, str]] = {
    "known-item": ("focused", "a user looks for the one document a short description points to (a citation, the "
                              "source of a claim, a fact)"),
    "topical": ("highrecall", "a user wants everything on a topic (ad hoc search, a systematic review)"),
}


def check_task(task: str | None, protocol: str | None = None) -> str | None:
    """``task`` (None, or a key of :data:`TASKS`); with ``protocol``, one that the protocol measures."""
    if task is None:
        return None
    if task not in TASKS:
        raise InputError(None, f"--task {task!r}: must be one of {', '.join(TASKS)}{suggest(task, TASKS)}")
    if protocol is not None and TASKS[task][0] != protocol:
        other = [t for t, (p, _) in TASKS.items() if p == protocol]
        raise InputError(None, f"--task {task}: the {protocol} protocol measures "
                               + (f"{other[0]} search" if other else "another task")
                               + f"; {task} search is measured by `nteval {TASKS[task][0]}` "
                                 f"(or `nteval compare --task {task}`, which runs both)")
    return task


def how_to_choose() -> str:
    return ("How to choose: declare the task your users do — `--task known-item` when they look for a specific "
            "document (the focused verdict), `--task topical` when they want everything on a topic (the high-recall "
            "verdict). Each verdict agrees with human judgments on its own kind of collection and much less on the "
            "other (the evidence lines above), so the task decides which ranking to act on.")


def _fmt(v: float) -> str:
    return f"{v:.4f}" if abs(v) < 0.0995 else f"{v:.3f}"


#: The rule that names the best systems, in the headline as in the verdict's groups.
BEST_GROUP_RULE = ("the best group: the verdict's group 1, the systems from the best down that no paired test "
                   "(corrected) separates from one another")


def headline(task: str, results: dict[str, Any], index_label: str) -> dict[str, Any]:
    """The declared task's answer from its protocol's results, in one sentence: the best group
    (:data:`BEST_GROUP_RULE`: the same systems as the verdict's group 1), the bias flags the
    validation study puts on them, and how far the best is ahead of the next system the paired
    test separates from it."""
    v = results["verdict"]
    m = v["measure"]
    scores = v["scores"]
    order = list(scores)
    top = order[0]
    pairs = {frozenset((p["a"], p["b"])): p for p in (v.get("effects") or {}).get("pairs", [])}
    sig = {frozenset((p["a"], p["b"])): p["significant"] for p in (v.get("significance") or {}).get("pairs", [])}
    group = list((v.get("groups") or [[top]])[0])
    group = [top] + [s for s in group if s != top]
    tied = group[1:]
    runner = next((s for s in order[1:] if sig.get(frozenset((top, s)), False)), None)
    flags = bias_flags(results.get("bias_notes") or [], group)
    flagged = {s: f for f in flags for s in f["systems"]}
    ci = lambda s: (v.get("effects") or {}).get("systems", {}).get(s, {}).get("ci95")  # noqa: E731
    number = (lambda f: f" {flags.index(f) + 1}") if len(flags) > 1 else (lambda f: "")  # noqa: E731
    mark = lambda s: f"{s} [bias flag{number(flagged[s])}]" if s in flagged else s  # noqa: E731
    c = ci(top)
    best = f"{mark(top)} ({m} {_fmt(scores[top])}" + (f", 95 % CI [{_fmt(c[0])}, {_fmt(c[1])}])" if c else ")")
    if tied:
        named = [best] + [f"{mark(s)} ({_fmt(scores[s])})" for s in tied[:SHOWN]]
        rest = len(tied) - SHOWN
        shown = ", ".join(named) + f" and {rest} more" if rest > 0 else ", ".join(named[:-1]) + " and " + named[-1]
        lead = f"the best group ({len(group)} systems no paired test separates) is {shown}"
    else:
        lead = f"the best system is {best}"
    out: dict[str, Any] = {"task": task, "protocol": results["protocol"], "measure": m, "best": group,
                           "best_rule": BEST_GROUP_RULE, "runner_up": runner,
                           "bias": [{k: f[k] for k in ("systems", "family", "label", "direction", "text", "sizes")}
                                    for f in flags]}
    flag_text = "".join(f"; bias flag{number(f)}: {f['text']}" for f in flags)
    if runner is None:
        tie = (f"all {len(order)} tie on these {results['n_topics']:,} topics" if len(group) == len(order) else
               f"the paired test separates none of the {len(order)} from it on these {results['n_topics']:,} topics, "
               f"though its best group holds {len(group)} (some lower systems are separated from one above them)")
        text = f"For {task} search on {index_label}, no system can be told apart from {best}: {tie}{flag_text}."
    else:
        p = pairs.get(frozenset((top, runner)))
        diff = scores[top] - scores[runner]
        if p is not None:
            lo, hi = (p["ci95"] if p["a"] == top else [-p["ci95"][1], -p["ci95"][0]])
            size = f"{diff / scores[top] * 100:.1f} % of {top}'s score" if scores[top] > 0 else ""
            rule = (v.get("effects") or {}).get("mmd", {}).get("rule", "")
            verdict = ("smaller than" if p["class"].startswith("different, but") else "at least")
            text = (f"For {task} search on {index_label}, {lead}; {top} is ahead of {runner} by {_fmt(diff)} {m} "
                    f"(95 % CI [{_fmt(lo)}, {_fmt(hi)}]; {size}, {verdict} the minimum meaningful difference of {rule})"
                    f"{flag_text}.")
            out.update(diff=round(diff, 6), ci95=[round(lo, 6), round(hi, 6)], size_class=p["class"])
        else:
            text = f"For {task} search on {index_label}, {lead}; it is ahead of {runner} by {_fmt(diff)} {m}{flag_text}."
            out.update(diff=round(diff, 6))
    out["text"] = text
    return out


#: How many systems of the best group the headline names (the rest are counted, and all are in ``best``).
SHOWN = 4


def index_label(results: dict[str, Any]) -> str:
    """The index as the headline names it: documents searched and, above the coverage caveat's
    share, how much of the collection NT cannot see."""
    col = results.get("collection") or {}
    name = results.get("index", "the index")
    if col.get("searched") not in col:
        return str(name)
    cov = results.get("coverage") or {}
    unseen = (f"; {cov['share_unseen'] * 100:.0f} % of its {cov['records']:,} records lack a title or an abstract, "
              "outside what NT sees" if cov.get("caveat") else "")
    return f"{name} ({col[col['searched']]:,} documents searched{unseen})"


# -- where the two verdicts disagree ----------------------------------------------------------------

#: What each parameter does, for a reader of a disagreement between two settings of one ranking
#: function. No direction is claimed here: which protocol prefers which value is read from the
#: run's own numbers (:func:`parameter_reason`), and nteval's PubMed grid is cited only for what
#: its regenerated facts show (:func:`nteval.evidence.grid_fact`).
PARAMETER_REASONS = {
    "b": "BM25 length normalisation (b): the two tasks reward document length differently",
    "k1": "BM25 term-frequency saturation (k1): repeated query words matter differently to finding one document and "
          "to finding everything on a topic",
    "mu": "Dirichlet smoothing (mu): how much long documents are favoured differs between the two tasks",
}


def parameter_reason(name: str, focused_value: Any, highrecall_value: Any) -> str:
    """Why the two verdicts may prefer ``focused_value`` and ``highrecall_value`` of one parameter:
    what the parameter does and the direction this run measured; for BM25's b, what nteval's
    regenerated PubMed grid shows of the same direction (Campagne 2008, Fig. 5 found the focused
    protocol preferring the higher b)."""
    what = PARAMETER_REASONS.get(name, f"{name}: the two tasks reward it differently").split(":")[0]
    text = f"{what}: here the focused verdict prefers {name} {focused_value:g}, the high-recall one {name} {highrecall_value:g}"
    fact = grid_fact(name)
    if fact and focused_value != highrecall_value:
        higher = focused_value > highrecall_value
        same, other = ((fact["focused_higher"], fact["focused_lower"]) if higher
                       else (fact["focused_lower"], fact["focused_higher"]))
        text += (f" (the same direction as nteval's PubMed grid at {same} of its {fact['compared']} {fact['across']} "
                 f"values, the other at {other}, neither at {fact['equal']}; {fact['source']})")
    return text


def _reason(a: str, b: str, fam: dict[str, str | None], configs: dict[str, dict[str, Any]]) -> str | None:
    """The likely reason the focused verdict prefers ``a`` and the high-recall one ``b``, when this
    pair's own direction is the one the reason predicts; None when no known reason fits it."""
    fa, fb = fam.get(a), fam.get(b)
    exp_a, exp_b = uses(a, configs, {"expansion"}), uses(b, configs, {"expansion"})
    if exp_b and not exp_a:  # the direction the study measured: high-recall overstates expansion
        return ("query expansion: the high-recall verdict rewards it (its pseudo-relevant documents are the topic's "
                "neighbourhood, which expansion reaches) and the focused one penalises it (expansion drifts away "
                "from the one document); the validation study measured the high-recall protocol overstating it on a "
                "precise-task collection — trust the verdict of your task")
    dense = {"dense", "hybrid", "neural", "static_hybrid"}
    if fa in dense and fb not in dense and not exp_a and not exp_b:  # high-recall understates dense and hybrid
        return ("dense or hybrid retrieval: the high-recall pseudo-qrels come from lexical reference systems (BM25, "
                "QLD), which understates dense and hybrid systems (measured in the validation study)")
    ca, cb = configs.get(a, {}), configs.get(b, {})
    if ca.get("algorithm") == cb.get("algorithm") and fa in ("bm25", "qld") and fa == fb:  # two settings of one
        pa, pb = ca.get("params") or {}, cb.get("params") or {}
        differ = [k for k in sorted(set(pa) | set(pb)) if k != "family" and pa.get(k) != pb.get(k)
                  and isinstance(pa.get(k), (int, float)) and isinstance(pb.get(k), (int, float))]
        if differ:
            return "; ".join(parameter_reason(k, pa[k], pb[k]) for k in differ)
    return None


def disagreements(focused: dict[str, Any], highrecall: dict[str, Any]) -> list[dict[str, Any]]:
    """Pairs of systems both verdicts separate, in opposite directions, with the likely reason."""
    def directed(res: dict[str, Any]) -> dict[frozenset, tuple[str, float]]:
        out = {}
        for p in ((res.get("verdict") or {}).get("significance") or {}).get("pairs", []):
            if p["significant"]:
                out[frozenset((p["a"], p["b"]))] = (p["a"] if p["diff"] > 0 else p["b"], abs(p["diff"]))
        return out

    f, h = directed(focused), directed(highrecall)
    configs = {**highrecall.get("system_configs", {}), **focused.get("system_configs", {})}
    fam = families(configs)
    out = []
    for pair in sorted(set(f) & set(h), key=lambda k: sorted(k)):
        if f[pair][0] == h[pair][0]:
            continue
        a, b = f[pair][0], h[pair][0]
        out.append({"focused_prefers": a, "highrecall_prefers": b,
                    "focused_diff": round(f[pair][1], 6), "highrecall_diff": round(h[pair][1], 6),
                    "focused_measure": focused["verdict"]["measure"], "highrecall_measure": highrecall["verdict"]["measure"],
                    "reason": _reason(a, b, fam, configs)})
    return out


def disagreement_groups(items: list[dict[str, Any]], examples: int = 3) -> list[tuple[str, list[str]]]:
    """The disagreements grouped by likely reason, most pairs first (no known reason last): each
    group's line and a few of its pairs as examples."""
    by_reason: dict[str | None, list[dict[str, Any]]] = {}
    for d in items:
        by_reason.setdefault(d["reason"], []).append(d)
    out = []
    for reason, ds in sorted(by_reason.items(), key=lambda kv: (kv[0] is None, -len(kv[1]))):
        why = (f"likely reason: {reason}" if reason else "no likely reason: none that nteval knows fits this "
               "direction (finding one document and finding everything on a topic reward different rankings)")
        out.append((f"{len(ds)} pair{'s' if len(ds) != 1 else ''}, {why}; e.g.",
                    [f"focused: {d['focused_prefers']} > {d['highrecall_prefers']} (+{d['focused_diff']:.4f} "
                     f"{d['focused_measure']}); high-recall: {d['highrecall_prefers']} > {d['focused_prefers']} "
                     f"(+{d['highrecall_diff']:.4f} {d['highrecall_measure']})" for d in ds[:examples]]))
    return out


def disagreement_head(items: list[dict[str, Any]]) -> str:
    """The sentence before the disagreements (or the one saying there are none)."""
    if not items:
        return ("where the verdicts disagree: nowhere — no pair of systems is ordered one way by the focused verdict "
                "and the other way by the high-recall one (both significantly)")
    return (f"where the verdicts disagree: {len(items)} pair{'s' if len(items) != 1 else ''} of systems "
            f"{'are' if len(items) != 1 else 'is'} ordered in opposite directions, both significantly (paired tests, "
            "corrected):")


def disagreement_lines(items: list[dict[str, Any]], examples: int = 3) -> list[str]:
    """The disagreements grouped by likely reason, most pairs first, a few examples each (text)."""
    lines = [disagreement_head(items)]
    for head, ex in disagreement_groups(items, examples):
        lines.append(f"  - {head}")
        lines += [f"      {x}" for x in ex]
    return lines


def bias_groups(notes: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """Bias notes grouped per family (systems of one family share one note): (the family's systems
    and label, what the study measured)."""
    by_family: dict[str, list[dict[str, Any]]] = {}
    for n in notes:
        by_family.setdefault(n["family"], []).append(n)
    return [(f"{', '.join(n['system'] for n in ns)} ({ns[0]['label']})", ns[0]["measured"]) for ns in by_family.values()]


def bias_lines(res: dict[str, dict[str, Any]], protocols: list[str]) -> list[str]:
    """The bias notes of the runs, one line per protocol and family (its systems named)."""
    return [f"  bias ({name}): {who}: {measured}" for name in protocols
            for who, measured in bias_groups(res[name].get("bias_notes") or [])]


def compare_answer(res: dict[str, dict[str, Any]], task: str | None) -> dict[str, Any]:
    """answer.json: the declared task's headline (or none), both verdicts' leaders, the disagreements."""
    label = index_label(res["focused"])
    answer: dict[str, Any] = {"task": task, "index": res["focused"].get("index"),
                              "collection": res["focused"].get("collection"), "coverage": res["focused"].get("coverage")}
    if task is not None:
        answer["headline"] = headline(task, res[TASKS[task][0]], label)
    answer["verdicts"] = {name: {"measure": r["verdict"]["measure"], "task": r["verdict"]["task"],
                                 "groups": r["verdict"]["groups"][:3], "topics": r["n_topics"],
                                 "headline": headline(t, r, label)}
                          for name, r in res.items() for t in [next(k for k, (p, _) in TASKS.items() if p == name)]}
    answer["disagreements"] = disagreements(res["focused"], res["highrecall"])
    answer["how_to_choose"] = None if task else how_to_choose()
    return answer


def __getattr__(name: str) -> Any:
    """``run_compare`` and ``answer_lines`` moved in 0.2 (to :mod:`nteval.compare` and
    :mod:`nteval.report.text`); their old path works for one release, with a warning."""
    moved = {"run_compare": "nteval.compare", "answer_lines": "nteval.report.text"}
    if name in moved:
        import importlib
        import warnings

        warnings.warn(f"nteval.answer.{name} moved to {moved[name]}.{name}; the old path goes in 0.3",
                      DeprecationWarning, stacklevel=2)
        return getattr(importlib.import_module(moved[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
