"""Turning chunks into an index generation: BM25 tokens, batched embedding, atomic write."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
from tqdm import tqdm

from config import Settings
from core.chunks import Chunk
from core.tokenize import tokenize
from ingestion.disk_space import generation_estimate, room_for_generation, vectors_lower_bound
from ingestion.entities import with_entities
from providers.embeddings import Embedder
from retrievers.index import BuildParams, write_generation, write_lock
from retrievers.vector_index import HnswParams


def build_params(settings: Settings) -> BuildParams:
    return BuildParams(
        hnsw=HnswParams(
            threshold=settings.hnsw_threshold,
            m=settings.hnsw_m,
            ef_construction=settings.hnsw_ef_construction,
            ef_search=settings.hnsw_ef_search,
        ),
        k1=settings.bm25_k1,
        b=settings.bm25_b,
    )


def bm25_tokens(chunk: Chunk, title_boost: int) -> list[str]:
    """Body tokens, the section headings' tokens once, and the title's ``title_boost`` times.

    Headings are not part of a chunk's text (they live in ``heading_path``), yet their words are
    what a reader searches for; the title boost is a simple field weighting.
    """
    title = tokenize(chunk.title) if chunk.title and title_boost else []
    headings = [h for h in chunk.heading_path if h != chunk.title]
    return tokenize(chunk.text) + tokenize(" ".join(headings)) + title * title_boost


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
        from ingestion.sinks import open_sink, source_records  # sinks build on this module

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
