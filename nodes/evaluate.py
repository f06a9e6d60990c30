"""evaluate: judge the evidence (relevance per chunk, sufficiency) and decide whether to retry."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from langgraph.runtime import Runtime

from core.chunks import ScoredChunk
from core.schemas import QueryAnalysis, RetrievalEvaluation
from core.trace import Decision
from nodes.attempts import Attempt, AttemptHits, choose_attempt, final_verdict, hits_of, union_of_attempts
from nodes.common import ctx, event, policy_of, question_of
from nodes.context import AgentContext
from nodes.policy import evidence_hop_reason, off_topic, settle_action, stop_reason, unseen_documents
from nodes.rerank import keep_second_hop_slots
from nodes.retrieve_global import summaries_evaluation
from nodes.state import AgentState


def evaluate(state: AgentState, runtime: Runtime[AgentContext]) -> dict[str, Any]:
    started = time.perf_counter()
    context = ctx(runtime)
    policy = policy_of(state, context)
    if not policy.loop:
        return {
            "stop_reason": "single_pass",
            "trace": [event("evaluate", started, context, Decision.SKIPPED, "single pass mode")],
        }
    question = question_of(state)
    analysis = state.get("analysis") or QueryAnalysis()
    chunks = (state.get("reranked") or [])[: context.settings.top_k]
    summaries = summaries_evaluation(chunks) if state.get("strategy") == "global" else None
    if summaries is not None:  # issue 26: a whole-document question is answered by its summaries
        return {
            "evaluation": summaries,
            "relevant_ids": summaries.relevant_ids(),
            "new_relevant": len(summaries.judgements),
            "stop_reason": "sufficient",
            "trace": [event("evaluate", started, context, Decision.SUFFICIENT, "summaries found")],
        }
    evaluation = context.brain.judge(question, analysis, chunks, list(state.get("queries_tried") or []))
    attempt = int(state.get("attempt") or 0)
    found = (
        hop_targets(context, question, chunks, evaluation)
        if policy.second_hop and not attempt
        else HopTargets()
    )
    hop = evidence_hop_reason(
        policy,
        analysis,
        evaluation,
        attempt=attempt,
        targets=found.targets,
        through=found.through,
        asked=found.asked,
    )
    evaluation = settle_action(evaluation, analysis, hop=bool(hop))
    before = list(state.get("relevant_ids") or [])
    now_relevant = evaluation.relevant_ids()
    new = [cid for cid in now_relevant if cid not in before]
    reason = stop_reason(
        policy=policy,
        evaluation=evaluation,
        attempt=attempt,
        new_relevant=len(new),
        max_retries=context.settings.max_retries,
        hop=bool(hop),
        unrelated=off_topic(evaluation, chunks),
    )
    if reason == "sufficient":
        decision, detail = Decision.SUFFICIENT, ""
    elif reason:
        decision, detail = Decision.STOPPED, reason
    else:
        decision, detail = Decision.RETRY, hop or evaluation.suggested_action
    reranked = list(state.get("reranked") or [])
    this = Attempt(
        number=attempt,
        strategy=state.get("strategy") or "",
        query=state.get("query") or question,
        chunk_ids=[h.id for h in reranked],
        evaluation=evaluation,
        hops_next=bool(hop and not reason),
    )
    update: dict[str, Any] = {
        "evaluation": evaluation,
        "relevant_ids": before + new,
        "new_relevant": len(new),
        "stop_reason": reason,
        "hop_targets": found.targets if hop and not reason else [],
        "attempts": [this],
        "attempt_hits": [AttemptHits(number=attempt, hits=reranked)],
    }
    extra: dict[str, Any] = {}
    if reason and attempt:  # the loop ends after retries: answer from the best attempt's evidence
        evidence = [*(state.get("attempt_hits") or []), AttemptHits(number=attempt, hits=reranked)]
        tried = [*(state.get("attempts") or []), this]
        final = final_evidence(context, state | {"relevant_ids": before + new}, tried, evidence)
        if final is not None:
            update.update(final.update)
            detail = f"{detail}; {final.why}" if detail else final.why
            extra["used_attempt"] = final.number
    update["trace"] = [
        event(
            "evaluate",
            started,
            context,
            decision,
            detail,
            relevant=len(now_relevant),
            new_relevant=len(new),
            **extra,
        )
    ]
    return update


@dataclass(frozen=True)
class FinalEvidence:
    """The evidence the answer is written from when it is not simply the last attempt's."""

    number: int  # the attempt used; -1: the attempts merged
    why: str
    update: dict[str, Any]


