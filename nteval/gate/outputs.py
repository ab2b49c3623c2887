"""A gate's files: gate.json (everything), gate.md (a pull-request comment), junit.xml (what CI
servers display: one test case per candidate and topic set; a regression is a ``<failure>``, an
inconclusive decision ``<skipped>``), per_topic.tsv. Each written atomically."""
from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

from ..atomic import out_lock, write_text
from ..errors import InputError
from .report import _who, candidate_clause, check_markdown, gate_lines, markdown

#: the files each command writes into its OUT (``gate`` for gate and check)
OWN = {"gate": ("gate.json", "gate.md", "junit.xml", "gate.txt", "per_topic.tsv", "check.json", "check.md"),
       "history": ("history.json", "history.html", "history.png")}
#: the files whose content proves an OUT is nteval's (:func:`is_own`)
_MARKS = {"gate": ("gate.json", "check.json"), "history": ("history.json",)}
#: the key every gate.json, check.json and history.json carries: the command that wrote it
MARK = "nteval_output"
FORMAT = 1
#: the hidden file that marks an OUT as a gate's or check's from the moment it starts working there
#: (:func:`stake`), so a first run stopped before its gate.json (an engine down, Ctrl-C) leaves an
#: OUT its rerun may use
STAKE = ".nteval-gate.json"


def mark(result: dict[str, Any], command: str) -> dict[str, Any]:
    """``result`` with the mark of ``command``'s output first (what :func:`is_own` reads)."""
    return {MARK: {"command": command, "format": FORMAT}, **{k: v for k, v in result.items() if k != MARK}}


def is_own(path: Path) -> bool:
    """Whether the JSON file ``path`` is one nteval wrote: the mark :func:`mark` puts in (or, for
    the files of earlier versions, their own signature). A file of yours of the same name is not."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, UnicodeDecodeError):
        return False
    if not isinstance(data, dict):
        return False
    m = data.get(MARK)
    if isinstance(m, dict) and m.get("command") in ("gate", "check", "history"):
        return True
    if path.name == "history.json":  # (nteval before the mark)
        return {"history", "releases", "alerts", "latest_alerts", "alert_alpha"} <= set(data)
    return data.get("gate") in ("nteval gate", "nteval check") and {"pin", "task", "index_fingerprint"} <= set(data)


def claim_out(out: Path, kind: str) -> None:
    """Make ``out`` ready for a ``kind`` ("gate" or "history") command, before any work: a new or
    empty directory, or one this command wrote before (its gate.json, check.json or history.json,
    or the one a stopped run set aside in OUT/previous/, carries nteval's mark), whose earlier files move to OUT/previous/ (a run that then fails on bad
    input leaves no stale pass behind for CI to post, and loses nothing). A directory holding
    anything else is one line: nteval writes only into its own outputs (a user's folder, an index, a
    pin, the current directory are never written into). OUT/previous/ is emptied only when it holds
    nothing but files nteval moved there."""
    import os

    out = Path(out)
    if out.exists() and not out.is_dir():
        raise InputError(out, "--out exists and is not a directory")
    if not out.exists():
        return
    entries = [e for e in os.listdir(out) if not e.startswith(".")]
    if not entries:
        return
    marks = [d / m for d in (out, out / "previous") for m in _MARKS[kind] if (d / m).is_file()]  # (set aside: previous/)
    if kind == "gate" and (out / STAKE).is_file() and not (out / STAKE).is_symlink():
        marks.append(out / STAKE)
    if not marks or not any(is_own(m) for m in marks):
        shown = ", ".join(sorted(entries)[:3]) + (", …" if len(entries) > 3 else "")
        why = f" ({marks[0].name} is not one nteval wrote)" if marks else ""
        raise InputError(out, f"--out: a directory nteval did not write as `nteval {kind}` output (it holds {shown}){why}; "
                              "choose a new or empty directory")
    earlier = [f for f in OWN[kind] if (out / f).is_file() and not (out / f).is_symlink()]
    if earlier:
        prev = _empty_previous(out / "previous", kind)
        for f in earlier:
            os.replace(out / f, prev / f)


def stake(out: Path) -> None:
    """Mark ``out`` as a gate's or check's before anything is written into it (OUT/runs/ first):
    :func:`claim_out` then takes it as nteval's even when no gate.json or check.json was written
    (the run stopped on an engine that did not answer, on Ctrl-C)."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    if not (out / STAKE).is_file():
        write_text(out / STAKE, json.dumps(mark({}, "gate")) + "\n")


