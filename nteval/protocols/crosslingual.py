"""Cross-lingual focused NT (the setting of CLEF eHealth and CURE): Medline records of articles
written in another language keep the original title in ``<VernacularTitle>``; that title is the
query, the record's own English abstract in the title-less ``nt`` index the one relevant document.

Lexical systems score low here: a German title shares few terms with an English abstract. That is
the finding this protocol measures; systems that translate or embed across languages are what it
is for.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..corpus.store import vernacular_titles
from ..errors import InputError
from ..topics.focused import query_text
from ..topics.ids import crosslingual_id
from .base import Protocol, ProtocolSpec, TopicSet, VerdictSpec, param


@dataclass(frozen=True)
class CrossLingualSpec(ProtocolSpec):
    n_topics: int = param(1000, "topics sampled per language", min=1)
    languages: tuple[str, ...] = param((), "vernacular languages, Medline's ISO 639-2 codes (ger, fre, rus…); empty = every "
                                 "language with a title")
    min_title_tokens: int = param(3, "words the vernacular title needs", min=1)
    min_sentences: int = param(0, "abstract sentences a topic document needs", min=0)


def _eligible(index_dir: Path, spec: CrossLingualSpec) -> dict[str, dict[str, str]]:
    """language → {docid: query} of the vernacular titles that may become queries (language certain)."""
    rows = vernacular_titles(index_dir, spec.min_sentences)
    out: dict[str, dict[str, str]] = {}
    for lang, docid, vernacular, title in rows:
        q = query_text(vernacular)
        # a few records repeat the English title as the vernacular one: not a cross-language query
        if len(q.split()) >= spec.min_title_tokens and q.casefold() != query_text(title).casefold():
            out.setdefault(lang, {})[docid] = q
    return out


class CrossLingual(Protocol[CrossLingualSpec]):
    name = "crosslingual"
    Spec = CrossLingualSpec
    searches = "nt"
    measures = ("RR", "Success@1", "Success@10", "nDCG@10", "R@1000")
    verdict = VerdictSpec(
        "crosslingual", "RR",
        "cross-language known-item search: find the English abstract that a title in another language points to",
        "not yet measured against human judgments (CLEF eHealth / CURE are the human-judged counterparts)")
    summary = ("query: the original-language title (<VernacularTitle>); relevant: the record's English abstract; "
               "systems search nt; results per language")
    requires = ("vernacular",)

    def build(self, index_dir: Path, spec: CrossLingualSpec, out: Path, progress: bool | None = None,
              systems_path: Path | None = None) -> TopicSet:
        eligible = _eligible(index_dir, spec)
        wanted = list(spec.languages) or sorted(eligible)
        unknown = [lang for lang in wanted if lang not in eligible]
        if unknown and spec.languages:
            have = ", ".join(f"{k} {len(v)}" for k, v in sorted(eligible.items(), key=lambda kv: -len(kv[1]))[:12])
            raise InputError(index_dir, f"no vernacular title in language(s) {', '.join(unknown)} "
                                        f"(this index has: {have or 'none'})")
        key = lambda d: hashlib.sha256(f"{spec.seed}:{d}".encode()).digest()  # noqa: E731  as sample_ids
        chosen = {lang: sorted(eligible[lang], key=key)[: spec.n_topics] for lang in wanted}
        # topic ids DOCID-lang (nteval.topics.ids): a record with titles in two languages makes two topics,
        # and no cross-lingual run can pass for a focused one (ids = docids)
        sources = {crosslingual_id(d, lang): d for lang in wanted for d in chosen[lang]}
        topics = {q: eligible[lang][d] for lang in wanted for d in chosen[lang] for q in [crosslingual_id(d, lang)]}
        qrels = {q: {sources[q]: 1} for q in topics}
        per_lang = {lang: {"eligible": len(eligible[lang]), "used": len(chosen[lang])} for lang in wanted}
        stats: dict[str, Any] = {"languages": per_lang,
                                 "eligible_by_language": {k: len(v) for k, v in sorted(eligible.items())},
                                 "topics_requested": spec.n_topics * len(wanted)}
        return TopicSet(topics, qrels, {"requested": spec.n_topics * len(wanted),
                                        "eligible": sum(len(eligible[lang]) for lang in wanted), "used": len(qrels)},
                        stats=stats, strata={"language": {lang: [crosslingual_id(d, lang) for d in chosen[lang]]
                                                          for lang in wanted}}, sources=sources)

    def report_lines(self, results: dict[str, Any]) -> list[str]:
        strata = (results.get("strata") or {}).get("language") or {}
        if not strata:
            return []
        m = results["verdict"]["measure"] if results.get("verdict") else results["measures"][0]
        langs = list(strata)
        systems = sorted(results["systems"], key=lambda s: -results["systems"][s].get(m, 0))
        width = max(len(s) for s in systems + ["system"])
        lines = [f"{m} per language (topics: " + ", ".join(f"{g} {strata[g]['topics']}" for g in langs) + ")",
                 f"{'system':<{width}}  " + "  ".join(f"{g:>7}" for g in langs)]
        for s in systems:
            lines.append(f"{s:<{width}}  " + "  ".join(f"{strata[g]['systems'][s][m]:>7.4f}" for g in langs))
        return lines + [""]


PROTOCOL = CrossLingual
