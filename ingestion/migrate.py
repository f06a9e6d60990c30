"""Copy a local index into Milvus without re-embedding: stored vectors, BM25 tokens and file records."""

from __future__ import annotations

from pathlib import Path

from config import Settings
from core.command import command
from retrievers.index import IndexError_, read_generation
from retrievers.milvus_store import MilvusBuild, MilvusStore
from retrievers.store import milvus_target


def migrate_to_milvus(folder: Path, settings: Settings, *, replace: bool = False) -> dict[str, object]:
    """Write every chunk of the index in ``folder`` into the settings' Milvus collection.

    Refuses a collection that already holds chunks unless ``replace`` (then it is dropped first), so a
    typo never mixes two corpora. Returns what was copied.
    """
    previous = read_generation(folder)
    if previous is None:
        raise IndexError_(f"no index in {folder} to migrate; build one with: {command('ingest PATH...')}")
    docstore, vectors, manifest = previous
    try:
        build = MilvusBuild(
            embedder=manifest["embedder"],
            dim=int(manifest["dim"]),
            hnsw_m=settings.hnsw_m,
            ef_construction=settings.hnsw_ef_construction,
            k1=float(manifest.get("bm25", {}).get("k1", settings.bm25_k1)),
            b=float(manifest.get("bm25", {}).get("b", settings.bm25_b)),
        )
        target = milvus_target(settings)
        store = MilvusStore.create(target, build, replace=replace)
        try:
            if store.count() and not replace:
                raise IndexError_(
                    f"the {target.describe()} already holds {store.count()} chunks; migrate with --replace "
                    "to overwrite it, or choose another AGENTIC_RAG_MILVUS_COLLECTION"
                )
            written = store.upsert(
                (chunk, tokens.split(" ") if tokens else [], vectors[pos])
                for pos, chunk, tokens in docstore.iter_rows()
            )
            files = docstore.files()
            store.put_files(files.values())
            store.flush()
            return {"from": str(folder), "to": target.describe(), "chunks": written, "files": len(files)}
        finally:
            store.close()
    finally:
        docstore.close()
