"""Query rewriting that targets what the evaluation found missing and never repeats a tried query."""

from __future__ import annotations

import re
from itertools import count

from core.schemas import RetrievalEvaluation, strip_bridge
from core.text import contains_cjk
from core.tokenize import tokenize
from providers.offline_brain.analysis import drop_identifier_parts, extract_entities, key_terms, surface_terms
from providers.offline_brain.decompose import decompose, normalise_query, topic_of
from providers.offline_brain.weights import params


def _join(words: list[str]) -> str:
    return re.sub(r"\s+", " ", " ".join(w for w in words if w)).strip()


def candidate_rewrites(question: str, evaluation: RetrievalEvaluation) -> list[str]:
    """Rewrites in order of preference: missing sub-query, missing terms plus core entity, keywords only."""
    zh = contains_cjk(question)
    surface = surface_terms(question)
    keywords = drop_identifier_parts([surface.get(t, t) for t in key_terms(question)])
    entities = extract_entities(question)
    core = entities[0] if entities else topic_of(question)
    own_subs = set(decompose(question))
    subs = [
        strip_bridge(m)
        for m in evaluation.missing_info
        if m in own_subs or len(tokenize(m)) >= params().limits.rewrite["missing_terms"]
    ]
    terms = [m for m in evaluation.missing_info if strip_bridge(m) not in subs]
    candidates: list[str] = list(subs)
    if terms:
        anchor = [] if any(t.lower() in core.lower() for t in terms) else [core]
        candidates.append(_join([*anchor, *terms]))
        candidates.append(_join([*terms, *[k for k in keywords if k not in terms]]))
    candidates.append(_join(keywords))
    candidates.append(_join(list(reversed(keywords))))
    if entities:
        candidates.append(_join(entities))
    candidates.append(f"{core} 详细说明" if zh else f"{core} details")
    candidates.append(f"{question} 相关资料" if zh else f"{question} documentation")
    return [c for c in candidates if c.strip()]


def rewrite_query(question: str, evaluation: RetrievalEvaluation, tried: list[str]) -> str:
    """The first candidate not already tried; a numbered variant when every candidate was."""
    if not question or not question.strip():
        raise ValueError("cannot rewrite an empty question")
    # the question itself counts as tried: a rewrite equal to it would search the same thing again
    seen = {normalise_query(q) for q in tried} | {normalise_query(question)}
    for candidate in candidate_rewrites(question, evaluation):
        if normalise_query(candidate) not in seen:
            return candidate
    base = candidate_rewrites(question, evaluation)[0]
    n = next(n for n in count(2) if normalise_query(f"{base} ({n})") not in seen)
    return f"{base} ({n})"