def final_evidence(
    context: AgentContext, state: AgentState, attempts: list[Attempt], evidence: list[AttemptHits]
) -> FinalEvidence | None:
    """Per the ``attempt_evidence`` setting: the attempt the gate scored best (``best``), every
    attempt's best chunks reranked and judged once (``merge``), or None: the last attempt stands
    (``last``, or the best attempt's chunks are not in the state: a turn resumed from an old checkpoint)."""
    how = context.settings.attempt_evidence
    if how == "merge":
        return merged_evidence(context, state, evidence)
    choice = choose_attempt(attempts) if how == "best" else None
    if choice is None:
        return None
    by_number = {a.number: a for a in attempts}
    evaluation = final_verdict(by_number[choice.number], by_number[choice.verdict_of])
    if choice.number == attempts[-1].number:
        changed = {"evaluation": evaluation} if choice.verdict >= 0 else {}
        return FinalEvidence(choice.number, choice.reason, changed)
    hits = hits_of(evidence, choice.number)
    if hits is None:
        return None
    return FinalEvidence(
        choice.number, f"answer from {choice.reason}", {"reranked": hits, "evaluation": evaluation}
    )


def merged_evidence(context: AgentContext, state: AgentState, evidence: list[AttemptHits]) -> FinalEvidence:
    """The union of every attempt's evaluated chunks, reranked against the question once (bridge
    passages keep their places) and judged once (the gate included)."""
    question = question_of(state)
    top_k = context.settings.top_k
    pool = union_of_attempts(evidence, top_k)
    if context.reranker is not None:
        pool = keep_second_hop_slots(pool, context.reranker.rerank(question, pool))
    analysis = state.get("analysis") or QueryAnalysis()
    evaluation = context.brain.judge(question, analysis, pool[:top_k], list(state.get("queries_tried") or []))
    p = evaluation.answerability
    why = f"answer from {len(evidence)} attempts merged" + (
        f" (answerability {p:.2f})" if p is not None else ""
    )
    relevant = list(dict.fromkeys([*(state.get("relevant_ids") or []), *evaluation.relevant_ids()]))
    return FinalEvidence(-1, why, {"reranked": pool, "evaluation": evaluation, "relevant_ids": relevant})


@dataclass(frozen=True)
class HopTargets:
    """Where one hop further could go and what led there; empty: nowhere (no hop considered)."""

    targets: list[str] = field(default_factory=list)  # corpus documents to search within, in order
    through: list[str] = field(default_factory=list)  # question-named documents whose passages name them
    asked: list[str] = field(default_factory=list)  # documents the question names that the search missed


def hop_targets(
    context: AgentContext, question: str, chunks: list[ScoredChunk], evaluation: RetrievalEvaluation
) -> HopTargets:
    """Documents of the corpus to hop to, the titles that led there when those are documents the
    question names, and the documents the question names that the search did not find.

    Links are followed from every on-topic passage when the judge saw something missing
    (``pointers``); otherwise only from the best on-topic passages that belong to a document the
    question names ("the singer of <album>": the album's passage names the singer's document, whose
    passage shares few words with the question and ranks low). A document the question names
    outright and the search missed comes first."""
    hops = context.retrievers.multi_hop
    asked = unseen_documents(hops.named_in(question), chunks)
    relevant = set(evaluation.relevant_ids())
    on_topic = [c for c in chunks if c.id in relevant] or chunks
    named_by_question = [c for c in on_topic[: hops.bridge_docs] if hops.about_named(question, c)]
    follow_all = bool(evaluation.pointers) or evaluation.suggested_action == "multi_hop"
    # passages about what the question names lead first: their links are the question's own
    sources = (
        named_by_question + [c for c in on_topic if c not in named_by_question]
        if follow_all
        else named_by_question
    )
    linked = unseen_documents(hops.linked(question, sources), chunks) if sources else []
    targets = list(dict.fromkeys(asked + linked))[: hops.max_bridges]
    through = list(dict.fromkeys(c.chunk.title for c in named_by_question)) if linked else []
    return HopTargets(targets=targets, through=through, asked=asked)
