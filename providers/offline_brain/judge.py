"""Deterministic evidence judging: relevance per chunk, sufficiency, what is missing, what to try next.

Three signals that fail differently: the reranker's ordering (scale-free: rank and ratio to the best
score), lexical coverage of the question's key terms (exact about terms, blind to meaning and to other
languages) and, when the runtime hands over an embedder, similarity by meaning between the question and
the chunk's best sentence (works across Chinese and English, vague about exact terms). Coverage and
meaning are alternatives: a chunk matches when either says so, so a Chinese question over English
passages is judged on meaning instead of failing on zero word overlap.
"""

from __future__ import annotations

from core.chunks import ScoredChunk
from core.names import NameShape, find_names, title_matches
from core.schemas import (
    RELEVANCE_THRESHOLD,
    ChunkJudgement,
    QueryAnalysis,
    RetrievalEvaluation,
    SuggestedAction,
    strip_bridge,
)
from core.text import detect_language, split_sentences
from providers.meaning import Meaning
from providers.offline_brain.analysis import key_terms
from providers.offline_brain.extractive import found_share
from providers.offline_brain.features import on_question
from providers.offline_brain.lexicon import lexicon
from providers.offline_brain.profile import QuestionProfile, profile_for
from providers.offline_brain.weights import BrainParams, params
from providers.offline_brain.words import missing_words

_NAME_SHAPE = NameShape.from_dict(lexicon().entry("judge.name_shape", "en")["table"])


def retrieval_score(chunk: ScoredChunk) -> float:
    return chunk.scores.get("rerank", chunk.score)


def score_signal(chunks: list[ScoredChunk]) -> list[float]:
    """Scale-free [0, 1] signal per chunk: half from rank, half from position between worst and best."""
    raw = [retrieval_score(c) for c in chunks]
    if not raw:
        return []
    order = sorted(range(len(raw)), key=lambda i: -raw[i])
    rank = {i: r for r, i in enumerate(order)}
    hi, lo = max(raw), min(raw)
    spread = hi - lo
    relative = [1.0 if spread <= 1e-12 else (value - lo) / spread for value in raw]
    return [0.5 / (1 + rank[i]) + 0.5 * share for i, share in enumerate(relative)]


def chunk_sentences(chunk: ScoredChunk) -> list[str]:
    """What meaning is judged on: the title and each sentence (a whole chunk's vector is diluted)."""
    c = chunk.chunk
    title = [c.title] if c.title.strip() else []
    least = params().limits.judge["sentence_chars"]
    return title + [s for s in split_sentences(c.text) if len(s.strip()) > least]


def _chunk_terms(chunk: ScoredChunk) -> set[str]:
    c = chunk.chunk
    return set(key_terms(" ".join([c.title, " ".join(c.heading_path), c.text])))


def best_similarity(meaning: Meaning | None, query: str, chunks: list[ScoredChunk]) -> list[float]:
    """Per chunk, the highest cosine between ``query`` and one of its sentences (0 without an embedder)."""
    if meaning is None or not chunks or not query.strip():
        return [0.0] * len(chunks)
    pieces = [chunk_sentences(c) for c in chunks]
    flat = [s for group in pieces for s in group]
    sims = iter(meaning.similarity(query, flat) if flat else [])
    return [max((next(sims) for _ in group), default=0.0) for group in pieces]


