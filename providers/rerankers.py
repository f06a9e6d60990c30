"""Second-stage rerankers: reorder a first stage's candidates with a costlier relevance signal.

No cross-encoder weights ship in any PyPI package, so the offline options are an embedding rescorer
(multilingual-e5-small scoring query against passage, its passage vectors cached on disk so each passage
is embedded once ever) and a cheap lexical feature scorer. Any local cross-encoder folder (bge-reranker,
ms-marco-MiniLM, ...) runs through ``sentence_transformers.CrossEncoder``. docs/embeddings.md has the
measurements behind the defaults.

Every reranker returns new ``ScoredChunk`` objects sorted by the rerank score: ``.score`` and
``.scores["rerank"]`` hold it, ``.ranks["rerank"]`` the new 1-based position, and the first stage's
ranks and scores stay as they were.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any, ClassVar, Protocol, runtime_checkable

import numpy as np

from config import E5Runtime
from core.chunks import Chunk, ScoredChunk
from core.tokenize import identifiers_in, tokenize
from providers.embedding_cache import CachedEmbedder, EmbeddingCache
from providers.embeddings import E5SmallEmbedder, Embedder, sentence_transformers
from providers.passage_windows import WINDOW_TOKENS, best_window, estimate_tokens, passage_windows, titled

RERANKER_CHOICES = ("none", "lexical", "e5", "cross-encoder:<local model folder>")
CACHE_FILE = "embedding_cache.sqlite"


@runtime_checkable
class Reranker(Protocol):
    name: str

    def rerank(self, query: str, chunks: list[ScoredChunk], top_k: int | None = None) -> list[ScoredChunk]:
        """New objects sorted by rerank score (desc), cut to ``top_k`` when given."""
        ...


def passage_text(chunk: Chunk) -> str:
    """What a reranker reads: the title (when the text does not already start with it) and the text."""
    return titled(chunk.title, chunk.text)


def minmax(values: Sequence[float]) -> np.ndarray:
    """Scale to [0, 1] within one candidate list; a constant list maps to all 0.5."""
    arr = np.asarray(values, dtype=np.float64)
    if arr.size == 0:
        return arr
    low, high = float(arr.min()), float(arr.max())
    if not math.isfinite(low) or not math.isfinite(high) or high - low < 1e-12:
        return np.full(arr.shape, 0.5)
    return (arr - low) / (high - low)


def apply_scores(
    chunks: Sequence[ScoredChunk],
    scores: Sequence[float],
    top_k: int | None,
    extra: dict[str, Sequence[float | None]] | None = None,
    fields: dict[str, Sequence[float | None]] | None = None,
) -> list[ScoredChunk]:
    """Sort by ``scores`` (ties keep the first stage's order) and return updated copies; ``extra`` adds
    entries to ``.scores``, ``fields`` sets ``ScoredChunk`` fields, and a value of None in either leaves
    the chunk as it was."""
    if top_k is not None and top_k < 0:
        raise ValueError(f"top_k must be >= 0 (got {top_k})")
    order = sorted(range(len(chunks)), key=lambda i: (-float(scores[i]), -chunks[i].score))
    if top_k is not None:
        order = order[:top_k]
    out: list[ScoredChunk] = []
    for position, i in enumerate(order, start=1):
        item = chunks[i]
        new_scores = {**item.scores, "rerank": float(scores[i])}
        for key, values in (extra or {}).items():
            if values[i] is not None:
                new_scores[key] = float(values[i])
        update: dict[str, Any] = {
            name: float(v) for name, values in (fields or {}).items() if (v := values[i]) is not None
        }
        update.update(score=float(scores[i]), scores=new_scores, ranks={**item.ranks, "rerank": position})
        out.append(item.model_copy(update=update))
    return out


# --- embedding rescoring (e5) --------------------------------------------------------------------


E5_BLEND = 0.3  # measured: best mean nDCG@10 over dense, BM25 and hybrid first stages (docs/embeddings.md)
LEXICAL_BLEND = 0.3


E5_COSINE = "e5_cosine"  # the e5 reranker's raw cosine: a ScoredChunk field, and shown among its scores
E5_BATCH = 4  # windows per native call (~0.1 s on 2 free cores): the longest a Ctrl-C waits
E5_DEPTH = 15  # candidates e5 rescores, the first stage's best (chosen on dev sets: docs/benchmarks.md)


class EmbeddingReranker:
    """Cosine of a stronger embedder's query and passage vectors, blended with the first stage.

    ``blend`` in [0, 1] is the weight of the first stage's (min-max scaled) score against the (min-max
    scaled) cosine. Pure e5 (``blend=0``) loses to BM25 alone on the Chinese sets, where BM25 is nearly
    perfect; 0.3 keeps that and still lifts dense candidates by ~0.11 nDCG@10. With ``blend=0`` the score
    is the plain cosine, comparable across queries; the raw cosine is always in ``scores["e5_cosine"]``
    (``scores["embed_cosine"]`` for another embedder) and, from e5, in the ``e5_cosine`` field.

    Each candidate is scored by its best window (``window_tokens`` model tokens of whole sentences, the
    one holding most query terms) instead of its full text: the model's cost grows with sequence length,
    so this is what makes a cold corpus interactive. ``window_tokens=0`` scores whole passages.
    ``progress(done, total)``, when set, is called while uncached windows are embedded.

    Only the first stage's ``depth`` best candidates are rescored (0: all); the others follow them in
    their first-stage order, scored by the first stage alone (the cosine part counts as its minimum),
    so they can never pass a rescored one.
    """

    def __init__(
        self,
        embedder: Embedder,
        cache: EmbeddingCache | None = None,
        blend: float = E5_BLEND,
        *,
        window_tokens: int = WINDOW_TOKENS,
        batch_size: int = E5_BATCH,
        depth: int = E5_DEPTH,
    ) -> None:
        if not 0.0 <= blend <= 1.0:
            raise ValueError(f"blend must be within [0, 1] (got {blend})")
        if depth < 0:
            raise ValueError(f"depth must be >= 0 (got {depth}; 0 rescores every candidate)")
        self.depth = depth
        self.embedder = CachedEmbedder(
            embedder, cache or EmbeddingCache(None), batch_size=batch_size, size=estimate_tokens
        )
        self.blend = blend
        self.window_tokens = window_tokens
        self.progress: Callable[[int, int], None] | None = None
        self._windows = lru_cache(maxsize=16384)(self._cut)
        self.name = "e5" if embedder.name == E5SmallEmbedder.name else f"embed:{embedder.name}"

    def _cut(self, title: str, text: str) -> tuple[str, ...]:
        if self.window_tokens <= 0:
            return (titled(title, text),)
        return tuple(passage_windows(text, title, self.window_tokens))

    def windows(self, chunk: Chunk) -> tuple[str, ...]:
        """The texts this reranker may embed for a chunk (query-independent, so they can be pre-computed)."""
        return self._windows(chunk.title, chunk.text)

    def scored_text(self, query: str, chunk: Chunk) -> str:
        """The window of ``chunk`` that gets embedded for ``query``."""
        windows = self.windows(chunk)
        if len(windows) == 1:
            return windows[0]
        return windows[best_window(tokenize(query), [set(_tokens(w)) for w in windows])]

    def warm(self, chunks: Sequence[Chunk], progress: Callable[[int, int], None] | None = None) -> int:
        """Embed every window of these chunks ahead of queries (e.g. after ingest) so reranking runs warm;
        returns how many were not cached yet."""
        before = self.embedder.misses
        self.embedder.embed_documents([w for c in chunks for w in self.windows(c)], progress=progress)
        return self.embedder.misses - before

    def rerank(self, query: str, chunks: list[ScoredChunk], top_k: int | None = None) -> list[ScoredChunk]:
        if not chunks:
            return []
        best_first = sorted(range(len(chunks)), key=lambda i: -chunks[i].score)
        head = best_first[: self.depth] if self.depth else best_first
        texts = [self.scored_text(query, chunks[i].chunk) for i in head]
        passages = self.embedder.embed_documents(texts, progress=self.progress)
        # retries, sub-queries and the search itself ask for this vector too: the embedder caches it
        cosine = passages @ self.embedder.embed_query(query)
        if self.blend > 0:  # a candidate left out counts as the lowest cosine
            rescored = np.zeros(len(chunks))
            rescored[head] = minmax(cosine)
            scores = (1 - self.blend) * rescored + self.blend * minmax([c.score for c in chunks])
        else:  # plain cosines in [-1, 1]; the rest below them, in first-stage order
            scores = np.full(len(chunks), -1.0)
            scores[head] = cosine
        raw: list[float | None] = [None] * len(chunks)
        for i, value in zip(head, cosine, strict=True):
            raw[i] = float(value)
        if self.name == "e5":
            return apply_scores(chunks, scores, top_k, {E5_COSINE: raw}, fields={"e5_cosine": raw})
        return apply_scores(chunks, scores, top_k, {"embed_cosine": raw})


# --- lexical features ----------------------------------------------------------------------------


class LexicalReranker:
    """Query-term coverage (idf within the candidate list), proximity, exact identifiers, title match.

    Cheap (a few ms for 30 candidates once passages are tokenised) and model-free; blended with the
    first stage score because lexical evidence alone throws away what a dense first stage knows. It lifts
    dense and hybrid candidates (+0.08 / +0.03 nDCG@10) but adds nothing on top of BM25.
    """

    name = "lexical"
    weights: ClassVar[dict[str, float]] = {
        "coverage": 0.5,
        "proximity": 0.2,
        "identifiers": 0.15,
        "title": 0.15,
    }

    def __init__(self, blend: float = LEXICAL_BLEND) -> None:
        if not 0.0 <= blend <= 1.0:
            raise ValueError(f"blend must be within [0, 1] (got {blend})")
        self.blend = blend

    def features(self, query: str, chunks: Sequence[ScoredChunk]) -> list[dict[str, float]]:
        terms = list(dict.fromkeys(tokenize(query)))
        docs = [_tokens(c.chunk.text) for c in chunks]
        titles = [set(_tokens(c.chunk.title)) if c.chunk.title else set() for c in chunks]
        sets = [set(d) | t for d, t in zip(docs, titles, strict=True)]
        n = len(chunks)
        idf = {t: math.log(1 + (n + 1) / (0.5 + sum(t in s for s in sets))) for t in terms}
        total = sum(idf.values()) or 1.0
        idents = [i.lower() for i in identifiers_in(query)]
        out = []
        for chunk, doc, title, present in zip(chunks, docs, titles, sets, strict=True):
            matched = [t for t in terms if t in present]
            text = f"{chunk.chunk.title}\n{chunk.chunk.text}".lower()
            out.append(
                {
                    "coverage": sum(idf[t] for t in matched) / total,
                    "proximity": _proximity(doc, {t for t in matched if t in doc}),
                    "identifiers": (sum(i in text for i in idents) / len(idents)) if idents else 0.0,
                    "title": (sum(idf[t] for t in terms if t in title) / total) if title else 0.0,
                }
            )
        return out

    def rerank(self, query: str, chunks: list[ScoredChunk], top_k: int | None = None) -> list[ScoredChunk]:
        if not chunks:
            return []
        feats = self.features(query, chunks)
        lexical = np.array([sum(self.weights[k] * f[k] for k in self.weights) for f in feats])
        scores = (1 - self.blend) * lexical + self.blend * minmax([c.score for c in chunks])
        return apply_scores(chunks, scores, top_k, {"lexical": lexical})


@lru_cache(maxsize=8192)
def _tokens(text: str) -> tuple[str, ...]:
    """Passages come back as candidates again and again; jieba on 30 of them costs ~50 ms a query."""
    return tuple(tokenize(text))


def _proximity(doc: Sequence[str], wanted: set[str]) -> float:
    """len(wanted) / length of the shortest token window holding every wanted term (1.0 = adjacent)."""
    if len(wanted) < 2:
        return 1.0 if wanted else 0.0
    counts: dict[str, int] = {}
    best = len(doc) + 1
    have = left = 0
    for right, token in enumerate(doc):
        if token in wanted:
            counts[token] = counts.get(token, 0) + 1
            have += counts[token] == 1
        while have == len(wanted):
            best = min(best, right - left + 1)
            gone = doc[left]
            if gone in wanted:
                counts[gone] -= 1
                have -= counts[gone] == 0
            left += 1
    return len(wanted) / best if best <= len(doc) else 0.0


# --- local cross-encoder folder ------------------------------------------------------------------


@lru_cache(maxsize=4)
def _cross_encoder(folder: str) -> Any:
    torch, st = sentence_transformers("cross-encoder:")
    torch.set_num_threads(max(1, min(2, torch.get_num_threads())))
    return st.CrossEncoder(folder, device="cpu", local_files_only=True)


class CrossEncoderReranker:
    """A sentence-transformers CrossEncoder from a local folder; scores are the model's probabilities."""

    def __init__(self, folder: Path, batch_size: int = 16) -> None:
        self.folder = folder
        self.batch_size = batch_size
        self.name = f"cross-encoder:{folder}"

    def rerank(self, query: str, chunks: list[ScoredChunk], top_k: int | None = None) -> list[ScoredChunk]:
        if not chunks:
            return []
        model = _cross_encoder(str(self.folder))
        pairs = [(query, passage_text(c.chunk)) for c in chunks]
        raw = np.asarray(model.predict(pairs, batch_size=self.batch_size, show_progress_bar=False))
        if raw.ndim == 2:  # several labels: the last one is "relevant" by convention
            raw = raw[:, -1]
        return apply_scores(chunks, raw.astype(np.float64), top_k)


