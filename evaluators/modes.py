"""The index an evaluation dataset is searched in: built once per corpus and index-shaping settings,
then reused (``app.evaluation`` runs the graph over it in each mode)."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

from config import Settings
from core.chunks import Chunk
from core.text import detect_language
from evaluators.datasets import Dataset, corpus_hash
from ingestion.indexing import index_chunks
from retrievers.factory import embedder_for
from retrievers.index import IndexError_
from retrievers.store import open_store, store_exists

# Bump when what gets indexed changes (e.g. what text is embedded), so cached eval indexes rebuild.
INDEX_RECIPE = 4  # 4: passages carry their entities (issue 26)
INDEX_SETTINGS = ("embedder", "bm25_k1", "bm25_b", "bm25_title_boost", "hnsw_threshold", "hnsw_m")


def index_key(dataset: Dataset, settings: Settings) -> str:
    """Same corpus and same index-shaping settings -> same index folder, reused across runs."""
    shaping = {name: getattr(settings, name) for name in INDEX_SETTINGS}
    raw = corpus_hash(dataset) + json.dumps(shaping, sort_keys=True, default=str) + f"/{INDEX_RECIPE}"
    return hashlib.sha256(raw.encode()).hexdigest()[:12]


def corpus_chunks(dataset: Dataset) -> list[Chunk]:
    """One chunk per corpus passage, keyed by the dataset's own ids so gold ids match."""
    return [
        Chunk(
            id=doc.id,
            text=doc.text,
            source=f"{dataset.name}/{doc.id}",
            title=doc.title,
            heading_path=[doc.title] if doc.title else [],
            chunk_index=0,
            char_end=len(doc.text),
            language=detect_language(doc.title + " " + doc.text),
        )
        for doc in dataset.corpus
    ]


def prepare_index(
    dataset: Dataset, settings: Settings, index_dir: Path | None, progress: bool
) -> tuple[Settings, Path]:
    """Settings and folder of the dataset's index, built unless an intact one exists.

    With the Milvus store the index is a collection named after the dataset and the same key.
    """
    key = index_key(dataset, settings)
    folder = index_dir or Path(".agentic_rag/eval") / f"{dataset.name}-{key}"
    if settings.store == "milvus":
        name = re.sub(r"[^A-Za-z0-9_]", "_", f"eval_{dataset.name}_{key}")
        settings = settings.model_copy(update={"milvus_collection": name})
    if store_exists(settings, folder):
        try:
            store = open_store(settings, folder)
            complete = store.count() == len(dataset.corpus)  # a Milvus build may have been cut short
            store.close()
            if complete:
                return settings, folder
        except IndexError_:
            pass  # damaged or old: rebuild below
    index_chunks(
        corpus_chunks(dataset),
        settings,
        embedder_for(settings),
        index_dir=folder,
        progress=progress,
        extra={"dataset": dataset.name, "corpus_hash": corpus_hash(dataset)},
        collection=settings.milvus_collection if settings.store == "milvus" else None,
    )
    return settings, folder
