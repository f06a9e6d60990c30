"""Turn expected failures into one clear line on stderr and a non-zero exit, not a traceback."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Callable

from config import SettingsError


def expected_errors() -> tuple[type[BaseException], ...]:
    """The project's own exception types (and the standard ones its messages use): each says what to do."""
    from ingestion.documents import LoaderError
    from memory.checkpointer import CheckpointerError
    from memory.threads import ThreadNotFoundError
    from retrievers.index import IndexError_

    return (
        SettingsError,
        IndexError_,
        CheckpointerError,
        ThreadNotFoundError,
        LoaderError,
        FileNotFoundError,
        ValueError,
    )


INTERRUPTED = 130  # the shell's code for a command stopped by Ctrl-C


def run_safely(handler: Callable[[argparse.Namespace], int], args: argparse.Namespace) -> int:
    try:
        return handler(args)
    except KeyboardInterrupt:
        sys.stderr.write("interrupted\n")
        return INTERRUPTED
    except Exception as exc:
        if not isinstance(exc, expected_errors()):
            raise
        logging.getLogger(__name__).debug("command failed", exc_info=True)
        from cli.common import neutralised

        message = neutralised(" ".join(str(exc).split()) or type(exc).__name__)
        sys.stderr.write(f"error: {message}\n")
        return 2
