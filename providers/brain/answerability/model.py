"""The answerability decision: a logistic combiner over the named signals, fitted, with provenance.

    p(answerable) = sigmoid(intercept + sum of weight x signal)

The weights, the refusal threshold and where both came from (training sets, date, command, held-out
figures) live in ``answerability.json`` beside this module, written by ``bench/fit_answerability.py``
and loaded once. Below ``threshold`` the evidence is taken not to answer the question: the judge calls
it insufficient (the graph's bounded retries), and when the loop ends there the answer is the refusal.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import ClassVar

from pydantic import Field

from core.logistic import LogisticModel
from providers.brain.answerability.signals import SIGNALS

MODEL_FILE = Path(__file__).resolve().parent / "answerability.json"


class AnswerabilityModel(LogisticModel):
    """Logistic weights per signal, the intercept, and the probability below which the agent refuses."""

    SIGNALS: ClassVar = SIGNALS
    FILE: ClassVar = MODEL_FILE
    LABEL: ClassVar = "answerability model"
    ABOUT: ClassVar = (
        "Fitted by bench/fit_answerability.py (providers/brain/answerability/model.py); do not edit by hand."
    )

    threshold: float = Field(gt=0, lt=1, description="p(answerable) below this: refuse")


@lru_cache(maxsize=1)
def packaged_model() -> AnswerabilityModel:
    """The packaged fitted model, loaded once."""
    return AnswerabilityModel.load()
