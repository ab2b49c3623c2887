"""A protocol run's results as pandas DataFrames, for notebooks (``pip install pandas``, or any
extra that brings it: ``nteval[pyterrier]``).

Each function takes what :func:`nteval.run_protocol` (``run_focused``, ``run_highrecall``…)
returns, or the OUT directory it wrote (its results.json and per_topic.tsv):

- :func:`means`: one row per system, one column per measure (the table nteval prints);
- :func:`per_topic`: one row per (system, topic), one column per measure — the values every
  mean, test and interval is computed from;
- :func:`groups`: the verdict: each system's mean of the verdict measure with its 95 % interval
  (topic bootstrap) and the significance groups it belongs to (1 = the best group).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from ..errors import InputError, read_json_file


def _pandas() -> Any:
    try:
        import pandas as pd
    except ImportError:
        raise InputError(None, "results as DataFrames need pandas: pip install pandas (or 'nteval[pyterrier]')") from None
    return pd


def _results(results: dict[str, Any] | str | Path) -> dict[str, Any]:
    if isinstance(results, dict):
        return results

    path = Path(results) / "results.json"
    if not path.is_file():
        raise InputError(results, "not the OUT of a protocol run (no results.json)")
    return read_json_file(path, "unreadable results.json", "run the protocol again")


def means(results: dict[str, Any] | str | Path) -> Any:
    """Systems × measures (rows in the verdict's order when there is one)."""
    pd = _pandas()
    res = _results(results)
    order = list((res.get("verdict") or {}).get("scores") or res["systems"])
    frame = pd.DataFrame.from_dict(res["systems"], orient="index").reindex(order)
    frame.index.name = "system"
    return frame


def per_topic(results: dict[str, Any] | str | Path) -> Any:
    """(system, qid) × measures, read from the run's per_topic.tsv (``results``: its OUT, or the
    results of a run whose OUT is still where it wrote it: ``results["out"]``)."""
    pd = _pandas()
    where = results.get("out") if isinstance(results, dict) else results
    if where is None:
        raise InputError(None, "per_topic needs the run's OUT directory (give it instead of the results)")
    path = Path(where) / "per_topic.tsv"
    if not path.is_file():
        raise InputError(path.parent, "not the OUT of a protocol run (no per_topic.tsv)")
    long = pd.read_csv(path, sep="\t", dtype={"system": str, "qid": str, "measure": str, "value": float})
    return long.pivot_table(index=["system", "qid"], columns="measure", values="value", sort=False)


def groups(results: dict[str, Any] | str | Path) -> Any:
    """The verdict: system, mean, ci_low, ci_high of the verdict measure, and ``groups`` (the
    numbers of the significance groups the system is in; systems that share one cannot be told
    apart), best first."""
    pd = _pandas()
    v = _results(results).get("verdict")
    if not v:
        raise InputError(None, "these results carry no verdict (fewer than two systems?)")
    rows = []
    for name, mean in v["scores"].items():
        ci = v["effects"]["systems"].get(name, {}).get("ci95") or [None, None]
        rows.append({"system": name, "measure": v["measure"], "mean": mean, "ci_low": ci[0], "ci_high": ci[1],
                     "groups": [i for i, g in enumerate(v["groups"], 1) if name in g]})
    return pd.DataFrame(rows).set_index("system")
