"""Streaming reader for Medline/PubMed XML: ``PubmedArticleSet`` (current DTD) and the 2006
``MedlineCitationSet`` (TREC Genomics era), plain or gzipped.

Memory stays flat: ``lxml.etree.iterparse`` fires only on record-level tags and every record is
cleared (with its already-processed siblings) as soon as it is read.
"""
from __future__ import annotations

import gzip
import re
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from lxml import etree

from ..errors import InputError
from .document import MAX_RECORD_CHARS, Deletion, Document, Skipped

ROOTS = ("PubmedArticleSet", "MedlineCitationSet")
_RECORD_TAGS = ("MedlineCitation", "PubmedArticle", "PubmedBookArticle", "DeleteCitation")
_YEAR = re.compile(r"(1[89]\d\d|20\d\d)")


def _open(path: Path):
    if path.suffix == ".gz":
        return gzip.open(path, "rb")
    return open(path, "rb")


def flatten(elem: etree._Element | None) -> str:
    """Element text with inline markup (``<i>``, ``<sup>``, ``<b>``...) flattened, whitespace folded."""
    if elem is None:
        return ""
    text = elem.text if len(elem) == 0 else "".join(elem.itertext())  # leaf: skip the iterator (MeSH terms)
    return " ".join((text or "").split())


def root_tag(path: Path) -> str:
    """The document element's name, read without parsing the rest of the file."""
    with _open(path) as fh:
        try:
            for _event, elem in etree.iterparse(fh, events=("start",), resolve_entities=False,
                                                 no_network=True, load_dtd=False):
                return etree.QName(elem).localname
        except etree.XMLSyntaxError as err:
            raise _syntax_error(path, err) from None
        except (EOFError, OSError, zlib.error) as err:
            raise InputError(path, f"unreadable: {err}") from None
    raise InputError(path, "empty file: no XML element")


def _head(path: Path, n: int = 1 << 16) -> bytes | InputError:
    """The first ``n`` (decompressed) bytes, or the error a broken gzip stream is."""
    try:
        with _open(path) as fh:
            return fh.read(n)
    except (EOFError, OSError, zlib.error) as err:
        if path.suffix == ".gz":
            return InputError(path, f"not a gzip file or a corrupt one: {err}")
        return InputError(path, f"unreadable: {err}")


def _syntax_error(path: Path, err: etree.XMLSyntaxError) -> InputError:
    msg = str(err.msg if getattr(err, "msg", None) else err)
    head = _head(path)
    if isinstance(head, InputError):
        return head
    if not head.strip():
        return InputError(path, "empty file: no XML element", place="line 1")
    line, col = (err.position if err.position else (err.lineno, 0))
    line, col = max(line or 0, 1), max(col or 0, 1)  # libxml2 says "line 0, column 0" for garbage
    if "Document is empty" in msg or "Start tag expected" in msg and line == 1:
        first = head.lstrip()[:1]
        why = "binary data" if b"\x00" in head[:512] or not _utf8_prefix(head) else f"starts with {first.decode('utf-8', 'replace')!r}, not '<'"
        return InputError(path, f"not XML ({why})", place="line 1")
    return InputError(path, f"malformed XML: {msg}", place=f"line {line}, column {col}")


def _utf8_prefix(data: bytes) -> bool:
    try:
        data[:512].decode("utf-8")
    except UnicodeDecodeError as err:
        return err.start > 505  # a character cut at the end of the prefix is fine
    return True


def _year(article: etree._Element, citation: etree._Element) -> int | None:
    for xpath in ("Journal/JournalIssue/PubDate/Year", "Journal/JournalIssue/PubDate/MedlineDate",
                  "ArticleDate/Year"):
        text = article.findtext(xpath)
        if text:
            m = _YEAR.search(text)
            if m:
                return int(m.group(1))
    for xpath in ("DateCompleted/Year", "DateCreated/Year"):
        text = citation.findtext(xpath)
        if text and text.strip().isdigit():
            return int(text.strip())
    return None


def _too_large(mc: etree._Element, limit: int) -> bool:
    """More than ``limit`` characters of text in the record (counted piece by piece, stopping early)."""
    total = 0
    for piece in mc.itertext():
        total += len(piece)
        if total > limit:
            return True
    return False


def vernacular_language(languages: list[str]) -> str | None:
    """The language of a ``<VernacularTitle>``: the record's one non-English ``<Language>``.

    Medline does not tag the vernacular title itself; bilingual articles list both languages
    (``eng``, ``spa``), and some records list only ``eng`` beside a Spanish vernacular title, so
    anything but exactly one non-English code is unknown (None) rather than a guess.
    """
    other = sorted({c for c in languages if c and c != "eng"})
    return other[0] if len(other) == 1 else None


def _term(elem: etree._Element) -> dict[str, Any]:
    """One ``DescriptorName``/``QualifierName``: its text, its UI (absent in 2006 records) and its
    ``MajorTopicYN`` (absent means "N", the 2006 DTD's default)."""
    return {"name": flatten(elem), "ui": elem.get("UI") or None, "major": elem.get("MajorTopicYN") == "Y"}