def unstake(out: Path) -> None:
    """Remove ``out`` when it holds nothing but the stake and empty directories (a gate refused before
    it wrote anything); anything else, a run computed, a report, stays."""
    import os

    out = Path(out)
    if not out.is_dir() or out.is_symlink():
        return
    for root, dirs, files in os.walk(out):
        if any(Path(root, f) != out / STAKE for f in files) or any(Path(root, d).is_symlink() for d in dirs):
            return
    for root, _dirs, files in os.walk(out, topdown=False):
        for f in files:
            Path(root, f).unlink()
        Path(root).rmdir()


def _empty_previous(prev: Path, kind: str) -> Path:
    """OUT/previous/, emptied of the files an earlier run moved there; one line (nothing changed)
    when it holds anything else."""
    import os

    if prev.is_symlink() or (prev.exists() and not prev.is_dir()):
        raise InputError(prev, "--out: previous is not a directory nteval made: move it away, or choose another --out")
    if prev.is_dir():
        names = os.listdir(prev)
        foreign = sorted(n for n in names if n not in OWN[kind] or not (prev / n).is_file() or (prev / n).is_symlink())
        if foreign:
            raise InputError(prev, f"--out: previous/ holds files nteval did not move there ({', '.join(foreign[:3])}"
                                   f"{', …' if len(foreign) > 3 else ''}): move them away, or choose another --out")
        for n in names:
            (prev / n).unlink()
    else:
        prev.mkdir()
    return prev


def set_aside(out: Path, kind: str) -> None:
    """:func:`claim_out` for a run stopped before it could claim OUT (a usage error): the earlier
    files of an OUT nteval wrote move to OUT/previous/; anything else is left as it is, silently
    (the error that stopped the run is the one to show)."""
    try:
        with out_lock(out):
            claim_out(out, kind)
    except (InputError, OSError):
        pass


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
                       ("margin", result["rule"]["margin"]), ("multiplicity", result["rule"]["multiplicity"]),
                       *((("judged_by", result["judged_by"]),) if result.get("judged_by") else ()),
                       *((("ceiling", result["ceiling"]["note"]),) if result.get("ceiling") else ()),
                       *((f"title_leak {n}", ev) for n, c in result["candidates"].items()
                         if (ev := (c["pinned"].get("title_gain") or {}).get("evidence")))):
        ET.SubElement(props, "property", name=key, value=str(value))
    c_of = result["candidates"].__getitem__
    for name, kind, d in cases:
        label = result["labels"].get(name, name)
        case = ET.SubElement(suite, "testcase", classname=f"nteval.gate.{result['task']}",
                             name=f"{label} vs {result['labels'].get(result['baseline'], result['baseline'])}, "
                                  f"{kind} topics ({d['topics']:,})", time="0")
        summary = (f"{d['decision']}" + (f" (NT alone: {d['nt_decision']})" if d.get("nt_decision") else "")
                   + f": {result['measure']} {d['candidate_mean']:.4f} vs {d['baseline_mean']:.4f}, "
                   f"diff {d['diff']:+.4f} [{d['ci'][0]:+.4f}, {d['ci'][1]:+.4f}], margin {d['margin']:.4f}")
        if d["decision"] == "worse":
            f = ET.SubElement(case, "failure", type="regression", message=summary)
            f.text = candidate_clause(result, name)
        elif d["decision"] == "inconclusive":
            more = d.get("more_topics") or {}
            ET.SubElement(case, "skipped", message=f"{summary}; " + (f"across families: {d['across_families']}"
                                                                     if d.get("across_families") else
                                                                     more.get("note", "not decided")))
        fam = c_of(name).get("family") or {}
        out = ET.SubElement(case, "system-out")
        evidence = (d.get("title_gain") or {}).get("evidence")
        out.text = summary + "".join(f"\n{x}" for x in (fam.get("rule"), fam.get("caution"), evidence) if x)
    _alert_case(suites, suite, result, len(cases), failures)
    return _xml(suites)


