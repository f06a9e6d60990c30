"""The LLM's part of ingest, when one is configured and chosen (``AGENTIC_RAG_LLM_INGEST``): section
and document summaries for the summary tree, and each passage's entities (OpenIE) for the entity graph.

Everything it writes is optional and bounded, so it can never cost a document: each request carries a
``max_tokens`` and the client's timeout, a document sends at most ``max_calls`` requests, and a reply
that fails, is cut at its cap, is malformed or does not validate (a summary in another language, an
entity the passage does not contain) leaves that node to the offline writer, with a warning. Once the
endpoint proves unreachable, or times out twice in a row, the rest of the run is offline (one warning).
Every usable reply is cached on disk by (model, prompt version, content hash) (``providers.ingest_cache``),
so re-ingest and incremental ingest never pay twice.
"""

from __future__ import annotations

import logging
import re
import unicodedata
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import openai
from langchain_core.exceptions import ModelTimeoutError
from pydantic import BaseModel, Field

from core.entities import ENTITY_PATTERNS, entity_key
from core.text import CJK_RE, detect_language, to_simplified
from providers.brain.calls import CallLog
from providers.brain.chat import Chat, messages
from providers.brain.errors import LLMUnavailable, ModelGaveUp, describe
from providers.ingest_cache import IngestCache, cache_path, content_hash
from providers.tokens import count_tokens

if TYPE_CHECKING:
    from config import Settings

log = logging.getLogger(__name__)
T = TypeVar("T")

SUMMARY_STEP = "summary"
OPENIE_STEP = "openie"
# Bump when a prompt or a validation rule changes: cached replies of the old one are then asked again.
SUMMARY_VERSION = "summary-1"
OPENIE_VERSION = "openie-1"
INPUT_TOKENS = 1200  # of source text per summary request: a small local model's context stays ample
MAX_ENTITIES = 24
MAX_ENTITY_CHARS = 80
MAX_TRIPLES = 12
TIMEOUTS_BEFORE_OFF = 2  # consecutive timeouts that switch the model off for the rest of the run

SUMMARY_SYSTEM = """You summarise part of a document for a search index.
- Write at most {keep} short sentences: the main points, with the names, numbers and dates the text gives.
- Use only what the text says. Write in the language of the text ({language}).
- Plain sentences only: no title, no introduction such as "This text", no list, no markdown."""

OPENIE_SYSTEM = """You extract the named entities of one passage for a knowledge graph.
- Entities: people, organisations, places, works (books, films, songs), products, events, laws and
  other proper names, each written exactly as the passage writes it (same spelling, same language).
- Triples (optional): [subject, relation, object] facts between those entities the passage states.
- Reply with JSON only: {"entities": ["..."], "triples": [{"subject": "...", "relation": "...", "object": "..."}]}"""

_LABEL_RE = re.compile(r"^(?:summary|摘要|总结|概要|概述)\s*[:：]\s*", re.IGNORECASE)
_FOLD_WORD_RE = re.compile(r"\w+")

_Entity = Annotated[str, Field(min_length=1, max_length=MAX_ENTITY_CHARS)]


class Triple(BaseModel):
    subject: _Entity
    relation: str = Field(max_length=60)
    object: _Entity


class PassageEntities(BaseModel):
    """The named entities of one passage, each written as the passage writes it."""

    entities: list[_Entity] = Field(default_factory=list, max_length=MAX_ENTITIES)
    triples: list[Triple] = Field(default_factory=list, max_length=MAX_TRIPLES)


class CallCapReached(ModelGaveUp):
    """The document has sent its ``max_calls`` requests; the rest of it is written offline."""


