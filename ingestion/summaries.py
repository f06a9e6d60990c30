"""The summary tree written at ingest: a summary per section and one per document, stored as chunks
marked ``level=section|document`` beside the document's passages.

A question about a whole document or collection ("总结这份报告的主要结论", "What are the main topics of
these docs?") cannot be answered from the ten passages that match its words best; it needs what each
section and document says as a whole. Offline the summaries are extractive: the sentences most central
by embedding (cosine to the mean of the section's or document's sentence vectors, near-duplicates
skipped), in document order, so each summary quotes its document and stays citable. A summariser
(the LLM's when one is configured, cached: ``providers.ingest_llm``) can write them instead: a section's
summary from its sentences, the document's from its section summaries (RAPTOR-style) or, without
sections, from its sentences; a node the summariser leaves (None) gets the extractive summary. Each
summary records who wrote it (``summary_by``: ``extractive`` or ``llm:<model>``).

Per document, so an incremental ingest re-summarises only the files it re-reads. Summary chunks are
left out of ordinary searches (``retrievers.levels``); the ``global`` route searches them.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from core.access import ACCESS_KEY
from core.chunks import Chunk
from core.text import split_sentences
from retrievers.levels import DOCUMENT, LEVEL_KEY, SECTION

_FENCE_RE = re.compile(r"```.*?(?:```|$)", re.DOTALL)  # code blocks are no summary material
Embed = Callable[[list[str]], list[list[float]] | np.ndarray]
# (level, heading path, texts, sentences to keep) -> the summary, or None for the extractive one
Summarise = Callable[[str, list[str], list[str], int], str | None]
EXTRACTIVE = "extractive"


@dataclass(frozen=True)
class TreeParams:
    section_sentences: int = 3
    document_sentences: int = 6
    max_sentences: int = 240  # sentences embedded per document at most (evenly spaced beyond that)
    duplicate_cosine: float = 0.92  # a sentence this close to one already chosen adds nothing
    min_section_chunks: int = 1  # sections of one passage too: the tree covers every section
    min_document_passages: int = 3  # a document of one or two passages is read whole by any search


def central_sentences(vectors: np.ndarray, keep: int, duplicate_cosine: float = 0.92) -> list[int]:
    """Indices of the ``keep`` sentences closest to the centroid, skipping near-duplicates, in order."""
    if len(vectors) == 0:
        return []
    unit = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
    centroid = unit.mean(axis=0)
    centroid /= max(float(np.linalg.norm(centroid)), 1e-12)
    chosen: list[int] = []
    for index in np.argsort(-(unit @ centroid), kind="stable"):
        if len(chosen) >= keep:
            break
        if chosen and float(np.max(unit[chosen] @ unit[index])) >= duplicate_cosine:
            continue
        chosen.append(int(index))
    return sorted(chosen)


def summary_chunks(
    chunks: list[Chunk],
    embed: Embed,
    params: TreeParams | None = None,
    summarise: Summarise | None = None,
    written_by: str = "llm",
) -> list[Chunk]:
    """Section and document summary chunks for one document's passages (none for a short document).

    All sentences of the document are embedded in one call; sections and the document then choose from
    the same vectors.
    """
    params = params or TreeParams()
    passages = [c for c in chunks if not c.metadata.get(LEVEL_KEY)]
    if len(passages) < params.min_document_passages:
        return []
    sections = _sections(passages)
    sentences, owners = _sentences(passages, sections, params.max_sentences)
    if len(sentences) < 2:
        return []
    embedded: list[np.ndarray] = []  # the sentences' vectors, made the first time a node needs them

    def pick(
        indices: list[int], keep: int, level: str, heading: list[str], parts: list[str]
    ) -> tuple[str, str]:
        if summarise is not None:
            written = summarise(level, heading, parts or [sentences[i] for i in indices], keep)
            if written:
                return written, written_by
        if not embedded:
            embedded.append(np.asarray(embed(sentences), dtype=np.float32))
        chosen = central_sentences(embedded[0][indices], keep, params.duplicate_cosine)
        return " ".join(sentences[indices[i]] for i in chosen), EXTRACTIVE

    first = passages[0]
    out: list[Chunk] = []
    start = max(c.chunk_index for c in chunks) + 1
    for number, (path, members) in enumerate(sections.items()):
        if len(members) < params.min_section_chunks or len(sections) < 2:
            continue
        indices = [i for i, owner in enumerate(owners) if owner == number]
        text, by = pick(indices, params.section_sentences, SECTION, list(path), [])
        if text:
            out.append(_summary(first, members, text, SECTION, list(path), start + len(out), by))
    heading = [first.title] if first.title else []
    parts = [c.text for c in out]  # the document summarised from its sections' summaries
    text, by = pick(list(range(len(sentences))), params.document_sentences, DOCUMENT, heading, parts)
    out.append(_summary(first, passages, text, DOCUMENT, heading, start + len(out), by))
    return out


def _sections(passages: list[Chunk]) -> dict[tuple[str, ...], list[Chunk]]:
    """Passages grouped by their first heading below what every passage shares (the title)."""
    paths = [tuple(c.heading_path) for c in passages]
    shared = 0
    while all(len(p) > shared for p in paths) and len({p[shared] for p in paths}) == 1:
        shared += 1
    sections: dict[tuple[str, ...], list[Chunk]] = {}
    for chunk, path in zip(passages, paths, strict=True):
        sections.setdefault(path[: shared + 1], []).append(chunk)
    return sections


def _sentences(
    passages: list[Chunk], sections: dict[tuple[str, ...], list[Chunk]], limit: int
) -> tuple[list[str], list[int]]:
    """Each distinct sentence once (overlapping chunks repeat some), with the number of its section."""
    section_of = {c.id: n for n, members in enumerate(sections.values()) for c in members}
    seen: set[str] = set()
    sentences: list[str] = []
    owners: list[int] = []
    for chunk in passages:
        for sentence in split_sentences(_FENCE_RE.sub("\n\n", chunk.text)):
            sentence = " ".join(sentence.split())
            if len(sentence) < 8 or sentence in seen or not _prose(sentence):
                continue
            seen.add(sentence)
            sentences.append(sentence)
            owners.append(section_of[chunk.id])
    if len(sentences) > limit:
        keep = np.linspace(0, len(sentences) - 1, limit).round().astype(int)
        sentences = [sentences[i] for i in keep]
        owners = [owners[i] for i in keep]
    return sentences, owners


def _prose(sentence: str) -> bool:
    """A sentence of prose, not a command, path or table row: mostly letters, and no code fence."""
    if "```" in sentence or sentence.count("|") >= 2:
        return False
    letters = sum(ch.isalpha() for ch in sentence)
    return letters >= 0.6 * sum(not ch.isspace() for ch in sentence)


def _summary(
    first: Chunk, members: list[Chunk], text: str, level: str, path: list[str], index: int, by: str
) -> Chunk:
    digest = hashlib.sha1(text.encode()).hexdigest()
    return Chunk(
        id=hashlib.sha1(f"{first.source}\0{level}\0{index}\0{digest}".encode()).hexdigest()[:20],
        text=text,
        source=first.source,
        title=first.title,
        heading_path=path,
        chunk_index=index,
        char_start=min(c.char_start for c in members),
        char_end=max(c.char_end for c in members),
        language=first.language,
        content_hash=digest,
        mtime=first.mtime,
        metadata={
            # a summary is readable by exactly whom its document is (core/access.py)
            **{k: v for k, v in first.metadata.items() if k in ("suffix", "doc_id", ACCESS_KEY)},
            "kind": "summary",
            LEVEL_KEY: level,
            "summarises": len(members),
            "summary_by": by,
        },
    )