def mesh_headings(mc: etree._Element) -> list[dict[str, Any]]:
    """The record's MeSH headings in file order.

    A heading is a major topic (PubMed's asterisk, what ``[majr]`` finds) when its descriptor or
    any of its qualifiers has ``MajorTopicYN="Y"``: NLM puts the star on the qualifier when the
    descriptor/qualifier pair is the main point, and ``[majr]`` on the descriptor finds both.
    ``major`` is that rule; ``descriptor_major`` is the descriptor's own flag.
    """
    headings = []
    mesh_list = mc.find("MeshHeadingList")
    for mh in (mesh_list.iterchildren("MeshHeading") if mesh_list is not None else ()):
        d = mh.find("DescriptorName")
        desc = _term(d) if d is not None else None
        if desc is None or not desc["name"]:
            continue
        quals = [q for q in map(_term, mh.iterchildren("QualifierName")) if q["name"]]
        headings.append({"name": desc["name"], "ui": desc["ui"], "descriptor_major": desc["major"],
                         "major": desc["major"] or any(q["major"] for q in quals), "qualifiers": quals})
    return headings


def parse_citation(mc: etree._Element, max_chars: int | None = None) -> Document | Skipped:
    """One ``<MedlineCitation>`` element → a Document, or the reason it cannot be used."""
    pmid = (mc.findtext("PMID") or "").strip()
    if _too_large(mc, MAX_RECORD_CHARS if max_chars is None else max_chars):
        return Skipped(pmid[:100] or None, "too_large")
    article = mc.find("Article")
    if not pmid or article is None:
        return Skipped(pmid or None, "malformed")
    title = flatten(article.find("ArticleTitle"))
    parts: list[str] = []
    labels: list[str | None] = []
    categories: list[str | None] = []
    for at in article.iterfind("Abstract/AbstractText"):
        text = flatten(at)
        if text:
            parts.append(text)
            labels.append(at.get("Label"))
            categories.append(at.get("NlmCategory"))
    if not title:
        return Skipped(pmid, "no_title")
    if not parts:
        return Skipped(pmid, "no_abstract")
    meta: dict = {
        "language": [(lang.text or "").strip() for lang in article.iterfind("Language")],
        "year": _year(article, mc),
        "publication_types": [flatten(p) for p in article.iterfind("PublicationTypeList/PublicationType")],
        "journal": (article.findtext("Journal/ISOAbbreviation") or mc.findtext("MedlineJournalInfo/MedlineTA") or "").strip(),
    }
    vernacular = flatten(article.find("VernacularTitle"))
    if vernacular:
        meta["vernacular_title"] = vernacular
        lang = vernacular_language(meta["language"])
        if lang:
            meta["vernacular_language"] = lang
    mesh = mesh_headings(mc)
    if mesh:
        meta["mesh"] = mesh
    if any(labels):
        meta["abstract_labels"] = labels
        meta["abstract_categories"] = categories
    return Document(docid=pmid, title=title, abstract_parts=parts, meta=meta)


def read_medline(path: str | Path) -> Iterator[Document | Deletion | Skipped]:
    """Yield records of one Medline XML file in file order.

    Raises :class:`InputError` (file + line) on an empty, truncated, malformed or non-Medline file.
    Records seen before the error have already been yielded; callers build atomically.
    """
    path = Path(path)
    root = root_tag(path)
    if root not in ROOTS:
        raise InputError(path, f"not Medline XML: root element <{root}>, expected <PubmedArticleSet> or <MedlineCitationSet>", place="line 1")
    fh = _open(path)
    try:
        context = etree.iterparse(fh, events=("end",), tag=_RECORD_TAGS, resolve_entities=False,
                                  no_network=True, load_dtd=False, huge_tree=True)
        for _event, elem in context:
            tag = elem.tag
            if tag == "MedlineCitation":
                yield parse_citation(elem)
                parent = elem.getparent()
                elem.clear()
                if parent is not None and parent.tag == root:  # 2006 layout: record at top level
                    while elem.getprevious() is not None:
                        del parent[0]
                continue
            if tag == "DeleteCitation":
                yield Deletion([(p.text or "").strip() for p in elem.iterfind("PMID")])
            elif tag == "PubmedBookArticle":
                yield Skipped((elem.findtext("BookDocument/PMID") or "").strip() or None, "book")
            # PubmedArticle / DeleteCitation / book: drop it and everything before it
            elem.clear()
            parent = elem.getparent()
            if parent is not None:
                while elem.getprevious() is not None:
                    del parent[0]
    except etree.XMLSyntaxError as err:
        raise _syntax_error(path, err) from None
    except (EOFError, zlib.error, gzip.BadGzipFile) as err:
        raise InputError(path, f"truncated or corrupt gzip stream: {err}") from None
    except OSError as err:
        raise InputError(path, f"unreadable: {err}") from None
    finally:
        fh.close()
