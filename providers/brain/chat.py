"""The model side every LLM role shares: structured replies, plain text and streamed answers.

Structured steps ask for JSON through ``with_structured_output(method="json_schema")`` by default:
vLLM, llama.cpp server, Ollama and LM Studio enforce a ``response_format`` schema with constrained
decoding, and OpenAI accepts it non-strict (our schemas have optional fields, which strict mode
rejects). ``function_calling`` and ``json_mode`` are options for servers that only support those. The
raw reply is kept (``include_raw``), so JSON the client could not parse still goes through
``parse_model_json`` without another call. A server that rejects the structured request (HTTP 400/422)
is asked in plain text from then on. After ``parse_attempts`` unusable replies the step gives up
(``ModelGaveUp``); transport errors propagate. Either way the role's fallback answers.

Retries are ours, not the client's (build the model with ``max_retries=0``): 429, 5xx and timeouts
are asked again up to ``max_retries`` times with backoff (the server's ``retry-after`` wins), never
past the question's deadline; a refused connection or a DNS failure is not retried at all but raised
as ``LLMUnavailable``, which ends model use for the rest of the question.

Only the answer is streamed to LangGraph's ``messages`` mode; the other steps carry the ``nostream`` tag.

Generation is bounded: each step's requests carry that step's ``max_tokens`` (``max_tokens`` below,
from the ``llm_max_tokens_*`` settings), and a reply the server stopped at that cap
(``finish_reason == "length"``) is unusable for the step (``ReplyCapped``): a JSON object cut mid-way or
an answer cut mid-sentence is not repaired, the role's fallback answers. A streamed answer stops being
read when the question's deadline passes, which closes the connection (the server stops generating).
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Iterator, Mapping
from functools import partial
from typing import TYPE_CHECKING, Any, Literal, TypeVar

import openai
from langchain_core.exceptions import ContextOverflowError, ModelError
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from pydantic import BaseModel, ValidationError

from providers import prompts
from providers.brain.budget import DeadlinePassed, current_budget
from providers.brain.calls import CallLog
from providers.brain.errors import (
    TRANSIENT,
    UNSUPPORTED,
    LLMUnavailable,
    ModelGaveUp,
    describe,
    is_retryable,
    is_unreachable,
    retry_after_s,
)
from providers.json_repair import parse_model_json
from providers.tokens import count_tokens

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel
    from langchain_core.runnables import Runnable

StructuredMethod = Literal["json_schema", "function_calling", "json_mode", "prompt"]
M = TypeVar("M", bound=BaseModel)
T = TypeVar("T")
MAX_BACKOFF_S = 8.0

THINK_RE = re.compile(r"<think>.*?</think>\s*", re.DOTALL | re.IGNORECASE)
_QUERY_PREFIX_RE = re.compile(
    r"^(?:standalone question|new query|search query|query|question|rewritten|独立问题|问题|查询|新查询)\s*[:：]\s*",
    re.IGNORECASE,
)


class ReplyCapped(ModelGaveUp):
    """The server stopped the reply at the step's ``max_tokens``: unusable for that step."""


def finish_reason(message: Any) -> str:
    """The reply's ``finish_reason`` ("stop", "length", ...), "" when the server did not say."""
    metadata = getattr(message, "response_metadata", None) or {}
    return str(metadata.get("finish_reason") or "")


