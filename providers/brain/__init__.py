"""Brains: the offline rules, or a chat model with the offline rules behind every role.

brain = offline_brain()                       # deterministic, no network
brain = llm_brain(chat_model, offline_brain())  # each role asks the model, falls back per step
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from providers.brain.analyze import LLMAnalyzer, OfflineAnalyzer
from providers.brain.answerability.gate import AnswerabilityGate
from providers.brain.calls import CallLog, ModelCall
from providers.brain.chat import Chat, StructuredMethod, model_name
from providers.brain.citing import Citer
from providers.brain.compress import LLMCompressor, OfflineCompressor
from providers.brain.contextualize import LLMContextualizer, OfflineContextualizer
from providers.brain.fallback import WithFallback
from providers.brain.judge import GatedJudge, LLMJudge, OfflineJudge
from providers.brain.rewrite import LLMRewriter, OfflineRewriter
from providers.brain.roles import Brain
from providers.brain.sql import LLMApiChooser, LLMSqlWriter, no_api_calls, no_sql
from providers.brain.verify import LLMVerifier, OfflineVerifier
from providers.brain.write import AnswerCheck, LLMWriter, OfflineWriter
from providers.meaning import Meaning, TextEmbedder

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
        analyze=OfflineAnalyzer(),
        judge=GatedJudge(OfflineJudge(sufficiency, meaning), AnswerabilityGate(meaning)),
        rewrite=OfflineRewriter(),
        contextualize=OfflineContextualizer(),
        compress=OfflineCompressor(meaning),
        write=OfflineWriter(sufficiency, meaning),
        verify=OfflineVerifier(_ratio("support_threshold", support_threshold), meaning),
    )


# The step names each role's requests are counted (and capped) under.
ROLE_STEPS = {
    "analyze": ("analyze",),
    "judge": ("judge",),
    "rewrite": ("rewrite",),
    "contextualize": ("contextualize",),
    "compress": ("compress",),
    "write": ("answer", "tools"),
    "verify": ("check_support",),
}
ALL_ROLES = frozenset(ROLE_STEPS)
# Passage tokens a packaged small local model's writer reads (providers/local_llm.py): its prompt
# speed (120-190 tokens/s on 2 cores) makes every 100 tokens cost about half a second.
SMALL_MODEL_CONTEXT_TOKENS = 800


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
    max_tokens: Mapping[str, int] | None = None,
    roles: frozenset[str] = ALL_ROLES,
    context_budget: int | None = None,
    citer: Citer | None = None,
    small_model: bool = False,
    compact: bool = False,
) -> Brain:
    """Each role in ``roles`` asks ``model`` first and is answered by ``fallback``'s role when the model
    fails; the other roles are ``fallback``'s alone (no request at all).

    Build ``model`` with ``max_retries=0``: ``max_retries`` here retries 429/5xx/timeouts (never a
    refused connection) within the question's deadline. ``max_tokens`` caps each step's replies (step
    name -> tokens); ``citer`` attaches citations to a model answer that lacks valid ones.
    ``small_model``: the judge, too, reads only ``context_budget`` tokens (each chunk's best sentences),
    and the writer's refusals are not trusted (the offline writer answers; ``LLMWriter``). ``compact``:
    the analysis and the judge ask for replies without free text (parts, names and exact tokens from
    ``fallback``'s analyzer), and analysis, judge, writer and verifier ask under one system prompt
    about the same passages, so each request repeats the previous one's first tokens and a llama.cpp
    server reads only what differs; compression stays offline (the judge was shown the offline
    compressor's sentences, which the writer must then read), and so do computations (the offline
    planner's, no tool-calling round under its own prompt). Issue 22, docs/local-llm.md.
    """
    unknown = set(roles) - ALL_ROLES
    if unknown or not roles:
        raise ValueError(f"unknown or no LLM roles {sorted(unknown)}; choose from {sorted(ALL_ROLES)}")
    log = CallLog()
    chat = Chat(
        model,
        log,
        structured_method=structured_method,
        parse_attempts=parse_attempts,
        max_retries=max_retries,
        backoff_s=backoff_s,
        max_tokens=max_tokens,
    )
    primaries: dict[str, Any] = {
        "analyze": LLMAnalyzer(chat, compact=fallback.analyze if compact else None),
        "judge": LLMJudge(
            chat,
            fallback.judge,
            tokens_per_chunk=judge_tokens_per_chunk,
            context_tokens=context_budget if small_model or compact else None,
            meaning=getattr(fallback.compress, "meaning", None),  # the offline compressor's choice
            compact=compact,
        ),
        "rewrite": LLMRewriter(chat),
        "contextualize": LLMContextualizer(chat),
        "compress": LLMCompressor(chat),
        "write": LLMWriter(
            chat,
            answer_check,
            max_answer_chars,
            citer,
            trust_refusal=not small_model,
            plan_offline=compact,
        ),
        "verify": LLMVerifier(chat, compact=compact),
    }
    if compact:  # the compact judge showed the offline compressor's sentences: the writer reads those
        roles = roles - {"compress"}
    chosen = {
        role: WithFallback(ROLE_STEPS[role][0], primaries[role], getattr(fallback, role), log)
        if role in roles
        else getattr(fallback, role)
        for role in ROLE_STEPS
    }
    gate = getattr(fallback.judge, "gate", None)
    if "judge" in roles and isinstance(gate, AnswerabilityGate):  # issue 21: the model's verdict gated too
        chosen["judge"] = GatedJudge(chosen["judge"], gate)
    shown = "" if roles == ALL_ROLES else f" ({','.join(r for r in ROLE_STEPS if r in roles)})"
    return Brain(
        name=f"llm:{name or model_name(model)}{shown}",
        calls=log,
        context_budget=context_budget,
        rank_order_evidence=compact and "judge" in roles,
        **chosen,
        verify_offline=fallback.verify,
        write_sql=WithFallback("sql", LLMSqlWriter(chat), no_sql, log),
        choose_api=WithFallback("api", LLMApiChooser(chat), no_api_calls, log),
    )


def step_max_tokens(settings: Settings) -> dict[str, int]:
    """Each step's reply cap, from the ``llm_max_tokens_*`` settings."""
    steps = {step for names in ROLE_STEPS.values() for step in names}
    return {step: int(getattr(settings, f"llm_max_tokens_{step}")) for step in steps}


def is_packaged_model(settings: Settings) -> bool:
    """Whether the configured model is one of the packaged small local models (providers/local_llm.py)."""
    from providers.local_llm import MODELS

    return settings.llm_model in MODELS


def writer_context_tokens(settings: Settings) -> int | None:
    """The writer's passage budget for the configured model (None: the context_token_budget setting)."""
    if settings.llm_context_tokens:
        return settings.llm_context_tokens
    if is_packaged_model(settings):
        return min(SMALL_MODEL_CONTEXT_TOKENS, settings.context_token_budget)
    return None


def make_brain(settings: Settings, embedder: TextEmbedder | None = None, **options: Any) -> Brain:
    """The LLM brain when an OpenAI-compatible endpoint is configured, else the offline brain.
    ``embedder`` (the index's) lets the offline rules, and the LLM roles' fallbacks, judge by meaning."""
    offline = offline_brain(sufficiency_threshold=settings.sufficiency_threshold, embedder=embedder)
    if not settings.llm_configured:
        return offline
    from providers.brain.answer_check import AnswerChecker
    from providers.llm import chat_model_from_settings

    compact = settings.llm_compact_replies(small_model=is_packaged_model(settings))
    budget = writer_context_tokens(settings)
    if compact and budget is None:  # the compact judge shows the writer's passages: the same budget
        budget = settings.context_token_budget
    return llm_brain(
        chat_model_from_settings(settings),
        offline,
        structured_method=settings.llm_structured_method,
        parse_attempts=settings.llm_parse_attempts,
        max_retries=settings.llm_max_retries,
        # The model's answer is checked by rules and the index's embedder, never by the model itself.
        answer_check=AnswerChecker(embedder, offline.verify) if embedder is not None else None,
        max_answer_chars=settings.max_answer_chars,
        max_tokens=step_max_tokens(settings),
        roles=settings.llm_role_set(small_model=is_packaged_model(settings)),
        context_budget=budget,
        citer=Citer(offline.verify),
        small_model=is_packaged_model(settings),
        compact=compact,
        **options,
    )
