"""Every retriever as a LangChain ``BaseRetriever``, so LangChain chains and agents can use them."""

from __future__ import annotations

from typing import Any

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict

from core.chunks import Filters, ScoredChunk
from retrievers.base import Retriever


def to_document(hit: ScoredChunk) -> Document:
    chunk = hit.chunk
    metadata: dict[str, Any] = {
        **chunk.metadata,
        **chunk.model_dump(exclude={"text", "metadata"}),
        "score": hit.score,
        "ranks": hit.ranks,
        "scores": hit.scores,
    }
    return Document(page_content=chunk.text, metadata=metadata, id=chunk.id)


class LangChainRetriever(BaseRetriever):
    """Adapter: ``LangChainRetriever(retriever=HybridRetriever(...), k=5).invoke("问题")``."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    retriever: Any
    k: int = 10
    filters: Filters | None = None

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        engine: Retriever = self.retriever
        return [to_document(hit) for hit in engine.search(query, self.k, self.filters)]
