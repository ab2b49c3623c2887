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


def results_table(results: dict[str, Any], sort_by: str | None = None) -> str:
    """Systems sorted by ``sort_by`` (default: RR if measured, else the first measure)."""
    measures = results["measures"]
    key = sort_by or ("RR" if "RR" in measures else measures[0])
    systems = sorted(results["systems"].items(), key=lambda kv: -kv[1][key])
    configs = results.get("system_configs", {})
    width = max([len(n) for n in results["systems"]] + [6])
    lines = [f"{results['protocol']} protocol: {results['n_topics']:,} topics, seed {results['seed']}, sorted by {key}",
             f"{'system':<{width}}  " + "  ".join(f"{m:>8}" for m in measures) + "  empty  algorithm"]
    for name, vals in systems:
        algo = configs.get(name, {}).get("algorithm", "")
        lines.append(f"{name:<{width}}  " + "  ".join(f"{vals[m]:>8.4f}" for m in measures)
                     + f"  {results.get('empty_queries', {}).get(name, 0):>5}  {algo}")
    return "\n".join(lines)
