"""Citations the project attaches itself: each sentence of a model's answer gets the passage that
supports it, by the verify step's own signals (key terms, meaning across languages, stated specifics).

Small models often write a good answer without any ``[n]`` marker, or cite a number that is not in the
context. Rejecting such an answer throws the model's work away; accepting it unchecked lets a wrong
claim through. So a sentence whose markers are missing, invalid or do not support it is tried against
every passage with the support check (``check_answer_support`` of the offline verifier), and gets the
marker of the passage that supports it best; a claim no passage supports is removed. A sentence that
states no claim ("以下是要点：") stays as it is. Nothing left means the answer is rejected.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from core.schemas import Passage, SentenceSupport
from core.text import CITATION_RE, join_sentences, split_sentences

SupportCheck = Callable[[str, list[Passage]], list[SentenceSupport]]
_TRAILING_PUNCT_RE = re.compile(r"[。！？；.!?;：:]+$")


@dataclass(frozen=True)
class Cited:
    """The answer with citations attached; what was changed, for the trace."""

    text: str
    attached: int = 0  # sentences that got (or had replaced) their marker
    removed: tuple[str, ...] = ()  # sentences no passage supports


def with_marker(sentence: str, number: int) -> str:
    """``sentence`` with its markers replaced by ``[number]``, placed before the final punctuation."""
    bare = CITATION_RE.sub("", sentence).rstrip()
    end = _TRAILING_PUNCT_RE.search(bare)
    if end:
        return f"{bare[: end.start()].rstrip()} [{number}]{bare[end.start() :]}"
    return f"{bare} [{number}]"


class Citer:
    """Attach supporting citations to an answer, remove what nothing supports (``support`` is the
    offline verifier: the model never checks its own answer)."""

    def __init__(self, support: SupportCheck) -> None:
        self.support = support

    def best_passage(self, sentence: str, passages: list[Passage]) -> int | None:
        """The number of the passage that supports ``sentence`` best, None when none does."""
        best: tuple[float, int] | None = None
        for passage in passages:
            verdicts = self.support(with_marker(sentence, passage.number), passages)
            if len(verdicts) == 1 and verdicts[0].supported:
                candidate = (verdicts[0].score, -passage.number)  # ties: the earlier passage
                best = candidate if best is None or candidate > best else best
        return -best[1] if best is not None else None

    def __call__(self, answer: str, passages: list[Passage]) -> Cited:
        if not passages:
            return Cited(answer)
        sentences = split_sentences(answer)
        verdicts = self.support(answer, passages)
        if len(verdicts) != len(sentences):  # the check split differently: judge each sentence alone
            verdicts = [v for s in sentences for v in self.support(s, passages)[:1]]
        kept: list[str] = []
        removed: list[str] = []
        attached = 0
        for sentence, verdict in zip(sentences, verdicts, strict=False):
            if verdict.supported:  # cited and supported, or no claim at all
                kept.append(sentence)
                continue
            number = self.best_passage(sentence, passages)
            if number is None:
                removed.append(sentence)
            else:
                kept.append(with_marker(sentence, number))
                attached += 1
        if not any(CITATION_RE.search(s) for s in kept):
            return Cited("", attached, tuple(removed))  # no supported claim left
        return Cited(join_sentences(kept), attached, tuple(removed))
