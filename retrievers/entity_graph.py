"""Entity-graph retrieval (HippoRAG-style): personalised PageRank over a passage–entity graph, fused
with hybrid search.

The graph is the index's own data: every passage stores the entities ingest found in it (chunk
metadata ``entities``, from ``core.entities``), so it is incremental, survives re-ingest and every
index generation, and is the same over the local index and Milvus. It is assembled into a scipy
sparse matrix the first time it is searched. A question seeds the walk at the entities it names
(weighted by specificity, 1 / number of passages naming the entity, as HippoRAG does) and at hybrid
search's best passages; the walk reaches the bridge passage that shares an entity, not words, with
the question. Where the walk gate (``walk_gate.py``, fitted) reads the question as one the walk serves,
the walk's ranking leads and hybrid's remaining hits follow; otherwise hybrid's own ranking stands. A
how-to question fuses the two by weighted reciprocal rank fusion instead.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass

import numpy as np
from scipy import sparse

from core.chunks import Filters, ScoredChunk
from core.entities import entity_key, mentioned_keys, title_entity
from retrievers.base import Retriever
from retrievers.fusion import reciprocal_rank_fusion
from retrievers.index import Index
from retrievers.store import Store
from retrievers.walk_gate import WalkGate, packaged_gate
from retrievers.walk_signals import WalkView, extract

log = logging.getLogger(__name__)

ENTITIES_KEY = "entities"  # chunk metadata: the entity names ingest found in the passage


@dataclass(frozen=True)
class GraphParams:
    """Walk and fusion settings (chosen on hotpotqa_hipporag100; docs/evaluation.md, issue 26)."""

    damping: float = 0.7  # probability of following an edge rather than restarting at a seed
    iterations: int = 30
    passage_seeds: int = 10  # hybrid's best passages that also seed the walk
    passage_seed_share: float = 0.05  # of the restart mass (the rest goes to the question's entities)
    # None: the walk's order is the ranking where the gate lets it lead (HippoRAG 2; hybrid seeds the
    # walk and fills what it leaves);
    # a number: the walk's RRF weight beside hybrid's 1.0 (chosen on MuSiQue's first half, issue 26)
    fusion_weight: float | None = None
    # a how-to question asks for the passage that says how (one API, flag or command): the walk from the
    # product it names (Vue, Helm) scatters over every page naming it, so there the walk only joins
    # hybrid's ranking by RRF at this weight (issue 26's first-round fusion, chosen on
    # hotpotqa_hipporag100) instead of replacing it; walk order stays for the bridge questions it was
    # chosen on (MuSiQue / HotpotQA: 1 of 100 questions each is read as procedural), docs/evaluation.md
    how_to_fusion_weight: float = 1.0
    max_entity_share: float = 0.05  # entities in more passages than this share link nothing (too common)
    title_weight: float = 4.0  # edge to the entity a passage's title names (chosen on MuSiQue dev)


class EntityGraph:
    """Passages × entities, binary, with the transition matrices of the walk."""

    def __init__(
        self,
        ids: list[str],
        entity_lists: list[list[str]],
        texts: list[str] | None = None,
        max_entity_share: float = 0.05,
        titles: list[str] | None = None,
        title_weight: float = 1.0,
    ) -> None:
        """``entity_lists``: what ingest extracted per passage. With ``texts`` each passage is also
        linked to every entity of the whole collection it names (the extractor finds "University of
        Copenhagen" in one passage; another passage's "Copenhagen" is the same place when some
        passage made it an entity). With ``titles`` the edge from a passage to the entity its title
        names weighs ``title_weight``: a walk arriving at "Iowa" from the wind farm's passage goes to
        the passage about Iowa rather than to any of the passages that mention it."""
        self.ids = ids
        self.positions: np.ndarray | None = None  # each passage's position in the local index (build_graph)
        self.vocab: dict[str, int] = {}
        keys = [[k for k in dict.fromkeys(entity_key(n) for n in names) if k] for names in entity_lists]
        for row_keys in keys:
            for key in row_keys:
                self.vocab.setdefault(key, len(self.vocab))
        rows: list[int] = []
        cols: list[int] = []
        weights: list[float] = []
        for row, row_keys in enumerate(keys):
            linked = dict.fromkeys(row_keys)
            if texts is not None:
                linked.update(dict.fromkeys(mentioned_keys(texts[row], self.vocab, nested=True)))
            own = entity_key(title_entity(titles[row])) if titles is not None else ""
            for key in linked:
                rows.append(row)
                cols.append(self.vocab[key])
                weights.append(title_weight if key == own else 1.0)
        shape = (len(ids), len(self.vocab))
        links = sparse.csr_matrix((np.ones(len(rows), dtype=np.float32), (rows, cols)), shape=shape)
        df = np.asarray(links.sum(axis=0)).ravel()
        limit = max(2.0, max_entity_share * len(ids))
        keep = sparse.diags((df <= limit).astype(np.float32))  # an entity most passages name: no signal
        self.df = np.asarray((links @ keep).sum(axis=0)).ravel()  # passages naming each entity
        matrix = sparse.csr_matrix((np.asarray(weights, dtype=np.float32), (rows, cols)), shape=shape) @ keep
        # passage -> entity (row-normalised) and entity -> passage (column-normalised) moves
        degree = np.asarray(matrix.sum(axis=1)).ravel()
        strength = np.asarray(matrix.sum(axis=0)).ravel()
        self.to_entities = (sparse.diags(_inverse(degree)) @ matrix).T.tocsr()
        self.to_passages = (matrix @ sparse.diags(_inverse(strength))).tocsr()
        self.position = {chunk_id: i for i, chunk_id in enumerate(ids)}
        self.names = list(self.vocab)  # entity keys by column

    @property
    def edges(self) -> int:
        return int(self.to_passages.nnz)

    def entities_of(self, chunk_id: str) -> set[str]:
        """The entity keys a passage links to (an entity too common to link counts for none)."""
        row = self.position.get(chunk_id)
        if row is None:
            return set()
        start, end = self.to_passages.indptr[row], self.to_passages.indptr[row + 1]
        columns = self.to_passages.indices[start:end][self.to_passages.data[start:end] > 0]
        return {self.names[int(c)] for c in columns}

    def seeds_for(self, text: str) -> dict[str, float]:
        """Entities of the graph the text names, weighted by specificity (1 / passages naming them)."""
        return {
            key: 1.0 / self.df[self.vocab[key]]
            for key in mentioned_keys(text, self.vocab)
            if self.df[self.vocab[key]] > 0
        }

    def walk(
        self,
        entity_seeds: dict[str, float],
        passage_seeds: dict[str, float],
        params: GraphParams,
        allowed: np.ndarray | None = None,
    ) -> np.ndarray:
        """Personalised PageRank scores of every passage (power iteration on the bipartite graph).

        ``allowed`` (a mask over passages) keeps the walk inside what the caller may read: mass reaching
        another passage is dropped at every step, so a hidden passage neither ranks nor links two
        readable ones (its entities carry nothing on)."""
        e0 = np.zeros(len(self.vocab), dtype=np.float64)
        p0 = np.zeros(len(self.ids), dtype=np.float64)
        for key, weight in entity_seeds.items():
            e0[self.vocab[key]] += weight
        for chunk_id, weight in passage_seeds.items():
            if chunk_id in self.position:
                p0[self.position[chunk_id]] += weight
        keep = None if allowed is None else allowed.astype(np.float64)
        if keep is not None:
            p0 *= keep
        shares = [(e0, 1.0 - params.passage_seed_share), (p0, params.passage_seed_share)]
        if not e0.any():
            shares = [(e0, 0.0), (p0, 1.0)]
        elif not p0.any():
            shares = [(e0, 1.0), (p0, 0.0)]
        for vector, share in shares:
            total = vector.sum()
            if total > 0:
                vector *= share / total
        e, p = e0.copy(), p0.copy()
        d = params.damping
        for _ in range(params.iterations):
            e, p = (1 - d) * e0 + d * (self.to_entities @ p), (1 - d) * p0 + d * (self.to_passages @ e)
            if keep is not None:
                p *= keep
        return p


def build_graph(store: Store, params: GraphParams | None = None) -> EntityGraph:
    """The graph of a store's passages (summary chunks, which carry a ``level``, are left out)."""
    params = params or GraphParams()
    ids: list[str] = []
    lists: list[list[str]] = []
    texts: list[str] = []
    titles: list[str] = []
    positions: list[int] = []
    local = isinstance(store, Index)  # the index's masks (filters, access groups) then apply by position
    rows = (
        ((pos, chunk) for pos, chunk, _ in store.docstore.iter_rows())
        if local
        else enumerate(store.iter_chunks())
    )
    for pos, chunk in rows:
        if chunk.metadata.get("level"):
            continue
        ids.append(chunk.id)
        lists.append(list(chunk.metadata.get(ENTITIES_KEY) or []))
        texts.append(chunk.text)
        titles.append(chunk.title)
        positions.append(pos)
    graph = EntityGraph(ids, lists, texts, params.max_entity_share, titles, params.title_weight)
    if local:
        graph.positions = np.asarray(positions, dtype=np.int64)
    return graph


