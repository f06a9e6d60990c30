"""Write: the answer, with [n] markers citing the numbered passages."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

from langchain_core.messages import HumanMessage

from core.schemas import DraftAnswer, Passage, QueryAnalysis
from providers import prompts
from providers.brain.chat import THINK_RE, Chat, messages
from providers.brain.citing import Citer
from providers.brain.errors import ModelGaveUp
from providers.brain.runaway import kept_before, runaway
from providers.meaning import Meaning
from providers.offline_brain.answer import extractive_answer
from providers.offline_brain.compute import computation_intent, computed_answer, plan_computation
from providers.offline_brain.profile import profile_for
from tools import ToolError, ToolResult, langchain_tools, run_tool


class OfflineWriter:
    """A computation the question asks for over values in the passages (a tool call,
    providers/offline_brain/compute.py), else an extractive answer of chosen sentences
    (providers/offline_brain/answer.py); ``threshold`` is the key-term coverage that counts as a lexical
    match."""

    def __init__(self, threshold: float = 0.5, meaning: Meaning | None = None) -> None:
        self.threshold = threshold
        self.meaning = meaning

    def __call__(
        self, question: str, passages: list[Passage], analysis: QueryAnalysis | None = None
    ) -> DraftAnswer:
        computation = plan_computation(question, passages)
        if computation is not None:
            draft = computed_answer(question, computation)
            draft.tool_calls = [computation.result.model_dump()]
        else:
            read = profile_for(question, analysis)  # the analysis's reading, not a second parse
            draft = extractive_answer(read, passages, threshold=self.threshold, meaning=self.meaning)
        draft.offline = True
        return draft


# Why an answer is rejected, or "" to accept it (question, answer, passages): providers.brain.answer_check.
AnswerCheck = Callable[..., str]  # (question, answer, passages, known="") -> reason
ANSWER_CUT_NOTE = " … [answer cut at {limit} characters: AGENTIC_RAG_MAX_ANSWER_CHARS]"


class LLMWriter:
    """Streams the answer so LangGraph's ``messages`` mode shows tokens as they arrive.

    ``check`` judges the model's answer independently of the model: a reason to reject it makes the
    role give up, so the fallback (offline) writer answers and the reason goes into the trace. An
    answer longer than ``max_chars`` is cut there and read no further. With ``trust_refusal`` off (the
    packaged small models), a "cannot be determined" is a failed step too: the writer is only asked
    when the answerability model accepted the evidence, and those models refuse answerable Chinese
    questions most of the time (docs/benchmarks.md, issue 22), so the offline writer answers instead.
    With ``plan_offline`` (compact requests) the computations come from the offline planner, not from
    a tool-calling round: that request has its own system prompt and tools, so the writer's request
    after it could not reuse the judge's processed prefix (~1,000 prompt tokens re-read on 2 cores).
    """

    def __init__(
        self,
        chat: Chat,
        check: AnswerCheck | None = None,
        max_chars: int = 4000,
        citer: Citer | None = None,
        trust_refusal: bool = True,
        plan_offline: bool = False,
    ) -> None:
        self.chat = chat
        self.plan_offline = plan_offline
        self.check = check
        self.max_chars = max_chars
        self.citer = citer
        self.trust_refusal = trust_refusal

    def __call__(
        self, question: str, passages: list[Passage], analysis: QueryAnalysis | None = None
    ) -> DraftAnswer:
        if not passages:
            raise ModelGaveUp("no passages to answer from")
        asked = messages(prompts.ANSWER_SYSTEM, prompts.answer_user(question, passages))
        results = self._computations(question, passages) if computation_intent(question) else []
        if results:
            note = prompts.TOOL_RESULTS_NOTE.format(results="\n".join(f"- {r.shown}" for r in results))
            asked = [*asked, HumanMessage(note)]
        text = THINK_RE.sub("", self._read(self.chat.stream("answer", asked), passages)).strip()
        if not text:
            raise ModelGaveUp("empty answer")
        draft = draft_from_text(text)
        if draft.insufficient and not self.trust_refusal:
            raise ModelGaveUp("the model refused evidence the answerability model accepts")
        if self.citer is not None and not draft.insufficient:
            note = ANSWER_CUT_NOTE.format(limit=self.max_chars)
            cut = text.endswith(note.strip())
            text = self._cite(text.removesuffix(note.strip()).rstrip() if cut else text, passages)
            text = text + note if cut else text  # the cut note is ours, not a claim to cite
            draft.answer = text
        shown = {"known": " ".join(r.shown for r in results)} if results else {}  # computed, not quoted
        cut_note = ANSWER_CUT_NOTE.format(limit=self.max_chars).strip()
        claims = text.removesuffix(cut_note).rstrip()  # the cut note is ours, not the model's claim
        reason = self.check(question, claims, passages, **shown) if self.check else ""
        if reason:
            raise ModelGaveUp(f"answer rejected: {reason}")
        draft.tool_calls = [r.model_dump() for r in results]
        return draft

    def _read(self, pieces: Iterator[str], passages: list[Passage]) -> str:
        """The streamed answer, read no further than ``max_chars`` (then marked cut) or than the point
        where it stops answering (providers/brain/runaway.py: a loop, or the passages copied out); the
        stream is closed there, so the server stops generating."""
        received = ""
        try:
            for piece in pieces:
                received += piece
                if len(received) > self.max_chars:
                    return received[: self.max_chars].rstrip() + ANSWER_CUT_NOTE.format(limit=self.max_chars)
                stopped = runaway(received, passages)
                if stopped is not None:
                    return self._kept(received, *stopped)
        finally:
            close = getattr(pieces, "close", None)
            if close is not None:
                close()
        return received

    def _kept(self, received: str, at: int, how: str) -> str:
        """What came before a runaway reply went wrong (counted in the step's call record)."""
        record = self.chat.log.current()
        if record is not None:
            record.runaway += 1
        kept = kept_before(received, at)
        if not kept:
            raise ModelGaveUp(f"answer reply {how} before answering")
        return kept

    def _cite(self, text: str, passages: list[Passage]) -> str:
        """The answer with supporting citations attached and unsupported claims removed (the counts go
        into the step's call record); raises when no supported claim is left."""
        assert self.citer is not None
        cited = self.citer(text, passages)
        record = self.chat.log.current()
        if record is not None:
            record.citations_attached += cited.attached
            record.sentences_removed += len(cited.removed)
        if not cited.text:
            raise ModelGaveUp(
                f"answer rejected: no sentence is supported by a passage ({len(cited.removed)} removed)"
            )
        return cited.text

    def _computations(self, question: str, passages: list[Passage]) -> list[ToolResult]:
        """The model's tool calls (``bind_tools``) for a question that asks for a computation, run through
        the registry; a call with bad arguments is dropped, never guessed. With ``plan_offline``: the
        offline planner's computation over the passages' values, without a request."""
        if self.plan_offline:
            planned = plan_computation(question, passages)
            return [planned.result] if planned is not None else []
        asked = messages(prompts.TOOLS_SYSTEM, prompts.answer_user(question, passages))
        results = []
        for call in self.chat.tool_calls("tools", asked, langchain_tools()):
            try:
                results.append(run_tool(call["name"], call["args"]))
            except ToolError:
                continue
        return results


def draft_from_text(text: str) -> DraftAnswer:
    """Build a DraftAnswer, marking it insufficient when the canned phrase appears."""
    folded = text.casefold()
    insufficient = any(marker.casefold() in folded for marker in prompts.INSUFFICIENT_MARKERS)
    missing: list[str] = []
    for line in text.splitlines():
        stripped = line.strip().lstrip("-*• ").strip()
        for prefix in prompts.MISSING_PREFIXES:
            if stripped.casefold().startswith(prefix):
                items = re.split(r"[;；、]|,\s", stripped[len(prefix) :])
                missing += [item.strip(" .。") for item in items if item.strip(" .。")]
    return DraftAnswer(answer=text, insufficient=insufficient or bool(missing), missing=missing)
