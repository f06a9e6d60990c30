"""Deterministic evidence judging: relevance per chunk, sufficiency, what is missing, what to try next.

Relevance mixes two signals that fail differently: the reranker's ordering (good at meaning, blind to
whether a specific term is present) and lexical coverage of the question's key terms (blind to meaning,
exact about terms). Reranker scores have no common scale (logits, cosines, RRF sums), so only their rank
and their ratio to the best score are used.
"""

from __future__ import annotations

from core.chunks import ScoredChunk
from core.schemas import ChunkJudgement, QueryAnalysis, RetrievalEvaluation, SuggestedAction, strip_bridge
from providers.offline_brain.analysis import drop_identifier_parts, key_terms, surface_terms

RELEVANT = 0.35  # relevance at or above this counts as a relevant chunk
TOP_K = 5  # how many of the best chunks must jointly cover the question
_SCORE_WEIGHT = 0.3  # lexical coverage dominates: zero coverage can never reach RELEVANT


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
    out = []
    for i, value in enumerate(raw):
        relative = 1.0 if spread <= 1e-12 else (value - lo) / spread
        out.append(0.5 / (1 + rank[i]) + 0.5 * relative)
    return out


def _chunk_terms(chunk: ScoredChunk) -> set[str]:
    c = chunk.chunk
    return set(key_terms(" ".join([c.title, " ".join(c.heading_path), c.text])))


def evaluate(
    question: str,
    analysis: QueryAnalysis,
    chunks: list[ScoredChunk],
    tried: list[str],
    threshold: float = 0.5,
) -> RetrievalEvaluation:
    """Judge the chunks; sufficient when the top chunks cover the key terms and every sub-query."""
    terms = key_terms(question)
    surface = surface_terms(question)
    if not chunks:
        return RetrievalEvaluation(
            judgements=[],
            is_sufficient=False,
            missing_info=drop_identifier_parts([surface.get(t, t) for t in terms])
            or [q for q in [question] if q.strip()],
            suggested_action=_action(analysis, chunks, False, [], low_coverage=True),
            reasoning="no chunks were retrieved",
        )
    signals = score_signal(chunks)
    chunk_terms = [_chunk_terms(c) for c in chunks]
    judgements: list[ChunkJudgement] = []
    for chunk, signal, found in zip(chunks, signals, chunk_terms, strict=True):
        cov = sum(1 for t in terms if t in found) / len(terms) if terms else 0.0
        relevance = round(min(1.0, _SCORE_WEIGHT * signal + (1 - _SCORE_WEIGHT) * cov), 4)
        judgements.append(
            ChunkJudgement(
                chunk_id=chunk.id,
                relevance=relevance,
                reason=f"covers {cov:.0%} of key terms, score signal {signal:.2f}",
            )
        )
    top = sorted(range(len(chunks)), key=lambda i: -judgements[i].relevance)[:TOP_K]
    top_terms: set[str] = set().union(*(chunk_terms[i] for i in top))
    missing_terms = [t for t in terms if t not in top_terms]
    covered = 1 - len(missing_terms) / len(terms) if terms else 1.0

    uncovered_subs: list[str] = []
    for sub in analysis.sub_queries:
        sub_terms = key_terms(strip_bridge(sub))
        if not sub_terms:
            continue
        best = max(sum(1 for t in sub_terms if t in found) / len(sub_terms) for found in chunk_terms)
        if best < threshold:
            uncovered_subs.append(sub)
    any_relevant = any(j.relevance >= RELEVANT for j in judgements)
    sufficient = covered >= threshold and not uncovered_subs and any_relevant

    ident_terms = {t for ident in analysis.identifiers for t in key_terms(ident)}
    missing_identifiers = [t for t in missing_terms if t in ident_terms]
    missing = drop_identifier_parts([surface.get(t, t) for t in missing_terms]) + uncovered_subs
    action = _action(
        analysis,
        chunks,
        sufficient,
        uncovered_subs,
        low_coverage=covered < threshold,
        missing_identifiers=bool(missing_identifiers),
    )
    reasoning = (
        f"top {len(top)} chunks cover {covered:.0%} of {len(terms)} key terms (threshold {threshold:.0%})"
        + (f"; {len(uncovered_subs)} sub-queries uncovered" if uncovered_subs else "")
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
    )


def _keyword_only(analysis: QueryAnalysis, chunks: list[ScoredChunk]) -> bool:
    if analysis.recommended_strategy == "keyword":
        return True
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
) -> SuggestedAction:
    if sufficient:
        return "answer"
    if uncovered_subs and analysis.recommended_strategy != "multi_hop":
        return "multi_hop"
    if missing_identifiers and analysis.recommended_strategy != "keyword":
        return "retry_keyword"
    if low_coverage and _keyword_only(analysis, chunks):
        return "retry_vector"
    return "rewrite"
