"""``nteval compare``: the focused and the high-recall protocol on the same sampled documents, and
one answer from them (:mod:`nteval.answer` says how the answer is made)."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .answer import TASKS, check_task, compare_answer
from .atomic import write_text
from .experiment import run_protocol
from .report.text import answer_lines
from .session import session
from .settings import Execution, take


def run_compare(index_dir: str | Path, out: str | Path, task: str | None = None, **kwargs: Any) -> dict[str, Any]:
    """Run the focused and the high-recall protocol on the same sampled documents (OUT/focused,
    OUT/highrecall) and write OUT/answer.json and OUT/answer.md: with a ``task`` (known-item or
    topical), its headline first; without, both verdicts, where they disagree and why, and how
    to choose. ``kwargs``: as :func:`nteval.experiment.run_protocol` (systems, n_topics, seed…),
    for both protocols (``n_topics`` may be ``{"focused": N, "highrecall": M}``: what ``auto``
    chose for each); ``highrecall``: {parameter: value} for the high-recall one only."""
    check_task(task)
    out, index_dir = Path(out), Path(index_dir).absolute()
    hr_params = dict(kwargs.pop("highrecall", None) or {})
    if isinstance(kwargs.get("n_topics"), dict):  # one number per protocol: focused=N, highrecall=M
        per = kwargs.pop("n_topics")
        kwargs["n_topics"], hr_params["n_topics"] = per["focused"], per["highrecall"]

    execution = take(Execution, kwargs.pop("execution", None), kwargs)

    # the protocol that answers the declared task records it (a later run of it with --task, --runs
    # added, is the same verdict, not a replaced one)
    own = {TASKS[task][0]: {"task": task}} if task else {}
    with session(out, index_dir, execution.scheduler):  # (both protocols on one unchanging index)
        res = {"focused": run_protocol("focused", index_dir, out / "focused", execution=execution,
                                       **{**kwargs, **own.get("focused", {})}),
               "highrecall": run_protocol("highrecall", index_dir, out / "highrecall", execution=execution,
                                          **{**kwargs, **hr_params, **own.get("highrecall", {})})}
    answer = {**compare_answer(res, task), "out": str(out)}
    if any(r.get("topic_counts", {}).get("requested") == "auto" for r in res.values()):
        # what auto chose for each protocol: --topics focused=N,highrecall=M gives exactly these topics again
        answer["same_topics"] = {p: r["topic_counts"]["sampled"] if r["topic_counts"].get("requested") == "auto"
                                 else r["topic_counts"]["requested"] for p, r in res.items()}
    write_text(out / "answer.json", json.dumps(answer, indent=2, ensure_ascii=False) + "\n")
    write_text(out / "answer.md", "\n".join(answer_lines(answer, res)) + "\n")
    return {"answer": answer, **res}
