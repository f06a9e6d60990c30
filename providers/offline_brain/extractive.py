"""Extractive compression, answering and support checking: every answer sentence is copied from a passage.

Copying (never paraphrasing) is what makes the offline answer trustworthy: a sentence is cited only with the
passage it was taken from, so citations are right by construction, and ``check_support`` can verify any
brain's answer (the LLM's included) by term overlap with the cited passages.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from core.schemas import DraftAnswer, Passage, SentenceSupport, strip_bridge
from core.text import CITATION_RE, CJK_RE, detect_language, parse_citations, split_sentences
from providers.offline_brain.analysis import key_terms, surface_terms
from providers.offline_brain.decompose import decompose
from providers.tokens import count_tokens, truncate_to_tokens
from tools.shown import operands, recomputes, strip_lead

_LEAD_ZH = "根据资料："
_LEAD_EN = "According to the documents:"
_LEAD_PREFIX = re.compile(
    r"^(?:根据资料：|现有资料提到：|According to the documents:\s*|What they do say:\s*)"
)
_DISCLAIMER = re.compile(r"^(?:根据现有资料无法确定|This cannot be determined from the documents)")


def coverage(terms: list[str], text: str) -> float:
    """Share of the terms that occur among the text's terms."""
    if not terms:
        return 0.0
    present = set(key_terms(text))
    return sum(1 for t in terms if t in present) / len(terms)


@dataclass(frozen=True)
class _Scored:
    passage_index: int
    position: int
    sentence: str
    score: float
    terms: frozenset[str]


def _score_sentences(question: str, passages: list[Passage]) -> list[_Scored]:
    terms = key_terms(question)
    language = detect_language(question)
    scored: list[_Scored] = []
    for p_index, passage in enumerate(passages):
        heading_terms = set(key_terms(passage.heading)) if passage.heading else set()
        for position, sentence in enumerate(split_sentences(passage.text)):
            found = set(key_terms(sentence)) & set(terms)
            # the heading gives context: a sentence under a matching heading is slightly more relevant
            bonus = 0.1 * len(heading_terms & set(terms)) / len(terms) if terms else 0.0
            # a sentence in the question's own language reads better as an answer (small tie-breaker)
            if found and detect_language(sentence) == language:
                bonus += 0.05
            score = (len(found) / len(terms) if terms else 0.0) + (bonus if found else 0.0)
            scored.append(_Scored(p_index, position, sentence, score, frozenset(found)))
    return scored


def compress_passages(question: str, passages: list[Passage], token_budget: int) -> list[Passage]:
    """Keep the most relevant sentences (in their original order) within ``token_budget`` tokens."""
    if token_budget <= 0:
        raise ValueError(f"token_budget must be a positive number of tokens, got {token_budget}")
    if not passages:
        return []
    scored = _score_sentences(question, passages)
    relevant = [s for s in scored if s.score > 0]
    if not relevant:
        # nothing matches the question's terms: keep leading sentences so the writer still sees the evidence
        relevant = [s for s in scored if s.position == 0]
    ranked = sorted(relevant, key=lambda s: (-s.score, s.passage_index, s.position))
    # Spare budget goes to the other sentences of the passages that matched, best passages first and
    # neighbours of kept sentences first: an answer often sits next to the sentence that shares the
    # question's words without sharing any itself.
    kept = {(s.passage_index, s.position) for s in ranked}
    matched = {s.passage_index for s in ranked}
    rest = [s for s in scored if s.passage_index in matched and (s.passage_index, s.position) not in kept]
    rest.sort(key=lambda s: (s.passage_index, _distance(s, kept), s.position))
    ranked += rest
    chosen: dict[int, list[_Scored]] = {}
    used = 0
    for item in ranked:
        cost = count_tokens(item.sentence) + 1
        if used + cost > token_budget:
            if used == 0:  # the single best sentence is too long: cut it rather than return nothing
                cut = truncate_to_tokens(item.sentence, max(token_budget - 1, 1))
                chosen.setdefault(item.passage_index, []).append(
                    _Scored(item.passage_index, item.position, cut, item.score, item.terms)
                )
                used = token_budget
            continue
        chosen.setdefault(item.passage_index, []).append(item)
        used += cost
    totals = Counter(s.passage_index for s in scored)
    out: list[Passage] = []
    for p_index, passage in enumerate(passages):
        if p_index not in chosen:
            continue
        sentences = sorted(chosen[p_index], key=lambda s: s.position)
        if len(sentences) == totals[p_index] and all(s.sentence in passage.text for s in sentences):
            out.append(passage)  # nothing dropped: keep the original text and its layout
            continue
        joiner = "" if detect_language(passage.text) == "zh" else " "
        out.append(passage.model_copy(update={"text": joiner.join(s.sentence for s in sentences)}))
    return out


def _distance(sentence: _Scored, kept: set[tuple[int, int]]) -> int:
    positions = [pos for index, pos in kept if index == sentence.passage_index]
    return min((abs(sentence.position - pos) for pos in positions), default=1_000)


def _missing_terms(question: str, passages: list[Passage]) -> tuple[list[str], float]:
    terms = key_terms(question)
    if not terms:
        return [], 1.0
    present: set[str] = set()
    for passage in passages:
        present |= set(key_terms(f"{passage.heading} {passage.text}"))
    surface = surface_terms(question)
    missing = [surface.get(t, t) for t in terms if t not in present]
    return list(dict.fromkeys(missing)), 1 - len(missing) / len(terms)


