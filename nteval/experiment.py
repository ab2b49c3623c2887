"""The NT protocols as one declarative call each (the API behind ``nteval focused``)."""
from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import Any

from .atomic import write_text
from .corpus.store import FILENAME as STORE
from .corpus.store import DocStore
from .errors import InputError
from .evaluate import DEFAULT_MEASURES, evaluate_run, parse_measures
from .formats.trec import write_qrels, write_topics
from .index import read_manifest
from .runs import run_all
from .systems.base import System, load_systems
from .topics.focused import focused_topics
from .topics.sample import SampleSpec, sample_ids


def builtin_systems(name: str) -> Path:
    return Path(str(resources.files("nteval") / "configs" / "systems" / f"{name}.yaml"))


def resolve_systems(spec: str | Path | None) -> tuple[Path, list[System]]:
    """A YAML path, or the name of a shipped set (``default``, ``table1``)."""
    if spec is None:
        spec = "default"
    p = Path(spec)
    if not p.exists() and builtin_systems(str(spec)).is_file():
        p = builtin_systems(str(spec))
    return p, load_systems(p)


def write_results(out: Path, protocol: str, spec: SampleSpec, measures: list[str], runs: dict, infos: list,
                  qrels: dict, extra: dict[str, Any]) -> dict[str, Any]:
    """Evaluate every run and write per-topic scores, results.tsv and results.json."""
    systems: dict[str, dict[str, float]] = {}
    lines = ["system\tqid\tmeasure\tvalue"]
    for info in infos:
        name = info.system.name
        means, per_topic = evaluate_run(qrels, runs[name], measures)
        systems[name] = {m: round(v, 6) for m, v in means.items()}
        for qid, vals in per_topic.items():
            for m, v in vals.items():
                lines.append(f"{name}\t{qid}\t{m}\t{v:.6f}")
    write_text(out / "per_topic.tsv", "\n".join(lines) + "\n")
    results = {
        "protocol": protocol, "n_topics": len(qrels), "seed": spec.seed, "measures": measures,
        "systems": systems,
        "empty_queries": {i.system.name: i.empty_queries for i in infos},
        "system_configs": {i.system.name: {"algorithm": i.system.algorithm, "params": i.system.params} for i in infos},
        "timing": {i.system.name: {"seconds": round(i.seconds, 3), "queries_per_s": i.queries_per_s, "reused": i.reused}
                   for i in infos},
        **extra,
    }
    header = "system\talgorithm\t" + "\t".join(measures) + "\tempty_queries"
    rows = [header] + [f"{i.system.name}\t{i.system.describe()}\t" + "\t".join(f"{systems[i.system.name][m]:.4f}" for m in measures)
                       + f"\t{i.empty_queries}" for i in infos]
    write_text(out / "results.tsv", "\n".join(rows) + "\n")
    write_text(out / "results.json", json.dumps(results, indent=2, ensure_ascii=False) + "\n")
    return results


def run_focused(index_dir: str | Path, out: str | Path, n_topics: int = 1000, seed: int = 42,
                systems: str | Path | None = None, depth: int = 1000, measures: list[str] | None = None,
                progress: bool = True, **filters: Any) -> dict[str, Any]:
    """Focused NT protocol: sample D0, titles → queries over ``nt``, each doc its own relevant."""
    index_dir, out = Path(index_dir), Path(out)
    manifest = read_manifest(index_dir)
    measures = [str(m) for m in parse_measures(measures or list(DEFAULT_MEASURES))]
    systems_path, system_list = resolve_systems(systems)
    spec = SampleSpec(n=n_topics, seed=seed, **filters)
    ids, n_eligible = sample_ids(index_dir, spec)
    if not ids:
        raise InputError(index_dir, "no document passes the topic filters (title/abstract/sentence/language/year)")
    store = DocStore(index_dir / STORE)
    try:
        topics, qrels = focused_topics(store, ids)
    finally:
        store.close()
    out.mkdir(parents=True, exist_ok=True)
    write_topics(out / "topics.tsv", topics)
    write_qrels(out / "qrels.txt", qrels)
    runs, infos = run_all(index_dir, "nt", manifest["fingerprint"], topics, system_list, out / "runs", depth=depth,
                          progress=progress)
    extra = {"index": str(index_dir), "index_fingerprint": manifest["fingerprint"], "systems_file": str(systems_path),
             "depth": depth, "sample": spec.as_dict(), "eligible_documents": n_eligible,
             "topics_requested": n_topics}
    return write_results(out, "focused", spec, measures, runs, infos, qrels, extra)