class _DocumentLog(CallLog):
    """Counts the requests of the document being ingested and refuses the one past the cap (before it
    is sent: ``Chat.request`` counts each attempt, retries and re-asks included)."""

    def __init__(self, cap: int) -> None:
        super().__init__()
        self.cap = cap
        self.used = 0
        self.sent = 0

    def count_call(self, tokens_in: int = 0) -> None:
        if self.used >= self.cap:
            raise CallCapReached(f"the document's {self.cap} LLM requests are spent")
        self.used += 1
        self.sent += 1
        super().count_call(tokens_in)


@dataclass
class IngestStats:
    """What the model did during one ingest run (logged at its end)."""

    requests: int = 0
    cached: int = 0
    written: int = 0
    fallbacks: int = 0
    warnings: list[str] = field(default_factory=list)


def appears_in(name: str, text: str) -> bool:
    """Whether ``text`` contains ``name`` (case, accents, width, traditional/simplified characters and
    punctuation aside): whole words for a Latin name, characters in a row for a Chinese one."""
    name_words = _fold_words(name)
    if not name_words:
        return False
    text_words = _fold_words(text)
    if CJK_RE.search(name):
        return "".join(name_words) in "".join(text_words)
    return f" {' '.join(name_words)} " in f" {' '.join(text_words)} "


def _fold_words(text: str) -> list[str]:
    folded = unicodedata.normalize("NFKD", to_simplified(unicodedata.normalize("NFKC", text)).casefold())
    return _FOLD_WORD_RE.findall("".join(ch for ch in folded if not unicodedata.combining(ch)))


def kept_entities(reply: PassageEntities, text: str) -> list[str]:
    """The reply's entities (triples' ends included) that the passage contains, one per key; raises
    ``ModelGaveUp`` when the model named some and the passage contains none of them (made up)."""
    named = [*reply.entities, *(end for t in reply.triples for end in (t.subject, t.object))]
    kept: dict[str, str] = {}
    for name in named:
        name = " ".join(name.split())
        key = entity_key(name)
        if (
            len(key) >= 2
            and key not in ENTITY_PATTERNS.not_names
            and key not in kept
            and appears_in(name, text)
        ):
            kept[key] = name
    if named and not kept:
        raise ModelGaveUp(f"none of the {len(named)} entities named appears in the passage")
    return list(kept.values())[:MAX_ENTITIES]


def clean_summary(reply: str, language: str, max_chars: int) -> str:
    """The reply as one paragraph, or ``ModelGaveUp`` when it is no usable summary of the text."""
    text = _LABEL_RE.sub("", " ".join(reply.split())).strip()
    if len(text) < 12:
        raise ModelGaveUp("summary reply is empty")
    if text.startswith(("{", "[", "```", "<")):
        raise ModelGaveUp("summary reply is not prose")
    if len(text) > max_chars:
        raise ModelGaveUp(f"summary reply is longer than {max_chars} characters")
    cjk_share = len(CJK_RE.findall(text)) / max(1, sum(not ch.isspace() for ch in text))
    if (language == "zh" and cjk_share < 0.2) or (language == "en" and cjk_share > 0.3):
        raise ModelGaveUp(f"summary reply is not in the document's language ({language})")
    return text


def bounded_texts(texts: list[str], tokens: int) -> list[str]:
    """The texts (sentences) within ``tokens``: all of them, or evenly spaced ones across the part."""
    sizes = [count_tokens(t) for t in texts]
    if sum(sizes) <= tokens:
        return list(texts)
    keep = max(1, int(len(texts) * tokens / sum(sizes)))
    while keep > 1:
        step = (len(texts) - 1) / (keep - 1)
        chosen = sorted({round(i * step) for i in range(keep)})
        if sum(sizes[i] for i in chosen) <= tokens:
            return [texts[i] for i in chosen]
        keep -= 1
    return [texts[0][: tokens * 3]]


