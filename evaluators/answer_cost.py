"""Per-question figures beside quality: how much of an answer its passages do not support, and what the
question cost in tokens and money.

- ``hallucination``: share of the answer's claim sentences that the passages they cite do not support,
  judged by the offline checker (term coverage, the same one the verify step uses offline). Sentences
  without a claim (leads, "cannot be determined" disclaimers) are left out; an answer that declares the
  evidence insufficient has no claim and is undefined. When an LLM judged support in the verify step,
  its verdicts give ``hallucination_llm``, a second judge.
- ``tokens_in``/``tokens_out``: tokens (tiktoken cl100k) the run's model calls sent and received, as the
  brain recorded them; a run without model calls (offline brain) counts what one LLM answer call would
  read (question + passages) and write (the answer), so modes stay comparable offline.
- ``cost_usd``: tokens times the per-million-token prices in settings (0 by default, and offline).
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel

from core.schemas import Passage, SentenceSupport
from core.trace import TraceEvent
from providers.brain.verify import OfflineVerifier
from providers.tokens import count_tokens


class AnswerCost(BaseModel):
    hallucination: float | None = None
    hallucination_llm: float | None = None
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float = 0.0


def unsupported_share(support: Sequence[SentenceSupport]) -> float | None:
    """Unsupported claim sentences / claim sentences; None when the answer makes no claim."""
    claims = [s for s in support if s.cited or not s.supported]
    if not claims:
        return None
    return sum(1 for s in claims if not s.supported) / len(claims)


def offline_hallucination(
    answer: str, passages: Sequence[Passage], *, insufficient: bool = False, threshold: float = 0.6
) -> float | None:
    if insufficient or not answer.strip():
        return None
    return unsupported_share(OfflineVerifier(threshold)(answer, list(passages)))


def token_counts(
    question: str, passages: Sequence[Passage], answer: str, trace: Sequence[TraceEvent]
) -> tuple[int, int]:
    """(tokens in, tokens out) of the run: recorded by the brain, else one answer call's worth."""
    if any(e.model_calls for e in trace):
        return sum(e.tokens_in for e in trace), sum(e.tokens_out for e in trace)
    context = "\n\n".join(f"[{p.number}] {p.text}" for p in passages)
    return count_tokens(f"{question}\n\n{context}"), count_tokens(answer)


def price(tokens_in: int, tokens_out: int, *, in_per_million: float, out_per_million: float) -> float:
    return (tokens_in * in_per_million + tokens_out * out_per_million) / 1_000_000


def answer_cost(
    *,
    question: str,
    answer: str,
    insufficient: bool,
    passages: Sequence[Passage],
    support: Sequence[SentenceSupport] | None,
    trace: Sequence[TraceEvent],
    in_per_million: float = 0.0,
    out_per_million: float = 0.0,
) -> AnswerCost:
    """The figures for one answered question; ``support`` is the LLM verifier's verdicts, when one ran."""
    tokens_in, tokens_out = token_counts(question, passages, answer, trace)
    return AnswerCost(
        hallucination=offline_hallucination(answer, passages, insufficient=insufficient),
        hallucination_llm=unsupported_share(support) if support is not None and not insufficient else None,
        tokens_in=tokens_in,
        tokens_out=tokens_out,
        cost_usd=price(tokens_in, tokens_out, in_per_million=in_per_million, out_per_million=out_per_million),
    )
