"""generate: the answer with numbered citations [n] that map to chunk ids and sources."""

from __future__ import annotations

import re
import time
from typing import Any

from langgraph.runtime import Runtime

from core.cues import instruction_sentences
from core.global_intent import global_scope
from core.schemas import Citation, DraftAnswer, Passage
from core.text import CITATION_RE, parse_citations, replace_citations
from core.trace import Decision
from nodes.common import ctx, event, question_of
from nodes.context import AgentContext
from nodes.state import AgentState
from providers.brain.answerability.gate import refusal, refuses
from providers.summary_answer import summary_answer


def citations_for(answer: str, passages: list[Passage]) -> list[Citation]:
    """Citations for the markers that refer to real passages, in order of first use."""
    by_number = {p.number: p for p in passages}
    return [
        Citation(
            number=n,
            chunk_id=by_number[n].chunk_id,
            source=by_number[n].source,
            heading=by_number[n].heading,
            snippet=by_number[n].text[:160],
        )
        for n in parse_citations(answer)
        if n in by_number
    ]


def renumber_by_first_use(answer: str, passages: list[Passage]) -> tuple[str, list[Passage]]:
    """Citations numbered 1..n in the order the answer first uses them; uncited passages follow.

    The writer cites passage numbers from the evidence order ([3] before [1], gaps); readers expect
    [1] first. Passages are renumbered to match, so every marker still points at its passage.
    """
    order = [n for n in parse_citations(answer) if n in {p.number for p in passages}]
    order += [p.number for p in passages if p.number not in order]
    new_number = {old: new for new, old in enumerate(order, start=1)}
    if all(old == new for old, new in new_number.items()):
        return answer, passages
    text = CITATION_RE.sub(
        lambda m: (
            "["
            + ", ".join(str(new_number.get(int(n), n)) for n in re.split(r"\s*[,，]\s*", m.group(1)))
            + "]"
        ),
        answer,
    )
    by_number = {p.number: p for p in passages}
    renumbered = [by_number[old].model_copy(update={"number": new}) for old, new in new_number.items()]
    return text, sorted(renumbered, key=lambda p: p.number)


def strip_unknown_markers(answer: str, passages: list[Passage]) -> str:
    """Drop [n] markers that point at no passage (a model may invent them)."""
    numbers = {p.number for p in passages}
    return replace_citations(answer, lambda n: n in numbers)


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
        return DraftAnswer(answer=refusal(state.get("question") or question), insufficient=True)
    summarised = any(h.chunk.metadata.get("level") for h in state.get("retrieved") or [])
    if state.get("strategy") == "global" and context.brain.name == "offline" and passages and summarised:
        return summary_answer(question, passages, global_scope(question))
    return context.brain.write(question, passages, analysis=state.get("analysis"))


def generate(state: AgentState, runtime: Runtime[AgentContext]) -> dict[str, Any]:
    started = time.perf_counter()
    context = ctx(runtime)
    passages = state.get("passages") or []
    draft = write_draft(state, context, passages)
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
