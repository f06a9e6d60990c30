"""A fitted logistic decision over named signals, with the data file it lives in and its provenance.

    p = sigmoid(intercept + sum of weight x signal),  decision: p >= threshold

Each decision that uses one (answerability, the entity-graph walk's gate) subclasses ``LogisticModel``,
names its signals (``SIGNALS``: an unknown name in the file is an error, not a silent 0) and its file;
a bench script fits the weights and writes them with where they came from. Serialisable like a Haystack
component (``to_dict`` / ``from_dict``), loaded once.
"""

from __future__ import annotations

import math
from collections.abc import Collection
from typing import Any, ClassVar, Self

from pydantic import ConfigDict, Field, field_validator

from core.data_file import DataFile


class LogisticModel(DataFile):
    """Logistic weights per named signal, the intercept, and the probability threshold of the decision."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    SIGNALS: ClassVar[Collection[str]] = ()

    intercept: float
    weights: dict[str, float] = Field(description="signal name -> logistic weight")
    threshold: float = Field(gt=0, lt=1)
    provenance: dict[str, Any] = Field(default_factory=dict)

    @field_validator("weights")
    @classmethod
    def _known(cls, weights: dict[str, float]) -> dict[str, float]:
        unknown = sorted(set(weights) - set(cls.SIGNALS))
        if unknown:
            raise ValueError(f"unknown signals {unknown}; known: {', '.join(cls.SIGNALS)}")
        return weights

    def logit(self, signals: dict[str, float]) -> float:
        return self.intercept + sum(w * signals.get(name, 0.0) for name, w in self.weights.items())

    def probability(self, signals: dict[str, float]) -> float:
        """p in [0, 1]; a signal the caller lacks counts as 0."""
        z = self.logit(signals)
        return 1.0 / (1.0 + math.exp(-z)) if z >= 0 else math.exp(z) / (1.0 + math.exp(z))

    def decides(self, signals: dict[str, float]) -> bool:
        return self.probability(signals) >= self.threshold

    def with_threshold(self, threshold: float) -> Self:
        return self.model_copy(update={"threshold": threshold})