def _alert_case(suites: ET.Element, suite: ET.Element, result: dict[str, Any], tests: int, failures: int) -> None:
    """The history's alert rules as one more test case: an alert fails it (exit status 5)."""
    hist = result.get("history")
    if hist is None:
        return
    alerts = hist.get("alerts") or []
    case = ET.SubElement(suite, "testcase", classname=f"nteval.gate.{result['task']}",
                         name=f"history alert rules ({hist['where']})", time="0")
    if alerts:
        f = ET.SubElement(case, "failure", type="alert", message=alerts[0]["text"])
        f.text = "\n".join(a["text"] for a in alerts)
    for note in hist.get("notes") or []:
        ET.SubElement(case, "system-out").text = f"note: {note}"
    for el in (suites, suite):
        el.set("tests", str(tests + 1))
        el.set("failures", str(failures + (1 if alerts else 0)))


def _xml(suites: ET.Element) -> str:
    ET.indent(suites)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suites, encoding="unicode") + "\n"


def check_junit_xml(result: dict[str, Any]) -> str:
    """A check as JUnit XML: one passing case per topic set it scored (its score in system-out),
    and the history's alert rules as a case that an alert fails."""
    name = result["system"]
    scored = [(kind, st) for kind, st in result["sets"].items() if "mean" in st]
    suites = ET.Element("testsuites", name="nteval check", tests=str(len(scored)), failures="0", errors="0", skipped="0")
    suite = ET.SubElement(suites, "testsuite", name=f"nteval check: {result['task']} search ({result['measure']}), pin "
                                                    f"{result['pin']['id']}",
                          tests=str(len(scored)), failures="0", errors="0", skipped="0", timestamp=result.get("utc", ""),
                          time=f"{result.get('seconds', 0):.3f}")
    props = ET.SubElement(suite, "properties")
    for key, value in (("exit", result.get("exit", "")), ("system", name), ("pin", result["pin"]["id"]),
                       ("topic_set", result["pin"]["topic_set"]), ("index_fingerprint", result["index_fingerprint"])):
        ET.SubElement(props, "property", name=key, value=str(value))
    for kind, st in scored:
        case = ET.SubElement(suite, "testcase", classname=f"nteval.check.{result['task']}",
                             name=f"{_who(result, name)}, {kind} topics ({st['topics']:,})", time="0")
        ET.SubElement(case, "system-out").text = (f"{result['measure']} {st['mean']:.4f} [95 % interval "
                                                  f"{st['ci95'][0]:.4f}, {st['ci95'][1]:.4f}]")
    _alert_case(suites, suite, result, len(scored), 0)
    return _xml(suites)


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
    write_text(out / "gate.json", json.dumps(mark(slim, "gate"), indent=2, ensure_ascii=False, default=str) + "\n")


def write_check_outputs(out: Path, result: dict[str, Any]) -> None:
    """OUT/check.json, check.md and junit.xml of a check."""
    out.mkdir(parents=True, exist_ok=True)
    slim = {k: v for k, v in result.items() if k != "per_topic"}
    write_text(out / "junit.xml", check_junit_xml(result))
    write_text(out / "check.md", check_markdown(result))
    write_text(out / "check.json", json.dumps(mark(slim, "check"), indent=2, ensure_ascii=False, default=str) + "\n")