class Chat:
    """A chat model asked for one brain step at a time; counts each request in ``log``."""

    def __init__(
        self,
        model: BaseChatModel,
        log: CallLog,
        *,
        structured_method: StructuredMethod = "json_schema",
        parse_attempts: int = 2,
        max_retries: int = 2,
        backoff_s: float = 0.5,
        sleep: Callable[[float], None] = time.sleep,
        max_tokens: Mapping[str, int] | None = None,
    ) -> None:
        if max_retries < 0:
            raise ValueError(f"llm max_retries must be >= 0, got {max_retries}")
        if parse_attempts < 1:
            raise ValueError(f"parse_attempts must be at least 1, got {parse_attempts}")
        if structured_method not in ("json_schema", "function_calling", "json_mode", "prompt"):
            raise ValueError(f"unknown structured_method {structured_method!r}")
        self.model = model
        self.log = log
        self.structured_method: StructuredMethod = structured_method
        self.parse_attempts = parse_attempts
        self.max_retries = max_retries
        self.backoff_s = backoff_s
        self.sleep = sleep
        # Structured/text steps must not leak JSON into LangGraph's token stream, and need no streaming.
        self._quiet = _non_streaming(model)
        self._structured_ok = structured_method != "prompt"
        self._tools_ok = True
        self._runnables: dict[tuple[type[BaseModel], str], Runnable] = {}
        self.max_tokens = dict(max_tokens or {})
        if any(n < 1 for n in self.max_tokens.values()):
            raise ValueError(f"max_tokens per step must be positive, got {self.max_tokens}")
        self._bounded: dict[tuple[str, bool], BaseChatModel] = {}

    @property
    def name(self) -> str:
        return model_name(self.model)

    @property
    def endpoint(self) -> str:
        return str(getattr(self.model, "openai_api_base", None) or "the OpenAI API")

    def bounded(self, step: str, *, streaming: bool = False) -> BaseChatModel:
        """The model (quiet or streaming) whose requests for ``step`` carry its ``max_tokens``."""
        key = (step, streaming)
        if key not in self._bounded:
            base = self.model if streaming else self._quiet
            self._bounded[key] = with_max_tokens(base, self.max_tokens.get(step))
        return self._bounded[key]

    def _capped(self, step: str, reply: Any) -> None:
        """Raise ``ReplyCapped`` when ``reply`` stopped at the step's token cap (counted in the log)."""
        if finish_reason(reply) == "length":
            record = self.log.current()
            if record is not None:
                record.capped += 1
            raise ReplyCapped(
                f"{step} reply stopped at max_tokens={self.max_tokens.get(step, 'server default')}"
            )

    def request(self, send: Callable[[], T], prompt: list[BaseMessage] | None = None) -> T:
        """One request to the model (``prompt``'s tokens counted per attempt), retried on 429/5xx/timeouts
        within the retry and time budgets."""
        retries = 0
        while True:
            self.log.count_call(prompt_tokens(prompt or []))
            try:
                return send()
            except Exception as exc:
                if is_unreachable(exc):
                    raise LLMUnavailable(
                        f"cannot reach the LLM endpoint {self.endpoint} ({describe(exc)})"
                    ) from exc
                if not is_retryable(exc) or retries >= self.max_retries:
                    raise
                pause = retry_after_s(exc)
                pause = min(MAX_BACKOFF_S, self.backoff_s * 2**retries if pause is None else pause)
                remaining = current_budget().remaining()
                if remaining is not None and pause >= remaining:
                    raise
                self.sleep(pause)
                retries += 1

    def structured(
        self,
        step: str,
        schema: type[M],
        messages: list[BaseMessage],
        *,
        check: Callable[[M], None] | None = None,
    ) -> M:
        """A valid ``schema`` object: structured output, then repaired text, then plain re-asks."""
        errors: list[str] = []

        def accept(candidate: M) -> M:
            if check is not None:
                check(candidate)
            return candidate

        attempts = 0
        if self._structured_ok:
            attempts += 1
            runnable = self._structured_runnable(schema, step)
            try:
                out = self.request(lambda: runnable.invoke(messages), messages)
            except UNSUPPORTED as exc:
                if isinstance(exc, ContextOverflowError):
                    raise
                self._structured_ok = False  # this server rejects response_format/tools: go plain
                errors.append(f"structured output rejected: {describe(exc)}")
                attempts -= 1
            except (*TRANSIENT, LLMUnavailable, openai.APIError, ModelError):
                raise  # timeouts, 429/5xx after the client's retries, auth, unknown model: fall back now
            except openai.LengthFinishReasonError:  # the client's own parser saw the cap
                self._capped(step, AIMessage("", response_metadata={"finish_reason": "length"}))
            except Exception as exc:  # a parser inside the structured runnable: re-ask in plain text
                errors.append(describe(exc))
            else:
                raw_text = _raw_text(out.get("raw"))
                self.log.count_reply(count_tokens(raw_text))
                self._capped(step, out.get("raw"))
                try:
                    return accept(_coerce(out.get("parsed"), schema))
                except (ValueError, ValidationError):
                    pass
                try:
                    return accept(parse_model_json(raw_text, schema))
                except ValueError as exc:
                    errors.append(str(exc))
                    messages = [*messages, AIMessage(raw_text), HumanMessage(_retry_note(exc))]
        plain = self.bounded(step).with_config(run_name=f"brain.{step}", tags=["nostream", f"brain:{step}"])
        while attempts < self.parse_attempts:
            attempts += 1
            reply = self.request(partial(plain.invoke, messages), messages)
            self.log.count_reply(count_tokens(reply.text))
            self._capped(step, reply)
            try:
                return accept(parse_model_json(reply.text, schema))
            except ValueError as exc:
                errors.append(str(exc))
                messages = [*messages, AIMessage(reply.text), HumanMessage(_retry_note(exc))]
        raise ModelGaveUp(f"unparseable JSON after {attempts} replies: {errors[-1] if errors else ''}")

    def text(self, step: str, messages: list[BaseMessage]) -> str:
        """A plain reply, reasoning (``<think>``) removed."""
        plain = self.bounded(step).with_config(run_name=f"brain.{step}", tags=["nostream", f"brain:{step}"])
        reply = self.request(lambda: plain.invoke(messages), messages)
        self.log.count_reply(count_tokens(reply.text))
        self._capped(step, reply)
        return THINK_RE.sub("", reply.text).strip()

    def stream(self, step: str, messages: list[BaseMessage]) -> Iterator[str]:
        """The reply's text pieces as they arrive (LangGraph's ``messages`` mode sees them too).

        Reading stops when the question's deadline passes (the stream is closed, so is the connection);
        a reply that ends at the step's cap raises ``ReplyCapped`` after its last piece."""
        streaming = self.bounded(step, streaming=True).with_config(
            run_name=f"brain.{step}", tags=[f"brain:{step}"]
        )
        # Retried only until the first piece arrives: a half-streamed answer is never restarted.
        pieces = self.request(lambda: _started(streaming.stream(messages)), messages)
        received: list[str] = []
        reason = ""
        budget = current_budget()
        try:
            for chunk in pieces:
                received.append(chunk.text)
                reason = finish_reason(chunk) or reason
                yield chunk.text
                if budget.remaining() == 0.0:
                    raise DeadlinePassed(f"{step}: the question's LLM deadline passed while streaming")
        finally:
            close = getattr(pieces, "close", None)
            if close is not None:
                close()
            self.log.count_reply(count_tokens("".join(received)))
        if reason == "length":
            self._capped(step, AIMessage("", response_metadata={"finish_reason": reason}))

    def tool_calls(self, step: str, messages: list[BaseMessage], tools: list[Any]) -> list[dict[str, Any]]:
        """The tool calls the model makes for ``messages`` with ``tools`` bound; [] when it makes none or
        the server does not support tool calling (then it is not asked again)."""
        if not self._tools_ok:
            return []
        bound = (
            self.bounded(step)
            .bind_tools(tools)
            .with_config(run_name=f"brain.{step}", tags=["nostream", f"brain:{step}"])
        )
        try:
            reply = self.request(lambda: bound.invoke(messages), messages)
        except UNSUPPORTED as exc:
            if isinstance(exc, ContextOverflowError):
                raise
            self._tools_ok = False
            return []
        self.log.count_reply(count_tokens(_raw_text(reply)))
        return list(reply.tool_calls) if isinstance(reply, AIMessage) else []

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
        runnable = self.bounded(step).with_structured_output(target, method=method, include_raw=True)
        return runnable.with_config(run_name=f"brain.{step}", tags=["nostream", f"brain:{step}"])


