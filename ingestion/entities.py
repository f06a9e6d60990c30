"""The ingest step that records each passage's entities (chunk metadata ``entities``) for the entity
graph (``retrievers.entity_graph``): the offline extractor of ``core.entities`` over the passage, plus
the document's title, which names what every passage of it is about. With an LLM chosen for it
(``AGENTIC_RAG_LLM_INGEST=entities``) the model's OpenIE names come first (``providers.ingest_llm``
keeps only those the passage contains), then the offline ones; a passage the model fails keeps the
offline list. ``entities_by`` records which."""

from __future__ import annotations

from collections.abc import Callable

from core.chunks import Chunk
from core.entities import entity_key, extract_entities, title_entity
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


# (title, passage text) -> the passage's entities as the model names them, or None (offline)
ExtractEntities = Callable[[str, str], list[str] | None]


def with_model_entities(chunks: list[Chunk], extract: ExtractEntities, label: str) -> list[Chunk]:
    """Each passage's entities: title, the model's names, then the offline ones (one per key)."""
    for chunk in chunks:
        if chunk.metadata.get("level"):
            continue
        named = extract(chunk.title, chunk.text)
        if named is None:
            continue
        offline = chunk.metadata.get(ENTITIES_KEY) or passage_entities(chunk.title, chunk.text)
        title = [title_entity(chunk.title)] if chunk.title.strip() else []
        merged: dict[str, str] = {}
        for name in [*title, *named, *offline]:
            key = entity_key(name) if name else ""
            if key and key not in merged:
                merged[key] = name
        chunk.metadata[ENTITIES_KEY] = list(merged.values())[:MAX_ENTITIES]
        chunk.metadata["entities_by"] = label
    return chunks
