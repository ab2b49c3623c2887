"""A byte stream with the XML elements a reader never looks at cut out before the parser sees them.

libxml2 builds every node of a record before nteval reads a field of it, and most of a modern
PubMed record is what nteval never reads: ``<PubmedData>`` (history dates, article ids, the
reference list) and ``<AuthorList>`` are 30–65 % of a file's bytes. Cutting them out of the byte
stream (``bytes.find``, in C) saves building those nodes at all.

Each cut element is replaced by whitespace of the same shape (its newlines, then as many spaces as
its last line had bytes), so every later byte keeps its line and column: a syntax error further on
is reported where it is in the file. An element is cut only when nothing can make the cut wrong,
else it is passed through untouched and the parser sees the file as it is:

- after a comment, CDATA section or processing instruction with a ``<`` inside, or an internal DTD
  subset, nothing more is cut: ``<AuthorList>`` inside a comment is not an element (PubMed's
  ``<?pmcsd ?>`` and ``<?nihms ?>`` instructions have no ``<`` and change nothing; a ``>`` or ``[``
  inside a DOCTYPE's quoted literal neither ends it nor opens a subset);
- an empty element (``<AuthorList/>``; a ``>`` in a quoted attribute value does not end a tag), one
  with the same tag nested inside, or one whose end tag is not within :data:`MAX_SPAN` bytes (a
  truncated file, a compression bomb) stays.

Malformed XML inside a cut element goes unseen: the reader never read it either.
"""
from __future__ import annotations

import re
from collections.abc import Iterable
from typing import BinaryIO

#: Read this much of the underlying stream at a time.
CHUNK = 1 << 20
#: The longest element that is cut (bytes); a longer one is passed through, so memory stays bounded.
MAX_SPAN = 8 << 20
_NAME_END = frozenset(b" \t\r\n>/")


class PrunedStream:
    """``raw`` (a binary file) with every element named in ``tags`` replaced by whitespace; a
    file-like object with ``read(n)`` for ``lxml.etree.iterparse``."""

    def __init__(self, raw: BinaryIO, tags: Iterable[str], chunk: int = CHUNK, max_span: int = MAX_SPAN,
                 record_end: str | None = None):
        self._raw = raw
        self._tags = [(b"<" + t.encode(), b"</" + t.encode() + b">") for t in tags]
        self._longest = max((len(close) for _o, close in self._tags), default=0)
        self._chunk = chunk
        self._max_span = max_span
        self._pending = b""  # read, not yet decided
        self._out = b""      # decided, not yet returned
        self._at = 0         # how much of _out was returned
        self._eof = False
        self._checked = 0    # _pending holds no "<!" or "<?" to look at before this offset
        self._through = False  # after markup with a "<" inside or an internal subset: cut nothing more
        self.cut = 0         # elements cut so far
        self._end = record_end.encode() if record_end else None
        self._since = 0      # bytes passed on since the last record end
        #: The most bytes passed on between two record ends (``record_end``) so far, an upper bound on
        #: the characters of text of every record whose end tag was read: a reader that bounds a
        #: record's text (compression bombs) need not count it while this stays under its bound.
        self.longest_record = 0

    def read(self, n: int = -1) -> bytes:
        want = n if n is not None and n >= 0 else 1 << 62
        while len(self._out) - self._at < want and not (self._eof and not self._pending):
            self._fill()
        data = self._out[self._at:self._at + want]
        self._at += len(data)
        if self._at == len(self._out):
            self._out, self._at = b"", 0
        return data

    def close(self) -> None:
        self._raw.close()

    def _emit(self, data: bytes) -> None:
        if self._end is not None:
            self._measure(data, self._end)
        if data:
            self._out = self._out[self._at:] + data if self._at else self._out + data
            self._at = 0

    def _measure(self, data: bytes, end: bytes) -> None:
        # an end tag split between two pieces is missed: the gap only grows (still an upper bound)
        last, at = 0, data.find(end)
        while at >= 0:
            self.longest_record = max(self.longest_record, self._since + at - last)
            self._since, last = 0, at
            at = data.find(end, at + 1)
        self._since += len(data) - last
        self.longest_record = max(self.longest_record, self._since)

    def _fill(self) -> None:
        if not self._eof:
            chunk = self._raw.read(self._chunk)
            if chunk:
                self._pending += chunk
            else:
                self._eof = True
        if not self._through:
            verdict, self._checked = _declarations(self._pending, self._checked, self._eof, self._max_span)
            if verdict == "wait":
                return  # a "<!" that more bytes will tell
            if verdict == "through":
                self._through = True
                # a "</MedlineCitation>" inside a comment is no record end: no more bound from here on
                self._end, self.longest_record = None, 1 << 62
        if self._through:
            self._emit(self._pending)
            self._pending = b""
            return
        rest = self._cut(self._pending)
        self._checked = max(0, self._checked - (len(self._pending) - len(rest)))
        self._pending = rest

    def _cut(self, buf: bytes) -> bytes:
        """Emit what can be decided of ``buf``; return the rest (kept for more data)."""
        pos, parts = 0, []
        nxt = {open_: buf.find(open_) for open_, _c in self._tags}  # each tag's next place, found once
        while True:
            for open_, at in nxt.items():
                if 0 <= at < pos:
                    nxt[open_] = buf.find(open_, pos)
            found = [(at, open_, close) for (open_, close) in self._tags if (at := nxt[open_]) >= 0]
            if not found:
                keep = 0 if self._eof else min(len(buf) - pos, self._longest)
                parts.append(buf[pos:len(buf) - keep])
                pos = len(buf) - keep
                break
            start, open_, close = min(found)
            after = start + len(open_)
            if after >= len(buf) and not self._eof:
                parts.append(buf[pos:start])
                pos = start
                break  # the byte after the name is still to come
            if after >= len(buf) or buf[after] not in _NAME_END:
                parts.append(buf[pos:after])  # a longer name (<AuthorListX): not ours
                pos = after
                continue
            gt = _tag_end(buf, after)
            if gt >= 0 and buf[gt - 1] == 0x2F:
                parts.append(buf[pos:gt + 1])  # <Tag .../>: nothing to cut
                pos = gt + 1
                continue
            end = buf.find(close, after) if gt >= 0 else -1
            if end < 0:
                if not self._eof and len(buf) - start <= self._max_span:
                    parts.append(buf[pos:start])
                    pos = start
                    break  # wait for the end tag
                parts.append(buf[pos:after])  # truncated, or too long to hold: leave it
                pos = after
                continue
            end += len(close)
            if buf.find(open_, after, end) >= 0 or end - start > self._max_span:
                parts.append(buf[pos:after])  # nested, or too long: leave it
                pos = after
                continue
            parts.append(buf[pos:start])
            parts.append(_blank(buf, start, end))
            self.cut += 1
            pos = end
        self._emit(b"".join(parts))
        return buf[pos:]


