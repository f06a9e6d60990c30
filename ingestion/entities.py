"""The ingest step that records each passage's entities (chunk metadata ``entities``) for the entity
graph (``retrievers.entity_graph``): the offline extractor of ``core.entities`` over the passage, plus
the document's title, which names what every passage of it is about."""

from __future__ import annotations

from core.chunks import Chunk
from core.entities import extract_entities, title_entity
from retrievers.entity_graph import ENTITIES_KEY

MAX_ENTITIES = 32  # per passage: a list of names, not a second copy of the text


def passage_entities(title: str, text: str) -> list[str]:
    """The title (without a "(qualifier)") first, then the names the passage mentions."""
    names = [title_entity(title)] if title.strip() else []
    names += extract_entities(text)
    return list(dict.fromkeys(n for n in names if n))[:MAX_ENTITIES]


def with_entities(chunks: list[Chunk]) -> list[Chunk]:
    """The chunks, each carrying its entities (those that already do are left as they are)."""
    for chunk in chunks:
        if ENTITIES_KEY not in chunk.metadata and not chunk.metadata.get("level"):
            chunk.metadata[ENTITIES_KEY] = passage_entities(chunk.title, chunk.text)
    return chunks
