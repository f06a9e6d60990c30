"""Re-checking stored citations against a caller's groups now: what a thread or a feedback record kept
was readable when it was written, but a user may since have lost a group, or a document may have been
re-ingested with other groups or removed. The store's current metadata decides, as retrieval does."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from core.access import readable


def unreadable_chunks(store: Any, chunk_ids: Iterable[str], access: list[str] | None) -> set[str]:
    """The ids a caller with groups ``access`` (None: unrestricted) may not read now: chunks of a
    document whose groups exclude them, and chunks no longer in the store (they cannot be checked)."""
    if access is None:
        return set()
    ids = {str(i) for i in chunk_ids if i}
    if not ids:
        return set()
    found = store.chunks_by_id(sorted(ids))
    return {i for i in ids if i not in found or not readable(found[i].metadata, access)}
