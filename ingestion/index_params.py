"""How a chunk goes into an index, shared by the local build (``ingestion.indexing``) and the sinks:
the build parameters from settings and the tokens BM25 indexes."""

from __future__ import annotations

from config import Settings
from core.chunks import Chunk
from core.tokenize import tokenize
from retrievers.index import BuildParams
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
