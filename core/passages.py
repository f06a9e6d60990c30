"""The numbered passages the writer reads, made from ranked chunks.

Shared by the compress node (the writer's evidence) and the compact LLM judge, which shows a small
model exactly these passages so the writer's request repeats the judge's prompt prefix and a
llama.cpp-style server reuses its processed tokens (providers/brain/judge.py, issue 22).
"""

from __future__ import annotations

from core.chunks import ScoredChunk
from core.schemas import Passage

MAX_PASSAGES = 8


def select_evidence(hits: list[ScoredChunk], relevant_ids: list[str], limit: int) -> list[ScoredChunk]:
    """Relevant chunks first (in rerank order), then the best of the rest, up to ``limit``."""
    relevant = [h for h in hits if h.id in relevant_ids]
    others = [h for h in hits if h.id not in relevant_ids]
    return (relevant + others)[:limit] if relevant else hits[:limit]


def to_passages(hits: list[ScoredChunk]) -> list[Passage]:
    return [
        Passage(
            number=number,
            chunk_id=hit.id,
            source=hit.chunk.locator(),
            heading=" > ".join(hit.chunk.heading_path) or hit.chunk.title,
            text=hit.chunk.text,
        )
        for number, hit in enumerate(hits, start=1)
    ]