# --- factory -------------------------------------------------------------------------------------


def make_reranker(
    spec: str,
    *,
    embedder: Embedder | None = None,
    cache_dir: Path | None = None,
    blend: float | None = None,
    window_tokens: int = WINDOW_TOKENS,
    depth: int = E5_DEPTH,
    e5_runtime: E5Runtime | None = None,
) -> Reranker | None:
    """Build the reranker named by ``spec`` (see ``RERANKER_CHOICES``); "none" gives None.

    ``embedder`` is the first stage's embedder: "e5" reuses it when it already is multilingual-e5-small
    and loads e5 otherwise (rescoring with the first stage's own model would change nothing). ``cache_dir``
    holds the passage-embedding cache file; without it the cache lives in memory for this process.
    ``blend`` overrides the first-stage weight of the "e5" and "lexical" rerankers; ``window_tokens`` is
    the e5 window size (0: whole passages), ``depth`` how many of the best candidates e5 rescores (0: all),
    ``e5_runtime`` how an e5 loaded here runs (None: the setting, read from the environment and .env).
    """
    spec = (spec or "").strip()
    if spec in ("none", ""):
        return None
    if spec == "lexical":
        return LexicalReranker(blend=LEXICAL_BLEND if blend is None else blend)
    if spec == "e5":
        cache = EmbeddingCache(Path(cache_dir) / CACHE_FILE if cache_dir is not None else None)
        reuse = embedder is not None and embedder.name == E5SmallEmbedder.name
        e5 = embedder if reuse else E5SmallEmbedder(runtime=e5_runtime)
        return EmbeddingReranker(
            e5,
            cache,
            blend=E5_BLEND if blend is None else blend,
            window_tokens=window_tokens,
            depth=depth,
        )
    if spec.startswith("cross-encoder:"):
        raw = spec.split(":", 1)[1].strip()
        if not raw:
            raise ValueError("cross-encoder needs a local model folder: 'cross-encoder:/path/to/model'")
        folder = Path(raw).expanduser()
        if not folder.is_dir():
            raise FileNotFoundError(
                f"cross-encoder: model folder {str(folder)!r} does not exist (model hubs are not "
                "reachable, so the model must be a local folder)"
            )
        return CrossEncoderReranker(folder.resolve())
    raise ValueError(f"unknown reranker {spec!r}; choose one of: {', '.join(RERANKER_CHOICES)}")