def _started(stream: Iterator[Any]) -> Iterator[Any]:
    """The stream with its first piece already received (so connecting errors surface here)."""
    first = next(stream, None)
    if first is None:
        return iter(())

    def rest() -> Iterator[Any]:
        yield first
        yield from stream

    return rest()


def prompt_tokens(messages: list[BaseMessage]) -> int:
    """Tokens of a request's messages (tiktoken cl100k, a few per message for the chat format)."""
    return sum(count_tokens(message.text) + 4 for message in messages)


def messages(system: str, user: str) -> list[BaseMessage]:
    return [SystemMessage(system), HumanMessage(user)]


def one_line(text: str) -> str:
    """The first non-empty line without a "Query:" style prefix or quotes."""
    for line in text.splitlines():
        line = _QUERY_PREFIX_RE.sub("", line.strip().strip("*`")).strip().strip("\"'“”「」")
        if line:
            return line
    return ""


def norm(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().casefold()


def model_name(model: BaseChatModel) -> str:
    for attribute in ("model_name", "model", "model_id"):
        value = getattr(model, attribute, None)
        if isinstance(value, str) and value:
            return value
    return type(model).__name__


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


def _retry_note(exc: Exception) -> str:
    return prompts.JSON_RETRY.format(error=str(exc)[:200])


def with_max_tokens(model: BaseChatModel, max_tokens: int | None) -> BaseChatModel:
    """A copy of ``model`` whose requests carry ``max_tokens``.

    ChatOpenAI sends its ``max_tokens`` as ``max_completion_tokens`` (OpenAI's current name); servers
    that only read the older ``max_tokens`` (llama.cpp's Python server, older vLLM and Ollama) get it in
    the request body as well when the endpoint is not OpenAI's own."""
    fields = type(model).model_fields
    if max_tokens is None or "max_tokens" not in fields:
        return model
    update: dict[str, Any] = {"max_tokens": max_tokens}
    if "extra_body" in fields and getattr(model, "openai_api_base", None):
        update["extra_body"] = {**(getattr(model, "extra_body", None) or {}), "max_tokens": max_tokens}
    return model.model_copy(update=update)


def _non_streaming(model: BaseChatModel) -> BaseChatModel:
    """A copy that never streams (ChatOpenAI's ``streaming`` flag also sets the request's ``stream``)."""
    update: dict[str, Any] = {"disable_streaming": True}
    if "streaming" in type(model).model_fields:
        update["streaming"] = False
    return model.model_copy(update=update)
