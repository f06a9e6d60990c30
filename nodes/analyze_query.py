"""analyze_query: structured QueryAnalysis from the brain, then the retrieval strategy to start with."""

from __future__ import annotations

import time
from typing import Any

from langgraph.runtime import Runtime

from core.global_intent import is_global
from core.names import names_to_look_up
from core.schemas import QueryAnalysis
from core.trace import Decision
from nodes.call_api import api_route_reason
from nodes.common import ctx, event, filters_of, policy_of, question_of
from nodes.context import AgentContext
from nodes.policy import route_reason
from nodes.retrieve_sql import sql_route_reason
from nodes.state import AgentState


def analyze_query(state: AgentState, runtime: Runtime[AgentContext]) -> dict[str, Any]:
    started = time.perf_counter()
    context = ctx(runtime)
    question = question_of(state)
    analysis = context.brain.analyze(question)
    analysis = with_unmentioned(analysis, context, state)
    if analysis.recommended_strategy != "global" and is_global(question):  # whichever brain analyzed
        analysis = analysis.model_copy(update={"recommended_strategy": "global"})
    policy = policy_of(state, context)
    strategy, why = route_reason(policy, analysis)
    # Routes beyond passages (issue 26): a configured API's trigger words, then table questions to SQL.
    if policy.analyze and not policy.strategy:
        if why_api := api_route_reason(question, context.api_tools):
            strategy, why = "api", why_api
        elif why_sql := sql_route_reason(question, analysis, context.sql):
            strategy, why = "sql", why_sql
    return {
        "analysis": analysis,
        "strategy": strategy,
        "query": question,
        "trace": [
            event(
                "analyze_query",
                started,
                context,
                Decision.ROUTED,
                f"{analysis.query_type}/{analysis.complexity} -> {strategy} ({why})",
                sub_queries=len(analysis.sub_queries),
                identifiers=len(analysis.identifiers),
                unmentioned=len(analysis.unmentioned),
            )
        ],
    }


def with_unmentioned(analysis: QueryAnalysis, context: AgentContext, state: AgentState) -> QueryAnalysis:
    """The analysis with the names and identifiers of the question that no chunk the caller may read
    mentions, looked up once here so every attempt's answerability reading has them."""
    keyword = getattr(context.retrievers, "keyword", None)
    names = names_to_look_up(question_of(state), [*analysis.entities, *analysis.identifiers])
    if keyword is None or not names:
        return analysis
    missing = keyword.unmentioned(names, filters_of(state))
    return analysis.model_copy(update={"unmentioned": missing}) if missing else analysis