def extractive_answer(question: str, passages: list[Passage], threshold: float = 0.5) -> DraftAnswer:
    """Answer with sentences copied from the passages, each followed by its passage's [n]."""
    zh = detect_language(question) == "zh"
    missing, covered = _missing_terms(question, passages)
    scored = [s for s in _score_sentences(question, passages) if s.score > 0]
    picked: list[_Scored] = []
    # each sub-query (comparisons, multi-part, bridges) gets its best sentence first
    for sub in [strip_bridge(q) for q in decompose(question)]:
        sub_terms = set(key_terms(sub))
        best = max(
            (s for s in scored if s.terms & sub_terms and s not in picked),
            key=lambda s: (len(s.terms & sub_terms), s.score),
            default=None,
        )
        if best:
            picked.append(best)
    seen_terms: set[str] = set().union(*(s.terms for s in picked)) if picked else set()
    for item in sorted(scored, key=lambda s: (-s.score, s.passage_index, s.position)):
        if len(picked) >= 4:
            break
        # a sentence adding no new question term is redundant, unless it comes from a passage the
        # reranker put above the best sentence's passage (that passage is likely the answer's source)
        redundant = (
            picked
            and item.terms <= seen_terms
            and item.score < picked[0].score
            and item.passage_index >= picked[0].passage_index
        )
        if item in picked or redundant:
            continue
        picked.append(item)
        seen_terms |= item.terms
    insufficient = not passages or covered < threshold or not picked
    body = _cite(sorted(picked, key=lambda s: (s.passage_index, s.position)), passages, zh)
    if insufficient:
        what = "、".join(missing) if zh else ", ".join(missing)
        if zh:
            head = (
                f"根据现有资料无法确定答案：资料中缺少关于“{what}”的信息。"
                if missing
                else "根据现有资料无法确定答案。"
            )
            text = f"{head}现有资料提到：{body}" if body else head
        else:
            head = (
                f"This cannot be determined from the documents: they say nothing about {what}."
                if missing
                else "This cannot be determined from the documents."
            )
            text = f"{head} What they do say: {body}" if body else head
        return DraftAnswer(answer=text, insufficient=True, missing=missing)
    lead = _LEAD_ZH if zh else _LEAD_EN
    return DraftAnswer(answer=f"{lead}{'' if zh else ' '}{body}", insufficient=False, missing=[])


def _cite(items: list[_Scored], passages: list[Passage], zh: bool) -> str:
    """Sentences with their [n] markers; spacing follows each sentence's own script, not the
    question's (a Chinese question answered from English passages keeps English spacing)."""
    parts: list[str] = []
    for item in items:
        sentence = item.sentence
        cjk = _ends_cjk(sentence)
        # cite every passage that contains this exact sentence (duplicates across chunks happen)
        numbers = [p.number for p in passages if sentence in p.text] or [passages[item.passage_index].number]
        marker = "".join(f"[{n}]" for n in dict.fromkeys(numbers))
        end = re.search(r"[。！？；.!?;]$", sentence)
        if end:
            gap = "" if cjk else " "
            parts.append(f"{sentence[:-1]}{gap}{marker}{sentence[-1]}")
        else:
            parts.append(f"{sentence}{marker}。" if cjk else f"{sentence} {marker}.")
    text = ""
    for part in parts:
        text += part if not text or (_ends_cjk(text) and _ends_cjk(part)) else " " + part
    return text


def _ends_cjk(text: str) -> bool:
    bare = re.sub(r"[\s\[\]\d。！？；.!?;,，]+$", "", text)
    return bool(bare) and bool(CJK_RE.match(bare[-1]))


def _split_answer(answer: str) -> list[str]:
    """Answer sentences; a citation marker right after a sentence end belongs to that sentence."""
    text = re.sub(r"([。！？.!?])\s*((?:\[\d+(?:\s*[,，]\s*\d+)*\])+)", r"\2\1", answer)
    return split_sentences(text)


def _is_connective(sentence: str) -> bool:
    """Leads, disclaimers and short connectives carry no claim to support."""
    bare = CITATION_RE.sub("", sentence).strip()
    return (
        bare in (_LEAD_ZH, _LEAD_EN)
        or bare.endswith((":", "："))
        or bool(_DISCLAIMER.match(bare))
        or len(key_terms(bare)) <= 1
    )


def check_answer_support(
    answer: str, passages: list[Passage], threshold: float = 0.6
) -> list[SentenceSupport]:
    """One verdict per answer sentence: supported when its terms are mostly found in the cited passages."""
    by_number = {p.number: p for p in passages}
    results: list[SentenceSupport] = []
    for sentence in _split_answer(answer):
        cited = parse_citations(sentence)
        bare = _LEAD_PREFIX.sub("", CITATION_RE.sub("", sentence).strip())
        computation = strip_lead(bare)
        if computation is not None:  # a shown tool computation: recompute it, find its operands
            evidence = " ".join(by_number[n].text for n in cited if n in by_number).replace(",", "")
            ok = recomputes(computation) and all(o in evidence for o in operands(computation) if cited)
            results.append(SentenceSupport(sentence=sentence, cited=cited, supported=ok, score=float(ok)))
            continue
        if not cited:
            ok = _is_connective(sentence)
            results.append(
                SentenceSupport(sentence=sentence, cited=[], supported=ok, score=1.0 if ok else 0.0)
            )
            continue
        terms = key_terms(bare)
        evidence = " ".join(f"{by_number[n].heading} {by_number[n].text}" for n in cited if n in by_number)
        score = coverage(terms, evidence) if terms else (1.0 if evidence else 0.0)
        valid = all(n in by_number for n in cited)
        results.append(
            SentenceSupport(
                sentence=sentence, cited=cited, supported=valid and score >= threshold, score=round(score, 3)
            )
        )
    return results