def evaluate(
    question: str | QuestionProfile,
    analysis: QueryAnalysis,
    chunks: list[ScoredChunk],
    tried: list[str],
    threshold: float = 0.5,
    meaning: Meaning | None = None,
    weights: BrainParams | None = None,
) -> RetrievalEvaluation:
    """Judge the chunks; sufficient when the best chunks match the question (by its terms or by
    meaning) and every sub-query is matched too. ``threshold`` is the key-term coverage that counts
    as a lexical match; relevance is ``weights.judge.relevance`` over the rank signal and the match."""
    profile, weights = profile_for(question, analysis), weights or params()
    judge, limits = weights.judge, weights.limits.judge
    question, terms, semantic_match = profile.text, profile.terms, judge.semantic_match
    if not chunks:
        return RetrievalEvaluation(
            judgements=[],
            is_sufficient=False,
            missing_info=missing_words(question, set()) or [q for q in [question] if q.strip()],
            suggested_action=_action(analysis, chunks, False, [], low_coverage=True),
            reasoning="no chunks were retrieved",
            matched=False,
        )
    signals = score_signal(chunks)
    chunk_terms = [_chunk_terms(c) for c in chunks]
    sims = best_similarity(meaning, question, chunks)
    judgements: list[ChunkJudgement] = []
    for chunk, signal, found, sim in zip(chunks, signals, chunk_terms, sims, strict=True):
        cov = found_share(terms, found)
        match = on_question(cov, sim, semantic_match)
        relevance = round(min(1.0, judge.relevance.score({"score_signal": signal, "on_question": match})), 4)
        judgements.append(
            ChunkJudgement(
                chunk_id=chunk.id,
                relevance=relevance,
                reason=f"covers {cov:.0%} of key terms, meaning {sim:.2f}, score signal {signal:.2f}",
            )
        )
    top = sorted(range(len(chunks)), key=lambda i: -judgements[i].relevance)[: judge.top_k]
    top_terms: set[str] = set().union(*(chunk_terms[i] for i in top))
    covered = 1 - sum(1 for t in terms if t not in top_terms) / len(terms) if terms else 1.0
    best_meaning = max((sims[i] for i in top), default=0.0)
    matched = covered >= threshold or best_meaning >= semantic_match

    def uncovered(sub: str) -> bool:
        """No chunk holds the sub-query's terms (``threshold``) nor says it by meaning."""
        query = strip_bridge(sub)
        sub_terms = profile_for(query).terms
        if not sub_terms or max(found_share(sub_terms, found) for found in chunk_terms) >= threshold:
            return False
        return meaning is None or max(best_similarity(meaning, query, chunks)) < semantic_match

    uncovered_subs = [sub for sub in analysis.sub_queries if uncovered(sub)]
    any_relevant = any(j.relevance >= RELEVANCE_THRESHOLD for j in judgements)
    sufficient = matched and not uncovered_subs and any_relevant

    ident_terms = {t for ident in analysis.identifiers for t in key_terms(ident)}
    missing_identifiers = any(t in ident_terms and t not in top_terms for t in terms)
    window = limits["language_chars"]  # a chunk's language is read from its opening
    same_language = [i for i in top if detect_language(chunks[i].chunk.text[:window]) == profile.language]

    def lacking_in(indices: list[int]) -> list[str]:
        """Words of the question these chunks lack; only checkable in the question's own language."""
        same = [i for i in indices if i in same_language]
        return missing_words(question, set().union(*(chunk_terms[i] for i in same))) if same else []

    lacking = lacking_in(top)
    on_topic = [i for i in top[: limits["on_topic"]] if judgements[i].relevance >= RELEVANCE_THRESHOLD]
    # Words of the question the on-topic passages lack (an off-topic passage holding one answers
    # nothing) while those passages name something the question does not: the rest may be one hop
    # away. The judge only reports it; the policy hops when a named thing is a document of the corpus
    # that the search did not find (nodes/policy.py evidence_hop_reason).
    lacking_on_topic = lacking_in(on_topic)
    pointers = pointed_to(question, [chunks[i] for i in on_topic]) if lacking_on_topic else []
    missing = (
        []
        if sufficient
        else (lacking if same_language else missing_words(question, top_terms)) + uncovered_subs
    )
    action = _action(
        analysis,
        chunks,
        sufficient,
        uncovered_subs,
        low_coverage=not matched,
        missing_identifiers=missing_identifiers,
        pointers=pointers,
    )
    shown = limits["reason_names"]
    reasoning = (
        f"top {len(top)} chunks cover {covered:.0%} of {len(terms)} key terms (threshold {threshold:.0%})"
        + (f", best meaning match {best_meaning:.2f} (needs {semantic_match})" if meaning else "")
        + (f"; {len(uncovered_subs)} sub-queries uncovered" if uncovered_subs else "")
        + (
            f"; missing {', '.join(lacking_on_topic[:shown])}, "
            f"the best passages name {', '.join(pointers[:shown])}"
            if pointers
            else ""
        )
        + ("" if any_relevant else "; no chunk is relevant")
        + (f"; {len(tried)} queries tried" if tried else "")
        + f"; action {action}."
    )
    return RetrievalEvaluation(
        judgements=judgements,
        is_sufficient=sufficient,
        missing_info=list(dict.fromkeys(missing)),
        suggested_action=action,
        reasoning=reasoning,
        pointers=pointers,
        matched=matched,
    )


def pointed_to(question: str, chunks: list[ScoredChunk]) -> list[str]:
    """Names the best passages mention that the question does not (multi-word names, 《titles》):
    where a second hop could go."""
    asked, limits = question.lower(), params().limits.judge
    names: list[str] = []
    for chunk in chunks:
        text = chunk.chunk.text[: limits["pointer_chars"]]
        found = find_names(text, _NAME_SHAPE) + [
            m.group(0) for m in title_matches(text, limits["title_chars"])
        ]
        names += [n for n in found if n.lower() not in asked and n.lower() != chunk.chunk.title.lower()]
    return list(dict.fromkeys(names))


def _keyword_only(chunks: list[ScoredChunk]) -> bool:
    """Whether the chunks came from keyword search alone (what was searched, not what was recommended)."""
    keys = {k for c in chunks for k in c.ranks} | {k for c in chunks for k in c.scores if k != "rerank"}
    return bool(keys) and keys <= {"keyword", "bm25", "sparse"}


def _action(
    analysis: QueryAnalysis,
    chunks: list[ScoredChunk],
    sufficient: bool,
    uncovered_subs: list[str],
    *,
    low_coverage: bool,
    missing_identifiers: bool = False,
    pointers: list[str] | None = None,
) -> SuggestedAction:
    """Next step when the evidence falls short. ``multi_hop`` means: search the uncovered sub-queries,
    or (without sub-queries) hop through the names the best passages mention (``pointers``)."""
    if sufficient:
        return "answer"
    if uncovered_subs and analysis.recommended_strategy != "multi_hop":
        return "multi_hop"
    if missing_identifiers and not _keyword_only(chunks):
        return "retry_keyword"
    if pointers:
        return "multi_hop"
    if low_coverage and _keyword_only(chunks):
        return "retry_vector"
    return "rewrite"
