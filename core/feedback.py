"""A user's verdict on one answer, with what the failure analysis needs: the turn's question, answer,
citations, passages and trace. Stored by ``memory.feedback``, analyzed by ``evaluators.feedback_analysis``."""

from __future__ import annotations

import time
from typing import Any, Literal

from pydantic import BaseModel, Field

Verdict = Literal["good", "bad"]


class FeedbackRecord(BaseModel):
    id: int | None = None
    thread_id: str
    author: str = Field(default="", description="the user who gave it; empty: the CLI or local admin")
    turn: int = Field(ge=1, description="1 for the thread's first question")
    verdict: Verdict
    note: str = ""
    question: str
    answer: str
    mode: str = ""
    citations: list[dict[str, Any]] = Field(default_factory=list)
    passages: list[dict[str, Any]] = Field(default_factory=list)
    trace: list[dict[str, Any]] = Field(default_factory=list)
    created_at: float = Field(default_factory=time.time)
