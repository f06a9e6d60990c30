"""Build every retriever over one opened store (local index or Milvus) from settings."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from pathlib import Path

from config import Settings
from core.command import command
from providers.embeddings import Embedder, make_embedder
from retrievers.entity_graph import EntityGraphRetriever
from retrievers.global_search import GlobalRetriever
from retrievers.hybrid import HybridRetriever
from retrievers.index import IndexError_
from retrievers.keyword import KeywordRetriever
from retrievers.multi_hop import MultiHopRetriever, TitleLinker
from retrievers.store import Store, open_store
from retrievers.vector import HydeRetriever, VectorRetriever

log = logging.getLogger(__name__)


@dataclass
class RetrieverSet:
    index: Store
    embedder: Embedder
    vector: VectorRetriever
    keyword: KeywordRetriever
    hybrid: HybridRetriever
    multi_hop: MultiHopRetriever
    hyde: HydeRetriever
    entity_graph: EntityGraphRetriever | None = None  # None when settings.entity_graph is off
    summaries: GlobalRetriever | None = None  # the summary tree's search (the global route)

    def by_name(self, name: str):
        if name not in ("vector", "keyword", "hybrid", "multi_hop", "hyde", "entity_graph", "summaries"):
            raise ValueError(f"unknown retriever {name!r}")
        return getattr(self, name)


def embedder_for(settings: Settings) -> Embedder:
    return make_embedder(
        settings.embedder,
        batch_size=settings.embed_batch_size,
        openai_base_url=settings.openai_base_url,
        openai_api_key=settings.openai_api_key,
        openai_model=settings.embedding_model,
        e5_runtime=settings.e5_runtime,
    )


def build_retrievers(index: Store, settings: Settings, embedder: Embedder | None = None) -> RetrieverSet:
    embedder = embedder or embedder_for(settings)
    if embedder.name != index.embedder_name:
        raise IndexError_(
            f"the index in {index.location} was built with embedder {index.embedder_name!r} but the "
            f"settings select {embedder.name!r}; set AGENTIC_RAG_EMBEDDER accordingly or rebuild with: "
            + command("ingest --rebuild PATH...")
        )
    vector = VectorRetriever(index, embedder)
    keyword = KeywordRetriever(index)
    hybrid = HybridRetriever(
        [vector, keyword],
        index,
        fusion=settings.fusion,
        rrf_k=settings.rrf_k,
        weights={"vector": settings.vector_weight, "keyword": settings.keyword_weight},
        candidate_k=settings.candidate_k,
    )
    return RetrieverSet(
        index=index,
        embedder=embedder,
        vector=vector,
        keyword=keyword,
        hybrid=hybrid,
        multi_hop=MultiHopRetriever(hybrid, titles=TitleLinker(index.titles()), rrf_k=settings.rrf_k),
        hyde=HydeRetriever(vector),
        entity_graph=EntityGraphRetriever(hybrid, index) if settings.entity_graph else None,
        summaries=GlobalRetriever(hybrid),
    )


def open_retrievers(settings: Settings, index_dir: Path | None = None) -> RetrieverSet:
    started = time.perf_counter()
    store = open_store(settings, index_dir)
    try:
        retrievers = build_retrievers(store, settings)
    except BaseException:
        store.close()
        raise
    log.debug(
        "opened %s: %d chunks, embedder %s (%.0f ms)",
        store.location,
        store.count(),
        settings.embedder,
        (time.perf_counter() - started) * 1000,
    )
    return retrievers
