"""Multi-hop retrieval: search each sub-query, fuse, and optionally hop once more via bridge entities.

The second hop matters for questions whose second passage shares no words with the question: it is
reachable only through a title or name that the first passage mentions.
"""

from __future__ import annotations

import re

from retrievers.base import Retriever
from retrievers.fusion import reciprocal_rank_fusion
from retrievers.types import Filters, ScoredChunk

_NAME_RE = re.compile(r"\b[A-Z][\w'’.-]*(?:\s+(?:of|de|the|von|van|and)?\s*[A-Z][\w'’.-]*)*")
_ZH_NAME_RE = re.compile(r"《([^》]{1,30})》|「([^」]{1,30})」|“([^”]{1,30})”")


class MultiHopRetriever:
    name = "multi_hop"

    def __init__(
        self,
        base: Retriever,
        *,
        rrf_k: int = 60,
        second_hop: bool = True,
        bridge_docs: int = 3,
        max_bridges: int = 4,
    ) -> None:
        self.base = base
        self.rrf_k = rrf_k
        self.second_hop = second_hop
        self.bridge_docs = bridge_docs
        self.max_bridges = max_bridges

    def search(
        self,
        query: str,
        k: int,
        filters: Filters | None = None,
        sub_queries: list[str] | None = None,
    ) -> list[ScoredChunk]:
        queries = list(dict.fromkeys([q for q in (sub_queries or []) if q.strip()])) or [query]
        if query not in queries:
            queries.append(query)
        rankings = {f"hop1:{q}": self.base.search(q, k, filters) for q in queries}
        if self.second_hop:
            for bridge in self.bridges(query, rankings):
                rankings[f"hop2:{bridge}"] = self.base.search(f"{bridge} {query}", k, filters)
        fused = reciprocal_rank_fusion(rankings, k=self.rrf_k)
        for hit in fused:
            hit.ranks = _collapse_ranks(hit.ranks)
        return fused[:k]

    def bridges(self, query: str, rankings: dict[str, list[ScoredChunk]]) -> list[str]:
        """Titles and names from the top first-hop passages that the question does not mention."""
        seen_query = query.lower()
        found: list[str] = []
        for hits in rankings.values():
            for hit in hits[: self.bridge_docs]:
                for name in [hit.chunk.title, *_names(hit.chunk.text)]:
                    name = name.strip()
                    if len(name) > 2 and name.lower() not in seen_query and name not in found:
                        found.append(name)
        return found[: self.max_bridges]


def _names(text: str) -> list[str]:
    names = [m.group().strip() for m in _NAME_RE.finditer(text[:600])]
    names = [n for n in names if " " in n or len(n) > 3]
    names += [next(g for g in m.groups() if g) for m in _ZH_NAME_RE.finditer(text[:600])]
    return names[:6]


def _collapse_ranks(ranks: dict[str, int]) -> dict[str, int]:
    """Keep the per-retriever ranks plus the best rank seen in each hop."""
    out: dict[str, int] = {}
    for key, rank in ranks.items():
        hop = key.split(":", 1)[0] if key.startswith("hop") else key
        out[hop] = min(rank, out.get(hop, rank))
    return out
