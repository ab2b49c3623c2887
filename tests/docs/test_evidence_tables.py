"""The evidence tables of the docs are the data the scripts wrote: the gate's error rates
(docs/gate.md from docs/gate_error_rates.json) and the title-leak study (docs/any-system.md from
docs/title_leak_*.json). A hand-edited number, or data regenerated without the page, fails here."""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))


def _block(page: str, name: str) -> str:
    m = re.search(rf"<!-- {name} -->\n(.*?)\n<!-- /{name} -->", (ROOT / "docs" / page).read_text(encoding="utf-8"), re.S)
    assert m, f"docs/{page}: no <!-- {name} --> block"
    return m.group(1)


def test_gate_error_rate_tables_are_the_data():
    from gate_error_rates import tables

    made = tables(json.loads((ROOT / "docs" / "gate_error_rates.json").read_text()))
    for name, text in made.items():
        assert _block("gate.md", name) == text, f"docs/gate.md {name}: run scripts/gate_error_rates.py --render"


def test_title_leak_table_is_the_data():
    from title_leak_study import table

    data = {label: json.loads((ROOT / "docs" / f"title_leak_{label.lower()}.json").read_text())
            for label in ("PubMed", "SciFact")}
    assert _block("any-system.md", "title-leak") == table(data)
    for res in data.values():  # and what the page says of them holds
        for st in res["studies"]:
            flagged = [n for n, r in st["runs"].items() if r["flagged"]]
            assert flagged == ["bm25s_title_and_abstract"], (st["protocol"], flagged)
