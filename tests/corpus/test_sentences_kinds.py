"""Sentence splitting on lowercased and tokenized text (real CISI abstracts made so), and no
change on PubMed's cased text."""
from __future__ import annotations

import json
import re

import pytest
from conftest import DATA

import nteval.corpus.sentences as S
from nteval.corpus.document import Document
from nteval.corpus.medline import read_medline
from nteval.demo import sample_path

CISI = [json.loads(line)["text"] for line in (DATA / "cisi" / "corpus_first100.jsonl").read_text().splitlines()]


def lowercased(text: str) -> str:
    return text.lower()


def tokenized(text: str) -> str:
    """As many research collections ship text: lowercased, a space before each punctuation mark."""
    return re.sub(r"([.,;:!?])(?=[\s\"']|$)", r" \1", text.lower())


def test_detects_kinds():
    assert S.text_kind(CISI[0]) == "cased"
    assert S.text_kind(lowercased(CISI[0])) == "lowercased"
    assert S.text_kind(tokenized(CISI[0])) == "tokenized"


def test_hand_cases():
    assert S.split_text("the present study is a history of the ddc . the first edition was published in 1876 . "
                        "its story has never been told .") == [
        "the present study is a history of the ddc .", "the first edition was published in 1876 .",
        "its story has never been told ."]
    # abbreviations and initials are not sentence ends in lowercased text
    assert S.split_text("it is due to g. birkhoff, e.g. in fig. 2 of his paper. the rest follows.") == [
        "it is due to g. birkhoff, e.g. in fig. 2 of his paper.", "the rest follows."]
    # an ellipsis is not a sentence end in tokenized text
    assert len(S.split_text("to explore . . . the potential , of networks . it was announced , in 1972 .")) == 2


@pytest.mark.parametrize("transform", [lowercased, tokenized])
def test_lowercased_and_tokenized_cisi_keep_their_sentences(transform):
    """Before: BlingFire left such abstracts whole (CISI, all 1,460: 1,208 → 29 with ≥ 3 sentences)."""
    orig = [len(S.split_text(t)) for t in CISI]
    made = [len(S.split_text(transform(t))) for t in CISI]
    assert sum(n >= 3 for n in made) >= 0.97 * sum(n >= 3 for n in orig)
    assert sum(a == b for a, b in zip(orig, made)) >= 0.85 * len(CISI)
    # what BlingFire alone does with it: the defect this fixes
    blingfire_only = [len(S._split_cased(" ".join(transform(t).split()))) for t in CISI]
    assert sum(n >= 3 for n in blingfire_only) < 0.3 * sum(n >= 3 for n in orig)


def test_pubmed_splits_unchanged():
    """Every abstract section of the bundled PubMed sample splits exactly as BlingFire (+ the
    digit rule) splits it: the new rules never fire on cased, untokenized text."""
    n = 0
    for rec in read_medline(sample_path()):
        if not isinstance(rec, Document):
            continue
        for part in rec.abstract_parts:
            text = " ".join(part.split())
            if text:
                n += 1
                assert S.split_text(text) == S._split_cased(text), text[:120]
    assert n > 1500


def _sample_sections() -> list[tuple[str, bool]]:
    """Every abstract section of the bundled PubMed sample (folded by the reader: the flag says
    so) and the CISI abstracts, as they are, lowercased and tokenized (not folded)."""
    out = [(part, rec.folded) for rec in read_medline(sample_path()) if isinstance(rec, Document)
           for part in rec.abstract_parts]
    out += [(f(t), False) for t in CISI for f in (lambda x: x, lowercased, tokenized)]
    return out


def test_folded_fast_paths_change_nothing():
    """``folded=True`` (the Medline reader's sections: whitespace already folded) gives what the
    full path gives: the kind test by substring and the splitter without re-folding."""
    sections = _sample_sections()
    assert sum(folded for _t, folded in sections) > 1500  # the reader marks its sections folded
    kinds = set()
    for text, folded in sections:
        flat = " ".join(text.split())
        if folded:
            assert text == flat  # what the flag promises
        kinds.add(S.text_kind(flat))
        assert S.text_kind(flat, folded=True) == S.text_kind(flat), flat[:120]
        assert S.split_text(flat, folded=True) == S.split_text(text), flat[:120]
    assert kinds == {"cased", "lowercased", "tokenized"}  # every branch was compared
    # spaced punctuation that only the regular expression sees (not folded: a tab before the ".")
    assert S.text_kind("a\t. b\t. c\t. d", folded=False) == "tokenized"


def test_digit_rule_precheck_is_exact():
    """The digit-start rule runs per sentence only where the breaker's whole output has a "."
    + space + digit; everywhere else the per-sentence search would have found nothing either."""
    hits = 0
    for text, _folded in _sample_sections():
        broken = S._break(" ".join(text.split()))
        per_sentence = any(S._DIGIT_START.search(s) for s in broken.split("\n"))
        anywhere = S._DIGIT_START_ANYWHERE.search(broken) is not None
        assert anywhere or not per_sentence, text[:120]
        hits += per_sentence
    assert hits > 0  # the rule's own path was taken too
