"""The answerability decision: a logistic combiner over the named signals, fitted, with provenance.

    p(answerable) = sigmoid(intercept + sum of weight x signal)

The weights, the refusal threshold and where both came from (training sets, date, command, held-out
figures) live in ``answerability.json`` beside this module, written by ``bench/fit_answerability.py``
and loaded once. Below ``threshold`` the evidence is taken not to answer the question: the judge calls
it insufficient (the graph's bounded retries), and when the loop ends there the answer is the refusal.
"""

from __future__ import annotations

import json
import math
from functools import lru_cache
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from providers.brain.answerability.signals import SIGNALS

MODEL_FILE = Path(__file__).resolve().parent / "answerability.json"


class AnswerabilityModel(BaseModel):
    """Logistic weights per signal, the intercept, and the probability below which the agent refuses."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    intercept: float
    weights: dict[str, float] = Field(description="signal name (signals.SIGNALS) -> logistic weight")
    threshold: float = Field(gt=0, lt=1, description="p(answerable) below this: refuse")
    provenance: dict[str, Any] = Field(default_factory=dict)

    @field_validator("weights")
    @classmethod
    def _known(cls, weights: dict[str, float]) -> dict[str, float]:
        unknown = sorted(set(weights) - set(SIGNALS))
        if unknown:
            raise ValueError(f"unknown signals {unknown}; known: {', '.join(SIGNALS)}")
        return weights

    def logit(self, signals: dict[str, float]) -> float:
        return self.intercept + sum(w * signals.get(name, 0.0) for name, w in self.weights.items())

    def probability(self, signals: dict[str, float]) -> float:
        """p(answerable) in [0, 1]; a signal the caller lacks counts as 0."""
        z = self.logit(signals)
        return 1.0 / (1.0 + math.exp(-z)) if z >= 0 else math.exp(z) / (1.0 + math.exp(z))

    def answerable(self, signals: dict[str, float]) -> bool:
        return self.probability(signals) >= self.threshold

    def with_threshold(self, threshold: float) -> AnswerabilityModel:
        return self.model_copy(update={"threshold": threshold})

    def to_dict(self) -> dict[str, Any]:
        return self.model_dump()

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> AnswerabilityModel:
        return cls.model_validate({k: v for k, v in data.items() if not k.startswith("_")})

    @classmethod
    def load(cls, path: Path = MODEL_FILE) -> AnswerabilityModel:
        try:
            return cls.from_dict(json.loads(path.read_text(encoding="utf-8")))
        except (OSError, ValueError) as exc:
            raise ValueError(f"answerability model {path}: {exc}") from exc

    def save(self, path: Path = MODEL_FILE) -> None:
        about = "Fitted by bench/fit_answerability.py (providers/brain/answerability/model.py); do not edit by hand."
        text = json.dumps({"_about": about, **self.to_dict()}, ensure_ascii=False, indent=2) + "\n"
        path.write_text(text, encoding="utf-8")


@lru_cache(maxsize=1)
def packaged_model() -> AnswerabilityModel:
    """The packaged fitted model, loaded once."""
    return AnswerabilityModel.load()
