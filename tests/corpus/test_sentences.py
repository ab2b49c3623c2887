"""Sentence splitting on real abstract text (PubMed records in the shared files; PMIDs noted)."""
from __future__ import annotations

import pytest

from nteval.corpus.sentences import split_abstract, split_text

CASES = [
    # (PMID or source, text, expected number of sentences, a sentence that must come out whole)
    ("pubmed21n1298 robotic multivisceral review",
     "Overall postoperative complication rate was 18.2%. 26 papers were included in the review (10 case series and 16 case reports).",
     2, "26 papers were included in the review (10 case series and 16 case reports)."),
    ("pubmed21n1298 PET/CT protocol",
     "Dose 2.2 MBq/kg. 20 mg furosemide at start. PET/CT images from skull base to proximal third of thighs at 60 min, and late images at 3 hours if needed.",
     3, "20 mg furosemide at start."),
    ("pubmed21n1298 azolopyrimidines (e.g.)",
     "The anti-cancer activity has been examined against three cancer cell lines e.g. HepG-2, MCF-7 and HCT116. Molecular modeling study was carried out in order to rationalize the in vitro anti-tumor results.",
     2, "The anti-cancer activity has been examined against three cancer cell lines e.g. HepG-2, MCF-7 and HCT116."),
    ("pubmed21n1298 AKI after TAVR (P < 0.001, decimals)",
     "Patients who underwent TAVR had a significantly lower incidence of AKI in comparison to those who underwent SAVR (unmatched 4.7% vs 16.4%, P < 0.001). Patients with AKI had significantly increased 5-year mortality compared with those without AKI (unmatched 36.0% vs 19.1%, log-rank P < 0.001).",
     2, "Patients who underwent TAVR had a significantly lower incidence of AKI in comparison to those who underwent SAVR (unmatched 4.7% vs 16.4%, P < 0.001)."),
    ("et al. (TREC Genomics-era style citation in text)",
     "These findings extend those of Smith et al. in rodents. Mice were injected i.v. with 10 mg/kg of the compound. The apparent diffusion coefficient was 1.8 microm2/ms in cortex.",
     3, "Mice were injected i.v. with 10 mg/kg of the compound."),
    ("species names",
     "Growth of E. coli and S. aureus was inhibited. No effect was seen in S. cerevisiae.",
     2, "Growth of E. coli and S. aureus was inhibited."),
    ("abbreviations before numbers",
     "As shown in Fig. 2 the rate rose sharply. The new lamp is ca. 25% more efficient.",
     2, "The new lamp is ca. 25% more efficient."),
]


@pytest.mark.parametrize("source,text,n,whole", CASES, ids=[c[0] for c in CASES])
def test_real_abstract_sentences(source, text, n, whole):
    sents = split_text(text)
    assert len(sents) == n, sents
    assert whole in sents
    assert " ".join(sents) == " ".join(text.split())  # nothing lost or altered


def test_structured_sections_never_merge():
    parts = ["Drugs of abuse have a common property in mammals", "We present evidence that dopamine plays a role."]
    sents = split_abstract(parts)
    assert sents == parts  # the unterminated first section still ends at its label boundary


def test_whitespace_only_is_empty():
    assert split_text("  \n ") == []
