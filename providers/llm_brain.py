"""The LLM brain: every Brain question answered by a LangChain chat model, never failing the graph.

Structured steps (analyze, judge, compress, check_support) ask for JSON through
``with_structured_output(method="json_schema")`` by default: vLLM, llama.cpp server, Ollama and LM Studio
enforce a ``response_format`` schema with constrained decoding, and OpenAI accepts it non-strict (our
schemas have optional fields, which strict mode rejects). ``function_calling`` and ``json_mode`` are
options for servers that only support those. The raw reply is kept (``include_raw``), so JSON the
client could not parse still goes through ``parse_model_json`` without another call. A server that
rejects the structured request (HTTP 400/422) is asked in plain text from then on. After
``parse_attempts`` unusable replies, or once the client's own retries for timeouts, 429, 5xx and
dropped connections are spent, the step is answered by ``fallback`` (the offline brain).

Each step leaves a record for the calling thread (``drain_calls``) so graph nodes can put model calls,
fallbacks and errors in their trace. Only the answer is streamed to LangGraph's ``messages`` mode; the
other steps carry the ``nostream`` tag.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, TypeVar

import openai
from langchain_core.exceptions import (
    ContextOverflowError,
    ModelAPIError,
    ModelConnectionError,
    ModelError,
    ModelInvalidRequestError,
    ModelRateLimitError,
    ModelTimeoutError,
)
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from pydantic import BaseModel, Field, ValidationError, field_validator

from graph.schemas import (
    ChunkJudgement,
    DraftAnswer,
    Passage,
    QueryAnalysis,
    RetrievalEvaluation,
    SentenceSupport,
    SuggestedAction,
)
from providers import prompts
from providers.json_repair import parse_model_json
from providers.tokens import count_tokens, truncate_to_tokens
from retrievers.tokenize import detect_language

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel
    from langchain_core.runnables import Runnable

    from config import Settings
    from providers.brain import Brain
    from retrievers.types import ScoredChunk

StructuredMethod = Literal["json_schema", "function_calling", "json_mode", "prompt"]
M = TypeVar("M", bound=BaseModel)

_TRANSIENT = (
    openai.APITimeoutError,
    openai.APIConnectionError,
    openai.RateLimitError,
    openai.InternalServerError,
    ModelTimeoutError,
    ModelConnectionError,
    ModelRateLimitError,
    ModelAPIError,
    TimeoutError,
    ConnectionError,
)
_UNSUPPORTED = (openai.BadRequestError, openai.UnprocessableEntityError, ModelInvalidRequestError)
_CITATION_RE = re.compile(r"\[(\d{1,3})\]")
_SENTENCE_END_RE = re.compile(r"(?<=[。！？；!?;])|(?<=[.])(?=\s)|\n+")
_LEADING_CITATIONS_RE = re.compile(r"^(?:\s*\[\d{1,3}\])+")
_THINK_RE = re.compile(r"<think>.*?</think>\s*", re.DOTALL | re.IGNORECASE)
_QUERY_PREFIX_RE = re.compile(
    r"^(?:standalone question|new query|search query|query|question|rewritten|独立问题|问题|查询|新查询)\s*[:：]\s*",
    re.IGNORECASE,
)


# --------------------------------------------------------------------------------------------------
# What the model is asked to return (small, model-friendly shapes mapped onto graph.schemas)


class _Judgement(BaseModel):
    n: int
    relevance: float = 0.0
    reason: str = ""

    @field_validator("relevance", mode="before")
    @classmethod
    def _scale(cls, value: Any) -> float:
        """Models sometimes score 0-10 or 0-100; bring it back to [0, 1]."""
        score = float(value)
        for scale in (10.0, 100.0):
            if 1.0 < score <= scale:
                return score / scale
        return min(max(score, 0.0), 1.0)


class _JudgeReply(BaseModel):
    """Relevance of each numbered passage and whether together they answer the question."""

    judgements: list[_Judgement] = Field(default_factory=list)
    is_sufficient: bool = False
    missing_info: list[str] = Field(default_factory=list)
    suggested_action: SuggestedAction = "answer"
    reasoning: str = ""


class _KeepReply(BaseModel):
    """Tags ("passage.sentence") of the sentences to keep, most important first."""

    keep: list[str | int | float] = Field(default_factory=list)


class _SupportReply(BaseModel):
    """One flag per answer sentence: is it supported by the passages it cites."""

    supported: list[bool] = Field(default_factory=list)


# --------------------------------------------------------------------------------------------------
# Per-call bookkeeping


@dataclass
class _Record:
    step: str
    model_calls: int = 0
    fallback: bool = False
    error: str | None = None
    started: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        seconds = round(time.perf_counter() - self.started, 3)
        return {
            "step": self.step,
            "model_calls": self.model_calls,
            "fallback": self.fallback,
            "error": self.error,
            "seconds": seconds,
        }


class _GiveUp(Exception):
    """The model cannot answer this step; the fallback must."""


# --------------------------------------------------------------------------------------------------


class LLMBrain:
    """A Brain backed by a chat model, falling back to another Brain step by step."""

    def __init__(
        self,
        model: BaseChatModel,
        fallback: Brain,
        *,
        structured_method: StructuredMethod = "json_schema",
        parse_attempts: int = 2,
        judge_tokens_per_chunk: int = 300,
        model_name: str | None = None,
        answer_check: Callable[[str, str, list[Passage]], str] | None = None,
        max_answer_chars: int = 4000,
    ) -> None:
        if parse_attempts < 1:
            raise ValueError(f"parse_attempts must be at least 1, got {parse_attempts}")
        if structured_method not in ("json_schema", "function_calling", "json_mode", "prompt"):
            raise ValueError(f"unknown structured_method {structured_method!r}")
        self.model = model
        self.fallback = fallback
        self.structured_method: StructuredMethod = structured_method
        self.parse_attempts = parse_attempts
        self.judge_tokens_per_chunk = judge_tokens_per_chunk
        # Judges the model's answer independently of the model (providers.answer_check): a reason
        # to reject it sends the step to the fallback, and the reason into the trace.
        self.answer_check = answer_check
        self.max_answer_chars = max_answer_chars
        self.name = f"llm:{model_name or _model_name(model)}"
        # Structured/text steps must not leak JSON into LangGraph's token stream, and need no streaming.
        self._quiet = _non_streaming(model)
        self._structured_ok = structured_method != "prompt"
        self._local = threading.local()
        self._runnables: dict[tuple[type[BaseModel], str], Runnable] = {}

    @classmethod
    def from_settings(cls, settings: Settings, fallback: Brain, **options: Any) -> LLMBrain:
        from providers.llm import chat_model_from_settings

        return cls(chat_model_from_settings(settings), fallback, **options)

    # -- trace -----------------------------------------------------------------------------------

    def drain_calls(self) -> list[dict[str, Any]]:
        """Return and clear this thread's step records (step, model_calls, fallback, error, seconds)."""
        records = getattr(self._local, "records", [])
        self._local.records = []
        return records

    def _record(self, record: _Record) -> None:
        if not hasattr(self._local, "records"):
            self._local.records = []
        self._local.records.append(record.as_dict())

    # -- Brain protocol ---------------------------------------------------------------------------

    def analyze(self, question: str) -> QueryAnalysis:
        messages = _messages(prompts.ANALYZE_SYSTEM, prompts.analyze_user(question))

        def run(record: _Record) -> QueryAnalysis:
            analysis = self._structured(record, QueryAnalysis, messages)
            return _tidy_analysis(analysis, question)

        return self._step("analyze", run, lambda: self.fallback.analyze(question))

    def judge(
        self, question: str, analysis: QueryAnalysis, chunks: list[ScoredChunk], tried: list[str]
    ) -> RetrievalEvaluation:
        def fallback() -> RetrievalEvaluation:
            return self.fallback.judge(question, analysis, chunks, tried)

        if not chunks:
            return self._step("judge", None, fallback, reason="no chunks to judge")
        context = prompts.context_block(
            [
                (str(i), _chunk_label(sc), truncate_to_tokens(sc.chunk.text, self.judge_tokens_per_chunk))
                for i, sc in enumerate(chunks, 1)
            ]
        )
        messages = _messages(
            prompts.JUDGE_SYSTEM, prompts.judge_user(question, analysis.sub_queries, tried, context)
        )

        def run(record: _Record) -> RetrievalEvaluation:
            reply = self._structured(record, _JudgeReply, messages)
            return self._evaluation(reply, chunks, fallback)

        return self._step("judge", run, fallback)

    def rewrite(self, question: str, evaluation: RetrievalEvaluation, tried: list[str]) -> str:
        messages = _messages(
            prompts.REWRITE_SYSTEM,
            prompts.rewrite_user(question, evaluation.missing_info, evaluation.reasoning, tried),
        )
        seen = {_norm(q) for q in tried}

        def run(record: _Record) -> str:
            query = _one_line(self._text(record, messages))
            if not query:
                raise _GiveUp("empty rewrite")
            if _norm(query) in seen:
                raise _GiveUp("rewrite repeated a query already tried")
            return query

        return self._step("rewrite", run, lambda: self.fallback.rewrite(question, evaluation, tried))

    def contextualize(self, question: str, history: list[tuple[str, str]]) -> str:
        if not history:
            return question
        messages = _messages(prompts.CONTEXTUALIZE_SYSTEM, prompts.contextualize_user(question, history))

        def run(record: _Record) -> str:
            standalone = _one_line(self._text(record, messages))
            if not standalone:
                raise _GiveUp("empty standalone question")
            return standalone

        return self._step("contextualize", run, lambda: self.fallback.contextualize(question, history))

    def compress(self, question: str, passages: list[Passage], token_budget: int) -> list[Passage]:
        """Extractive: the model picks sentence tags, so compressed text is always quoted, never invented.

        Passages already within the budget are returned unchanged without a model call.
        """
        if sum(count_tokens(p.text) for p in passages) <= token_budget:
            return list(passages)
        sentences = {p.number: split_sentences(p.text) for p in passages}
        entries = [
            (f"{p.number}.{i}", prompts.passage_label(p) if i == 1 else "…", s)
            for p in passages
            for i, s in enumerate(sentences[p.number], 1)
        ]
        messages = _messages(
            prompts.COMPRESS_SYSTEM, prompts.compress_user(question, prompts.context_block(entries))
        )

        def run(record: _Record) -> list[Passage]:
            reply = self._structured(record, _KeepReply, messages)
            kept = _select(reply.keep, sentences, token_budget)
            if not kept:
                raise _GiveUp("model kept no sentence")
            return [
                p.model_copy(update={"text": _join([sentences[p.number][i] for i in sorted(kept[p.number])])})
                for p in passages
                if p.number in kept
            ]

        return self._step("compress", run, lambda: self.fallback.compress(question, passages, token_budget))

    def answer(self, question: str, passages: list[Passage]) -> DraftAnswer:
        """Stream the answer so LangGraph's ``messages`` mode shows tokens as they arrive."""

        def fallback() -> DraftAnswer:
            return self.fallback.answer(question, passages)

        if not passages:
            return self._step("answer", None, fallback, reason="no passages to answer from")
        messages = _messages(prompts.ANSWER_SYSTEM, prompts.answer_user(question, passages))
        streaming = self.model.with_config(run_name="brain.answer", tags=["brain:answer"])

        def run(record: _Record) -> DraftAnswer:
            record.model_calls += 1
            text = _THINK_RE.sub("", _read_capped(streaming.stream(messages), self.max_answer_chars)).strip()
            if not text:
                raise _GiveUp("empty answer")
            reason = self.answer_check(question, text, passages) if self.answer_check else ""
            if reason:
                raise _GiveUp(f"answer rejected: {reason}")
            return draft_from_text(text)

        return self._step("answer", run, fallback)

    def check_support(self, answer: str, passages: list[Passage]) -> list[SentenceSupport]:
        sentences = split_sentences(answer)

        def fallback() -> list[SentenceSupport]:
            return self.fallback.check_support(answer, passages)

        if not sentences:
            return []
        cited_numbers = {n for s in sentences for n in _citations(s)}
        relevant = [p for p in passages if p.number in cited_numbers] or passages
        messages = _messages(prompts.CHECK_SUPPORT_SYSTEM, prompts.check_support_user(sentences, relevant))

        def expected_length(reply: _SupportReply) -> None:
            if len(reply.supported) != len(sentences):
                raise ValueError(f"expected {len(sentences)} flags, got {len(reply.supported)}")

        def run(record: _Record) -> list[SentenceSupport]:
            reply = self._structured(record, _SupportReply, messages, check=expected_length)
            return [
                SentenceSupport(sentence=s, cited=_citations(s), supported=ok, score=1.0 if ok else 0.0)
                for s, ok in zip(sentences, reply.supported, strict=True)
            ]

        return self._step("check_support", run, fallback)

    # -- machinery --------------------------------------------------------------------------------

    def _step(
        self,
        step: str,
        run: Callable[[_Record], Any] | None,
        fallback: Callable[[], Any],
        *,
        reason: str | None = None,
    ) -> Any:
        """Run a step with the model; on any failure answer with the fallback and record why."""
        record = _Record(step, started=time.perf_counter())
        try:
            if run is None:
                raise _GiveUp(reason or "skipped")
            result = run(record)
        except Exception as exc:
            record.fallback = True
            record.error = _describe(exc)
            result = fallback()
        self._record(record)
        return result

    def _structured(
        self,
        record: _Record,
        schema: type[M],
        messages: list[BaseMessage],
        *,
        check: Callable[[M], None] | None = None,
    ) -> M:
        """Get a valid ``schema`` object: structured output, then repaired text, then plain re-asks."""
        errors: list[str] = []

        def accept(candidate: M) -> M:
            if check is not None:
                check(candidate)
            return candidate

        attempts = 0
        if self._structured_ok:
            attempts += 1
            try:
                record.model_calls += 1
                out = self._structured_runnable(schema, record.step).invoke(messages)
            except _UNSUPPORTED as exc:
                if isinstance(exc, ContextOverflowError):
                    raise
                self._structured_ok = False  # this server rejects response_format/tools: go plain
                errors.append(f"structured output rejected: {_describe(exc)}")
                attempts -= 1
            except (*_TRANSIENT, openai.APIError, ModelError):
                raise  # timeouts, 429/5xx after the client's retries, auth, unknown model: fall back now
            except Exception as exc:  # a parser inside the structured runnable: re-ask in plain text
                errors.append(_describe(exc))
            else:
                raw_text = _raw_text(out.get("raw"))
                try:
                    return accept(_coerce(out.get("parsed"), schema))
                except (ValueError, ValidationError):
                    pass
                try:
                    return accept(parse_model_json(raw_text, schema))
                except ValueError as exc:
                    errors.append(str(exc))
                    messages = [*messages, AIMessage(raw_text), HumanMessage(_retry_note(exc))]
        plain = self._quiet.with_config(
            run_name=f"brain.{record.step}", tags=["nostream", f"brain:{record.step}"]
        )
        while attempts < self.parse_attempts:
            attempts += 1
            record.model_calls += 1
            reply = plain.invoke(messages)
            try:
                return accept(parse_model_json(reply.text, schema))
            except ValueError as exc:
                errors.append(str(exc))
                messages = [*messages, AIMessage(reply.text), HumanMessage(_retry_note(exc))]
        raise _GiveUp(f"unparseable JSON after {attempts} replies: {errors[-1] if errors else ''}")

    def _structured_runnable(self, schema: type[BaseModel], step: str) -> Runnable:
        key = (schema, step)
        if key not in self._runnables:
            self._runnables[key] = self._build_structured(schema, step)
        return self._runnables[key]

    def _build_structured(self, schema: type[BaseModel], step: str) -> Runnable:
        method = self.structured_method
        target: Any = schema
        if method == "json_schema":
            # A dict schema keeps the raw reply when it does not validate (a pydantic class makes
            # the openai client raise inside the request, losing the text we could still repair).
            target = {
                "name": schema.__name__.strip("_").lower(),
                "description": (schema.__doc__ or "").strip(),
                "schema": schema.model_json_schema(),
                "strict": False,
            }
        runnable = self._quiet.with_structured_output(target, method=method, include_raw=True)
        return runnable.with_config(run_name=f"brain.{step}", tags=["nostream", f"brain:{step}"])

    def _text(self, record: _Record, messages: list[BaseMessage]) -> str:
        plain = self._quiet.with_config(
            run_name=f"brain.{record.step}", tags=["nostream", f"brain:{record.step}"]
        )
        record.model_calls += 1
        return _THINK_RE.sub("", plain.invoke(messages).text).strip()

    def _evaluation(
        self, reply: _JudgeReply, chunks: list[ScoredChunk], fallback: Callable[[], RetrievalEvaluation]
    ) -> RetrievalEvaluation:
        """Map numbered judgements to chunk ids; passages the model skipped take the fallback's view."""
        by_number = {j.n: j for j in reply.judgements if 1 <= j.n <= len(chunks)}
        if not by_number:
            raise _GiveUp("judge returned no judgement for any passage")
        offline: dict[str, ChunkJudgement] = {}
        if len(by_number) < len(chunks):
            offline = {j.chunk_id: j for j in fallback().judgements}
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


