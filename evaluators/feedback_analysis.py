"""Why a user marked an answer bad, and which setting change the evidence supports.

Each bad answer gets one class:
- ``retrieval_miss``: no passage the answer was built from holds the answer terms (the gold answer when
  the note gives one, "gold: ..." / "答案：...", else the question's key terms), and no other mode finds
  them either;
- ``routing``: the same, but another mode's passages do hold them (the strategy taken found nothing
  while another would have);
- ``unsupported_generation``: the passages hold the answer terms, but answer sentences are not supported
  by the passages they cite;
- ``other``: the passages hold the terms and every sentence is supported (the writer picked the wrong
  sentence, or the user disagrees with the documents).

Pure functions: re-running a question in other modes is a callable the caller passes in
(``app.feedback`` runs the real graph), so the rules are tested without models.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any, Literal

from pydantic import BaseModel, Field

from core.feedback import FeedbackRecord
from core.schemas import Passage
from core.tokenize import tokenize
from evaluators.answer_cost import offline_hallucination
from evaluators.metrics import normalize_answer

FailureClass = Literal["retrieval_miss", "routing", "unsupported_generation", "other"]
CLASSES: tuple[FailureClass, ...] = ("retrieval_miss", "routing", "unsupported_generation", "other")
QUESTION_COVERAGE = 0.6  # share of the question's key terms one passage must hold (the support threshold)
_GOLD = re.compile(
    r"(?:gold|answer|correct answer|should be|答案(?:应为|应该是|是)?|应为|应该是|正确答案是?)\s*[:：=]?\s*(.+)",
    re.I,
)

# Reruns a question in one mode and returns the texts of the passages that mode would answer from.
Rerun = Callable[[str, str], list[str]]


class Diagnosis(BaseModel):
    record_id: int | None
    thread_id: str
    turn: int
    question: str
    answer: str
    mode: str = ""
    note: str = ""
    failure: FailureClass
    gold: str = ""
    reason: str
    found_by: list[str] = Field(
        default_factory=list, description="modes whose passages hold the answer terms"
    )
    unsupported_share: float | None = None


class Proposal(BaseModel):
    setting: str
    current: Any
    proposed: Any
    reason: str


def gold_from_note(note: str) -> str:
    """The correct answer a note gives ("gold: 1636", "答案应为 1636 年"), or ""."""
    match = _GOLD.search(note or "")
    return match.group(1).strip().strip("。.") if match else ""


def holds_answer(texts: Sequence[str], question: str, gold: str) -> bool:
    """With a gold answer: some text contains it (normalised). Without: one text covers the question."""
    if gold:
        wanted = normalize_answer(gold)
        return bool(wanted) and any(wanted in normalize_answer(text) for text in texts)
    terms = set(tokenize(question))
    return bool(terms) and any(
        len(terms & set(tokenize(text))) >= QUESTION_COVERAGE * len(terms) for text in texts
    )


def diagnose(record: FeedbackRecord, modes: Sequence[str], rerun: Rerun) -> Diagnosis:
    """Classify one bad answer; ``rerun`` is called only when the answer's own passages miss."""
    gold = gold_from_note(record.note)
    passages = [Passage.model_validate(p) for p in record.passages]
    base = {
        "record_id": record.id,
        "thread_id": record.thread_id,
        "turn": record.turn,
        "question": record.question,
        "answer": record.answer,
        "mode": record.mode,
        "note": record.note,
        "gold": gold,
    }
    what = f"the gold answer {gold!r}" if gold else "the question's key terms"
    if not holds_answer([p.text for p in passages], record.question, gold):
        found_by = [
            mode
            for mode in modes
            if mode != record.mode and holds_answer(rerun(record.question, mode), record.question, gold)
        ]
        if found_by:
            return Diagnosis(
                **base,
                failure="routing",
                found_by=found_by,
                reason=f"{what} missing from the passages of mode {record.mode or '?'}, found by {', '.join(found_by)}",
            )
        return Diagnosis(**base, failure="retrieval_miss", reason=f"no mode's passages hold {what}")
    share = offline_hallucination(record.answer, passages)
    if share:
        return Diagnosis(
            **base,
            failure="unsupported_generation",
            unsupported_share=share,
            reason=f"{share:.0%} of the answer's claim sentences are not supported by the passages they cite",
        )
    return Diagnosis(
        **base,
        failure="other",
        unsupported_share=share,
        reason=f"the passages hold {what} and every sentence is supported",
    )


def class_counts(diagnoses: Sequence[Diagnosis]) -> dict[str, int]:
    counts = Counter(d.failure for d in diagnoses)
    return {name: counts.get(name, 0) for name in CLASSES}


def propose(diagnoses: Sequence[Diagnosis], settings: Any) -> list[Proposal]:
    """Setting changes the diagnoses support, each with the evidence; nothing for classes with no case."""
    proposals: list[Proposal] = []
    routing = [d for d in diagnoses if d.failure == "routing"]
    found = Counter(mode for d in routing for mode in d.found_by)
    if found:
        if found["keyword"] > found["naive"]:
            proposals.append(
                Proposal(
                    setting="keyword_weight",
                    current=settings.keyword_weight,
                    proposed=round(settings.keyword_weight * 1.5, 3),
                    reason=f"keyword search found the answer for {found['keyword']} of {len(routing)} routing failures, dense search for {found['naive']}",
                )
            )
        elif found["naive"] > found["keyword"]:
            proposals.append(
                Proposal(
                    setting="vector_weight",
                    current=settings.vector_weight,
                    proposed=round(settings.vector_weight * 1.5, 3),
                    reason=f"dense search found the answer for {found['naive']} of {len(routing)} routing failures, keyword search for {found['keyword']}",
                )
            )
        if found["hybrid"] > found["hybrid_rerank"] and settings.reranker != "none":
            proposals.append(
                Proposal(
                    setting="reranker",
                    current=settings.reranker,
                    proposed="none",
                    reason=f"hybrid without rerank found the answer for {found['hybrid']} routing failures, with rerank for {found['hybrid_rerank']}",
                )
            )
    misses = sum(1 for d in diagnoses if d.failure == "retrieval_miss")
    if misses:
        proposals.append(
            Proposal(
                setting="max_retries",
                current=settings.max_retries,
                proposed=min(settings.max_retries + 1, 5),
                reason=f"{misses} answers had no passage holding the answer in any mode: search longer",
            )
        )
        proposals.append(
            Proposal(
                setting="candidate_k",
                current=settings.candidate_k,
                proposed=min(settings.candidate_k * 2, 200),
                reason=f"{misses} retrieval misses: fetch more candidates before reranking",
            )
        )
    unsupported = sum(1 for d in diagnoses if d.failure == "unsupported_generation")
    if unsupported and not settings.remove_unsupported:
        proposals.append(
            Proposal(
                setting="remove_unsupported",
                current=False,
                proposed=True,
                reason=f"{unsupported} answers had sentences their passages do not support: drop such sentences",
            )
        )
    return [p for p in proposals if p.current != p.proposed]
