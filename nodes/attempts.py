"""Which search attempt the answer is written from (issue 21, session 9).

The retry loop (evaluate -> rewrite_query -> retrieve -> rerank -> evaluate) searches up to
``max_retries`` more times when the evidence looks insufficient. A retry is not always better than what
it replaces: on multi-hop questions the answerability gate often reads the first search (an
entity-graph walk, a hop through a bridge document) as not quite enough, and the rewritten query
then finds less. So every attempt's evaluated evidence is recorded (``Attempt``: ids, the gate's
probability, the verdict) and when the loop ends the answer is written from the attempt the gate scored
best, not from the last one.

Pure functions here; the evaluate node wires them (nodes/evaluate.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, Field

from core.chunks import ScoredChunk
from core.schemas import RetrievalEvaluation

# "best": the attempt the gate scored best; "merge": the union of every attempt's evaluated chunks,
# reranked and judged once; "last": the last attempt (the behaviour before session 9)
AttemptEvidence = Literal["best", "merge", "last"]


class Attempt(BaseModel):
    """One attempt's evaluated evidence, small enough to stay in every checkpoint: ids, not texts."""

    number: int = Field(ge=0, description="0 for the first search, n for the n-th retry")
    strategy: str = ""
    query: str = ""
    chunk_ids: list[str] = Field(default_factory=list, description="the ranked candidates, best first")
    evaluation: RetrievalEvaluation = Field(default_factory=RetrievalEvaluation)
    hops_next: bool = Field(
        default=False, description="the evidence pointed one hop further: the next attempt is that hop"
    )

    @property
    def answerability(self) -> float | None:
        """The gate's p(the evidence answers the question); None when the gate did not assess it."""
        return self.evaluation.answerability

    @property
    def sufficient(self) -> bool:
        return self.evaluation.is_sufficient


class AttemptHits(BaseModel):
    """One attempt's ranked candidates themselves: per-turn evidence, slimmed out of checkpoints."""

    number: int = Field(ge=0)
    hits: list[ScoredChunk] = Field(default_factory=list)


class Choice(BaseModel):
    """The attempt the answer is written from and why (for the trace)."""

    number: int  # whose evidence (ranked chunks) the answer is written from
    reason: str
    verdict: int = -1  # whose verdict stands: the hop's origin when it read better; -1: ``number``'s

    @property
    def verdict_of(self) -> int:
        return self.number if self.verdict < 0 else self.verdict


def attempt_key(attempt: Attempt) -> tuple[bool, float]:
    """What makes one attempt's evidence better than another's: a verdict of sufficient (the judge and
    the gate agree) first, then the gate's probability."""
    p = attempt.answerability
    return attempt.sufficient, -1.0 if p is None else p


def choose_attempt(attempts: Sequence[Attempt]) -> Choice | None:
    """The attempt to answer from: the best by ``attempt_key``, the earlier one on a tie.

    A hop (``hops_next``: the evidence pointed to documents it names) continues the attempt it hopped
    from rather than replacing it: the rerank node carries that attempt's relevant chunks into the
    hop's candidates, and the passages the hop adds were reached through a bridge, so they share few
    words with the question and the gate reads them lower by design. The two are one candidate,
    scored by the better of their readings and answered from the hop's evidence.

    When the gate scored none of them (no embedder, evidence handed over by code), the last attempt
    stands, as before: it also holds the earlier attempts' relevant chunks. None for no attempts.
    """
    if not attempts:
        return None
    last = attempts[-1]
    if all(a.answerability is None for a in attempts):
        return Choice(number=last.number, reason="last attempt (no answerability scores)")
    candidates: list[tuple[tuple[bool, float], Attempt, Attempt]] = []  # (key, evidence, verdict)
    for a in attempts:
        key, verdict = attempt_key(a), a
        previous = candidates[-1] if candidates else None
        if previous and previous[1].hops_next and previous[1].number == a.number - 1:
            candidates.pop()  # the hop takes its origin's place, with the better of the two readings
            key, verdict = max((key, verdict), previous[0::2], key=lambda kv: (kv[0], -kv[1].number))
        candidates.append((key, a, verdict))
    key, best, verdict = max(candidates, key=lambda c: (c[0], -c[1].number))
    hop = " with the attempt it hopped from" if verdict is not best else ""
    lead = (
        "last attempt, scored best"
        if best is last
        else f"attempt {best.number} scored best of {len(attempts)}"
    )
    reason = lead + hop + (f" (answerability {key[1]:.2f})" if key[1] >= 0 else "")
    return Choice(number=best.number, reason=reason, verdict=verdict.number if verdict is not best else -1)


def final_verdict(evidence: Attempt, verdict: Attempt) -> RetrievalEvaluation:
    """The evaluation the answer is written under: the evidence attempt's judgements with the verdict
    attempt's reading (sufficient, answerability); the same attempt's evaluation when they coincide."""
    if evidence.number == verdict.number:
        return evidence.evaluation
    fields = ("is_sufficient", "answerability", "answerable", "reasoning")
    return evidence.evaluation.model_copy(update={f: getattr(verdict.evaluation, f) for f in fields})


def hits_of(evidence: Sequence[AttemptHits], number: int) -> list[ScoredChunk] | None:
    """The ranked candidates recorded for attempt ``number``; None when none were recorded (a state
    from an older checkpoint, or evidence slimmed away)."""
    return next((list(e.hits) for e in evidence if e.number == number), None)


def union_of_attempts(evidence: Sequence[AttemptHits], per_attempt: int) -> list[ScoredChunk]:
    """Each attempt's best ``per_attempt`` chunks, first-seen order across attempts (earlier first),
    each chunk once: the pool a merged answer is reranked from."""
    seen: set[str] = set()
    out: list[ScoredChunk] = []
    for attempt in sorted(evidence, key=lambda e: e.number):
        for hit in attempt.hits[:per_attempt]:
            if hit.id not in seen:
                seen.add(hit.id)
                out.append(hit)
    return out
