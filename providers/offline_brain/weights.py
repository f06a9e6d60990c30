"""The offline brain's numbers as data: one fitted combiner per decision plus the few selection limits,
read from ``data/weights.json`` once, with where each came from (``provenance``).

A ``Combiner`` scores a candidate from its named features (each in [0, 1], see ``features.py``):

    score = (sum of weight x feature, a term "a*b" being the product of two features)
            x (product of multiplier ** feature over the gates)

so a sentence is ranked by an additive evidence score, scaled down by gates that say "probably not this
one" (it holds no fact of the asked kind; it is about another year's event). ``bench/fit_offline_brain.py``
fits the weights on training slices by pairwise ranking and writes them here with the held-out figures; a
new behaviour is a feature, a refit and a test, never another constant in code. Parameters are passed as
values (``BrainParams``), never set on module globals, so two settings can be compared side by side.
"""

from __future__ import annotations

import math
from functools import lru_cache
from pathlib import Path
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field, field_validator

from core.data_file import DataFile

WEIGHTS_FILE = Path(__file__).resolve().parent / "data" / "weights.json"
ABOUT = (
    "Every tuned number of the offline brain (providers/offline_brain/weights.py). Refit with "
    "bench/fit_offline_brain.py; never edit by hand without a provenance line."
)


class Combiner(BaseModel):
    """A linear score over named features, scaled by multiplicative gates (see the module docstring)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    terms: dict[str, float] = Field(description='feature (or product "a*b") -> weight')
    gates: dict[str, float] = Field(default_factory=dict, description="feature -> multiplier at 1.0")
    provenance: dict[str, Any] = Field(default_factory=dict)

    @field_validator("gates")
    @classmethod
    def _positive(cls, gates: dict[str, float]) -> dict[str, float]:
        for name, multiplier in gates.items():
            if not multiplier > 0:
                raise ValueError(f"gate {name!r}: multiplier must be > 0, got {multiplier}")
        return gates

    def features(self) -> set[str]:
        """Every feature name the combiner reads."""
        return {f for term in self.terms for f in term.split("*")} | set(self.gates)

    def score(self, features: dict[str, float]) -> float:
        """The combined score; a feature the candidate lacks counts as 0."""
        total = 0.0
        for term, weight in self.terms.items():
            value = 1.0
            for name in term.split("*"):
                value *= features.get(name, 0.0)
            total += weight * value
        scale = math.prod(m ** features.get(name, 0.0) for name, m in self.gates.items())
        return total * scale

    def to_dict(self) -> dict[str, Any]:
        return self.model_dump()

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Combiner:
        return cls.model_validate(data)


class Selection(BaseModel):
    """How many sentences an answer takes and when a further one joins (chosen on dev slices)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    close_to_best: float = Field(
        gt=0, le=1, description="a further sentence scores at least this share of the best"
    )
    length_budget: dict[str, int] = Field(description="characters of answer text further sentences may fill")
    max_sentences: int = Field(ge=1)
    max_rivals: int = Field(ge=0, description="other versions of the asked fact an answer names")
    block_lines: int = Field(
        ge=0, description="lines of an introduced code block or table an answer includes (0: none)"
    )
    block_chars: int = Field(ge=0, description="characters of an introduced block an answer includes")
    provenance: dict[str, Any] = Field(default_factory=dict)


class JudgeParams(BaseModel):
    """The judge's relevance combiner and its scales."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    relevance: Combiner
    top_k: int = Field(ge=1, description="how many of the best chunks must jointly cover the question")
    semantic_match: float = Field(
        gt=0, lt=1, description="cosine at which a question and a sentence count as about the same thing"
    )
    provenance: dict[str, Any] = Field(default_factory=dict)


class AgreementParams(BaseModel):
    """When copies of a fact across passages count as agreeing (providers/offline_brain/agreement.py)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    floor: float = Field(ge=0, le=1, description="a sentence votes at this share of the best match or more")
    min_agreeing: int = Field(ge=1, description="passages that must state a fact before agreement counts")
    max_changed_words: int = Field(ge=1, description="near copies differ in at most this many words")
    provenance: dict[str, Any] = Field(default_factory=dict)


class OtherParams(BaseModel):
    """The remaining scales of the other offline roles (verify, compress, facts)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    support_match: float = Field(
        gt=0, lt=1, description="cosine at which an answer sentence says what a passage sentence says"
    )
    compress_heading: float = Field(ge=0, description="compression: share added by a matching heading")
    compress_language: float = Field(ge=0, description="compression: added for the question's own language")
    date_precision: dict[str, float] = Field(description="a date's weight by parts known (3 = y-m-d)")
    provenance: dict[str, Any] = Field(default_factory=dict)


class Limits(BaseModel):
    """The rules' cut-offs (lengths, windows, counts), one mapping per module: ``limits.analysis["long_words"]``.
    Hand-set with the rule each belongs to (see ``provenance``), never fitted."""

    model_config = ConfigDict(frozen=True, extra="allow")
    provenance: dict[str, Any] = Field(default_factory=dict)


class BrainParams(DataFile):
    """Every tuned number of the offline brain, with provenance; serialisable and comparable."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    FILE: ClassVar = WEIGHTS_FILE
    LABEL: ClassVar = "offline brain weights"
    ABOUT: ClassVar = ABOUT

    writer: Combiner
    selection: Selection
    judge: JudgeParams
    agreement: AgreementParams
    other: OtherParams
    limits: Limits

    def with_value(self, dotted: str, value: Any) -> BrainParams:
        """A copy with one value replaced, by path: ``selection.close_to_best``, ``writer.terms.agreed``."""
        data = self.to_dict()
        *parents, leaf = dotted.split(".")
        node = data
        for key in parents:
            if not isinstance(node, dict) or key not in node:
                raise KeyError(f"no parameter {dotted!r}")
            node = node[key]
        if not isinstance(node, dict) or (leaf not in node and parents[-1:] not in (["terms"], ["gates"])):
            raise KeyError(f"no parameter {dotted!r}")
        node[leaf] = value
        return BrainParams.from_dict(data)


@lru_cache(maxsize=1)
def params() -> BrainParams:
    """The packaged parameters, loaded once."""
    return BrainParams.load()
