"""Search of the summary tree for questions about a whole document or collection (the ``global`` route).

``document`` scope ("总结这份报告的主要结论"): the document summary that matches the question best, then
that document's section summaries, best first. ``collection`` scope ("What are the main topics of these
docs?"): one document summary per document (map: each is its document's central sentences, written at
ingest; reduce: the answer writer combines them), at most ``max_documents`` of them, best matching
first. An index without summaries (ingested before the tree, or a dataset corpus of passages) falls
back to the ordinary passage search, so the route never answers from nothing.
"""

from __future__ import annotations

from typing import Literal

from core.chunks import Filters, ScoredChunk
from retrievers.base import Retriever
from retrievers.levels import DOCUMENT, SECTION, at_level

Scope = Literal["document", "collection"]


class GlobalRetriever:
    name = "global"

    def __init__(self, base: Retriever, *, max_documents: int = 12) -> None:
        self.base = base
        self.max_documents = max_documents

    def search(
        self, query: str, k: int, filters: Filters | None = None, scope: Scope = "document"
    ) -> list[ScoredChunk]:
        documents = self.base.search(query, max(k, self.max_documents), at_level(filters, DOCUMENT))
        if not documents:
            return self.base.search(query, k, filters)
        if scope == "collection":
            return _tag(documents[: self.max_documents], "collection")
        best = documents[0]
        scoped = at_level(filters, SECTION)
        scoped.equals["source"] = best.chunk.source
        sections = self.base.search(query, k, scoped)
        return _tag([best, *sections][:k], "document")


def _tag(hits: list[ScoredChunk], scope: str) -> list[ScoredChunk]:
    for rank, hit in enumerate(hits, start=1):
        hit.ranks[f"global:{scope}"] = rank
    return hits
