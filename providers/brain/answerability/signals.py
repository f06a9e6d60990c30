"""The answerability model's signals: one small function each, every value in [0, 1].

"Do these passages answer the question?" is asked of signals that fail differently: meaning (the
configured embedder's cosine between the question and the best sentences; works across Chinese and
English, vague about exact terms), key-term coverage weighted by rarity (exact about terms, blind across
languages), the cross-encoder-style reranker's raw cosine and its margin over the rest (a topic every
candidate shares gives no margin), the first stage's agreement, and whether the kind of fact asked for
(a number, a date, a name) is present at all, and whether the question names something the whole
collection never mentions (``unmentioned``: the analysis's names and identifiers looked up in the keyword
index's postings once per question by the analysis step). ``extract`` computes them for one question and its ranked
chunks; the fitted combiner (``model.py``) weighs them. A new signal is a function here and a refit
(``bench/fit_answerability.py``), never a constant in code.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from core.chunks import ScoredChunk
from core.text import contains_cjk, detect_language
from providers.meaning import Meaning
from providers.offline_brain.analysis import key_terms
from providers.offline_brain.facts import has_kind
from providers.offline_brain.judge import best_similarity
from providers.offline_brain.profile import QuestionProfile, as_profile

TOP = 3  # the best chunks whose evidence is read: an answer sits in one of them or nowhere
COSINE_KEYS = (
    "e5_cosine",
    "embed_cosine",
)  # the reranker's raw query-passage cosine (providers/rerankers.py)
MARGIN_SCALE = 5.0  # a cosine margin of 0.2 over the median candidate reads as 1


def _clip(value: float) -> float:
    return min(1.0, max(0.0, float(value)))


def best_sentence_cosines(
    meaning: Meaning | None, question: str, chunks: Sequence[ScoredChunk]
) -> list[float]:
    """Per chunk, the highest cosine between the question and its title or one of its sentences (the
    judge's reading, providers/offline_brain/judge.py; 0 without an embedder)."""
    return best_similarity(meaning, question, list(chunks))


def meaning_best(cosines: Sequence[float]) -> float:
    """The best question-sentence cosine among the top chunks: the passage that says what was asked."""
    return _clip(max(cosines[:TOP], default=0.0))


def meaning_mean(cosines: Sequence[float]) -> float:
    """Mean best-sentence cosine of the top chunks: one lucky sentence versus a topic the evidence is about."""
    head = list(cosines[:TOP])
    return _clip(sum(head) / len(head)) if head else 0.0


def meaning_foreign(best: float, same: float) -> float:
    """The best cosine when the best chunk is in another language than the question, else 0: cosines
    across languages run lower than within one, so the combiner weighs them on their own scale."""
    return _clip(best * (1.0 - same))


def chunk_terms(chunk: ScoredChunk) -> set[str]:
    """Key terms of a chunk with its title and headings (what a question term can be found in)."""
    c = chunk.chunk
    return set(key_terms(" ".join([c.title, " ".join(c.heading_path), c.text])))


def rarity_weights(terms: Sequence[str], found: Sequence[set[str]]) -> dict[str, float]:
    """Inverse chunk frequency of each question term among the candidates: a term every candidate holds
    says little about which one answers; a term none holds weighs most (its absence is the signal)."""
    n = len(found)
    return {t: math.log(1 + (n + 1) / (1 + sum(t in f for f in found))) for t in terms}


def weighted_coverage(terms: Sequence[str], found: Sequence[set[str]]) -> float:
    """Best single top chunk's share of the question's key terms, each weighted by rarity: "capital of
    France" over framework docs covers nothing; a question asked of a passage on its topic covers most."""
    if not terms or not found:
        return 0.0
    weights = rarity_weights(terms, found)
    total = sum(weights.values())
    return _clip(max(sum(w for t, w in weights.items() if t in f) / total for f in found[:TOP]))


def joint_coverage(terms: Sequence[str], found: Sequence[set[str]]) -> float:
    """Share of the key terms some top chunk holds (unweighted): the evidence together, not one passage."""
    if not terms:
        return 0.0
    union = set().union(*found[:TOP]) if found else set()
    return sum(t in union for t in terms) / len(terms)


def cross_cosines(chunks: Sequence[ScoredChunk]) -> list[float]:
    """The reranker's raw cosines of the chunks it rescored, in rank order ([] for a lexical reranker)."""
    out = []
    for chunk in chunks:
        value = chunk.e5_cosine
        if value is None:
            value = next((chunk.scores[k] for k in COSINE_KEYS if k in chunk.scores), None)
        if value is not None:
            out.append(float(value))
    return out


def has_cross(cosines: Sequence[float]) -> float:
    """1 when the reranker reports raw cosines (e5): the two features below mean something."""
    return float(bool(cosines))


def cross_top(cosines: Sequence[float]) -> float:
    """The reranker's best raw cosine: comparable across questions, unlike its min-max blended score."""
    return _clip(max(cosines, default=0.0))


def cross_margin(cosines: Sequence[float]) -> float:
    """How far the best cosine stands above the median rescored candidate (scaled): an answering passage
    stands out; off-domain candidates are uniformly mediocre."""
    if len(cosines) < 2:
        return 0.0
    ordered = sorted(cosines)
    median = ordered[len(ordered) // 2]
    return _clip(MARGIN_SCALE * (max(cosines) - median))


def first_stage_agreement(chunks: Sequence[ScoredChunk]) -> float:
    """Mean reciprocal first-stage rank (BM25, vector, fused) of the reranker's best chunk: the first
    stage and the reranker agreeing on one passage is evidence it is on the question."""
    if not chunks:
        return 0.0
    ranks = [r for k, r in chunks[0].ranks.items() if k != "rerank" and r > 0]
    return _clip(sum(1.0 / r for r in ranks) / len(ranks)) if ranks else 0.0


def both_retrievers(chunks: Sequence[ScoredChunk]) -> float:
    """1 when the best chunk was found by both keyword and vector search (the words and the meaning)."""
    if not chunks:
        return 0.0
    keys = {k for k in chunks[0].ranks if k != "rerank"}
    return float(bool(keys & {"bm25", "keyword", "sparse"}) and bool(keys & {"vector", "dense"}))


def kind_present(profile: QuestionProfile, chunks: Sequence[ScoredChunk]) -> float:
    """Share of the asked kinds of fact (number, date, name, place) the top chunks state at all; 1 when
    no kind is asked. "How tall is Everest?" over framework docs with no number answers nothing."""
    if not profile.kinds:
        return 1.0
    text = " ".join(c.chunk.text for c in chunks[:TOP])
    return sum(has_kind(text, k) for k in profile.kinds) / len(profile.kinds)


def same_language(profile: QuestionProfile, chunks: Sequence[ScoredChunk]) -> float:
    """1 when the best chunk is in the question's language: tells the combiner whether term coverage
    can speak at all (a Chinese question over English passages shares no words)."""
    if not chunks:
        return 0.0
    return float(passage_language(chunks) == profile.language)


def countable(name: str, question_language: str, passage_language: str) -> bool:
    """Whether the collection's silence on this name says something. A Latin-script name (Django,
    useState, helm_release) counts unless an English question meets Chinese passages (they may write it
    in Chinese); Chinese documents keep such names in Latin script, so in a Chinese question it always
    counts. A Chinese name counts only over Chinese passages."""
    if contains_cjk(name):
        return passage_language == "zh"
    return not (question_language == "en" and passage_language == "zh")


def unmentioned_latin(unmentioned: Sequence[str]) -> float:
    """1 when a countable Latin-script name the question gives is in no chunk of the collection: "How
    do I use Django?" over Vue's docs. Names and identifiers are written the same in every text; a
    question's ordinary words are not names (its words may be the reader's, not the documents')."""
    return float(any(not contains_cjk(n) for n in unmentioned))


def unmentioned_cjk(unmentioned: Sequence[str]) -> float:
    """1 when a countable Chinese name is in no chunk: "珠穆朗玛峰" over framework docs; weaker, since
    jieba may cut a question's words differently from a passage's (the fit weighs it on its own)."""
    return float(any(contains_cjk(n) for n in unmentioned))


SIGNALS = (
    "meaning_best",
    "meaning_mean",
    "weighted_coverage",
    "joint_coverage",
    "has_cross",
    "cross_top",
    "cross_margin",
    "first_stage_agreement",
    "both_retrievers",
    "kind_present",
    "same_language",
    "meaning_foreign",
    "unmentioned_latin",
    "unmentioned_cjk",
)


def extract(
    question: str | QuestionProfile,
    chunks: Sequence[ScoredChunk],
    meaning: Meaning | None,
    cosines: Sequence[float] | None = None,
    unmentioned: Sequence[str] = (),
) -> dict[str, float]:
    """Every signal for one question and its ranked chunks (best first). ``cosines``: the per-chunk
    best-sentence cosines when the caller has them already; ``unmentioned``: the names the question gives
    that the collection holds nowhere (``KeywordRetriever.unmentioned``; empty when not looked up)."""
    profile = as_profile(question)
    top = list(chunks[:TOP])
    sims = list(cosines) if cosines is not None else best_sentence_cosines(meaning, profile.text, top)
    found = [chunk_terms(c) for c in top]
    cross = cross_cosines(chunks)
    values = {
        "meaning_best": meaning_best(sims),
        "meaning_mean": meaning_mean(sims),
        "weighted_coverage": weighted_coverage(profile.terms, found),
        "joint_coverage": joint_coverage(profile.terms, found),
        "has_cross": has_cross(cross),
        "cross_top": cross_top(cross),
        "cross_margin": cross_margin(cross),
        "first_stage_agreement": first_stage_agreement(top),
        "both_retrievers": both_retrievers(top),
        "kind_present": kind_present(profile, top),
        "same_language": same_language(profile, top),
    }
    values["meaning_foreign"] = meaning_foreign(values["meaning_best"], values["same_language"])
    values.update(unmentioned_signals(unmentioned, profile, passage_language(top)))
    return {name: round(values[name], 6) for name in SIGNALS}


def passage_language(chunks: Sequence[ScoredChunk]) -> str:
    """The best chunk's language ("en" without chunks), as ``same_language`` reads it."""
    return detect_language(chunks[0].chunk.text[:300]) if chunks else "en"


def unmentioned_signals(
    unmentioned: Sequence[str], profile: QuestionProfile, passages: str
) -> dict[str, float]:
    """The collection-vocabulary signals, over the names whose absence counts (``countable``) given the
    question's language and the best passage's (``passages``)."""
    missing = [n for n in unmentioned if countable(n, profile.language, passages)]
    return {"unmentioned_latin": unmentioned_latin(missing), "unmentioned_cjk": unmentioned_cjk(missing)}