# --------------------------------------------------------------------------------------------------
# Helpers (pure functions, tested through the brain and directly)


ANSWER_CUT_NOTE = " … [answer cut at {limit} characters: AGENTIC_RAG_MAX_ANSWER_CHARS]"


def _read_capped(chunks: Any, limit: int) -> str:
    """The streamed answer, reading no further once it passes ``limit`` characters (then marked cut)."""
    pieces: list[str] = []
    size = 0
    for chunk in chunks:
        pieces.append(chunk.text)
        size += len(chunk.text)
        if size > limit:
            return "".join(pieces)[:limit].rstrip() + ANSWER_CUT_NOTE.format(limit=limit)
    return "".join(pieces)


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


def split_sentences(text: str) -> list[str]:
    """Split on Chinese and Latin sentence ends; citation markers stay with the sentence they close."""
    sentences: list[str] = []
    for piece in _SENTENCE_END_RE.split(text):
        piece = piece.strip() if piece else ""
        lead = _LEADING_CITATIONS_RE.match(piece)
        if lead and sentences:
            sentences[-1] = f"{sentences[-1]} {lead.group(0).strip()}"
            piece = piece[lead.end() :].strip()
        if not piece:
            continue
        if sentences and len(piece) <= 2:  # a stray closing bracket or quote
            sentences[-1] += piece
        else:
            sentences.append(piece)
    return sentences


