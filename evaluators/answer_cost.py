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
from typing import Any

from pydantic import BaseModel

from graph.schemas import Passage, SentenceSupport
from providers.offline_brain.extractive import check_answer_support
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
    return unsupported_share(check_answer_support(answer, list(passages), threshold=threshold))


def token_counts(
    question: str, passages: Sequence[Passage], answer: str, trace: Sequence[dict[str, Any]]
) -> tuple[int, int]:
    """(tokens in, tokens out) of the run: recorded by the brain, else one answer call's worth."""
    recorded_in = sum(int(e.get("tokens_in", 0)) for e in trace)
    recorded_out = sum(int(e.get("tokens_out", 0)) for e in trace)
    if recorded_in or recorded_out or any(int(e.get("model_calls", 0)) for e in trace):
        return recorded_in, recorded_out
    context = "\n\n".join(f"[{p.number}] {p.text}" for p in passages)
    return count_tokens(f"{question}\n\n{context}"), count_tokens(answer)


def price(tokens_in: int, tokens_out: int, *, in_per_million: float, out_per_million: float) -> float:
    return (tokens_in * in_per_million + tokens_out * out_per_million) / 1_000_000


def answer_cost(
    result: Any, *, llm_judged: bool, in_per_million: float = 0.0, out_per_million: float = 0.0
) -> AnswerCost:
    """The figures for one ``graph.run.AskResult`` (duck-typed: evaluators do not import the graph run)."""
    passages = [Passage.model_validate(p) for p in result.passages]
    support = [SentenceSupport.model_validate(s) for s in result.support]
    tokens_in, tokens_out = token_counts(
        result.standalone_question or result.question, passages, result.answer, result.trace
    )
    return AnswerCost(
        hallucination=offline_hallucination(result.answer, passages, insufficient=result.insufficient),
        hallucination_llm=unsupported_share(support) if llm_judged and not result.insufficient else None,
        tokens_in=tokens_in,
        tokens_out=tokens_out,
        cost_usd=price(tokens_in, tokens_out, in_per_million=in_per_million, out_per_million=out_per_million),
    )
