"""The one fallback rule every role shares: ask the primary answerer (an LLM), and when it fails for
any reason answer with the backup (the offline rules), recording why in the call log.

The question's budget decides whether the primary is asked at all: an unreachable endpoint or a
passed deadline means the backup answers every remaining step of that question without waiting.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, ParamSpec, TypeVar

from providers.brain.budget import current_budget
from providers.brain.calls import CallLog
from providers.brain.errors import LLMUnavailable, ModelGaveUp, describe

P = ParamSpec("P")
R = TypeVar("R")


class WithFallback(Generic[P, R]):
    """A role answered by ``primary``, or by ``backup`` when ``primary`` raises."""

    def __init__(self, step: str, primary: Callable[P, R], backup: Callable[P, R], log: CallLog) -> None:
        self.step = step
        self.primary = primary
        self.backup = backup
        self.log = log

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R:
        record = self.log.start(self.step)
        budget = current_budget()
        try:
            if not budget.usable():
                raise ModelGaveUp(f"LLM off for this question: {budget.off_reason}")
            return budget.run(lambda: self.primary(*args, **kwargs))
        except Exception as exc:
            if isinstance(exc, LLMUnavailable):
                budget.switch_off(f"{exc}; the offline brain answers the rest of this question")
            record.fallback = True
            record.error = describe(exc)
            return self.backup(*args, **kwargs)
        finally:
            self.log.finish(record)
