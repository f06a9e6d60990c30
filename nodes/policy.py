"""What each retrieval mode does, and the routing decisions as small pure functions.

A ``ModePolicy`` answers the per-mode questions (analyse? rerank? loop? second hop?) in one place,
so nodes ask the policy instead of comparing mode names.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

from core.schemas import QueryAnalysis, RetrievalEvaluation, StrategyName

Mode = Literal["naive", "keyword", "hybrid", "hybrid_rerank", "self_query", "agentic"]
MODES: tuple[Mode, ...] = get_args(Mode)
StopReason = Literal[
    "", "single_pass", "sufficient", "max_retries", "no_progress", "invalid_input", "needs_clarification"
]
ANSWERED_BEFORE_SEARCH: tuple[StopReason, ...] = ("invalid_input", "needs_clarification")

ACTION_STRATEGY: dict[str, StrategyName] = {
    "retry_vector": "vector",
    "retry_keyword": "keyword",
    "multi_hop": "multi_hop",
}


@dataclass(frozen=True)
class ModePolicy:
    """The steps a mode takes. ``strategy`` fixes the retrieval; None lets the analysis choose."""

    analyse: bool = False
    follow_recommendation: bool = False  # take the analyser's recommended strategy (else sub-queries only)
    rerank: bool = False
    loop: bool = False  # evaluate the evidence and retry while it is insufficient
    second_hop: bool = False  # multi-hop searches again through the bridge entities the first hop found
    keyword_top_up: bool = True  # keyword search adds vector hits when BM25 finds too few
    strategy: StrategyName | None = None


POLICIES: dict[Mode, ModePolicy] = {
    "naive": ModePolicy(strategy="vector"),
    "keyword": ModePolicy(strategy="keyword", keyword_top_up=False),
    "hybrid": ModePolicy(strategy="hybrid"),
    "hybrid_rerank": ModePolicy(strategy="hybrid", rerank=True),
    "self_query": ModePolicy(analyse=True, rerank=True),
    "agentic": ModePolicy(analyse=True, follow_recommendation=True, rerank=True, loop=True, second_hop=True),
}


def policy_for(mode: str) -> ModePolicy:
    """The policy of a known mode; unknown modes are rejected earlier, by contextualize."""
    return POLICIES[mode]  # type: ignore[index]


def initial_strategy(policy: ModePolicy, analysis: QueryAnalysis | None) -> StrategyName:
    """One search for a single-hop question; one per part for a question with several parts.

    Explicit identifiers go to keyword search first; otherwise the analysis decides. A second hop is
    not planned here: it runs when the question is a nested relation or the evidence points to it.
    """
    return route_reason(policy, analysis)[0]


def route_reason(policy: ModePolicy, analysis: QueryAnalysis | None) -> tuple[StrategyName, str]:
    """The first strategy and why it was chosen (for the trace)."""
    if policy.strategy:
        return policy.strategy, f"fixed by the mode: {policy.strategy}"
    parts = len(analysis.sub_queries) if analysis else 0
    if not policy.follow_recommendation:
        return ("multi_hop", f"{parts} parts") if parts else ("hybrid", "single search")
    if analysis is None:
        return "hybrid", "no analysis"
    if parts >= 2:
        kind = "a nested relation" if any(is_bridge_template(q) for q in analysis.sub_queries) else "parts"
        return "multi_hop", f"{parts} sub-queries ({kind}): one search each"
    if analysis.identifiers and analysis.recommended_strategy != "vector":
        return "keyword", f"exact terms {', '.join(analysis.identifiers[:3])}: one keyword search"
    strategy = analysis.recommended_strategy
    if strategy == "multi_hop":  # recommended without sub-queries to search: nothing to split
        return "hybrid", "single-hop question: one search"
    return strategy, f"single-hop question: one {strategy} search"


def is_bridge_template(sub_query: str) -> bool:
    """A second-hop template ("spouse of <director of X>") needs the entity the first hop finds."""
    return "<" in sub_query and ">" in sub_query


def second_hop_reason(
    policy: ModePolicy, analysis: QueryAnalysis | None, evaluation: RetrievalEvaluation | None
) -> str:
    """Why a multi-hop search hops again through bridge entities, or "" when it should not.

    Only when the question is a nested relation (a bridge template) or the judge found the evidence
    short while its best passages name something the question does not (``multi_hop`` suggested
    without sub-queries); comparisons and plain multi-part questions are answered by their parts.
    """
    if not policy.second_hop:
        return ""
    if analysis and any(is_bridge_template(q) for q in analysis.sub_queries):
        return "nested relation in the question"
    if evaluation is not None and evaluation.suggested_action == "multi_hop" and not evaluation.is_sufficient:
        return "the best passages point to what is missing"
    return ""


def strategy_after(evaluation: RetrievalEvaluation, current: str) -> StrategyName:
    """Strategy for a retry: what the evaluator suggests, never the same failing keyword search twice."""
    suggested = ACTION_STRATEGY.get(evaluation.suggested_action)
    # multi_hop without sub-queries searches the rewritten query, then hops through what the best
    # passages name (second_hop_reason); with sub-queries it searches each part again
    if suggested:
        return suggested
    if current in ("keyword", "vector") or current not in get_args(StrategyName):
        return "hybrid"
    return current  # type: ignore[return-value]


def stop_reason(
    *,
    policy: ModePolicy,
    evaluation: RetrievalEvaluation,
    attempt: int,
    new_relevant: int,
    max_retries: int,
) -> StopReason:
    """Why the loop ends now, or "" to retry. Every path through here terminates the loop in bounded steps."""
    if not policy.loop:
        return "single_pass"
    if evaluation.is_sufficient or evaluation.suggested_action == "answer":
        return "sufficient"
    if attempt >= max_retries:
        return "max_retries"
    if attempt > 0 and new_relevant == 0:
        return "no_progress"
    return ""