def _blank(buf: bytes, start: int, end: int) -> bytes:
    """Whitespace that ends on the same line and column as ``buf[start:end]`` does."""
    lines = buf.count(b"\n", start, end)
    last = end - (buf.rfind(b"\n", start, end) + 1) if lines else end - start
    return b"\n" * lines + b" " * last


def _tag_end(buf: bytes, at: int) -> int:
    """Where the start tag whose name ends at ``at`` ends: its ``>``, not one inside a quoted
    attribute value (``<AuthorList x="a>b"/>`` is empty), or -1 if ``buf`` does not hold it yet.
    Most tags have no quote, or only closed double quotes, before the first ``>``: two counts tell,
    and only the rest are walked quote by quote."""
    gt = buf.find(b">", at)
    if gt < 0 or (buf.count(b"'", at, gt) == 0 and buf.count(b'"', at, gt) % 2 == 0):
        return gt
    while True:
        dq, sq = buf.find(b'"', at, gt), buf.find(b"'", at, gt)
        q = sq if dq < 0 else dq if sq < 0 else min(dq, sq)
        if q < 0:
            return gt
        shut = buf.find(buf[q:q + 1], q + 1)
        if shut < 0:
            return -1
        at = shut + 1
        if shut > gt:
            gt = buf.find(b">", at)
            if gt < 0:
                return -1


#: A DOCTYPE's first "[" (an internal subset) or its ">", neither inside a quoted literal.
_DOCTYPE_END = re.compile(rb"""(?:[^\[>"']|"[^"]*"|'[^']*')*([\[>])""")
_ENDS = ((b"<!--", b"-->"), (b"<![CDATA[", b"]]>"), (b"<?", b"?>"))


def _after_lt(data: bytes, char: bytes, at: int) -> int:
    """Where the next ``<`` + ``char`` at or after ``at`` starts, or -1. Found by ``char`` (rare in
    XML): ``bytes.find`` of a two-byte needle that starts with ``<`` stops at every tag (2.3 ms per
    MB of PubMed XML against 0.02 ms for the one byte; ≈ 1 CPU-s on the two shared files)."""
    i = data.find(char, at + 1)
    while i >= 0 and data[i - 1] != 0x3C:  # (i > at >= 0: data[i - 1] is in range)
        i = data.find(char, i + 1)
    return i - 1 if i >= 0 else -1


def _next_markup(data: bytes, at: int) -> int:
    """Where the next ``<!`` or ``<?`` starts, or -1."""
    i, j = _after_lt(data, b"!", at), _after_lt(data, b"?", at)
    return i if j < 0 else j if i < 0 else min(i, j)


def _declarations(data: bytes, start: int, eof: bool, max_span: int = MAX_SPAN) -> tuple[str, int]:
    """Scan ``data`` from ``start`` for markup whose content is not elements: a comment, CDATA
    section, processing instruction or DTD. One with no ``<`` inside is harmless (PubMed has
    ``<?pmcsd ?>`` and ``<?nihms ?>`` instructions); one with a ``<`` inside (its ``<AuthorList>``
    is not an element) or an internal DTD subset gives ``("through", _)``. ``("wait", at)`` when the
    bytes so far cannot tell (at: where to look again), else ``("ok", at)``."""
    at = _next_markup(data, start)
    while at >= 0:
        head = data[at:at + 9]
        close = next((c for o, c in _ENDS if head.startswith(o)), None)
        if close is None:
            if len(head) < 9 and not eof and any(o.startswith(head) for o, _c in _ENDS):
                return "wait", at  # "<!-" may become a comment
            close = b">"
        if head.startswith(b"<!DOCTYPE"):  # its literals may hold ">" and "[": skip them
            m = _DOCTYPE_END.match(data, at + 2)
            end = m.start(1) if m else -1
            if m and m.group(1) == b"[":
                return "through", at  # an internal subset
        else:
            end = data.find(close, at + 2)
        if end < 0:  # unterminated so far: wait for more, but not past max_span (memory stays bounded)
            return ("through", at) if eof or len(data) - at > max_span else ("wait", at)
        if b"<" in data[at + 2:end]:
            return "through", at
        at = _next_markup(data, end)
    return "ok", max(start, len(data) - 1)  # a "<" at the end may begin a "<!" or "<?"
