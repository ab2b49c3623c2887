"""docs/gate.md's CI snippets (GitHub with a PostgreSQL history, GitLab with a cached SQLite one) run
as the CI services would, two pipelines in fresh checkouts (scripts/ci_pipelines.py): the history
outlives the jobs and the nightly check after the live search got worse raises the alert. The
GitLab snippet of the previous docs kept the history as an artifact: every pipeline started a new
one, and no alert could ever fire."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_ci_snippets_keep_their_history_and_alert(sample_index, tmp_path):
    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "ci_pipelines.py"), str(tmp_path / "ci"), "--index",
                        str(sample_index)], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.count("ok   the check raised the alert (pipeline 2, exit status 5)") == \
        (2 if "no PostgreSQL here" not in r.stdout else 1), r.stdout
    assert "gitlab, pipeline 2 (schedule, live search: worse): {'nteval-live-check': 5}" in r.stdout