class IngestWriter:
    """Summaries and passage entities by the model, each ``None`` when the offline writer must do it."""

    def __init__(
        self,
        chat: Chat,
        cache: IngestCache,
        *,
        summaries: bool = True,
        entities: bool = False,
        max_calls: int = 64,
        max_summary_chars: int = 1500,
        input_tokens: int = INPUT_TOKENS,
    ) -> None:
        if not isinstance(chat.log, _DocumentLog):
            raise ValueError("an IngestWriter's Chat must count calls in a _DocumentLog (use ingest_chat)")
        self.chat = chat
        self.cache = cache
        self.summaries = summaries
        self.entities_on = entities
        self.max_summary_chars = max_summary_chars
        self.input_tokens = input_tokens
        self.stats = IngestStats()
        self.off_reason = ""
        self._document = ""
        self._timeouts = 0
        self._capped_documents: set[str] = set()
        self.chat.log.cap = max_calls

    @property
    def model(self) -> str:
        return self.chat.name

    @property
    def label(self) -> str:
        return f"llm:{self.model}"

    @contextmanager
    def document(self, source: str) -> Iterator[None]:
        """The requests inside count against one document's ``max_calls``."""
        log_ = self.chat.log
        assert isinstance(log_, _DocumentLog)
        self._document, log_.used = source, 0
        try:
            yield
        finally:
            self._document = ""

    # -- the two writers ---------------------------------------------------------------------------

    def summarise(self, level: str, heading: list[str], texts: list[str], keep: int) -> str | None:
        """A summary of ``texts`` (a section's sentences, or the document's section summaries) in at
        most ``keep`` sentences; None: the extractive summary is used for this node."""
        if not self.summaries:
            return None
        shown = bounded_texts(texts, self.input_tokens)
        language = detect_language(" ".join(shown))
        where = " > ".join(h for h in heading if h) or "(untitled)"
        user = f"Part: {level} {where}\n\nText:\n" + "\n".join(shown)
        system = SUMMARY_SYSTEM.format(keep=keep, language="Chinese" if language == "zh" else "English")
        key = content_hash(level, where, str(keep), user)

        def ask() -> str:
            reply = self.chat.text(SUMMARY_STEP, messages(system, user))
            return clean_summary(reply, language, self.max_summary_chars)

        return self._ask("summary", SUMMARY_VERSION, key, ask, f"{level} summary of {where}", str)

    def entities(self, title: str, text: str) -> list[str] | None:
        """The passage's entities as the model names them (those the text contains); None: offline."""
        if not self.entities_on:
            return None
        user = f"Document title: {title}\n\nPassage:\n{text}" if title else f"Passage:\n{text}"
        key = content_hash(title, text)

        def ask() -> list[str]:
            reply = self.chat.structured(OPENIE_STEP, PassageEntities, messages(OPENIE_SYSTEM, user))
            return kept_entities(reply, text)

        found = self._ask("openie", OPENIE_VERSION, key, ask, "passage entities", list)
        return [str(n) for n in found] if found is not None else None

    # -- one bounded, cached request ---------------------------------------------------------------

    def _ask(
        self, kind: str, version: str, key: str, ask: Callable[[], T], what: str, kind_of: type
    ) -> T | None:
        cached = self.cache.get(kind, self.model, version, key)
        if isinstance(cached, kind_of):
            self.stats.cached += 1
            return cached  # type: ignore[return-value]
        if self.off_reason or self._document in self._capped_documents:
            self.stats.fallbacks += 1
            return None
        log_ = self.chat.log
        assert isinstance(log_, _DocumentLog)
        before = log_.sent
        try:
            value = ask()
        except CallCapReached as exc:
            self._cap_reached(str(exc))
            return None
        except LLMUnavailable as exc:
            self._switch_off(str(exc))
            return None
        except Exception as exc:  # any failure of an optional writer: the offline one writes this node
            timed_out = isinstance(exc, openai.APITimeoutError | ModelTimeoutError | TimeoutError)
            self._timeouts = self._timeouts + 1 if timed_out else 0
            self._fallback(
                f"{self._document}: the model's {what} was not usable ({describe(exc)}); written offline"
            )
            if log_.used >= log_.cap:  # a step that gives up on its last allowed request
                self._cap_reached(f"the document's {log_.cap} LLM requests are spent")
            if self._timeouts >= TIMEOUTS_BEFORE_OFF:
                self._switch_off(f"{self._timeouts} requests in a row timed out")
            return None
        finally:
            self.stats.requests += log_.sent - before
        self._timeouts = 0
        self.stats.written += 1
        self.cache.put(kind, self.model, version, key, value)
        return value

    def _cap_reached(self, why: str) -> None:
        if self._document not in self._capped_documents:
            self._capped_documents.add(self._document)
            self._fallback(
                f"{self._document}: {why} (AGENTIC_RAG_LLM_INGEST_MAX_CALLS); the rest of it is written offline"
            )
        else:
            self.stats.fallbacks += 1

    def _fallback(self, warning: str) -> None:
        self.stats.fallbacks += 1
        self.stats.warnings.append(warning)
        log.warning("LLM at ingest: %s", warning)

    def _switch_off(self, reason: str) -> None:
        self.stats.fallbacks += 1
        if not self.off_reason:
            self.off_reason = reason
            warning = f"{self.model} is not used for the rest of this ingest: {reason}; offline summaries and entities"
            self.stats.warnings.append(warning)
            log.warning("LLM at ingest: %s", warning)

    def report(self) -> str:
        s = self.stats
        return (
            f"LLM at ingest ({self.model}): {s.requests} requests, {s.written} written, {s.cached} from the "
            f"cache, {s.fallbacks} left to the offline writer"
        )

    def close(self) -> None:
        self.cache.close()