def _join(sentences: Sequence[str]) -> str:
    """Join kept sentences: no space after CJK punctuation, one space after Latin."""
    out = ""
    for sentence in sentences:
        out += sentence if not out or out[-1] in "。！？；" else " " + sentence
    return out


def _citations(sentence: str) -> list[int]:
    return sorted({int(n) for n in _CITATION_RE.findall(sentence)})


def _select(
    keep: Sequence[str | int | float], sentences: dict[int, list[str]], budget: int
) -> dict[int, set[int]]:
    """Sentence indices to keep per passage, in the model's priority order, within the token budget."""
    chosen: dict[int, set[int]] = {}
    used = 0
    for tag in keep:
        number_text, _, index_text = str(tag).strip("[] ").partition(".")
        if not number_text.isdigit() or int(number_text) not in sentences:
            continue
        number = int(number_text)
        indices = [int(index_text) - 1] if index_text.isdigit() else range(len(sentences[number]))
        for index in indices:
            if not 0 <= index < len(sentences[number]) or index in chosen.get(number, set()):
                continue
            cost = count_tokens(sentences[number][index])
            if used + cost > budget:
                continue
            used += cost
            chosen.setdefault(number, set()).add(index)
    return chosen


def _tidy_analysis(analysis: QueryAnalysis, question: str) -> QueryAnalysis:
    subs: list[str] = []
    for q in analysis.sub_queries:
        if q.strip() and _norm(q) not in {_norm(s) for s in subs}:
            subs.append(q.strip())
    language = analysis.language.lower()[:2] if analysis.language else ""
    return analysis.model_copy(
        update={
            "sub_queries": subs,
            "language": language if language in ("zh", "en") else detect_language(question),
        }
    )


