"""Where an ingest writes: a new generation of the local index folder, or upserts into Milvus.

Both take the same input (the previous file records, the chunks and vectors of new or changed files,
and which old files stay) so the ingest summary is the same whichever store the settings select.
Local: every write is a full new generation (kept chunks are copied with their stored vectors and
tokens). Milvus: only the difference is written: a changed file's chunks are upserted by id, chunk ids
it no longer has and a removed file's chunks are deleted by primary key.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Protocol

import numpy as np

from config import Settings
from core.chunks import Chunk
from ingestion.disk_space import generation_estimate, room_for_generation, vectors_lower_bound
from ingestion.index_params import bm25_tokens, build_params
from retrievers.docstore import FileRecord
from retrievers.index import IndexError_, read_generation, write_generation, write_lock
from retrievers.store import milvus_target


class Sink(Protocol):
    location: str

    def files(self) -> dict[str, FileRecord]: ...

    def write(
        self,
        new_chunks: list[Chunk],
        vectors: np.ndarray,
        records: dict[str, FileRecord],
        keep_sources: set[str],
    ) -> int:
        """Make the store hold the kept sources plus the new chunks; return the chunk total."""
        ...


def _embedder_mismatch(location: str, built: str, wanted: str) -> IndexError_:
    return IndexError_(
        f"the index in {location} was built with embedder {built!r}, not {wanted!r}; "
        "re-ingest everything with --rebuild"
    )


class LocalSink:
    def __init__(self, folder: Path, settings: Settings, embedder_name: str, dim: int, rebuild: bool) -> None:
        self.folder = folder
        self.location = str(folder)
        self.settings = settings
        self.embedder_name = embedder_name
        self.dim = dim
        self.previous = None if rebuild else read_generation(folder)
        if self.previous is not None and self.previous[2]["embedder"] != embedder_name:
            raise _embedder_mismatch(self.location, self.previous[2]["embedder"], embedder_name)

    def files(self) -> dict[str, FileRecord]:
        return self.previous[0].files() if self.previous else {}

    def write(self, new_chunks, vectors, records, keep_sources) -> int:
        counted = _Counted(self._rows(new_chunks, vectors, keep_sources))
        n_chunks = len(new_chunks) + sum(records[s].n_chunks for s in keep_sources if s in records)
        previous = None
        if self.previous is not None:
            manifest = self.previous[2]
            previous = (sum(manifest["files"].values()), manifest["n_chunks"])
        text_bytes = sum(len(c.text.encode()) for c in new_chunks)
        with room_for_generation(
            self.folder,
            needed_at_least=vectors_lower_bound(n_chunks, self.dim),
            estimate=generation_estimate(n_chunks, self.dim, text_bytes, previous),
        ):
            write_generation(
                self.folder,
                counted,
                records.values(),
                embedder=self.embedder_name,
                dim=self.dim,
                params=build_params(self.settings),
            )
        return counted.n

    def _rows(self, new_chunks, vectors, keep_sources) -> Iterator[tuple[Chunk, list[str], np.ndarray]]:
        if self.previous is not None:
            store, old_vectors, _ = self.previous
            for pos, chunk, tokens in store.iter_rows(keep_sources):
                yield chunk, tokens.split(" ") if tokens else [], old_vectors[pos]
        for chunk, vector in zip(new_chunks, vectors, strict=True):
            yield chunk, bm25_tokens(chunk, self.settings.bm25_title_boost), vector

    def close(self) -> None:
        if self.previous is not None:
            self.previous[0].close()


class MilvusSink:
    def __init__(
        self, settings: Settings, embedder_name: str, dim: int, rebuild: bool, collection: str | None
    ):
        from retrievers.milvus_store import MilvusBuild, MilvusStore

        build = MilvusBuild(
            embedder=embedder_name,
            dim=dim,
            hnsw_m=settings.hnsw_m,
            ef_construction=settings.hnsw_ef_construction,
            k1=settings.bm25_k1,
            b=settings.bm25_b,
        )
        self.settings = settings
        self.store = MilvusStore.create(milvus_target(settings, collection), build, replace=rebuild)
        self.location = self.store.location
        if self.store.embedder_name != embedder_name:
            self.store.close()
            raise _embedder_mismatch(self.location, self.store.embedder_name, embedder_name)

    def files(self) -> dict[str, FileRecord]:
        return self.store.files()

    def write(self, new_chunks, vectors, records, keep_sources) -> int:
        old_files = self.store.files()
        replaced = {s for s in old_files if s not in keep_sources}
        new_ids = {c.id for c in new_chunks}
        stale = [i for ids in self.store.ids_of(replaced).values() for i in ids if i not in new_ids]
        # Upsert first, delete after: a reader never sees a changed file with no chunks at all.
        self.store.upsert(
            (c, bm25_tokens(c, self.settings.bm25_title_boost), v)
            for c, v in zip(new_chunks, vectors, strict=True)
        )
        self.store.delete(stale)
        self.store.put_files(r for s, r in records.items() if s not in keep_sources)
        self.store.delete_files(s for s in replaced if s not in records)
        self.store.flush()
        return self.store.count()

    def close(self) -> None:
        self.store.close()


@contextmanager
def open_sink(
    settings: Settings,
    embedder_name: str,
    dim: int,
    *,
    index_dir: Path | None = None,
    rebuild: bool = False,
    collection: str | None = None,
) -> Iterator[Sink]:
    """The sink for the selected store; the local one holds the folder's write lock while open."""
    if settings.store == "milvus":
        sink = MilvusSink(settings, embedder_name, dim, rebuild, collection)
        try:
            yield sink
        finally:
            sink.close()
        return
    folder = Path(index_dir or settings.index_dir)
    with write_lock(folder):
        local = LocalSink(folder, settings, embedder_name, dim, rebuild)
        try:
            yield local
        finally:
            local.close()


def source_records(chunks: list[Chunk]) -> dict[str, FileRecord]:
    """File records for chunks that come without files (dataset corpora, an app's own texts)."""
    now = time.time()
    out: dict[str, FileRecord] = {}
    for chunk in chunks:
        old = out.get(chunk.source)
        out[chunk.source] = FileRecord(
            source=chunk.source,
            file_hash="",
            mtime=max(chunk.mtime, old.mtime if old else 0.0),
            size=0,
            n_chunks=(old.n_chunks if old else 0) + 1,
            ingested_at=now,
        )
    return out


class _Counted:
    """Pass rows through while counting them."""

    def __init__(self, rows: Iterator) -> None:
        self.rows = rows
        self.n = 0

    def __iter__(self) -> Iterator:
        for row in self.rows:
            self.n += 1
            yield row
