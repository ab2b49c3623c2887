"""A copy of a BEIR collection with the abstracts of a seeded share of its documents dropped.

The twin of ``scripts/blank_titles.py``: real corpora hold many title-only records (old Medline
citations, conference abstracts never deposited), which NT never searches (they are not in the
``nt`` index). This makes such a collection from a judged one, so that what an NT verdict can and
cannot see is measured against the untouched collection's human judgments (docs/validation.md,
"What the verdict covers").

    python scripts/drop_abstracts.py ../shared/data/cisi/beir OUT --share 0.5 --seed 1

Which documents lose their abstract: the ``share`` with the smallest ``sha256("{seed}:{docid}")``
(the rule of blank_titles.py and of topic sampling). OUT gets ``corpus.jsonl`` (the same lines,
``"text": ""`` where dropped) and copies of ``queries.jsonl`` and ``qrels/``.
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import blank_titles  # noqa: E402

if __name__ == "__main__":
    blank_titles.__doc__ = __doc__
    blank_titles.main(field="text", what="abstracts dropped", default_share=0.5)
