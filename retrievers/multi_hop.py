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
_ARTICLE_RE = re.compile(r"^(?:The|A|An)\s+")
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
        first = {q: self.base.search(q, k, filters) for q in queries}
        second = (
            {b: self.base.search(b, k, filters) for b in self.bridges(query, first)}
            if self.second_hop
            else {}
        )
        return fuse_hops(first, second, rrf_k=self.rrf_k)[:k]

    def bridges(self, query: str, rankings: dict[str, list[ScoredChunk]]) -> list[str]:
        """Names mentioned in the top first-hop passages that the question does not mention.

        A passage's own title is not a bridge (searching it finds the same passage again).
        """
        seen_query = query.lower()
        found: list[str] = []
        for hits in rankings.values():
            for hit in hits[: self.bridge_docs]:
                for name in _names(hit.chunk.text):
                    if name.lower() in seen_query or name.lower() == hit.chunk.title.lower() or name in found:
                        continue
                    found.append(name)
        return found[: self.max_bridges]


def fuse_hops(
    first: dict[str, list[ScoredChunk]], second: dict[str, list[ScoredChunk]], *, rrf_k: int = 60
) -> list[ScoredChunk]:
    """Fuse within each hop, then fuse the two hops as equals.

    Fusing every list at once would favour chunks that many first-hop queries agree on and bury
    the second hop's single best passage, which is the one a bridge question needs.
    """
    hop1 = reciprocal_rank_fusion({f"hop1:{q}": hits for q, hits in first.items()}, k=rrf_k)
    if not second:
        fused = hop1
    else:
        # The passages the bridges came from are already on top of hop 1; hop 2 is for new ones.
        known = {hit.id for hit in hop1[:3]}
        hop2 = reciprocal_rank_fusion(
            {f"hop2:{q}": [h for h in hits if h.id not in known] for q, hits in second.items()}, k=rrf_k
        )
        fused = reciprocal_rank_fusion({"hop1": hop1, "hop2": hop2}, k=rrf_k)
    for hit in fused:
        hit.ranks = _collapse_ranks(hit.ranks)
    return fused


def _names(text: str) -> list[str]:
    names = [_ARTICLE_RE.sub("", m.group().strip()) for m in _NAME_RE.finditer(text[:600])]
    names = [n for n in names if " " in n]  # single capitalised words are mostly sentence starts
    names += [next(g for g in m.groups() if g) for m in _ZH_NAME_RE.finditer(text[:600])]
    return names[:6]


def _collapse_ranks(ranks: dict[str, int]) -> dict[str, int]:
    """Keep the per-retriever ranks plus the best rank seen in each hop."""
    out: dict[str, int] = {}
    for key, rank in ranks.items():
        hop = key.split(":", 1)[0] if key.startswith("hop") else key
        out[hop] = min(rank, out.get(hop, rank))
    return out
