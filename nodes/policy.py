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
StopReason = Literal["", "single_pass", "sufficient", "max_retries", "no_progress", "invalid_input"]

ACTION_STRATEGY: dict[str, StrategyName] = {
    "retry_vector": "vector",
    "retry_keyword": "keyword",
    "multi_hop": "multi_hop",
}
COMPLEXITY_FOR_BRIDGE = ("simple", "moderate", "complex")


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
    """Explicit identifiers go to keyword search first; otherwise the analysis decides."""
    if policy.strategy:
        return policy.strategy
    if not policy.follow_recommendation:
        return "multi_hop" if analysis and analysis.sub_queries else "hybrid"
    if analysis is None:
        return "hybrid"
    if analysis.recommended_strategy == "multi_hop" and analysis.sub_queries:
        return "multi_hop"
    if analysis.identifiers and analysis.recommended_strategy != "vector":
        return "keyword"
    strategy = analysis.recommended_strategy
    if strategy in ("hybrid", "multi_hop") and analysis.complexity in COMPLEXITY_FOR_BRIDGE:
        # A question may need a passage only reachable through another one; the multi-hop route
        # searches it as asked, then hops through the documents its best passages name.
        return "multi_hop"
    return "hybrid" if strategy == "multi_hop" else strategy


def strategy_after(evaluation: RetrievalEvaluation, current: str, has_sub_queries: bool) -> StrategyName:
    """Strategy for a retry: what the evaluator suggests, never the same failing keyword search twice."""
    suggested = ACTION_STRATEGY.get(evaluation.suggested_action)
    if suggested == "multi_hop" and not has_sub_queries:
        suggested = "hybrid"
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
