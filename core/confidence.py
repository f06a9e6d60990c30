"""An answer's confidence in [0, 1] and whether a person should review it (issue 21).

Two checks that fail differently say how far an answer can be trusted: the answerability model's
probability that the evidence answers the question (providers/brain/answerability) and the support check's
share of answer sentences a cited passage supports (the verify step). An answer is as trustworthy as
the weaker of the two, so confidence is their minimum; a refusal's confidence is how sure the model is
that the evidence does not answer (1 - p). A fixed reply (small talk, an empty question, a request to
name the thing meant) is certain. Below the configured threshold the answer is marked ``needs_review``.
"""

from __future__ import annotations

DEFAULT_REVIEW_THRESHOLD = 0.7


def support_share(supported: int, sentences: int) -> float:
    """Share of checked answer sentences a passage supports; 0 when nothing could be checked."""
    return supported / sentences if sentences else 0.0


def answer_confidence(
    answerability: float | None,
    supported: int,
    sentences: int,
    *,
    refused: bool = False,
    fixed_reply: bool = False,
) -> float:
    """Confidence of one answer (see the module docstring); ``answerability`` None: not assessed (a
    single-pass mode or a cached answer), the support check alone speaks."""
    if fixed_reply:
        return 1.0
    if refused:
        return round(1.0 - answerability, 4) if answerability is not None else 0.5
    share = support_share(supported, sentences)
    return round(share if answerability is None else min(answerability, share), 4)


def needs_review(confidence: float, threshold: float = DEFAULT_REVIEW_THRESHOLD) -> bool:
    return confidence < threshold
