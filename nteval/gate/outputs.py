"""A gate's files: gate.json (everything), gate.md (a pull-request comment), junit.xml (what CI
servers display: one test case per candidate and topic set; a regression is a ``<failure>``, an
inconclusive decision ``<skipped>``), per_topic.tsv. Each written atomically."""
from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

from ..atomic import write_text
from .report import candidate_clause, gate_lines, markdown

#: the files each command writes into its OUT; the first is the mark of an OUT it wrote
OWN = {"gate": ("gate.json", "gate.md", "junit.xml", "gate.txt", "per_topic.tsv", "check.json"),
       "history": ("history.json", "history.html", "history.png")}
_MARKS = {"gate": ("gate.json", "check.json"), "history": ("history.json",)}


def claim_out(out: Path, kind: str) -> None:
    """Make ``out`` ready for a ``kind`` ("gate" or "history") command, before any work: a new or
    empty directory, or one this command wrote before, whose earlier files move to OUT/previous/
    (a run that then fails on bad input leaves no stale pass behind for CI to post, and loses
    nothing). A directory holding anything else is one line: nteval writes only into its own
    outputs (a user's folder, an index, a pin, the current directory are never written into)."""
    import os
    import shutil

    from ..errors import InputError

    out = Path(out)
    if out.exists() and not out.is_dir():
        raise InputError(out, "--out exists and is not a directory")
    if not out.exists():
        return
    entries = [e for e in os.listdir(out) if not e.startswith(".")]
    if not entries:
        return
    if not any((out / m).is_file() for m in _MARKS[kind]):
        shown = ", ".join(sorted(entries)[:3]) + (", …" if len(entries) > 3 else "")
        raise InputError(out, f"--out: a directory nteval did not write as `nteval {kind}` output (it holds {shown}); "
                              "choose a new or empty directory")
    earlier = [f for f in OWN[kind] if (out / f).is_file()]
    if earlier:
        prev = out / "previous"
        shutil.rmtree(prev, ignore_errors=True)
        prev.mkdir()
        for f in earlier:
            os.replace(out / f, prev / f)


def junit_xml(result: dict[str, Any]) -> str:
    """The gate as JUnit XML (the schema Jenkins, GitLab and GitHub's test reporters read)."""
    cases = []
    for name, c in result["candidates"].items():
        for kind in ("pinned", "fresh"):
            d = c.get(kind)
            if d is None:
                continue
            cases.append((name, kind, d))
    failures = sum(1 for *_, d in cases if d["decision"] == "worse")
    skipped = sum(1 for *_, d in cases if d["decision"] == "inconclusive")
    suites = ET.Element("testsuites", name="nteval gate", tests=str(len(cases)), failures=str(failures),
                        errors="0", skipped=str(skipped))
    suite = ET.SubElement(suites, "testsuite", name=f"nteval gate: {result['task']} search ({result['measure']}), pin "
                                                    f"{result['pin']['id']}",
                          tests=str(len(cases)), failures=str(failures), errors="0", skipped=str(skipped),
                          timestamp=result.get("utc", ""), time=f"{result.get('seconds', 0):.3f}")
    props = ET.SubElement(suite, "properties")
    for key, value in (("outcome", result["outcome"]), ("exit", result.get("exit", "")), ("baseline", result["baseline"]), ("pin", result["pin"]["id"]),
                       ("topic_set", result["pin"]["topic_set"]), ("index_fingerprint", result["index_fingerprint"]),
                       ("margin", result["rule"]["margin"]), ("multiplicity", result["rule"]["multiplicity"])):
        ET.SubElement(props, "property", name=key, value=str(value))
    for name, kind, d in cases:
        label = result["labels"].get(name, name)
        case = ET.SubElement(suite, "testcase", classname=f"nteval.gate.{result['task']}",
                             name=f"{label} vs {result['labels'].get(result['baseline'], result['baseline'])}, "
                                  f"{kind} topics ({d['topics']:,})", time="0")
        summary = (f"{d['decision']}: {result['measure']} {d['candidate_mean']:.4f} vs {d['baseline_mean']:.4f}, "
                   f"diff {d['diff']:+.4f} [{d['ci'][0]:+.4f}, {d['ci'][1]:+.4f}], margin {-d['margin']:+.4f}")
        if d["decision"] == "worse":
            f = ET.SubElement(case, "failure", type="regression", message=summary)
            f.text = candidate_clause(result, name)
        elif d["decision"] == "inconclusive":
            more = d.get("more_topics") or {}
            ET.SubElement(case, "skipped", message=f"{summary}; {more.get('note', 'not decided')}")
        out = ET.SubElement(case, "system-out")
        out.text = summary
    hist = result.get("history")
    if hist is not None:  # the history's alert rules, as one more case: an alert fails it (exit status 5)
        alerts = hist.get("alerts") or []
        case = ET.SubElement(suite, "testcase", classname=f"nteval.gate.{result['task']}",
                             name=f"history alert rules ({hist['where']})", time="0")
        if alerts:
            f = ET.SubElement(case, "failure", type="alert", message=alerts[0]["text"])
            f.text = "\n".join(a["text"] for a in alerts)
        n_fail = failures + (1 if alerts else 0)
        for el in (suites, suite):
            el.set("tests", str(len(cases) + 1))
            el.set("failures", str(n_fail))
    ET.indent(suites)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suites, encoding="unicode") + "\n"


def per_topic_tsv(result: dict[str, Any]) -> str:
    lines = ["topics\tsystem\tqid\tmeasure\tvalue"]
    for kind, per in result.get("per_topic", {}).items():
        for system, values in per.items():
            lines += [f"{kind}\t{system}\t{q}\t{result['measure']}\t{v:.6f}" for q, v in sorted(values.items())]
    return "\n".join(lines) + "\n"


def write_outputs(out: Path, result: dict[str, Any]) -> None:
    """OUT/gate.json, gate.md, junit.xml, per_topic.tsv and gate.txt (the terminal report)."""
    out.mkdir(parents=True, exist_ok=True)
    slim = {k: v for k, v in result.items() if k != "per_topic"}
    write_text(out / "per_topic.tsv", per_topic_tsv(result))
    write_text(out / "junit.xml", junit_xml(result))
    write_text(out / "gate.md", markdown(result))
    write_text(out / "gate.txt", "\n".join(gate_lines(result)) + "\n")
    write_text(out / "gate.json", json.dumps(slim, indent=2, ensure_ascii=False, default=str) + "\n")
