"""``nteval rank-baselines``: judgment-free baselines applied to a directory of TREC runs, each
ranking correlated with the official qrels' ranking (no corpus needed)."""
from __future__ import annotations

import tarfile
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..evaluate import evaluate_run
from ..formats.trec import Run, read_run
from .baselines import mean_relevant, reference_count_qrels, soboroff_qrels
from .stats import correlations


def read_runs(source: str | Path) -> dict[str, Run]:
    """Every run file of a directory (recursively) or of a .tar/.tar.gz archive, keyed by file name."""
    source = Path(source)
    runs: dict[str, Run] = {}
    if source.is_dir():
        for p in sorted(source.rglob("*")):
            if p.is_file() and not p.name.startswith("."):
                runs[p.name] = read_run(p)
    elif source.is_file() and ".tar" in source.name:
        import tempfile

        with tempfile.TemporaryDirectory() as tmp, tarfile.open(source) as tar:
            tar.extractall(tmp, filter="data")
            return read_runs(Path(tmp))
    else:
        raise InputError(source, "expected a directory of TREC runs or a .tar[.gz] of them")
    if len(runs) < 3:
        raise InputError(source, f"found {len(runs)} run(s); need at least 3 to rank systems")
    return runs


def rank_baselines(runs: dict[str, Run], qrels: dict, measures: list[str], pool_depth: int = 100,
                   trials: int = 10, seed: int = 0, progress: bool = False) -> dict[str, Any]:
    from tqdm import tqdm

    topics = sorted(qrels)
    n_rel = mean_relevant(qrels)
    names = sorted(runs)
    pseudo = {"reference_count": [reference_count_qrels(runs, topics, n_rel, pool_depth)]}
    pseudo["soboroff"] = [soboroff_qrels(runs, topics, n_rel, pool_depth, seed=seed + t) for t in range(trials)]
    scores: dict[str, dict[str, dict[str, float]]] = {"official": {}, "reference_count": {}, "soboroff": {}}
    bar = tqdm(total=len(names) * (2 + trials), disable=not progress, unit=" eval", leave=False)
    for name in names:
        scores["official"][name] = evaluate_run(qrels, runs[name], measures)[0]
        bar.update()
        for base, qsets in pseudo.items():
            acc = {m: 0.0 for m in measures}
            for q in qsets:
                means = evaluate_run(q, runs[name], measures)[0]
                for m in measures:
                    acc[m] += means[m] / len(qsets)
                bar.update()
            scores[base][name] = acc
    bar.close()
    corr = {base: {m: correlations([scores[base][n][m] for n in names], [scores["official"][n][m] for n in names])
                   for m in measures}
            for base in ("reference_count", "soboroff")}
    return {"runs": len(names), "topics": len(topics), "measures": measures, "pool_depth": pool_depth,
            "n_relevant_per_topic": n_rel, "soboroff_trials": trials, "seed": seed,
            "scores": scores, "correlations_vs_official": corr}
