"""Rewrite docs/parameters.md from the parameter declarations (protocol specs, system kinds)."""
from pathlib import Path

from nteval.atomic import write_text
from nteval.report.reference import parameters_markdown

if __name__ == "__main__":
    out = Path(__file__).resolve().parents[1] / "docs" / "parameters.md"
    write_text(out, parameters_markdown() + "\n")
    print(f"wrote {out}")