class EntityGraphRetriever:
    """Hybrid search fused with a personalised-PageRank walk from the question's entities."""

    name = "entity_graph"

    def __init__(
        self, base: Retriever, store: Store, params: GraphParams | None = None, gate: WalkGate | None = None
    ) -> None:
        """``gate``: the fitted per-question decision whether the walk leads (``walk_gate.py``); the
        packaged one by default."""
        self.base = base
        self.store = store
        self.params = params or GraphParams()
        self.gate = gate or packaged_gate()
        self._graph: EntityGraph | None = None
        self._row_masks: dict[str, np.ndarray] = {}  # per filter, for a store without positions (Milvus)
        self._lock = threading.Lock()

    @property
    def graph(self) -> EntityGraph:
        with self._lock:
            if self._graph is None:
                self._graph = build_graph(self.store, self.params)
                log.debug(
                    "entity graph: %d passages, %d entities, %d edges",
                    len(self._graph.ids),
                    len(self._graph.vocab),
                    self._graph.edges,
                )
            return self._graph

    def available(self) -> bool:
        """Whether the index holds entities at all (an index ingested before they existed has none)."""
        return self.graph.edges > 0

    def search(self, query: str, k: int, filters: Filters | None = None) -> list[ScoredChunk]:
        return self.search_weighted(query, k, filters, self.params.fusion_weight)

    def search_weighted(
        self, query: str, k: int, filters: Filters | None, fusion_weight: float | None
    ) -> list[ScoredChunk]:
        """Hybrid and the walk: the walk's order leading (``fusion_weight`` None) where the gate reads
        the question as one the walk serves (else hybrid's own ranking), or fused by RRF."""
        hybrid = self.base.search(query, k, filters)
        seeds = self.graph.seeds_for(query)  # once: the walk starts there and the gate reads them
        walked = self._walk(seeds, hybrid, k, filters)
        if not walked:
            return hybrid
        if fusion_weight is None:
            leads = self.gate.leads(self._signals(seeds, hybrid, walked))
            return walk_first(walked, hybrid)[:k] if leads else hybrid
        fused = reciprocal_rank_fusion(
            {"hybrid": hybrid, self.name: walked}, weights={"hybrid": 1.0, self.name: fusion_weight}
        )
        return fused[:k]

    def walk_leads(self, query: str, hybrid: list[ScoredChunk], walked: list[ScoredChunk]) -> bool:
        """The gate's decision from the two rankings."""
        return self.gate.leads(self.signals(query, hybrid, walked))

    def signals(self, query: str, hybrid: list[ScoredChunk], walked: list[ScoredChunk]) -> dict[str, float]:
        """The gate's inputs (``walk_signals.py``), from the question's seeds and both rankings."""
        return self._signals(self.graph.seeds_for(query), hybrid, walked)

    def _signals(
        self, seeds: dict[str, float], hybrid: list[ScoredChunk], walked: list[ScoredChunk]
    ) -> dict[str, float]:
        return extract(WalkView(seeds, hybrid, walked, self.graph.entities_of))

    def for_how_to(self) -> FusedWalk:
        """This retriever as a how-to question uses it (``GraphParams.how_to_fusion_weight``)."""
        return FusedWalk(self, self.params.how_to_fusion_weight)

    def rank(
        self, query: str, hybrid: list[ScoredChunk], k: int, filters: Filters | None = None
    ) -> list[ScoredChunk]:
        """The walk's best ``k`` passages that pass the filters, as ScoredChunks (empty without seeds)."""
        return self._walk(self.graph.seeds_for(query), hybrid, k, filters)

    def _walk(
        self, entity_seeds: dict[str, float], hybrid: list[ScoredChunk], k: int, filters: Filters | None
    ) -> list[ScoredChunk]:
        graph = self.graph
        if not graph.edges:
            return []
        if not entity_seeds:  # the walk starts from the question's entities; none named, no walk
            return []
        passage_seeds = {h.id: 1.0 / (rank + 1) for rank, h in enumerate(hybrid[: self.params.passage_seeds])}
        scores = graph.walk(entity_seeds, passage_seeds, self.params, self.rows_allowed(filters))
        picked = [int(i) for i in np.argsort(-scores, kind="stable")[:k] if scores[int(i)] > 0]
        chunks = self.store.chunks_by_id(graph.ids[i] for i in picked)
        out: list[ScoredChunk] = []
        for i in picked:
            chunk = chunks.get(graph.ids[i])
            if chunk is not None:
                score = float(scores[i])
                out.append(
                    ScoredChunk(
                        chunk=chunk, score=score, ranks={self.name: len(out) + 1}, scores={self.name: score}
                    )
                )
        return out

    def rows_allowed(self, filters: Filters | None) -> np.ndarray | None:
        """Which graph passages the filters let through (None: all), from the store's own filter
        machinery: the local index's mask (access groups precomputed per generation, cached per filter),
        or the ids a Milvus filter expression selects (cached per filter for this graph)."""
        if filters is None or filters.is_empty():
            return None
        graph = self.graph
        if graph.positions is not None and isinstance(self.store, Index):
            mask = self.store.mask(filters)
            return None if mask is None else mask[graph.positions]
        key = filters.model_dump_json()
        with self._lock:
            rows = self._row_masks.get(key)
        if rows is None:
            permitted = self.store.matching_ids(filters)
            rows = np.fromiter((i in permitted for i in graph.ids), dtype=bool, count=len(graph.ids))
            with self._lock:
                if len(self._row_masks) > 64:
                    self._row_masks.clear()
                self._row_masks[key] = rows
        return rows


