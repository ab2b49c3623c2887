"""Plain-text summaries printed by the CLI."""
from __future__ import annotations

from pathlib import Path
from typing import Any


def manifest_summary(manifest: dict[str, Any], where: str | Path) -> str:
    c = manifest["counts"]
    skipped = ", ".join(f"{k} {v:,}" for k, v in c["skipped"].items() if v) or "none"
    lines = [
        f"index {where}  (fingerprint {manifest['fingerprint'][:12]})",
        f"  sources      {len(manifest['sources'])} file(s)",
    ]
    for s in manifest["sources"]:
        sc = s["counts"]
        lines.append(f"    {s['path']}  [{s['format']}]  seen {sc['seen']:,}  usable {sc['documents']:,}"
                     f"  deleted-listed {sc['deleted_pmids']:,}")
    lines += [
        f"  records      seen {c['seen']:,}  kept {c['kept']:,}  replaced {c['replaced']:,}",
        f"  deletions    {c['deleted_pmids']:,} PMIDs listed, {c['deleted_removed']:,} removed",
        f"  skipped      {skipped}",
        f"  indexes      all/ (title+abstract) and nt/ (abstract only): {manifest['indexes']['nt']['documents']:,} documents each",
        f"  versions     " + ", ".join(f"{k} {v}" for k, v in manifest["versions"].items()),
    ]
    return "\n".join(lines)
