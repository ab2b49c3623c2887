"""TREC file formats: topics (``qid<TAB>text``), qrels (``qid 0 docid rel``), runs
(``qid Q0 docid rank score tag``).

Ranking order everywhere in nteval is trec_eval's: score descending with scores compared as
32-bit floats (trec_eval stores them so), ties broken by docid descending (trec_eval's qsort
comparator). Writing runs in that order makes the rank column agree with what is evaluated, and
lets official TREC numbers be reproduced exactly.
"""
from __future__ import annotations

import io
from collections.abc import Iterable, Mapping
from operator import itemgetter
from pathlib import Path

import numpy as np

from ..atomic import write_text
from ..errors import InputError, short

Qrels = dict[str, dict[str, int]]
Run = dict[str, list[tuple[str, float]]]


def trec_order(ranking: Iterable[tuple[str, float]]) -> list[tuple[str, float]]:
    """Sort (docid, score) pairs as trec_eval ranks them: float32 score desc, then docid desc.

    A ranking whose float32 scores already descend (what a search engine returns, and every ranking
    this function made) only has its runs of equal scores put in docid order: a linear check instead
    of two full sorts. Any other is sorted whole; both give the same list."""
    items = list(ranking)
    if not items:
        return []
    with np.errstate(over="ignore"):   # (beyond float32: ±inf, as trec_eval's float)
        scores = np.fromiter(map(itemgetter(1), items), dtype=np.float32, count=len(items))
    if not bool((scores[:-1] >= scores[1:]).all()):  # (NaN compares false: sorted whole)
        return _sort_whole(items, scores)
    # each run of equal scores, items[first..last]: where "equal to the next" switches on, then off
    tied = np.concatenate(([0], scores[:-1] == scores[1:], [0])).astype(np.int8)
    edges = np.flatnonzero(np.diff(tied)).tolist()
    for first, last in zip(edges[::2], edges[1::2]):
        items[first:last + 1] = sorted(items[first:last + 1], key=itemgetter(0), reverse=True)
    return items


def _sort_whole(items: list[tuple[str, float]], scores: np.ndarray) -> list[tuple[str, float]]:
    order = sorted(range(len(items)), key=lambda i: items[i][0], reverse=True)  # docid desc (the tie-break) ...
    neg = np.negative(scores).tolist()
    order.sort(key=neg.__getitem__)  # ... kept by this stable sort
    return [items[i] for i in order]


def write_topics(path: Path, topics: Mapping[str, str]) -> None:
    buf = io.StringIO()
    for qid, text in topics.items():
        buf.write(f"{qid}\t{' '.join(text.split())}\n")
    write_text(path, buf.getvalue())


def read_text_file(path: Path, what: str) -> str:
    """A whole UTF-8 text file, or a one-line error naming the file and line (binary, non-UTF-8,
    a directory, missing)."""
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        raise InputError(path, f"no such {what} file") from None
    except IsADirectoryError:
        raise InputError(path, f"is a directory, not a {what} file") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = data[: err.start].count(b"\n") + 1
        raise InputError(path, f"not UTF-8 text (byte 0x{data[err.start]:02x}): not a {what} file?",
                         place=f"line {line}") from None


def read_topics(path: Path) -> dict[str, str]:
    out: dict[str, str] = {}
    for n, line in enumerate(read_text_file(path, "topics").splitlines(), 1):
        if not line.strip():
            continue
        if "\t" not in line:
            raise InputError(path, "expected 'qid<TAB>text'", place=f"line {n}")
        qid, text = line.split("\t", 1)
        out[qid.strip()] = text.strip()
    return out


def write_qrels(path: Path, qrels: Qrels) -> None:
    buf = io.StringIO()
    for qid, docs in qrels.items():
        for docid, rel in docs.items():
            buf.write(f"{qid} 0 {docid} {int(rel)}\n")
    write_text(path, buf.getvalue())


