"""The one fallback rule every role shares: ask the primary answerer (an LLM), and when it fails for
any reason answer with the backup (the offline rules), recording why in the call log."""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, ParamSpec, TypeVar

from providers.brain.calls import CallLog
from providers.brain.errors import describe

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
        try:
            return self.primary(*args, **kwargs)
        except Exception as exc:
            record.fallback = True
            record.error = describe(exc)
            return self.backup(*args, **kwargs)
        finally:
            self.log.finish(record)
