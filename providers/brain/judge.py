"""Judge: relevance of each retrieved chunk and whether together they answer the question."""

from __future__ import annotations

import copy
from collections.abc import Callable
from functools import cache, partial
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from core.chunks import ScoredChunk
from core.passages import MAX_PASSAGES, to_passages
from core.schemas import ChunkJudgement, Passage, QueryAnalysis, RetrievalEvaluation, SuggestedAction
from providers import prompts
from providers.brain.answerability.gate import AnswerabilityGate
from providers.brain.chat import Chat, messages
from providers.brain.errors import ModelGaveUp
from providers.brain.roles import Judge
from providers.meaning import Meaning
from providers.offline_brain.extractive import compress_passages
from providers.offline_brain.judge import evaluate
from providers.tokens import truncate_to_tokens


class OfflineJudge:
    """Key-term coverage and, with ``meaning``, similarity by meaning (providers/offline_brain/judge.py);
    ``threshold`` is the coverage that counts as a lexical match."""

    def __init__(self, threshold: float = 0.5, meaning: Meaning | None = None) -> None:
        self.threshold = threshold
        self.meaning = meaning

    def __call__(
        self, question: str, analysis: QueryAnalysis, chunks: list[ScoredChunk], tried: list[str]
    ) -> RetrievalEvaluation:
        return evaluate(question, analysis, chunks, tried, threshold=self.threshold, meaning=self.meaning)


class GatedJudge:
    """Any judge's verdict, then the fitted answerability model's (issue 21): "sufficient" passages
    that do not answer the question (below the model's threshold) become insufficient, so the graph
    retries within its bound and then refuses. Wraps the offline judge and, after it, an LLM judge."""

    def __init__(self, judge: Judge, gate: AnswerabilityGate) -> None:
        self.judge = judge
        self.gate = gate

    def __call__(
        self, question: str, analysis: QueryAnalysis, chunks: list[ScoredChunk], tried: list[str]
    ) -> RetrievalEvaluation:
        verdict = self.judge(question, analysis, chunks, tried)
        return self.gate.apply(verdict, question, chunks, analysis.unmentioned)


# Bounds of the judge reply's JSON schema: one judgement per passage at most (20 covers top_k), short
# reasons, a few missing items.
MAX_JUDGEMENTS = 20
MAX_REASON_CHARS = 160
MAX_MISSING = 4
_Missing = Annotated[str, Field(max_length=120)]


def unit_score(value: Any) -> float:
    """A relevance in [0, 1]: models sometimes score 0-10 or 0-100, whatever the prompt asked."""
    score = float(value)
    for scale in (10.0, 100.0):
        if 1.0 < score <= scale:
            return score / scale
    return min(max(score, 0.0), 1.0)


class _Judgement(BaseModel):
    n: int
    relevance: float = 0.0
    reason: str = Field(default="", max_length=MAX_REASON_CHARS)

    @field_validator("relevance", mode="before")
    @classmethod
    def _scale(cls, value: Any) -> float:
        return unit_score(value)


class _JudgeReply(BaseModel):
    """Relevance of each numbered passage and whether together they answer the question."""

    judgements: list[_Judgement] = Field(default_factory=list, max_length=MAX_JUDGEMENTS)
    is_sufficient: bool = False
    missing_info: list[_Missing] = Field(default_factory=list, max_length=MAX_MISSING)
    suggested_action: SuggestedAction = "answer"
    reasoning: str = Field(default="", max_length=2 * MAX_REASON_CHARS)


MAX_COMPACT_MISSING = 2
_CompactMissing = Annotated[str, Field(max_length=80)]