def _rows(path: Path, what: str, fields: str):
    """(line number, fields) of a whitespace-separated file (.gz allowed), every line having
    exactly the fields named in ``fields``; errors name the file and line (a directory, a binary or
    non-UTF-8 file, a corrupt .gz are one-line errors too)."""
    import gzip
    import zlib

    n_fields = len(fields.split())
    opener = gzip.open if str(path).endswith(".gz") else open
    n = 0
    try:
        with opener(path, "rt", encoding="utf-8") as fh:
            for n, line in enumerate(fh, 1):
                if "\x00" in line:
                    raise InputError(path, f"binary data (NUL byte): not a {what} file", place=f"line {n}")
                parts = line.split()
                if not parts:
                    continue
                if len(parts) != n_fields:
                    raise InputError(path, f"{what} line has {len(parts)} fields, expected {n_fields} ({fields})", place=f"line {n}")
                yield n, parts
    except FileNotFoundError:
        raise InputError(path, f"no such {what} file") from None
    except IsADirectoryError:
        raise InputError(path, f"is a directory, not a {what} file") from None
    except UnicodeDecodeError as err:
        raise InputError(path, f"not UTF-8 text (byte 0x{err.object[err.start]:02x}): not a {what} file?",
                         place=f"line {n + 1}") from None
    except (EOFError, zlib.error, gzip.BadGzipFile) as err:
        raise InputError(path, f"truncated or corrupt gzip stream: {err}", place=f"after line {n}") from None


def read_qrels(path: Path) -> Qrels:
    """TREC qrels: ``qid iter docid rel`` (graded relevance kept as int). A file without any
    judgment, or judging one document twice for a topic (trec_eval refuses that too), is an error."""
    out: Qrels = {}
    first_line: dict[tuple[str, str], int] = {}
    repeats: list[tuple[int, str, str]] = []  # (line, topic, document) of each judgment made again
    for n, (qid, _it, docid, rel) in _rows(path, "qrels", "qid iter docid rel"):
        try:
            r = int(rel)
        except ValueError:
            raise InputError(path, f"relevance {short(rel)} is not an integer", place=f"line {n}") from None
        if (qid, docid) in first_line:
            repeats.append((n, qid, docid))
            continue
        first_line[qid, docid] = n
        out.setdefault(qid, {})[docid] = r
    if repeats:
        n, qid, docid = repeats[0]
        raise InputError(path, f"{len(repeats):,} judgment(s) repeat an earlier (topic, document) (the first: topic "
                               f"{short(qid)} judges document {short(docid)} twice, first at line {first_line[qid, docid]}): "
                               "keep one line per pair, as trec_eval requires", place=f"line {n}")
    if not out:
        raise InputError(path, "no judgments: the qrels file is empty")
    return out


def canonical(ranking: Iterable[tuple[str, float]], depth: int | None = None) -> list[tuple[str, float]]:
    """Scores as a run file stores them (6 decimals), in trec_eval order, cut at ``depth``: a run
    used straight from memory then evaluates (and z-scores) exactly like the same run read back."""
    items = list(ranking)
    scores = six_decimals(np.fromiter(map(itemgetter(1), items), dtype=np.float64, count=len(items))).tolist()
    return trec_order(zip(map(itemgetter(0), items), scores))[:depth]


#: beyond this magnitude a score is rounded by Python itself (x·10⁶ near 2⁵³ holds no fraction to round)
_SIX_DECIMALS_MAX = 1e9


def six_decimals(scores: np.ndarray) -> np.ndarray:
    """``float(f"{s:.6f}")`` of each score, exactly, without a string per score (most of a run's
    writing time): r = round-half-even(s·10⁶) and r / 10⁶, which is the double nearest r·10⁻⁶, as
    float() of the decimal is. Where s·10⁶ as computed lies within a few ulps of a half (its own
    rounding could change the side), and for scores beyond ±10⁹ or not finite, Python formats."""
    with np.errstate(over="ignore", invalid="ignore"):   # (inf and NaN go to Python below)
        y = scores * 1e6
        out = np.rint(y) / 1e6
        near_half = np.abs(np.abs(y - np.floor(y)) - 0.5) <= 8 * np.spacing(np.abs(y))
        slow = near_half | ~(np.abs(scores) < _SIX_DECIMALS_MAX)
    for i in np.flatnonzero(slow).tolist():
        out[i] = float(f"{float(scores[i]):.6f}")
    return out


def format_run(run: Run, tag: str) -> str:
    """A run as TREC text, each topic in trec_eval order with ranks 1..n."""
    buf = io.StringIO()
    for qid, ranking in run.items():
        for rank, (docid, score) in enumerate(trec_order(ranking), 1):
            buf.write(f"{qid} Q0 {docid} {rank} {score:.6f} {tag}\n")
    return buf.getvalue()


