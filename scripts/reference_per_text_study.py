"""The default reference encoded one text per call (issue 56, hostile K1) against the batched
encoding it replaced, judged by what they judge: two pins of the same index and seed, one made
before (the reference's vectors batched 32 at a time) and one after; their topical judgments, and
the ranking of the same systems' runs under each (AP, mean over the topics).

    python scripts/reference_per_text_study.py LABEL=BEFORE_PIN:AFTER_PIN:RUNS_DIR ...

``RUNS_DIR``: a directory of TREC runs over the pins' topical topics (the title-leak study's
``runs-LABEL/highrecall/nt``: 21 to 25 systems, lexical to neural). Prints per collection: the topics
whose relevant sets differ, Kendall τ-b between the two rankings of the systems, and the largest
move of a system's rank (the encoding study's rule: τ within 0.01, every neural model within one place).
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main() -> None:
    import numpy as np
    from scipy.stats import kendalltau

    from nteval.evaluate import evaluate_run
    from nteval.formats.trec import read_qrels, read_run

    for spec in sys.argv[1:]:
        label, rest = spec.split("=", 1)
        before, after, runs = (Path(x) for x in rest.split(":"))
        qa, qb = read_qrels(before / "highrecall" / "qrels.txt.gz"), read_qrels(after / "highrecall" / "qrels.txt.gz")
        rel = lambda q: {q2: {d for d, r in v.items() if r > 0} for q2, v in q.items()}  # noqa: E731
        ra, rb = rel(qa), rel(qb)
        differ = sum(1 for t in set(ra) | set(rb) if ra.get(t) != rb.get(t))
        names = sorted(p.stem for p in runs.glob("*.run"))
        ap = {}
        for name in names:
            run = read_run(runs / f"{name}.run")
            ap[name] = (evaluate_run(qa, run, ["AP"])[0]["AP"], evaluate_run(qb, run, ["AP"])[0]["AP"])
        a, b = np.array([ap[n][0] for n in names]), np.array([ap[n][1] for n in names])
        ranks = lambda x: {n: i + 1 for i, n in enumerate(sorted(names, key=lambda m: -x[names.index(m)]))}  # noqa: E731
        rank_a, rank_b = ranks(a), ranks(b)
        moves = {n: rank_b[n] - rank_a[n] for n in names}
        worst = max(moves, key=lambda n: abs(moves[n]))
        neural = {n: moves[n] for n in names if n.startswith(("minilm", "e5"))}
        print(f"{label}: {len(ra)} topical topics, relevant sets differ on {differ}; {len(names)} systems, Kendall tau-b "
              f"{kendalltau(a, b).statistic:.4f}; largest move {worst} {moves[worst]:+d}; neural: "
              + ", ".join(f"{n} {m:+d}" for n, m in sorted(neural.items())))


if __name__ == "__main__":
    main()