class FusedWalk:
    """The entity-graph walk joining hybrid's ranking by RRF (one graph, shared with the walk it wraps)."""

    name = "entity_graph"

    def __init__(self, walk: EntityGraphRetriever, fusion_weight: float) -> None:
        self.walk = walk
        self.fusion_weight = fusion_weight

    def search(self, query: str, k: int, filters: Filters | None = None) -> list[ScoredChunk]:
        return self.walk.search_weighted(query, k, filters, self.fusion_weight)


def walk_first(walked: list[ScoredChunk], hybrid: list[ScoredChunk], rrf_k: int = 60) -> list[ScoredChunk]:
    """The walk's ranking, then hybrid's remaining hits (a passage the walk does not reach is still a
    candidate). Each hit keeps every ranking's ranks and scores; ``score`` is 1 / (rrf_k + position),
    the scale of a fused ranking, so what reads scores downstream sees one monotone scale."""
    by_id = {h.id: h for h in hybrid}
    ordered = [(hit, by_id.pop(hit.id, None)) for hit in walked] + [(h, None) for h in by_id.values()]
    out: list[ScoredChunk] = []
    for position, (hit, also) in enumerate(ordered, start=1):
        ranks = {**(also.ranks if also else {}), **hit.ranks}
        scores = {**(also.scores if also else {}), **hit.scores}
        out.append(
            hit.model_copy(update={"score": 1.0 / (rrf_k + position), "ranks": ranks, "scores": scores})
        )
    return out


def _inverse(values: np.ndarray) -> np.ndarray:
    out = np.zeros_like(values, dtype=np.float64)
    nonzero = values > 0
    out[nonzero] = 1.0 / values[nonzero]
    return out
