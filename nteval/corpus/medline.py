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
from types import ModuleType
from typing import Any, cast

from lxml import etree

from ..errors import InputError
from .document import MAX_RECORD_CHARS, Deletion, Document, Skipped
from .xmlprune import PrunedStream

ROOTS = ("PubmedArticleSet", "MedlineCitationSet")
_RECORD_TAGS = ("MedlineCitation", "PubmedArticle", "PubmedBookArticle", "DeleteCitation")
_YEAR = re.compile(r"(1[89]\d\d|20\d\d)")


_igzip: ModuleType | None
_IsalError: type[Exception]
try:  # ISA-L's gzip reader (PyPI ``isal``): the same stream ~3x faster than zlib's inflate
    from isal import igzip as _igzip
    from isal import isal_zlib as _isal_zlib
    _IsalError = cast("type[Exception]", _isal_zlib.error)  # an exception class (isal's stub: "error: Exception")
except ImportError:  # pragma: no cover - the standard library's reader
    _igzip = None
    _IsalError = zlib.error


def _open(path: Path):
    if path.suffix == ".gz":
        return gzip.open(path, "rb")
    return open(path, "rb")


#: Elements no field of a Document comes from, cut from the byte stream before libxml2 builds them
#: (:mod:`.xmlprune`): on the shared PubMed files 28 % (2020 baseline) and 65 % (2021 update) of
#: the bytes.
UNREAD = ("PubmedData", "AuthorList", "ChemicalList", "KeywordList")


def _open_stream(path: Path):
    """The file for the record pass: through ISA-L when it is installed (errors are reported as
    the standard library's reader words them, see :func:`_stdlib_error`), with :data:`UNREAD`
    elements cut out."""
    if path.suffix == ".gz" and _igzip is not None:
        return PrunedStream(_igzip.open(path, "rb"), UNREAD, record_end="</MedlineCitation>")
    return PrunedStream(_open(path), UNREAD, record_end="</MedlineCitation>")


def _stdlib_error(path: Path, err: Exception) -> Exception:
    """The error the standard library's gzip reader raises on ``path`` (so a corrupt or truncated
    file gets the same message with or without ISA-L); ``err`` if it reads the file cleanly."""
    if _igzip is None or path.suffix != ".gz":
        return err
    try:
        with gzip.open(path, "rb") as fh:
            while fh.read(1 << 20):
                pass
    except (EOFError, zlib.error, OSError) as stdlib_err:
        return stdlib_err
    return err


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


def _first(elems, tags: tuple[str, ...]) -> etree._Element | None:
    """The first element at the child path ``tags`` below any of ``elems``, in document order: what
    ``elem.find("A/B/C")`` gives, without ElementPath's per-call Python machinery."""
    for elem in elems:
        if not tags:
            return elem
        found = _first(elem.iterchildren(tags[0]), tags[1:])
        if found is not None:
            return found
    return None


def _first_text(elems, tags: tuple[str, ...]) -> str | None:
    """``findtext`` over the path ``tags`` below ``elems``: None without a match, "" for an empty one."""
    found = _first(elems, tags)
    return None if found is None else (found.text or "")


_PUB_YEAR = ("JournalIssue", "PubDate", "Year")
_PUB_MEDLINE_DATE = ("JournalIssue", "PubDate", "MedlineDate")
_YEAR_TAG = ("Year",)


def _year(journals: list, article_dates: list, completed: list, created: list) -> int | None:
    """The publication year: the journal issue's, else the electronic date's, else the citation's
    completion/creation year (children lists of Article and MedlineCitation, in file order)."""
    for elems, path in ((journals, _PUB_YEAR), (journals, _PUB_MEDLINE_DATE), (article_dates, _YEAR_TAG)):
        text = _first_text(elems, path)
        if text:
            m = _YEAR.search(text)
            if m:
                return int(m.group(1))
    for elems in (completed, created):
        text = _first_text(elems, _YEAR_TAG)
        if text and text.strip().isdigit():
            return int(text.strip())
    return None


#: The string value's length of a node, computed inside libxml2 (no Python string per text node).
_TEXT_LENGTH = etree.XPath("string-length(normalize-space(.))")


def _too_large(mc: etree._Element, limit: int) -> bool:
    """More than ``limit`` characters of text in the record: what ``"".join(mc.itertext())`` holds
    with each run of whitespace counted once (indentation, and the blanks a cut element leaves,
    see :mod:`.xmlprune`), counted in C. XPath's string value has every text node (CDATA
    included, comments and PIs left out, as ``itertext`` does); ``itertext`` also gives an
    unresolved entity reference as its ``&name;``, which XPath leaves out, so those are added (real
    records have none). Counting the text nodes one Python string at a time took ~40% of a PubMed
    file's parse."""
    total = int(_TEXT_LENGTH(mc))
    if total > limit:
        return True
    for ent in mc.iter(etree.Entity):
        total += len(ent.text)
    return total > limit


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
    return _mesh_headings(mc.find("MeshHeadingList"))


def _mesh_headings(mesh_list: etree._Element | None) -> list[dict[str, Any]]:
    headings: list[dict[str, Any]] = []
    if mesh_list is None:
        return headings
    for mh in mesh_list.iterchildren("MeshHeading"):
        d = None
        quals = []
        major = False
        for child in mh:  # _term inlined: a PubMed file has ~10 terms per record
            tag = child.tag
            if tag == "DescriptorName":
                if d is None:
                    d = child
            elif tag == "QualifierName":
                text = child.text if len(child) == 0 else "".join(child.itertext())
                name = " ".join((text or "").split())
                if name:
                    q_major = child.get("MajorTopicYN") == "Y"
                    major = major or q_major
                    quals.append({"name": name, "ui": child.get("UI") or None, "major": q_major})
        if d is None:
            continue
        desc = _term(d)
        if not desc["name"]:
            continue
        headings.append({"name": desc["name"], "ui": desc["ui"], "descriptor_major": desc["major"],
                         "major": desc["major"] or major, "qualifiers": quals})
    return headings