def _nothing_missing_when_sufficient(schema: dict[str, Any]) -> None:
    """One object shape per verdict: "sufficient" with an empty ``missing_info``, "insufficient" with up
    to ``MAX_COMPACT_MISSING`` items. A grammar-constrained server (llama.cpp) then cannot list missing
    items after ``true``: the packaged 0.5B did in every sampled reply, restating the question (~20 of its
    ~40 judge tokens; docs/benchmarks.md, session 21)."""
    shapes = []
    for sufficient, most in ((True, 0), (False, MAX_COMPACT_MISSING)):
        properties = copy.deepcopy(schema["properties"])
        properties["is_sufficient"] = {"const": sufficient}
        properties["missing_info"]["maxItems"] = most
        shapes.append({"type": "object", "properties": properties, "required": list(properties)})
    schema["anyOf"] = shapes


class _CompactJudgeReply(BaseModel):
    """The verdict alone, for a 2-core local model (issue 22): whether the passages suffice and what is
    missing. Relevance per passage is the rules' (``LLMJudge._compact_verdict``): the packaged 1.5B copied
    the prompt example's numbers in 3 of 4 sampled replies (docs/benchmarks.md, session 16), which marked
    the second passage irrelevant, and a list of numbers was over half of the ~23 generated tokens. No
    retry action either: the rules choose it (``retry_action``)."""

    model_config = ConfigDict(json_schema_extra=_nothing_missing_when_sufficient)

    is_sufficient: bool = False
    missing_info: list[_CompactMissing] = Field(default_factory=list, max_length=MAX_COMPACT_MISSING)

    @model_validator(mode="after")
    def _sufficient_misses_nothing(self) -> _CompactJudgeReply:
        """What a server without a grammar lists after "sufficient" is dropped, as the schema says."""
        if self.is_sufficient:
            self.missing_info = []
        return self


def retry_action(sufficient: bool, rules: RetrievalEvaluation | None) -> SuggestedAction:
    """The next step after a compact verdict: answer when the model found the passages sufficient,
    otherwise the rules' retry (more parts to search, exact names, names to hop through), a rewrite
    where the rules themselves would have answered: the model's "insufficient" still earns a retry."""
    if sufficient:
        return "answer"
    if rules is None or rules.suggested_action == "answer":
        return "rewrite"
    return rules.suggested_action


# The least a chunk shows the judge when a context budget is shared out (about one sentence).
MIN_TOKENS_PER_CHUNK = 40


