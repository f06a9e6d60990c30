"""A fitted logistic decision over named signals, with the data file it lives in and its provenance.

    p = sigmoid(intercept + sum of weight x signal),  decision: p >= threshold

Each decision that uses one (answerability, the entity-graph walk's gate) subclasses ``LogisticModel``,
names its signals (``SIGNALS``: an unknown name in the file is an error, not a silent 0) and its file;
a bench script fits the weights and writes them with where they came from. Serialisable like a Haystack
component (``to_dict`` / ``from_dict``), loaded once.
"""

from __future__ import annotations

import json
import math
from collections.abc import Collection
from pathlib import Path
from typing import Any, ClassVar, Self

from pydantic import BaseModel, ConfigDict, Field, field_validator


class LogisticModel(BaseModel):
    """Logistic weights per named signal, the intercept, and the probability threshold of the decision."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    SIGNALS: ClassVar[Collection[str]] = ()
    FILE: ClassVar[Path]
    FITTED_BY: ClassVar[str] = ""  # the bench script that writes the file (named in its "_about" line)

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

    def to_dict(self) -> dict[str, Any]:
        return self.model_dump()

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Self:
        return cls.model_validate({k: v for k, v in data.items() if not k.startswith("_")})

    @classmethod
    def load(cls, path: Path | None = None) -> Self:
        path = path or cls.FILE
        try:
            return cls.from_dict(json.loads(path.read_text(encoding="utf-8")))
        except (OSError, ValueError) as exc:
            raise ValueError(f"{cls.__name__} {path}: {exc}") from exc

    def save(self, path: Path | None = None) -> None:
        about = f"Fitted by {self.FITTED_BY} ({type(self).__module__}); do not edit by hand."
        text = json.dumps({"_about": about, **self.to_dict()}, ensure_ascii=False, indent=2) + "\n"
        (path or self.FILE).write_text(text, encoding="utf-8")
