"""The answerability decision applied to a judge's verdict, whichever judge gave it (offline or LLM).

A judge can say "sufficient" for passages that merely share words with the question ("capital of
France" over a `capitalize` helper). The gate asks the fitted model (``model.py``) over the signals
(``signals.py``); below its threshold the evidence is insufficient whatever the judge said, the
suggested action becomes a rewrite (the graph's bounded retries), and the verdict records the
probability so the refusal and the answer's confidence can be read from it.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, Field

from core.chunks import ScoredChunk
from core.schemas import RetrievalEvaluation
from core.text import detect_language
from providers.brain.answerability.model import AnswerabilityModel, packaged_model
from providers.brain.answerability.signals import countable, extract
from providers.meaning import Meaning


class Assessment(BaseModel):
    """The model's reading of one question and its evidence."""

    probability: float = Field(ge=0, le=1)
    threshold: float
    answerable: bool
    signals: dict[str, float] = Field(default_factory=dict)


class AnswerabilityGate:
    """Assess evidence with the fitted model; ``meaning`` is the runtime's embedder (cross-language)."""

    def __init__(self, meaning: Meaning | None, model: AnswerabilityModel | None = None) -> None:
        self.meaning = meaning
        self.model = model or packaged_model()

    def assess(
        self, question: str, chunks: Sequence[ScoredChunk], unmentioned: Sequence[str] = ()
    ) -> Assessment:
        signals = extract(question, chunks, self.meaning, unmentioned=unmentioned)
        p = self.model.probability(signals) if chunks else 0.0
        return Assessment(
            probability=round(p, 4),
            threshold=self.model.threshold,
            answerable=bool(chunks) and p >= self.model.threshold,
            signals=signals,
        )

    def apply(
        self,
        evaluation: RetrievalEvaluation,
        question: str,
        chunks: Sequence[ScoredChunk],
        unmentioned: Sequence[str] = (),
    ) -> RetrievalEvaluation:
        """The verdict with the model's decision: insufficient below the threshold, p recorded.
        Without an embedder, or for evidence that carries no first-stage ranks (passages handed over
        by code rather than found by a search), the verdict is returned as it is (not assessed): the
        model was fitted on searched, ranked evidence with meaning signals, and reading the missing
        ones as 0 would refuse what it never saw."""
        if self.meaning is None or not any(c.ranks for c in chunks):
            return evaluation
        found = self.assess(question, chunks, unmentioned)
        update: dict[str, object] = {"answerability": found.probability, "answerable": found.answerable}
        note = f"; answerability {found.probability:.2f} (refuse below {found.threshold:.2f})"
        update["reasoning"] = evaluation.reasoning.rstrip() + note
        if not found.answerable:
            update["is_sufficient"] = False
            if evaluation.suggested_action == "answer":
                update["suggested_action"] = "rewrite"
        return evaluation.model_copy(update=update)


def refusal(question: str, unmentioned: Sequence[str] = (), passages: str = "", limit: int = 3) -> str:
    """The answer when the evidence does not answer the question, in the question's language; names
    the names the question gives that the collection never mentions (``QueryAnalysis.unmentioned``),
    where their absence means something given the passages' language (``signals.countable``): the
    user sees why, and what to add."""
    language = detect_language(question)
    names = [n for n in unmentioned if countable(n, language, passages or language)][:limit]
    if language == "zh":
        said = f"资料中没有出现：{'、'.join(names)}。" if names else ""
        return "根据现有资料无法确定答案：检索到的资料没有回答这个问题。" + said
    said = f" The documents never mention {', '.join(f'“{n}”' for n in names)}." if names else ""
    return (
        "This cannot be determined from the documents: the passages found do not answer the question." + said
    )


def refuses(evaluation: RetrievalEvaluation | None) -> bool:
    """Whether the last verdict says the model found the evidence does not answer (None: not assessed)."""
    return evaluation is not None and evaluation.answerable is False
