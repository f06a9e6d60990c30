"""The store interface the retrievers search, and the choice between its two implementations.

``local``: the index folder (``retrievers.index.Index``: SQLite + FAISS + BM25, one machine).
``milvus``: a Milvus collection (``retrievers.milvus_store.MilvusStore``: Milvus Lite in process, or a
Milvus server or cluster shared by several processes). Retrievers see only this protocol, so vector,
keyword, hybrid, multi-hop and HyDE retrieval behave the same over either.
"""

from __future__ import annotations

from collections.abc import Collection, Hashable, Iterable, Iterator
from pathlib import Path
from typing import Protocol, runtime_checkable

import numpy as np

from config import Settings
from core.chunks import Chunk, Filters


@runtime_checkable
class Store(Protocol):
    @property
    def embedder_name(self) -> str: ...

    @property
    def location(self) -> str:
        """Where the chunks live, for messages (a folder, or a Milvus URI and collection)."""
        ...

    def vector_search(
        self, query_vector: np.ndarray, k: int, filters: Filters | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Keys and scores of the best ``k`` chunks, best first (keys: positions locally, ids in Milvus)."""
        ...

    def keyword_search(
        self, tokens: list[str], k: int, filters: Filters | None = None
    ) -> tuple[np.ndarray, np.ndarray]: ...

    def holders(self, token: str, k: int, filters: Filters | None = None) -> np.ndarray:
        """Keys of at most ``k`` chunks the caller may read that hold the term, whatever its score."""
        ...

    def known(self, tokens: Iterable[str]) -> set[str]:
        """The tokens the keyword index's vocabulary holds (empty where the store has none to read)."""
        ...

    def mentions(
        self, texts: Iterable[str], filters: Filters | None = None, without: Collection[str] = ()
    ) -> bool:
        """Whether a chunk the caller may read, other than ``without`` (chunk ids), holds any of
        ``texts`` as written (one scan; for the few words a posting lookup cannot settle)."""
        ...

    def chunks_at(self, keys: Iterable[Hashable]) -> dict[Hashable, Chunk]: ...

    def resolve(self, keys: Iterable[Hashable], scores: Iterable[float]) -> list[tuple[Chunk, float]]: ...

    def chunks_by_id(self, chunk_ids: Iterable[str]) -> dict[str, Chunk]:
        """Chunks by their own ids (a resumed conversation's passages); missing ids are left out."""
        ...

    def titles(self) -> list[str]: ...

    def count(self) -> int: ...

    def iter_chunks(self) -> Iterator[Chunk]: ...

    def stats(self) -> dict[str, object]: ...

    def close(self) -> None: ...


def milvus_target(settings: Settings, collection: str | None = None):
    from retrievers.milvus_store import MilvusTarget

    return MilvusTarget(
        uri=settings.milvus_uri,
        collection=collection or settings.milvus_collection,
        token=settings.milvus_token,
        db=settings.milvus_db,
    )


def open_store(settings: Settings, index_dir: Path | None = None, *, collection: str | None = None) -> Store:
    """Open the store the settings select (``AGENTIC_RAG_STORE``)."""
    if settings.store == "milvus":
        from retrievers.milvus_store import MilvusStore

        return MilvusStore.open(milvus_target(settings, collection), ef_search=settings.hnsw_ef_search)
    from retrievers.index import open_index

    return open_index(Path(index_dir or settings.index_dir), ef_search=settings.hnsw_ef_search)


def store_exists(settings: Settings, index_dir: Path | None = None, *, collection: str | None = None) -> bool:
    if settings.store == "milvus":
        from retrievers.milvus_store import connect

        target = milvus_target(settings, collection)
        client = connect(target)
        try:
            return bool(client.has_collection(target.collection))
        finally:
            client.close()
    from retrievers.index import index_exists

    return index_exists(Path(index_dir or settings.index_dir))
