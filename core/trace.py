"""One trace entry per node run: what the node decided, with counts, time and model use.

Nodes write ``TraceEvent``s; the CLI, the session and apps render them from these fields and never
parse the text. ``detail`` is for people (the rewritten query, "factual/simple -> hybrid"), not for code.
"""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, Field


class Decision(StrEnum):
    STANDALONE = "standalone"  # contextualize: the question needed no rewriting
    FOLLOW_UP = "follow_up"  # contextualize: a follow-up rewritten as a standalone question
    INVALID_INPUT = "invalid_input"  # contextualize: empty, too long or an unknown mode
    CLARIFY = "clarify"  # contextualize: a follow-up with nothing to refer to; ask which thing is meant
    SMALL_TALK = "small_talk"  # contextualize: "hi", "谢谢": a short reply, no search (issue 21)
    ROUTED = "routed"  # analyze_query: analyzed and a strategy chosen
    SEARCHED = "searched"  # retrieve_*: searched as planned
    TOPPED_UP = "topped_up"  # retrieve_keyword: too few BM25 hits, vector hits added
    RERANKED = "reranked"
    SKIPPED = "skipped"  # the mode (or a missing reranker) skips this step
    SUFFICIENT = "sufficient"  # evaluate: the evidence answers the question
    RETRY = "retry"  # evaluate: not enough yet, search again
    STOPPED = "stopped"  # evaluate: not enough, but the loop ends (max retries, no progress)
    REWRITTEN = "rewritten"  # rewrite_query
    COMPRESSED = "compressed"
    ANSWERED = "answered"  # generate
    INSUFFICIENT = "insufficient"  # generate: the evidence does not answer the question
    VERIFIED = "verified"  # verify: sentences checked, answer unchanged
    REMOVED_UNSUPPORTED = "removed_unsupported"  # verify: unsupported sentences dropped
    CACHE_HIT = "cache_hit"  # lookup_cache: answered from the exact or semantic cache
    CACHE_MISS = "cache_miss"  # lookup_cache: not cached, the question is searched
    CACHED = "cached"  # verify: a cached answer, checked when it was first written


class TraceEvent(BaseModel):
    node: str
    decision: Decision
    detail: str = ""
    query: str = Field(default="", description="the query this node searched with or wrote")
    counts: dict[str, int] = Field(default_factory=dict)
    ms: float = 0.0
    model_calls: int = 0
    tokens_in: int = Field(default=0, description="tokens sent to the model in this node (tiktoken)")
    tokens_out: int = Field(default=0, description="tokens the model returned in this node")
    fallback_reason: str = Field(
        default="", description="why the offline brain answered instead of the model"
    )

    def label(self) -> str:
        """``node(detail)`` or ``node(decision)``, for one-line traces."""
        return f"{self.node}({self.detail or self.decision.value})"