def write_run(path: Path, run: Run, tag: str) -> None:
    write_text(path, format_run(run, tag))


RUN_FIELDS = "qid Q0 docid rank score tag"


def run_rows(path: Path):
    """(line number, qid, docid, score, tag) of each line of a TREC run file, its score a finite
    number; a file that is not a run (missing, binary, not UTF-8, a line without 6 fields, a score
    that is not a finite number) is a one-line error naming the file and line."""
    for n, (qid, _q0, docid, _rank, score, tag) in _rows(path, "run", RUN_FIELDS):
        yield n, qid, docid, _score(path, score, n), tag


def one_tag(path: Path) -> str | None:
    """The run tag of run file ``path`` (.gz allowed), read from every line: one line naming both
    when it holds two (two runs in one file would be scored as one system under the first tag's
    name). None for an empty file."""
    first: dict[str, int] = {}
    for n, _qid, _docid, _s, tag in run_rows(path):
        if tag not in first:
            first[tag] = n
            if len(first) > 1:
                (a, na), (b, nb) = first.items()
                raise InputError(path, f"two run tags in one run file ({short(a)} from line {na}, {short(b)} from line "
                                       f"{nb}): one run per file (split it, or name each run in a systems YAML)",
                                 place=f"line {n}")
    return next(iter(first), None)


def read_run(path: Path, tags: set[str] | None = None) -> Run:
    """A TREC run (6 columns). Scores must be finite numbers and a docid may appear once per topic
    (trec_eval refuses duplicates too: "duplicate docs"); both are errors naming the file and line.
    The run tags seen (6th column) are added to ``tags`` when given."""
    out: Run = {}
    seen: dict[str, dict[str, int]] = {}
    for n, qid, docid, s, tag in run_rows(path):
        if tags is not None:
            tags.add(tag)
        first = seen.setdefault(qid, {}).setdefault(docid, n)
        if first != n:
            raise InputError(path, f"topic {short(qid)} ranks document {short(docid)} twice (first at line {first})",
                             place=f"line {n}")
        out.setdefault(qid, []).append((docid, s))
    return out


def _score(path: Path, score: str, n: int) -> float:
    """A run line's score: a finite number, else an error naming the file and line."""
    import math

    try:
        s = float(score)
    except ValueError:
        raise InputError(path, f"score {short(score)} is not a number", place=f"line {n}") from None
    if not math.isfinite(s):
        raise InputError(path, f"score {short(score)} is not a finite number", place=f"line {n}")
    return s


def read_run_top(path: Path, depth: int) -> Run:
    """A TREC run read as it streams, each topic cut to its ``depth`` best hits (trec_eval's order):
    memory grows with topics × depth, not with the file (a 10M-line run of 1,000 topics at depth
    1,000 holds 1M hits). The same checks as :func:`read_run` on every line; a document ranked twice
    is refused when both are among the hits kept."""
    import heapq
    import math
    import struct

    f32 = struct.Struct("f")
    heaps: dict[str, list[tuple[float, str, float, int]]] = {}
    first_tag: tuple[str, int] | None = None
    for n, qid, docid, s, tag in run_rows(path):
        if first_tag is None:
            first_tag = (tag, n)
        elif tag != first_tag[0]:
            raise InputError(path, f"two run tags in one run file ({short(first_tag[0])} from line {first_tag[1]}, "
                                   f"{short(tag)} at line {n}): one run per file (split it, or name each run in a "
                                   "systems YAML)", place=f"line {n}")
        try:
            key = f32.unpack(f32.pack(s))[0]
        except OverflowError:  # beyond float32: the sign is its order, as trec_eval's float
            key = math.copysign(math.inf, s)
        item = (key, docid, s, n)
        h = heaps.setdefault(qid, [])
        if len(h) < depth:
            heapq.heappush(h, item)
        elif item > h[0]:
            heapq.heapreplace(h, item)
    out: Run = {}
    for qid, h in heaps.items():
        first: dict[str, int] = {}
        for _key, docid, _s, n in sorted(h, key=lambda x: x[3]):
            if docid in first:
                raise InputError(path, f"topic {short(qid)} ranks document {short(docid)} twice (first at line "
                                       f"{first[docid]})", place=f"line {n}")
            first[docid] = n
        out[qid] = [(docid, s) for _key, docid, s, _n in sorted(h, reverse=True)]
    return out