_CITATION_TAGS = frozenset({"PMID", "Article", "MeshHeadingList", "MedlineJournalInfo", "DateCompleted", "DateCreated"})
_ARTICLE_TAGS = frozenset({"ArticleTitle", "Abstract", "Language", "Journal", "PublicationTypeList", "ArticleDate",
                           "VernacularTitle"})


def _children_by_tag(parent: etree._Element, tags: frozenset) -> dict[str, list]:
    """``parent``'s children whose tag is in ``tags``, grouped by tag, in file order (one pass)."""
    out: dict[str, list] = {}
    for child in parent:
        if child.tag in tags:
            out.setdefault(child.tag, []).append(child)
    return out


def _first_child(groups: dict[str, list], tag: str):
    """The first child with ``tag`` (``find``'s meaning), or None."""
    found = groups.get(tag)
    return found[0] if found else None


def parse_citation(mc: etree._Element, max_chars: int | None = None, small: bool = False) -> Document | Skipped:
    """One ``<MedlineCitation>`` element → a Document, or the reason it cannot be used.

    Each of the citation's and the article's children is visited once (dispatch on its tag)
    instead of one ElementPath search per field; "first" and "all" keep ``find``/``iterfind``'s
    meaning (the first such child in file order, every one in file order). ``small``: the caller
    knows the record has fewer characters of text than the limit (its bytes are fewer), so they
    are not counted."""
    cit = _children_by_tag(mc, _CITATION_TAGS)
    pmid_el, article, mesh_list = _first_child(cit, "PMID"), _first_child(cit, "Article"), _first_child(cit, "MeshHeadingList")
    pmid = ((pmid_el.text or "") if pmid_el is not None else "").strip()
    if not small and _too_large(mc, MAX_RECORD_CHARS if max_chars is None else max_chars):
        return Skipped(pmid[:100] or None, "too_large")
    if not pmid or article is None:
        return Skipped(pmid or None, "malformed")
    art = _children_by_tag(article, _ARTICLE_TAGS)
    title_el, vernacular_el = _first_child(art, "ArticleTitle"), _first_child(art, "VernacularTitle")
    abstracts, languages, journals = art.get("Abstract", []), art.get("Language", []), art.get("Journal", [])
    pub_type_lists, article_dates = art.get("PublicationTypeList", []), art.get("ArticleDate", [])
    journal_info, completed, created = (cit.get("MedlineJournalInfo", []), cit.get("DateCompleted", []),
                                        cit.get("DateCreated", []))
    title = flatten(title_el)
    parts: list[str] = []
    labels: list[str | None] = []
    categories: list[str | None] = []
    for abstract in abstracts:
        for at in abstract.iterchildren("AbstractText"):
            text = flatten(at)
            if text:
                parts.append(text)
                labels.append(at.get("Label"))
                categories.append(at.get("NlmCategory"))
    if not title and not parts:
        return Skipped(pmid, "no_text")  # (a title-only or abstract-only record is a document: see DOCUMENT_POLICIES)
    meta: dict = {
        "language": [(lang.text or "").strip() for lang in languages],
        "year": _year(journals, article_dates, completed, created),
        "publication_types": [flatten(p) for ptl in pub_type_lists for p in ptl.iterchildren("PublicationType")],
        "journal": (_first_text(journals, ("ISOAbbreviation",)) or _first_text(journal_info, ("MedlineTA",))
                    or "").strip(),
    }
    vernacular = flatten(vernacular_el)
    if vernacular:
        meta["vernacular_title"] = vernacular
        lang = vernacular_language(meta["language"])
        if lang:
            meta["vernacular_language"] = lang
    mesh = _mesh_headings(mesh_list)
    if mesh:
        meta["mesh"] = mesh
    if any(labels):
        meta["abstract_labels"] = labels
        meta["abstract_categories"] = categories
    return Document(docid=pmid, title=title, abstract_parts=parts, meta=meta, folded=True)  # (flatten folds)


def read_medline(path: str | Path) -> Iterator[Document | Deletion | Skipped]:
    """Yield records of one Medline XML file in file order.

    Raises :class:`InputError` (file + line) on an empty, truncated, malformed or non-Medline file.
    Records seen before the error have already been yielded; callers build atomically.
    """
    path = Path(path)
    root = root_tag(path)
    if root not in ROOTS:
        raise InputError(path, f"not Medline XML: root element <{root}>, expected <PubmedArticleSet> or <MedlineCitationSet>", place="line 1")
    fh = _open_stream(path)
    try:
        context = etree.iterparse(fh, events=("end",), tag=_RECORD_TAGS, resolve_entities=False,
                                  no_network=True, load_dtd=False, huge_tree=True)
        for _event, elem in context:
            tag = elem.tag
            if tag == "MedlineCitation":
                # every record so far was at most longest_record bytes: too few to hold too many characters
                yield parse_citation(elem, small=fh.longest_record <= MAX_RECORD_CHARS)
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
    except (EOFError, zlib.error, _IsalError, OSError) as err:
        err = _stdlib_error(path, err)
        if isinstance(err, (EOFError, zlib.error, _IsalError, gzip.BadGzipFile)):
            raise InputError(path, f"truncated or corrupt gzip stream: {err}") from None
        raise InputError(path, f"unreadable: {err}") from None
    finally:
        fh.close()
