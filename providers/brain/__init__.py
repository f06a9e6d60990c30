"""Brains: the offline rules, or a chat model with the offline rules behind every role.

brain = offline_brain()                       # deterministic, no network
brain = llm_brain(chat_model, offline_brain())  # each role asks the model, falls back per step
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from providers.brain.analyse import LLMAnalyser, OfflineAnalyser
from providers.brain.calls import CallLog, ModelCall
from providers.brain.chat import Chat, StructuredMethod, model_name
from providers.brain.compress import LLMCompressor, OfflineCompressor
from providers.brain.contextualise import LLMContextualiser, OfflineContextualiser
from providers.brain.fallback import WithFallback
from providers.brain.judge import LLMJudge, OfflineJudge
from providers.brain.rewrite import LLMRewriter, OfflineRewriter
from providers.brain.roles import Brain
from providers.brain.sql import LLMApiChooser, LLMSqlWriter, no_api_calls, no_sql
from providers.brain.verify import LLMVerifier, OfflineVerifier
from providers.brain.write import AnswerCheck, LLMWriter, OfflineWriter
from providers.offline_brain.meaning import Meaning, TextEmbedder

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

    from config import Settings

__all__ = ["Brain", "CallLog", "ModelCall", "llm_brain", "make_brain", "offline_brain"]


def _ratio(name: str, value: float) -> float:
    if not isinstance(value, int | float) or not 0.0 <= float(value) <= 1.0:
        raise ValueError(f"{name} must be a number between 0 and 1, got {value!r}")
    return float(value)


def offline_brain(
    sufficiency_threshold: float = 0.5,
    support_threshold: float = 0.6,
    embedder: TextEmbedder | None = None,
) -> Brain:
    """The rule-based brain; ``sufficiency_threshold`` is the key-term coverage that counts as a lexical
    match. With ``embedder`` (the runtime's, from the context) the judge, compressor, writer and verifier
    also compare by meaning, which is what works across Chinese and English."""
    sufficiency = _ratio("sufficiency_threshold", sufficiency_threshold)
    meaning = Meaning(embedder) if embedder is not None else None
    return Brain(
        name="offline",
        analyse=OfflineAnalyser(),
        judge=OfflineJudge(sufficiency, meaning),
        rewrite=OfflineRewriter(),
        contextualise=OfflineContextualiser(),
        compress=OfflineCompressor(meaning),
        write=OfflineWriter(sufficiency, meaning),
        verify=OfflineVerifier(_ratio("support_threshold", support_threshold), meaning),
    )


def llm_brain(
    model: BaseChatModel,
    fallback: Brain,
    *,
    structured_method: StructuredMethod = "json_schema",
    parse_attempts: int = 2,
    max_retries: int = 2,
    backoff_s: float = 0.5,
    judge_tokens_per_chunk: int = 300,
    name: str | None = None,
    answer_check: AnswerCheck | None = None,
    max_answer_chars: int = 4000,
) -> Brain:
    """Every role asks ``model`` first and is answered by ``fallback``'s role when the model fails.

    Build ``model`` with ``max_retries=0``: ``max_retries`` here retries 429/5xx/timeouts (never a
    refused connection) within the question's deadline.
    """
    log = CallLog()
    chat = Chat(
        model,
        log,
        structured_method=structured_method,
        parse_attempts=parse_attempts,
        max_retries=max_retries,
        backoff_s=backoff_s,
    )
    return Brain(
        name=f"llm:{name or model_name(model)}",
        analyse=WithFallback("analyze", LLMAnalyser(chat), fallback.analyse, log),
        judge=WithFallback(
            "judge",
            LLMJudge(chat, fallback.judge, tokens_per_chunk=judge_tokens_per_chunk),
            fallback.judge,
            log,
        ),
        rewrite=WithFallback("rewrite", LLMRewriter(chat), fallback.rewrite, log),
        contextualise=WithFallback("contextualize", LLMContextualiser(chat), fallback.contextualise, log),
        compress=WithFallback("compress", LLMCompressor(chat), fallback.compress, log),
        write=WithFallback("answer", LLMWriter(chat, answer_check, max_answer_chars), fallback.write, log),
        verify=WithFallback("check_support", LLMVerifier(chat), fallback.verify, log),
        calls=log,
        write_sql=WithFallback("sql", LLMSqlWriter(chat), no_sql, log),
        choose_api=WithFallback("api", LLMApiChooser(chat), no_api_calls, log),
    )


def make_brain(settings: Settings, embedder: TextEmbedder | None = None, **options: Any) -> Brain:
    """The LLM brain when an OpenAI-compatible endpoint is configured, else the offline brain.
    ``embedder`` (the index's) lets the offline rules, and the LLM roles' fallbacks, judge by meaning."""
    offline = offline_brain(sufficiency_threshold=settings.sufficiency_threshold, embedder=embedder)
    if not settings.llm_configured:
        return offline
    from providers.brain.answer_check import AnswerChecker
    from providers.llm import chat_model_from_settings

    return llm_brain(
        chat_model_from_settings(settings),
        offline,
        structured_method=settings.llm_structured_method,
        parse_attempts=settings.llm_parse_attempts,
        max_retries=settings.llm_max_retries,
        # The model's answer is checked by rules and the index's embedder, never by the model itself.
        answer_check=AnswerChecker(embedder, offline.verify) if embedder is not None else None,
        max_answer_chars=settings.max_answer_chars,
        **options,
    )
