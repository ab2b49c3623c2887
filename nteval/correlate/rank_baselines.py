"""``nteval rank-baselines``: judgment-free baselines applied to a directory of TREC runs, each
ranking correlated with the official qrels' ranking (no corpus needed)."""
from __future__ import annotations

import tarfile
from pathlib import Path
from typing import Any

from ..errors import InputError, short
from ..evaluate import evaluate_run
from ..formats.trec import Run, read_run
from ..progress import shown
from ..stats import correlations
from .baselines import mean_relevant, pools, reference_count_qrels, soboroff_qrels

#: What nteval writes beside its runs (``NAME.meta.json`` cache stamps) and in a protocol's output
#: directory; never a run.
_SIDECAR = ".meta.json"


def _run_files(directory: Path) -> dict[str, Path]:
    """Run files under ``directory`` keyed by run name.

    An output of nteval's own (``OUT/focused``, or correlate's ``OUT/human``: ``runs/`` beside
    results.json or topics.tsv) contributes its ``runs/`` only; ``NAME.run`` files beside their
    ``NAME.meta.json`` are named ``NAME``; anything else is named by its file name, as TREC's
    archives are."""
    if (directory / "runs").is_dir() and any((directory / f).is_file() for f in ("results.json", "topics.tsv")):
        directory = directory / "runs"
    files: dict[str, Path] = {}
    for p in sorted(directory.rglob("*")):
        if not p.is_file() or p.name.startswith(".") or p.name.endswith(_SIDECAR):
            continue
        stamped = p.suffix == ".run" and p.with_name(p.stem + _SIDECAR).is_file()
        name = p.stem if stamped else p.name
        if name in files:
            raise InputError(p, f"two runs named {name!r} (also {files[name]}); give runs distinct file names")
        files[name] = p
    return files


def read_runs(source: str | Path) -> dict[str, Run]:
    """Every run of a directory (recursively; nteval's own run directories included) or of a
    .tar/.tar.gz archive, keyed by run name."""
    source = Path(source)
    if source.is_dir():
        runs = {name: read_run(p) for name, p in _run_files(source).items()}
    elif source.is_file() and ".tar" in source.name:
        import tempfile

        with tempfile.TemporaryDirectory() as tmp:
            try:
                with tarfile.open(source) as tar:
                    tar.extractall(tmp, filter="data")  # refuses ../ members and absolute links
            except tarfile.ReadError:
                raise InputError(source, "not a tar archive, or a corrupt one") from None
            except tarfile.TarError as err:  # a member that would land outside, an absolute link...
                raise InputError(source, f"refused: {str(err)[:200]}") from None
            return read_runs(Path(tmp))
    else:
        raise InputError(source, "expected a directory of TREC runs or a .tar[.gz] of them")
    if len(runs) < 3:
        raise InputError(source, f"found {len(runs)} run(s); need at least 3 to rank systems")
    return runs


def rank_baselines(runs: dict[str, Run], qrels: dict, measures: list[str], pool_depth: int = 100,
                   trials: int = 10, seed: int = 0, progress: bool | None = None) -> dict[str, Any]:
    from tqdm import tqdm

    topics = sorted(qrels)
    if not any(q in run for run in runs.values() for q in topics):
        raise InputError(None, f"the qrels share no topic with the runs (qrels topics {short(topics[:3])}…, "
                               f"run topics {short(sorted(next(iter(runs.values())))[:3])}…)")
    n_rel = mean_relevant(qrels)
    names = sorted(runs)
    pooled = pools(runs, topics, pool_depth)
    pseudo = {"reference_count": [reference_count_qrels(None, topics, n_rel, pooled=pooled)]}
    pseudo["soboroff"] = [soboroff_qrels(None, topics, n_rel, seed=seed + t, pooled=pooled) for t in range(trials)]
    scores: dict[str, dict[str, dict[str, float]]] = {"official": {}, "reference_count": {}, "soboroff": {}}
    bar = tqdm(total=len(names) * (2 + trials), disable=not shown(progress), unit=" eval", leave=False)
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
