"""What each retrieval mode does, and the routing decisions as small pure functions.

A ``ModePolicy`` answers the per-mode questions (analyze? rerank? loop? second hop?) in one place,
so nodes ask the policy instead of comparing mode names.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

from core.chunks import ScoredChunk
from core.schemas import QueryAnalysis, RetrievalEvaluation, StrategyName

Mode = Literal["naive", "keyword", "hybrid", "hybrid_rerank", "self_query", "agentic"]
MODES: tuple[Mode, ...] = get_args(Mode)
StopReason = Literal[
    "",
    "single_pass",
    "sufficient",
    "max_retries",
    "no_progress",
    "off_topic",
    "invalid_input",
    "needs_clarification",
    "small_talk",
]
ANSWERED_BEFORE_SEARCH: tuple[StopReason, ...] = ("invalid_input", "needs_clarification", "small_talk")

ACTION_STRATEGY: dict[str, StrategyName] = {
    "retry_vector": "vector",
    "retry_keyword": "keyword",
    "multi_hop": "multi_hop",
}


@dataclass(frozen=True)
class ModePolicy:
    """The steps a mode takes. ``strategy`` fixes the retrieval; None lets the analysis choose."""

    analyze: bool = False
    follow_recommendation: bool = False  # search parts only when the analyzer found two or more (else any)
    rerank: bool = False
    loop: bool = False  # evaluate the evidence and retry while it is insufficient
    second_hop: bool = False  # multi-hop searches again through the bridge entities the first hop found
    keyword_top_up: bool = True  # keyword search adds vector hits when BM25 finds too few
    entity_graph: bool = False  # hybrid and first-hop searches fuse the entity-graph walk (issue 26)
    strategy: StrategyName | None = None


POLICIES: dict[Mode, ModePolicy] = {
    "naive": ModePolicy(strategy="vector"),
    "keyword": ModePolicy(strategy="keyword", keyword_top_up=False),
    "hybrid": ModePolicy(strategy="hybrid"),
    "hybrid_rerank": ModePolicy(strategy="hybrid", rerank=True),
    "self_query": ModePolicy(analyze=True, rerank=True),
    "agentic": ModePolicy(
        analyze=True, follow_recommendation=True, rerank=True, loop=True, second_hop=True, entity_graph=True
    ),
}


def policy_for(mode: str) -> ModePolicy:
    """The policy of a known mode; unknown modes are rejected earlier, by contextualize."""
    return POLICIES[mode]  # type: ignore[index]


def initial_strategy(policy: ModePolicy, analysis: QueryAnalysis | None) -> StrategyName:
    """One hybrid search for a single-hop question; one per part for a question with several parts.

    A second hop is not planned here: it runs when the question is a nested relation or the evidence
    points to it.
    """
    return route_reason(policy, analysis)[0]


def route_reason(policy: ModePolicy, analysis: QueryAnalysis | None) -> tuple[StrategyName, str]:
    """The first strategy and why it was chosen (for the trace).

    A single-hop question gets the fused (hybrid) search even when the analysis recommends one
    retriever: the fusion holds the keyword search that exact terms call for and the vector search
    vague wording calls for, at the cost of one search. On the dev slices (CMRC 500-599, DRCD
    1000-1099, SciFact 600-699) a dense-only first search lost 0.14-1.0 nDCG@10 on the questions
    routed to it and a keyword-only one 0-0.007; the single retrievers stay the retries the judge
    asks for (missing identifiers -> keyword).
    """
    if policy.strategy:
        return policy.strategy, f"fixed by the mode: {policy.strategy}"
    parts = len(analysis.sub_queries) if analysis else 0
    if not policy.follow_recommendation:
        return ("multi_hop", f"{parts} parts") if parts else ("hybrid", "single search")
    if analysis is None:
        return "hybrid", "no analysis"
    if analysis.recommended_strategy == "global":
        return "global", "a question about a whole document or collection: its summaries"
    if parts >= 2:
        kind = "a nested relation" if any(is_bridge_template(q) for q in analysis.sub_queries) else "parts"
        return "multi_hop", f"{parts} sub-queries ({kind}): one search each"
    if analysis.identifiers:
        terms = ", ".join(analysis.identifiers[:3])
        return "hybrid", f"single-hop question: one hybrid search (its keyword half matches {terms})"
    return "hybrid", "single-hop question: one hybrid search"


def is_bridge_template(sub_query: str) -> bool:
    """A second-hop template ("spouse of <director of X>") needs the entity the first hop finds."""
    return "<" in sub_query and ">" in sub_query


def second_hop_reason(policy: ModePolicy, analysis: QueryAnalysis | None) -> str:
    """Why a multi-hop search of the question's parts hops again through the bridge entities its first
    hop found, or "": only for a nested relation (a bridge template). Comparisons and plain multi-part
    questions are answered by their parts; a hop the evidence calls for is ``evidence_hop_reason``."""
    if policy.second_hop and analysis and any(is_bridge_template(q) for q in analysis.sub_queries):
        return "nested relation in the question"
    return ""


def unseen_documents(named: list[str], chunks: list[ScoredChunk]) -> list[str]:
    """The named documents none of whose passages is among ``chunks``: where a hop would find news."""
    have = {c.chunk.title.strip().lower() for c in chunks if c.chunk.title.strip()}
    return [name for name in named if name.strip().lower() not in have]


def evidence_hop_reason(
    policy: ModePolicy,
    analysis: QueryAnalysis | None,
    evaluation: RetrievalEvaluation,
    *,
    attempt: int,
    targets: list[str],
    through: list[str] | None = None,
    asked: list[str] | None = None,
) -> str:
    """Why the agent looks one hop further before answering, or "" when it should not.

    Once, after the first search of a question without parts, only through ``targets``: documents of
    the corpus the best passages name and the search did not find; and only when the evidence points
    there: the judge found words of the question missing while those passages name something the
    question does not (``pointers``; an LLM judge says ``multi_hop``), or the passages naming the
    targets belong to documents the question itself names (``through``: the question reaches the
    target through them, a link its own words cannot make), or the question names a document
    outright that the search did not find (``asked``). A single-hop question whose passages name
    nothing new, or only names the corpus has no document for, is answered from its one search.
    """
    if not policy.second_hop or attempt > 0 or (analysis is not None and analysis.sub_queries):
        return ""
    asked_for = evaluation.pointers or (
        evaluation.suggested_action == "multi_hop" and not evaluation.is_sufficient
    )
    if not targets or not (asked_for or through or asked):
        return ""
    if asked:
        return f"one hop further: the question names {', '.join(asked[:3])}, not retrieved yet"
    if through and not asked_for:
        return f"one hop further: {', '.join(through[:2])} (named in the question) names {', '.join(targets[:3])}"
    return f"one hop further: the best passages name {', '.join(targets[:3])}, not retrieved yet"


def settle_action(
    evaluation: RetrievalEvaluation, analysis: QueryAnalysis | None, *, hop: bool
) -> RetrievalEvaluation:
    """The judge's suggestion once the policy decided about the hop: ``multi_hop`` for a hop it
    takes; a plain rewrite instead of a hop with nowhere to go (no parts to search, no target)."""
    if hop:
        return evaluation.model_copy(update={"suggested_action": "multi_hop"})
    parts = analysis is not None and bool(analysis.sub_queries)
    if evaluation.suggested_action == "multi_hop" and not parts:
        return evaluation.model_copy(update={"suggested_action": "rewrite"})
    return evaluation


# multilingual-e5-small cosine (query against its best window) below which the best candidate is not
# about the question. Chosen on dev slices (docs/benchmarks.md, 2026-12-01 "Off-topic evidence"): the
# best candidate of every first search scored >= 0.816 on SciFact queries 100-300, >= 0.848 on CMRC
# 100-300 and >= 0.799 on MuSiQue (a matched question, so the judge kept it looping): e5 alone is not
# enough, which is why the judge's ``matched`` must also be False.
E5_OFF_TOPIC = 0.80


def off_topic(evaluation: RetrievalEvaluation, chunks: list[ScoredChunk]) -> bool:
    """Whether every signal says the evidence is about something else, so a rewrite cannot help.

    The judge found no match by the question's key terms nor by meaning (``matched`` False) and the
    e5 reranker's best cosine is below ``E5_OFF_TOPIC``: three signals that fail differently agree.
    A rewritten query is built from the same question's words and searches the same corpus, so it
    finds more of the same; it costs a second rerank and judgement (most of a question's time) for
    an answer that stays "not found". Unknown without the judge's verdict or without e5 scores.
    """
    if evaluation.matched is not False:
        return False
    cosines = [c.e5_cosine for c in chunks if c.e5_cosine is not None]
    return bool(cosines) and max(cosines) < E5_OFF_TOPIC


def strategy_after(evaluation: RetrievalEvaluation, current: str) -> StrategyName:
    """Strategy for a retry: what the evaluator suggests, never the same failing keyword search twice."""
    suggested = ACTION_STRATEGY.get(evaluation.suggested_action)
    # multi_hop without sub-queries hops through the documents the best passages name (the evaluate
    # node set them: evidence_hop_reason); with sub-queries it searches each part again
    if suggested:
        return suggested
    # the summaries of a global search were not enough: the passages they summarise are next
    if current in ("keyword", "vector", "global") or current not in get_args(StrategyName):
        return "hybrid"
    return current  # type: ignore[return-value]


def stop_reason(
    *,
    policy: ModePolicy,
    evaluation: RetrievalEvaluation,
    attempt: int,
    new_relevant: int,
    max_retries: int,
    hop: bool = False,
    unrelated: bool = False,
) -> StopReason:
    """Why the loop ends now, or "" to retry (``hop``: one hop further was earned, see
    ``evidence_hop_reason``; ``unrelated``: the evidence is ``off_topic``). Every path through here
    terminates the loop in bounded steps."""
    if not policy.loop:
        return "single_pass"
    if hop and attempt < max_retries:
        return ""
    if evaluation.is_sufficient or evaluation.suggested_action == "answer":
        return "sufficient"
    if unrelated:
        return "off_topic"
    if attempt >= max_retries:
        return "max_retries"
    if attempt > 0 and new_relevant == 0:
        return "no_progress"
    return ""
