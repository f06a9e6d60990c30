"""Turn expected failures into one clear line on stderr and a non-zero exit, not a traceback."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Callable

from config import SettingsError


def run_safely(handler: Callable[[argparse.Namespace], int], args: argparse.Namespace) -> int:
    from retrievers.index import IndexError_

    try:
        return handler(args)
    except KeyboardInterrupt:
        sys.stderr.write("interrupted\n")
        return 130
    except (SettingsError, IndexError_, FileNotFoundError, ValueError) as exc:
        logging.getLogger(__name__).debug("command failed", exc_info=True)
        sys.stderr.write(f"error: {exc}\n")
        return 2
