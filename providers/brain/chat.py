"""The model side every LLM role shares: structured replies, plain text and streamed answers.

Structured steps ask for JSON through ``with_structured_output(method="json_schema")`` by default:
vLLM, llama.cpp server, Ollama and LM Studio enforce a ``response_format`` schema with constrained
decoding, and OpenAI accepts it non-strict (our schemas have optional fields, which strict mode
rejects). ``function_calling`` and ``json_mode`` are options for servers that only support those. The
raw reply is kept (``include_raw``), so JSON the client could not parse still goes through
``parse_model_json`` without another call. A server that rejects the structured request (HTTP 400/422)
is asked in plain text from then on. After ``parse_attempts`` unusable replies the step gives up
(``ModelGaveUp``); transport errors propagate. Either way the role's fallback answers.

Only the answer is streamed to LangGraph's ``messages`` mode; the other steps carry the ``nostream`` tag.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, Literal, TypeVar

import openai
from langchain_core.exceptions import ContextOverflowError, ModelError
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from pydantic import BaseModel, ValidationError

from providers import prompts
from providers.brain.calls import CallLog
from providers.brain.errors import TRANSIENT, UNSUPPORTED, ModelGaveUp, describe
from providers.json_repair import parse_model_json
from providers.tokens import count_tokens

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel
    from langchain_core.runnables import Runnable

StructuredMethod = Literal["json_schema", "function_calling", "json_mode", "prompt"]
M = TypeVar("M", bound=BaseModel)

THINK_RE = re.compile(r"<think>.*?</think>\s*", re.DOTALL | re.IGNORECASE)
_QUERY_PREFIX_RE = re.compile(
    r"^(?:standalone question|new query|search query|query|question|rewritten|独立问题|问题|查询|新查询)\s*[:：]\s*",
    re.IGNORECASE,
)


class Chat:
    """A chat model asked for one brain step at a time; counts each request in ``log``."""

    def __init__(
        self,
        model: BaseChatModel,
        log: CallLog,
        *,
        structured_method: StructuredMethod = "json_schema",
        parse_attempts: int = 2,
    ) -> None:
        if parse_attempts < 1:
            raise ValueError(f"parse_attempts must be at least 1, got {parse_attempts}")
        if structured_method not in ("json_schema", "function_calling", "json_mode", "prompt"):
            raise ValueError(f"unknown structured_method {structured_method!r}")
        self.model = model
        self.log = log
        self.structured_method: StructuredMethod = structured_method
        self.parse_attempts = parse_attempts
        # Structured/text steps must not leak JSON into LangGraph's token stream, and need no streaming.
        self._quiet = _non_streaming(model)
        self._structured_ok = structured_method != "prompt"
        self._tools_ok = True
        self._runnables: dict[tuple[type[BaseModel], str], Runnable] = {}

    @property
    def name(self) -> str:
        return model_name(self.model)

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
            try:
                self.log.count_call(prompt_tokens(messages))
                out = self._structured_runnable(schema, step).invoke(messages)
            except UNSUPPORTED as exc:
                if isinstance(exc, ContextOverflowError):
                    raise
                self._structured_ok = False  # this server rejects response_format/tools: go plain
                errors.append(f"structured output rejected: {describe(exc)}")
                attempts -= 1
            except (*TRANSIENT, openai.APIError, ModelError):
                raise  # timeouts, 429/5xx after the client's retries, auth, unknown model: fall back now
            except Exception as exc:  # a parser inside the structured runnable: re-ask in plain text
                errors.append(describe(exc))
            else:
                raw_text = _raw_text(out.get("raw"))
                self.log.count_reply(count_tokens(raw_text))
                try:
                    return accept(_coerce(out.get("parsed"), schema))
                except (ValueError, ValidationError):
                    pass
                try:
                    return accept(parse_model_json(raw_text, schema))
                except ValueError as exc:
                    errors.append(str(exc))
                    messages = [*messages, AIMessage(raw_text), HumanMessage(_retry_note(exc))]
        plain = self._quiet.with_config(run_name=f"brain.{step}", tags=["nostream", f"brain:{step}"])
        while attempts < self.parse_attempts:
            attempts += 1
            self.log.count_call(prompt_tokens(messages))
            reply = plain.invoke(messages)
            self.log.count_reply(count_tokens(reply.text))
            try:
                return accept(parse_model_json(reply.text, schema))
            except ValueError as exc:
                errors.append(str(exc))
                messages = [*messages, AIMessage(reply.text), HumanMessage(_retry_note(exc))]
        raise ModelGaveUp(f"unparseable JSON after {attempts} replies: {errors[-1] if errors else ''}")

    def text(self, step: str, messages: list[BaseMessage]) -> str:
        """A plain reply, reasoning (``<think>``) removed."""
        plain = self._quiet.with_config(run_name=f"brain.{step}", tags=["nostream", f"brain:{step}"])
        self.log.count_call(prompt_tokens(messages))
        text = plain.invoke(messages).text
        self.log.count_reply(count_tokens(text))
        return THINK_RE.sub("", text).strip()

    def stream(self, step: str, messages: list[BaseMessage]) -> Iterator[str]:
        """The reply's text pieces as they arrive (LangGraph's ``messages`` mode sees them too)."""
        streaming = self.model.with_config(run_name=f"brain.{step}", tags=[f"brain:{step}"])
        self.log.count_call(prompt_tokens(messages))
        pieces: list[str] = []
        for chunk in streaming.stream(messages):
            pieces.append(chunk.text)
            yield chunk.text
        self.log.count_reply(count_tokens("".join(pieces)))

    def tool_calls(self, step: str, messages: list[BaseMessage], tools: list[Any]) -> list[dict[str, Any]]:
        """The tool calls the model makes for ``messages`` with ``tools`` bound; [] when it makes none or
        the server does not support tool calling (then it is not asked again)."""
        if not self._tools_ok:
            return []
        bound = self._quiet.bind_tools(tools).with_config(
            run_name=f"brain.{step}", tags=["nostream", f"brain:{step}"]
        )
        self.log.count_call(prompt_tokens(messages))
        try:
            reply = bound.invoke(messages)
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
        runnable = self._quiet.with_structured_output(target, method=method, include_raw=True)
        return runnable.with_config(run_name=f"brain.{step}", tags=["nostream", f"brain:{step}"])


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


def _non_streaming(model: BaseChatModel) -> BaseChatModel:
    """A copy that never streams (ChatOpenAI's ``streaming`` flag also sets the request's ``stream``)."""
    update: dict[str, Any] = {"disable_streaming": True}
    if "streaming" in type(model).model_fields:
        update["streaming"] = False
    return model.model_copy(update=update)
