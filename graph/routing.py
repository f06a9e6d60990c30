"""Routing decisions as small pure functions; the graph's conditional edges call these."""

from __future__ import annotations

from config import Settings
from graph.schemas import QueryAnalysis, RetrievalEvaluation

MODES = ("naive", "keyword", "hybrid", "hybrid_rerank", "self_query", "agentic")
RETRIEVE_NODE = {
    "vector": "retrieve_vector",
    "keyword": "retrieve_keyword",
    "hybrid": "retrieve_hybrid",
    "multi_hop": "retrieve_multi_hop",
}
FIXED_STRATEGY = {"naive": "vector", "keyword": "keyword", "hybrid": "hybrid", "hybrid_rerank": "hybrid"}
ACTION_STRATEGY = {"retry_vector": "vector", "retry_keyword": "keyword", "multi_hop": "multi_hop"}


COMPLEXITY_FOR_BRIDGE = ("simple", "moderate", "complex")


def uses_analysis(mode: str) -> bool:
    return mode in ("self_query", "agentic")


def uses_rerank(mode: str) -> bool:
    return mode in ("hybrid_rerank", "self_query", "agentic")


def loops(mode: str) -> bool:
    return mode == "agentic"


def initial_strategy(mode: str, analysis: QueryAnalysis | None) -> str:
    """Seed 004's rules: explicit identifiers go to keyword search first; otherwise the analysis."""
    if mode in FIXED_STRATEGY:
        return FIXED_STRATEGY[mode]
    if mode == "self_query":
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


def strategy_after(evaluation: RetrievalEvaluation, current: str, has_sub_queries: bool) -> str:
    """Strategy for a retry: what the evaluator suggests, never the same failing keyword search twice."""
    suggested = ACTION_STRATEGY.get(evaluation.suggested_action)
    if suggested == "multi_hop" and not has_sub_queries:
        suggested = "hybrid"
    if suggested:
        return suggested
    return "hybrid" if current in ("keyword", "vector") else current


def stop_reason(
    *,
    mode: str,
    evaluation: RetrievalEvaluation,
    attempt: int,
    new_relevant: int,
    settings: Settings,
) -> str:
    """Why the loop ends now, or "" to retry. Every path through here terminates the loop in bounded steps."""
    if not loops(mode):
        return "single_pass"
    if evaluation.is_sufficient or evaluation.suggested_action == "answer":
        return "sufficient"
    if attempt >= settings.max_retries:
        return "max_retries"
    if attempt > 0 and new_relevant == 0:
        return "no_progress"
    return ""
