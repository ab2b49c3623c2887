"""Readers for judged collections' topics and qrels in the layouts they ship in.

- TSV topics (``qid<TAB>text``) and TREC qrels: :mod:`nteval.formats.trec`
- BEIR: ``queries.jsonl`` (``_id``, ``text``) and ``qrels/*.tsv`` (``query-id corpus-id score``,
  header optional)
- TREC-COVID XML topics: ``<topic number=N><query/><question/><narrative/></topic>``; the fields
  used are selectable (``query``, ``question``, ``narrative``, or several joined: ``query+question``)
- TREC Genomics 2005 ad hoc topics (``adhoc2005narrative.txt``): lines ``<100>Describe ...``
- TREC Genomics 2004 ad hoc topics (XML ``<TOPIC><ID/><TITLE/><NEED/><CONTEXT/></TOPIC>``, as the
  track overview describes them; fields selectable like TREC-COVID's)

:func:`load_topics` / :func:`load_qrels` pick the reader from the file's name and first bytes.
"""
from __future__ import annotations

import re
from pathlib import Path

from ..corpus.beir import json_id, json_object, json_text
from ..errors import InputError, short
from .trec import Qrels, _rows, read_qrels, read_text_file, read_topics

Topics = dict[str, str]


def _text(elem) -> str:
    return " ".join("".join(elem.itertext()).split()) if elem is not None else ""


def _fields(path: Path, field: str, allowed: tuple[str, ...]) -> list[str]:
    names = [f.strip().lower() for f in field.split("+") if f.strip()]
    bad = [f for f in names if f not in allowed]
    if not names or bad:
        raise InputError(path, f"unknown topic field {(bad or [field])[0]!r} (allowed: {', '.join(allowed)}, joined with +)")
    return names


def _xml_root(path: Path):
    from lxml import etree

    try:
        return etree.parse(str(path), etree.XMLParser(resolve_entities=False, no_network=True)).getroot()
    except etree.XMLSyntaxError as err:
        line = err.position[0] if err.position else err.lineno
        raise InputError(path, f"malformed XML: {err.msg}", place=f"line {line}") from None


def read_beir_queries(path: Path) -> Topics:
    out: Topics = {}
    for n, line in enumerate(read_text_file(path, "queries").splitlines(), 1):
        if not line.strip():
            continue
        obj = json_object(path, line, n)
        if "_id" not in obj or "text" not in obj:
            raise InputError(path, 'BEIR query line needs "_id" and "text"', place=f"line {n}")
        out[json_id(path, obj, n)] = json_text(path, obj, "text", n)
    return out


def read_beir_qrels(path: Path) -> Qrels:
    """BEIR qrels. A (query, document) judged again with the same grade is the same judgment; with
    another grade, which one holds cannot be told: refused in one line with their count and the
    first one's line (nothing is resolved "last wins" in silence)."""
    out: Qrels = {}
    first_line: dict[tuple[str, str], int] = {}
    conflicts: list[tuple[int, int, str, str]] = []  # (line, earlier line, query, document)
    for n, (qid, docid, score) in _rows(path, "BEIR qrels", "query-id corpus-id score"):
        if n == 1 and qid == "query-id":
            continue  # header
        try:
            grade = int(score)
        except ValueError:
            raise InputError(path, f"score {score!r} is not an integer", place=f"line {n}") from None
        judged = out.setdefault(qid, {})
        if docid in judged:
            if judged[docid] != grade:
                conflicts.append((n, first_line[qid, docid], qid, docid))
            continue
        judged[docid] = grade
        first_line[qid, docid] = n
    if conflicts:
        n, earlier, qid, docid = conflicts[0]
        raise InputError(path, f"{len(conflicts):,} judgment(s) repeat an earlier (query, document) with another grade "
                               f"(the first: query {short(qid)}, document {short(docid)}, judged at line {earlier} "
                               "too): which grade holds cannot be told; keep one line per pair", place=f"line {n}")
    return out


def _xml_topics(path: Path, field: str, allowed: tuple[str, ...], tag: str, topic_id, child) -> Topics:
    """Topics of an XML file: one ``tag`` element each, id from ``topic_id(elem)``, text = the
    selected fields (``child(elem, name)``) joined."""
    names = _fields(path, field, allowed)
    out: Topics = {}
    for t in _xml_root(path).iter(tag):
        qid = topic_id(t)
        if not qid:
            raise InputError(path, f"<{tag}> without an id", place=f"line {t.sourceline}")
        out[qid] = " ".join(_text(child(t, f)) for f in names).strip()
    return out


