"""Access groups: who may read a document, and the one predicate every store applies before ranking.

A document's groups are set at ingest (``ingest PATH --access GROUP`` or Markdown front matter
``access: [group, ...]``) and stored in each chunk's metadata under ``ACCESS_KEY``. A document without
groups is readable by every user of its collection; one with groups only by callers in at least one of
them. A caller's groups travel in ``Filters.access`` (None: no restriction, the CLI and admins), so the
same mask that applies metadata filters inside BM25, FAISS and Milvus applies permissions too.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

ACCESS_KEY = "access"
MAX_GROUP_CHARS = 64
_GROUP_RE = re.compile(r"^[\w][\w.@-]*$")


class AccessGroupError(ValueError):
    """A group name that cannot be stored or matched (empty, too long, or with odd characters)."""


def group_name(value: str) -> str:
    name = str(value).strip()
    if not name or len(name) > MAX_GROUP_CHARS or not _GROUP_RE.match(name):
        raise AccessGroupError(
            f"access group {value!r} must be 1-{MAX_GROUP_CHARS} letters, digits, '_', '.', '@' or '-'"
        )
    return name


def groups(values: Iterable[str] | str | None) -> list[str]:
    """Sorted, de-duplicated, validated groups; ``"a,b"`` strings and repeated options both work."""
    if values is None:
        return []
    if isinstance(values, str):
        values = [values]
    names = {group_name(part) for value in values for part in str(value).split(",") if part.strip()}
    return sorted(names)


def document_groups(metadata: Mapping[str, Any]) -> list[str]:
    """The groups stored on a chunk (empty: readable by everyone)."""
    raw = metadata.get(ACCESS_KEY)
    if not raw:
        return []
    return [str(g) for g in raw] if isinstance(raw, list) else [str(raw)]


def readable(metadata: Mapping[str, Any], caller: Iterable[str] | None) -> bool:
    """Whether a caller with groups ``caller`` (None: unrestricted) may read a chunk with this metadata."""
    if caller is None:
        return True
    needed = document_groups(metadata)
    return not needed or bool(set(needed) & set(caller))


def cited_ids(citations: Iterable[Any] | None) -> list[str]:
    """Chunk ids of citations stored as dicts (a log row, a message's kwargs) or as Citation models."""
    ids = []
    for cite in citations or []:
        chunk_id = cite.get("chunk_id") if isinstance(cite, Mapping) else getattr(cite, "chunk_id", None)
        if chunk_id:
            ids.append(str(chunk_id))
    return ids
