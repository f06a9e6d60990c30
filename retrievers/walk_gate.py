"""The walk gate: per question, whether the entity-graph walk's ranking leads or hybrid's stands.

A logistic combiner over ``walk_signals.SIGNALS`` (agreement of the two rankings, how many and how
specific the question's entities are, whether hybrid's best passage already names them all),
fitted by ``bench/fit_walk_gate.py`` on some shared sets and reported on
others; weights, threshold and provenance in ``data/walk_gate.json``, loaded once. Below the threshold
the question reads as single-hop: hybrid's ranking is kept and the walk's passages do not enter.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import ClassVar

from pydantic import Field

from core.logistic import LogisticModel
from retrievers.walk_signals import SIGNALS

GATE_FILE = Path(__file__).resolve().parent / "data" / "walk_gate.json"


class WalkGate(LogisticModel):
    """p(the walk's ranking beats hybrid's) over the walk signals; at or above ``threshold`` it leads."""

    SIGNALS: ClassVar = tuple(SIGNALS)
    FILE: ClassVar = GATE_FILE
    LABEL: ClassVar = "walk gate"
    ABOUT: ClassVar = "Fitted by bench/fit_walk_gate.py (retrievers.walk_gate); do not edit by hand."

    threshold: float = Field(gt=0, lt=1, description="p(walk better) at or above this: the walk leads")

    def leads(self, signals: dict[str, float]) -> bool:
        return self.decides(signals)


@lru_cache(maxsize=1)
def packaged_gate() -> WalkGate:
    """The packaged fitted gate, loaded once."""
    return WalkGate.load()