def read_trec_covid_topics(path: Path, field: str = "query") -> Topics:
    return _xml_topics(path, field, ("query", "question", "narrative"), "topic",
                       lambda t: (t.get("number") or "").strip(), lambda t, f: t.find(f))


def read_genomics2005_topics(path: Path) -> Topics:
    out: Topics = {}
    pat = re.compile(r"^<(\d+)>\s*(.*)$")
    for n, line in enumerate(Path(path).read_text(encoding="utf-8", errors="replace").splitlines(), 1):
        if not line.strip():
            continue
        m = pat.match(line.strip())
        if not m:
            raise InputError(path, "expected '<number>topic text'", place=f"line {n}")
        out[m.group(1)] = " ".join(m.group(2).split())
    return out


def read_genomics2004_topics(path: Path, field: str = "title") -> Topics:
    return _xml_topics(path, field, ("title", "need", "context"), "TOPIC",
                       lambda t: _text(t.find("ID")), lambda t, f: t.find(f.upper()))


def load_topics(path: str | Path, field: str | None = None) -> Topics:
    """Topics from any supported layout (by extension and first bytes)."""
    path = Path(path)
    if not path.is_file():
        raise InputError(path, "no such topics file")
    head = path.read_bytes()[:2000].decode("utf-8", "replace").lstrip()
    if path.suffix == ".jsonl":
        return read_beir_queries(path)
    if head.startswith("<?xml") or head.startswith("<topics") or head.startswith("<TOPICS"):
        if "<TOPICS" in head or "<TOPIC>" in head:
            return read_genomics2004_topics(path, field or "title")
        return read_trec_covid_topics(path, field or "query")
    if re.match(r"<\d+>", head):
        return read_genomics2005_topics(path)
    return read_topics(path)


def load_qrels(path: str | Path) -> Qrels:
    """Qrels in TREC (4 columns) or BEIR (3 columns, optional header) layout."""
    path = Path(path)
    if not path.is_file():
        raise InputError(path, "a directory, not a qrels file" if path.is_dir() else "no such qrels file")
    first = ""
    for _n, parts in _first_rows(path):
        first = " ".join(parts)
        break
    if first.startswith("query-id") or len(first.split()) == 3:
        qrels = read_beir_qrels(path)
        if not qrels:
            raise InputError(path, "no judgments: the qrels file is empty")
        return qrels
    return read_qrels(path)


def _first_rows(path: Path):
    """Rows of any width (the layout is not known yet), with _rows' one-line errors."""
    import gzip

    opener = gzip.open if str(path).endswith(".gz") else open
    try:
        with opener(path, "rt", encoding="utf-8") as fh:
            for n, line in enumerate(fh, 1):
                if line.split():
                    yield n, line.split()
    except UnicodeDecodeError as err:
        raise InputError(path, f"not UTF-8 text (byte 0x{err.object[err.start]:02x}): not a qrels file?") from None
    except (EOFError, OSError) as err:
        raise InputError(path, f"unreadable qrels file: {err}") from None


def load_judged_topics(queries: str | Path, qrels_path: str | Path, field: str | None = None) -> tuple[Topics, Qrels]:
    """Human topics that have text and at least one relevant document, with their qrels. Too few
    is one line naming the file at fault: the qrels when they hold fewer than 2 topics with a
    relevant document, the queries file when it lacks the text of those they hold."""
    qrels = load_qrels(qrels_path)
    with_relevant = [q for q, docs in qrels.items() if any(r > 0 for r in docs.values())]
    if len(with_relevant) < 2:
        raise InputError(qrels_path, f"fewer than 2 topics have a relevant document (a grade above 0): "
                                     f"{len(with_relevant)} of the {len(qrels):,} topics judged")
    all_topics = load_topics(queries, field)
    judged = [q for q, t in all_topics.items() if q in qrels and any(r > 0 for r in qrels[q].values())]
    topics = {q: all_topics[q] for q in judged if all_topics[q].strip()}
    empty = [q for q in judged if q not in topics]
    if empty:  # counted and reported, not dropped silently
        import sys

        ids = ", ".join(empty[:5]) + (", ..." if len(empty) > 5 else "")
        print(f"nteval: note: {queries}: {len(empty)} judged topic(s) with empty text left out ({ids})",
              file=sys.stderr)
    if len(topics) < 2:
        raise InputError(queries, f"fewer than 2 topics have both text here and a relevant document in the qrels "
                                  f"({len(topics)} of the {len(with_relevant):,} with one in {qrels_path}): queries "
                                  "of another collection?")
    return topics, {q: qrels[q] for q in topics}