def _coerce(parsed: Any, schema: type[M]) -> M:
    if isinstance(parsed, schema):
        return parsed
    if isinstance(parsed, BaseModel):
        parsed = parsed.model_dump()
    if not isinstance(parsed, dict):
        raise ValueError("structured output returned nothing usable")
    return schema.model_validate(parsed)


def _raw_text(raw: Any) -> str:
    """The text of a structured reply: tool-call arguments if any, else the message content."""
    if not isinstance(raw, AIMessage):
        return ""
    if raw.tool_calls:
        return json.dumps(raw.tool_calls[0]["args"], ensure_ascii=False)
    if raw.invalid_tool_calls:
        return raw.invalid_tool_calls[0].get("args") or ""
    return raw.text


def _messages(system: str, user: str) -> list[BaseMessage]:
    return [SystemMessage(system), HumanMessage(user)]


def _retry_note(exc: Exception) -> str:
    return prompts.JSON_RETRY.format(error=str(exc)[:200])


def _one_line(text: str) -> str:
    for line in text.splitlines():
        line = _QUERY_PREFIX_RE.sub("", line.strip().strip("*`")).strip().strip("\"'“”「」")
        if line:
            return line
    return ""


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().casefold()


def _chunk_label(sc: ScoredChunk) -> str:
    heading = " › ".join(sc.chunk.heading_path)
    return f"{sc.chunk.source} › {heading}" if heading else sc.chunk.source


def _non_streaming(model: BaseChatModel) -> BaseChatModel:
    """A copy that never streams (ChatOpenAI's ``streaming`` flag also sets the request's ``stream``)."""
    update: dict[str, Any] = {"disable_streaming": True}
    if "streaming" in type(model).model_fields:
        update["streaming"] = False
    return model.model_copy(update=update)


def _model_name(model: BaseChatModel) -> str:
    for attribute in ("model_name", "model", "model_id"):
        value = getattr(model, attribute, None)
        if isinstance(value, str) and value:
            return value
    return type(model).__name__


def _describe(exc: BaseException) -> str:
    if isinstance(exc, _GiveUp):
        return str(exc)
    kind = "transient" if isinstance(exc, _TRANSIENT) else "error"
    message = str(exc).replace("\n", " ")[:300]
    return f"{kind}: {type(exc).__name__}: {message}"
