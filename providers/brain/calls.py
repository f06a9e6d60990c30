"""What the model did during each brain step: calls made, whether the offline answerer took over, why.

Records are kept per thread (a graph node runs its brain steps on one thread) and drained by the node
into its trace event. The step running now is a context variable, so a step the question budget runs
in a helper thread still counts its requests in the right record.
"""

from __future__ import annotations

import contextvars
import threading
import time
from dataclasses import dataclass, field


@dataclass
class ModelCall:
    """One brain step as run: how many requests it sent and whether the fallback answered."""

    step: str
    model_calls: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    fallback: bool = False
    error: str | None = None
    capped: int = 0  # replies the server stopped at the step's max_tokens
    runaway: int = 0  # streamed answers cut where they began to loop or copy out the passages
    citations_attached: int = 0  # answer sentences the project cited itself (providers/brain/citing.py)
    sentences_removed: int = 0  # answer sentences no passage supports, removed
    started: float = field(default_factory=time.perf_counter)
    seconds: float = 0.0


class CallLog:
    """Per-thread records of brain steps; the step running now is ``current()``."""

    def __init__(self) -> None:
        self._local = threading.local()
        self._current: contextvars.ContextVar[ModelCall | None] = contextvars.ContextVar(
            f"brain_step_{id(self)}", default=None
        )

    def _records(self) -> list[ModelCall]:
        if not hasattr(self._local, "records"):
            self._local.records = []
        return self._local.records

    def start(self, step: str) -> ModelCall:
        record = ModelCall(step)
        self._records().append(record)
        self._current.set(record)
        return record

    def finish(self, record: ModelCall) -> None:
        record.seconds = round(time.perf_counter() - record.started, 3)
        self._current.set(None)

    def current(self) -> ModelCall | None:
        return self._current.get()

    def count_call(self, tokens_in: int = 0) -> None:
        """One request (of ``tokens_in`` prompt tokens) sent to the model by the step running on this thread."""
        record = self.current()
        if record is not None:
            record.model_calls += 1
            record.tokens_in += tokens_in

    def count_reply(self, tokens_out: int) -> None:
        """The tokens of a reply to the step running on this thread."""
        record = self.current()
        if record is not None:
            record.tokens_out += tokens_out

    def drain(self) -> list[ModelCall]:
        """Return and clear this thread's records."""
        records = self._records()
        self._local.records = []
        return records
