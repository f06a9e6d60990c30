"""How much model use one question may have: until a deadline, and not after the endpoint proved
unreachable. Past either, the offline roles answer the rest of the question at once.

The budget of the question running now is a context variable: ``graph.run.ask`` and the session open
one per question, LangGraph carries it into every node's thread, and each ``WithFallback`` role reads
it. Without one (LangGraph Studio), model use is unbounded apart from the client's timeout.
"""

from __future__ import annotations

import contextvars
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar

T = TypeVar("T")

_current: contextvars.ContextVar[QuestionBudget | None] = contextvars.ContextVar(
    "question_budget", default=None
)


class DeadlinePassed(Exception):
    """The question's LLM deadline passed while a model step was still waiting."""


class QuestionBudget:
    """Model use left for one question; the first reason to stop leaves one warning for the user."""

    def __init__(
        self, deadline_s: float | None = None, *, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.deadline_s = deadline_s
        self.clock = clock
        self.started = clock()
        self.off_reason = ""
        self.warnings: list[str] = []
        self._lock = threading.Lock()

    def remaining(self) -> float | None:
        """Seconds left before the deadline (None: no deadline)."""
        if self.deadline_s is None:
            return None
        return max(0.0, self.started + self.deadline_s - self.clock())

    def usable(self) -> bool:
        """Whether a model step may start now; the deadline passing switches the model off."""
        if not self.off_reason and self.remaining() == 0.0:
            self.switch_off(
                f"the LLM deadline of {self.deadline_s:g} s (AGENTIC_RAG_LLM_DEADLINE_S) passed; "
                "the offline brain finished the question"
            )
        return not self.off_reason

    def switch_off(self, warning: str) -> None:
        """No more model steps for this question; only the first reason becomes a warning."""
        with self._lock:
            if not self.off_reason:
                self.off_reason = warning
                self.warnings.append(warning)

    def run(self, step: Callable[[], T]) -> T:
        """Run a model step, giving up when the deadline passes first (the step is left to finish alone)."""
        remaining = self.remaining()
        if remaining is None:
            return step()
        box: dict[str, object] = {}
        done = threading.Event()
        context = contextvars.copy_context()

        def work() -> None:
            try:
                box["value"] = context.run(step)
            except BaseException as exc:  # re-raised in the caller's thread
                box["error"] = exc
            finally:
                done.set()

        threading.Thread(target=work, name="llm-step", daemon=True).start()
        if not done.wait(remaining):
            self.usable()  # records the deadline warning
            raise DeadlinePassed(f"LLM deadline of {self.deadline_s:g} s passed")
        if "error" in box:
            raise box["error"]  # type: ignore[misc]
        return box["value"]  # type: ignore[return-value]


def current_budget() -> QuestionBudget:
    """The running question's budget, or an unbounded one when no question opened a budget."""
    return _current.get() or QuestionBudget()


@contextmanager
def question_budget(budget: QuestionBudget) -> Iterator[QuestionBudget]:
    """Make ``budget`` the running question's budget inside the block."""
    token = _current.set(budget)
    try:
        yield budget
    finally:
        _current.reset(token)
