"""The command the user typed, so messages tell them what to run next in their own words.

Installed, the engine runs as ``agentic-rag`` (there is no ``main.py`` outside the checkout); from a
checkout it runs as ``python main.py``. Every "run ... ingest" hint goes through ``cli_name``.
"""

from __future__ import annotations

import os
import sys

INSTALLED = "agentic-rag"
CHECKOUT = "python main.py"


def cli_name(argv0: str | None = None) -> str:
    """``agentic-rag`` when the installed console script is running, else ``python main.py``."""
    name = os.path.basename(sys.argv[0] if argv0 is None and sys.argv else argv0 or "")
    return INSTALLED if name.startswith(INSTALLED) else CHECKOUT


def command(rest: str) -> str:
    """A full command line for a hint, e.g. ``command("ingest PATH")`` -> ``agentic-rag ingest PATH``."""
    return f"{cli_name()} {rest}"
