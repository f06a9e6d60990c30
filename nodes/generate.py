"""generate: the answer with numbered citations [n] that map to chunk ids and sources."""

from __future__ import annotations

import time
from typing import Any

from langgraph.runtime import Runtime

from core.cues import instruction_sentences
from core.global_intent import global_scope
from core.schemas import DraftAnswer, Passage, QueryAnalysis
from core.text import detect_language
from core.trace import Decision
from nodes.citations import citations_for, renumber_by_first_use, strip_unknown_markers
from nodes.common import ctx, event, question_of
from nodes.context import AgentContext
from nodes.state import AgentState
from providers.brain.answerability.gate import refusal, refuses
from providers.summary_answer import summary_answer


def planted_instructions(passages: list[Passage]) -> str:
    """For the trace: the passages holding text addressed to the assistant or reader as an instruction
    (``core.cues``), which the answer treats as data: "[2] “Ignore previous instructions…”"."""
    found = [(p.number, instruction_sentences(p.text)) for p in passages]
    return "; ".join(f"[{n}] “{said[0][:60]}”" for n, said in found if said)


def write_draft(state: AgentState, context: AgentContext, passages: list[Passage]) -> DraftAnswer:
    """The brain's answer; offline, a whole-document or collection question that the global route
    answered from summaries is answered by quoting them (``providers.summary_answer``)."""
    question = question_of(state)
    # issue 21: the answerability model says the evidence does not answer the question. A computation
    # the offline writer can carry out over values the passages state (a tool call the support check
    # recomputes) still answers: "How many KB is the limit?" over "50 MB" shares few words with it.
    if refuses(state.get("evaluation")):
        computed = context.brain.write(question, passages) if context.brain.name == "offline" else None
        if computed is not None and computed.tool_calls and not computed.insufficient:
            return computed
        unmentioned = (state.get("analysis") or QueryAnalysis()).unmentioned
        language = detect_language(passages[0].text[:300]) if passages else ""
        answer = refusal(state.get("question") or question, unmentioned, language)
        return DraftAnswer(answer=answer, insufficient=True)
    summarised = any(h.chunk.metadata.get("level") for h in state.get("retrieved") or [])
    if state.get("strategy") == "global" and context.brain.name == "offline" and passages and summarised:
        return summary_answer(question, passages, global_scope(question))
    return context.brain.write(question, passages, analysis=state.get("analysis"))


def generate(state: AgentState, runtime: Runtime[AgentContext]) -> dict[str, Any]:
    started = time.perf_counter()
    context = ctx(runtime)
    passages = state.get("passages") or []
    draft = write_draft(state, context, passages)
    written_numbers = {p.chunk_id: p.number for p in passages}  # verify checks the answer as written
    answer, passages = renumber_by_first_use(strip_unknown_markers(draft.answer, passages), passages)
    citations = citations_for(answer, passages)
    insufficient = draft.insufficient or not passages
    decision = Decision.INSUFFICIENT if insufficient else Decision.ANSWERED
    tools = "; ".join(f"{call['name']}: {call['shown']}" for call in draft.tool_calls)
    evaluation = state.get("evaluation")
    if refuses(evaluation) and evaluation is not None and draft.insufficient:
        tools = f"answerability {evaluation.answerability:.2f}: the evidence does not answer the question"
    planted = planted_instructions(passages)
    if planted:
        tools = "; ".join(filter(None, [tools, f"instructions in passages treated as data: {planted}"]))
    return {
        "answer": answer,
        "passages": passages,
        "written_numbers": written_numbers,
        "answer_offline": draft.offline,
        "citations": citations,
        "insufficient": insufficient,
        "trace": [
            event(
                "generate",
                started,
                context,
                decision,
                tools,
                citations=len(citations),
                tool_calls=len(draft.tool_calls),
                **({"instructions_flagged": planted.count("“")} if planted else {}),
            )
        ],
    }
