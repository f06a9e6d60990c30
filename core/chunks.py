"""Data types shared by ingestion, the index, retrievers and the graph.

Everything here is a pydantic model so it serialises to plain JSON: the graph state stores
``model_dump()`` output of these types, never live objects.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field


class Chunk(BaseModel):
    """One indexed passage with the metadata needed for filtering and citation."""

    id: str
    text: str
    source: str
    title: str = ""
    heading_path: list[str] = Field(default_factory=list)
    chunk_index: int = 0
    char_start: int = 0
    char_end: int = 0
    language: str = "en"
    content_hash: str = ""
    mtime: float = 0.0
    metadata: dict[str, Any] = Field(default_factory=dict)

    def locator(self) -> str:
        """Where a reader finds this chunk: the file, plus the record id for JSON Lines corpora."""
        doc_id = self.metadata.get("doc_id")
        return f"{self.source}#{doc_id}" if doc_id is not None else self.source

    def get(self, key: str) -> Any:
        """Look a key up among the fixed fields first, then the free-form metadata."""
        if key in Chunk.model_fields and key != "metadata":
            return getattr(self, key)
        return self.metadata.get(key)


class ScoredChunk(BaseModel):
    """A chunk as a retriever returns it: a fused score plus per-retriever ranks and scores."""

    chunk: Chunk
    score: float
    ranks: dict[str, int] = Field(default_factory=dict)
    scores: dict[str, float] = Field(default_factory=dict)
    # The e5 reranker's raw query-passage cosine, None where e5 has not rescored the chunk. Typed, not
    # only a ``scores`` entry, because the graph acts on it (the off-topic stop); None keeps older
    # checkpoints loadable.
    e5_cosine: float | None = None

    @property
    def id(self) -> str:
        return self.chunk.id


class Filters(BaseModel):
    """Metadata filters honoured by every retriever.

    ``source`` is a glob (``docs/*.md``, ``*报告*``); dates compare with the file modification time;
    ``equals`` matches any chunk field or metadata key exactly.
    """

    source: str | None = None
    language: str | None = None
    modified_after: datetime | None = None
    modified_before: datetime | None = None
    equals: dict[str, Any] = Field(default_factory=dict)
    access: list[str] | None = Field(
        default=None,
        description="the caller's access groups (core/access.py): a chunk passes when it has no groups or "
        "shares one; None = unrestricted. Set by the server from the caller's identity, never by a query",
    )

    def is_empty(self) -> bool:
        return self.access is None and not (
            self.source or self.language or self.modified_after or self.modified_before or self.equals
        )

    def for_caller(self, access: list[str] | None) -> Filters:
        """These filters narrowed to what a caller with ``access`` groups may read (None: unrestricted)."""
        return self if access is None else self.model_copy(update={"access": sorted(set(access))})

    @classmethod
    def from_pairs(cls, pairs: list[str]) -> Filters:
        """Build filters from CLI ``key=value`` pairs (source, language, after, before, or any key)."""
        data: dict[str, Any] = {"equals": {}}
        for pair in pairs:
            if "=" not in pair:
                raise ValueError(f"filter {pair!r} must look like key=value")
            key, value = (part.strip() for part in pair.split("=", 1))
            if key == "source":
                data["source"] = value
            elif key in ("language", "lang"):
                data["language"] = value
            elif key in ("after", "modified_after"):
                data["modified_after"] = value
            elif key in ("before", "modified_before"):
                data["modified_before"] = value
            else:
                data["equals"][key] = value
        return cls.model_validate(data)