class LLMJudge:
    """The model judges numbered passages; passages it skips take ``offline``'s view.

    ``context_tokens`` (a small model's budget, the writer's) is shared evenly among the chunks and
    each shows its most relevant sentences within its share (the offline compressor's choice), so a
    2-core local model reads ~800 prompt tokens instead of ``tokens_per_chunk`` per chunk (issue 22).
    ``compact`` asks for the verdict alone (``_CompactJudgeReply``) about the writer's own
    passages under the writer's system prompt (``writer_view``), so the writer's request that follows
    shares the judge's prompt prefix (a llama.cpp server then skips re-reading it).
    """

    def __init__(
        self,
        chat: Chat,
        offline: Judge,
        *,
        tokens_per_chunk: int = 300,
        context_tokens: int | None = None,
        meaning: Meaning | None = None,
        compact: bool = False,
    ) -> None:
        self.chat = chat
        self.compact = compact
        self.offline = offline
        self.tokens_per_chunk = tokens_per_chunk
        self.context_tokens = context_tokens
        self.meaning = meaning

    def shown(self, question: str, chunks: list[ScoredChunk]) -> list[str]:
        """What the judge reads of each chunk: its head, or its best sentences within a budget share."""
        if not self.context_tokens:
            return [truncate_to_tokens(sc.chunk.text, self.tokens_per_chunk) for sc in chunks]
        share = min(self.tokens_per_chunk, max(MIN_TOKENS_PER_CHUNK, self.context_tokens // len(chunks)))
        return [best_sentences(question, sc, share, self.meaning) for sc in chunks]

    def writer_view(self, question: str, chunks: list[ScoredChunk]) -> list[Passage]:
        """The passages the writer will read if every chunk is relevant: the compress node's numbering and
        labels, the offline compressor's sentences within the writer's budget. A passage left with no
        sentence is not shown (its chunk takes the offline view)."""
        passages = to_passages(chunks[:MAX_PASSAGES])
        budget = self.context_tokens or self.tokens_per_chunk * len(passages)
        return compress_passages(question, passages, budget, meaning=self.meaning)

    def _compact_verdict(
        self,
        question: str,
        analysis: QueryAnalysis,
        chunks: list[ScoredChunk],
        tried: list[str],
        rules: Callable[[], RetrievalEvaluation],
    ) -> RetrievalEvaluation:
        """The model's verdict on the writer's passages; relevance per chunk and the retry after an
        insufficient verdict from ``rules`` (the offline verdict)."""
        passages = self.writer_view(question, chunks)
        asked = messages(
            prompts.ANSWER_SYSTEM, prompts.judge_compact_user(question, passages, analysis.sub_queries, tried)
        )
        reply = self.chat.structured("judge", _CompactJudgeReply, asked)
        offline = rules()
        return RetrievalEvaluation(
            judgements=offline.judgements,
            is_sufficient=reply.is_sufficient,
            missing_info=[m for m in reply.missing_info if m.strip()],
            suggested_action=retry_action(reply.is_sufficient, offline),
        )

    def _full_reply(
        self, question: str, analysis: QueryAnalysis, chunks: list[ScoredChunk], tried: list[str]
    ) -> _JudgeReply:
        shown = self.shown(question, chunks)
        context = prompts.context_block(
            [
                (str(i), chunk_label(sc), text)
                for i, (sc, text) in enumerate(zip(chunks, shown, strict=True), 1)
            ]
        )
        asked = messages(
            prompts.JUDGE_SYSTEM, prompts.judge_user(question, analysis.sub_queries, tried, context)
        )
        return self.chat.structured("judge", _JudgeReply, asked)

    def __call__(
        self, question: str, analysis: QueryAnalysis, chunks: list[ScoredChunk], tried: list[str]
    ) -> RetrievalEvaluation:
        if not chunks:
            raise ModelGaveUp("no chunks to judge")
        # The offline verdict fills what the model skips and judges a compact verdict's chunks: one run.
        rules = cache(partial(self.offline, question, analysis, chunks, tried))
        if self.compact:
            return self._compact_verdict(question, analysis, chunks, tried, rules)
        reply = self._full_reply(question, analysis, chunks, tried)
        by_number = {j.n: j for j in reply.judgements if 1 <= j.n <= len(chunks)}
        if not by_number:
            raise ModelGaveUp("judge returned no judgement for any passage")
        offline: dict[str, ChunkJudgement] = {}
        if len(by_number) < len(chunks):
            offline = {j.chunk_id: j for j in rules().judgements}
        judgements = []
        for i, sc in enumerate(chunks, 1):
            if i in by_number:
                j = by_number[i]
                judgements.append(ChunkJudgement(chunk_id=sc.id, relevance=j.relevance, reason=j.reason))
            else:
                judgements.append(
                    offline.get(sc.id) or ChunkJudgement(chunk_id=sc.id, relevance=0.0, reason="not judged")
                )
        return RetrievalEvaluation(
            judgements=judgements,
            is_sufficient=reply.is_sufficient,
            missing_info=[m for m in reply.missing_info if m.strip()],
            suggested_action=reply.suggested_action,
            reasoning=reply.reasoning,
        )


def best_sentences(question: str, sc: ScoredChunk, tokens: int, meaning: Meaning | None) -> str:
    """The chunk's sentences most relevant to the question, in their order, within ``tokens``."""
    passage = Passage(number=1, chunk_id=sc.id, source=sc.chunk.source, text=sc.chunk.text)
    kept = compress_passages(question, [passage], tokens, meaning=meaning)
    return kept[0].text if kept else truncate_to_tokens(sc.chunk.text, tokens)


def chunk_label(sc: ScoredChunk) -> str:
    heading = " › ".join(sc.chunk.heading_path)
    return f"{sc.chunk.source} › {heading}" if heading else sc.chunk.source
