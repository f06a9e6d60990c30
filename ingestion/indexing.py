"""Turning chunks into an index generation: BM25 tokens, batched embedding, atomic write."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
from tqdm import tqdm

from config import Settings
from core.chunks import Chunk
from ingestion.disk_space import generation_estimate, room_for_generation, vectors_lower_bound
from ingestion.entities import with_entities
from ingestion.index_params import bm25_tokens, build_params
from providers.embeddings import Embedder
from retrievers.index import write_generation, write_lock


def embedding_text(chunk: Chunk) -> str:
    """What gets embedded: the heading path (or title) as context, then the chunk's text."""
    context = " > ".join(chunk.heading_path) if chunk.heading_path else chunk.title
    if not context or chunk.text.startswith(context):
        return chunk.text
    return f"{context}\n{chunk.text}"


def progress_interval() -> float:
    """Redraw a progress bar often on a terminal, rarely when stderr goes to a log file."""
    return 0.2 if sys.stderr.isatty() else 15.0


def embed_in_batches(
    embedder: Embedder, texts: list[str], batch_size: int, progress: bool, desc: str = "embedding"
) -> np.ndarray:
    if not texts:
        return np.zeros((0, embedder.dim), dtype=np.float32)
    blocks = []
    with tqdm(
        total=len(texts),
        desc=desc,
        unit="chunk",
        disable=not progress,
        leave=False,
        mininterval=progress_interval(),
    ) as bar:
        for start in range(0, len(texts), batch_size):
            batch = texts[start : start + batch_size]
            blocks.append(np.asarray(embedder.embed_documents(batch), dtype=np.float32))
            bar.update(len(batch))
    return np.concatenate(blocks)


def index_chunks(
    chunks: list[Chunk],
    settings: Settings,
    embedder: Embedder,
    *,
    index_dir: Path,
    vectors: np.ndarray | None = None,
    progress: bool = True,
    extra: dict | None = None,
    collection: str | None = None,
) -> int:
    """Index prepared chunks (a dataset corpus) afresh in the selected store; returns the chunk count.

    Local: a new generation in ``index_dir``. Milvus: the collection (``collection`` or the settings'
    one) is dropped and re-created.
    """
    chunks = with_entities(chunks)
    if vectors is None:
        vectors = embed_in_batches(
            embedder, [embedding_text(c) for c in chunks], settings.embed_batch_size, progress
        )
    if settings.store == "milvus":
        from ingestion.sinks import open_sink, source_records

        with open_sink(settings, embedder.name, embedder.dim, rebuild=True, collection=collection) as sink:
            sink.write(chunks, np.asarray(vectors), source_records(chunks), set())
        return len(chunks)
    text_bytes = sum(len(c.text.encode()) for c in chunks)
    with (
        write_lock(index_dir),
        room_for_generation(
            index_dir,
            needed_at_least=vectors_lower_bound(len(chunks), embedder.dim),
            estimate=generation_estimate(len(chunks), embedder.dim, text_bytes, None),
        ),
    ):
        write_generation(
            index_dir,
            ((c, bm25_tokens(c, settings.bm25_title_boost), v) for c, v in zip(chunks, vectors, strict=True)),
            [],
            embedder=embedder.name,
            dim=embedder.dim,
            params=build_params(settings),
            extra=extra,
        )
    return len(chunks)