def ingest_chat(
    model: Any, settings: Settings | None = None, *, max_tokens: dict[str, int] | None = None
) -> Chat:
    """A ``Chat`` whose requests count against the document being ingested."""
    caps = max_tokens or {
        SUMMARY_STEP: settings.llm_max_tokens_summary if settings else 220,
        OPENIE_STEP: settings.llm_max_tokens_openie if settings else 320,
    }
    return Chat(
        model,
        _DocumentLog(cap=settings.llm_ingest_max_calls if settings else 64),
        structured_method=settings.llm_structured_method if settings else "json_schema",
        parse_attempts=settings.llm_parse_attempts if settings else 2,
        max_retries=settings.llm_max_retries if settings else 2,
        max_tokens=caps,
    )


def open_ingest_writer(settings: Settings, index_dir: Path | None = None) -> IngestWriter | None:
    """The writer the settings ask for: None offline, with ``AGENTIC_RAG_LLM_INGEST=none``, or when
    nothing it could write is on (summaries need the summary tree)."""
    if not settings.llm_configured:
        return None
    from providers.brain import is_packaged_model
    from providers.llm import make_chat_model

    chosen = settings.llm_ingest_set(small_model=is_packaged_model(settings))
    summaries = "summaries" in chosen and settings.summary_tree and settings.store == "local"
    entities = "entities" in chosen and settings.entity_graph
    if not (summaries or entities):
        return None
    try:
        model = make_chat_model(
            base_url=settings.openai_base_url,
            api_key=settings.openai_api_key,
            model=settings.llm_model,
            timeout_s=settings.llm_ingest_timeout_s,
            max_retries=0,  # Chat retries (429, 5xx, timeouts) within llm_max_retries
            temperature=0.0,
            streaming=False,
        )
    except ValueError as exc:  # e.g. AGENTIC_RAG_BRAIN=llm with no endpoint: ingest goes on offline
        log.warning("LLM at ingest: not used (%s); offline summaries and entities", exc)
        return None
    return IngestWriter(
        ingest_chat(model, settings),
        IngestCache(cache_path(index_dir or settings.index_dir)),
        summaries=summaries,
        entities=entities,
        max_calls=settings.llm_ingest_max_calls,
        max_summary_chars=6 * settings.llm_max_tokens_summary,
    )
