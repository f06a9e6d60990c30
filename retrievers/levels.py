"""Levels of the summary tree (``ingestion.summaries``): passages, section summaries, document summaries.

Summary chunks live in the same index as passages but are not passages: an ordinary search leaves
them out unless its filters name a level (``level=section`` or ``level=document``), so a top 10 of
passages is never flooded by summaries of the same text; the ``global`` route asks for them.
"""

from __future__ import annotations

from core.chunks import Filters

LEVEL_KEY = "level"
SECTION = "section"
DOCUMENT = "document"
SUMMARY_LEVELS = (SECTION, DOCUMENT)


def names_level(filters: Filters | None) -> bool:
    """Whether the filters choose a level themselves (then no level is left out by default)."""
    return filters is not None and LEVEL_KEY in filters.equals


def at_level(filters: Filters | None, level: str) -> Filters:
    """The filters restricted to one level of the tree."""
    scoped = (filters or Filters()).model_copy(deep=True)
    scoped.equals[LEVEL_KEY] = level
    return scoped
