"""Incremental ingestion: new and changed files are split and embedded, unchanged files keep their
chunks and vectors, deleted files lose theirs, and the result is written as a new index generation.

A file that fails to load is reported with its reason and never aborts the run; if an earlier
version of it was indexed, that version is kept (bad input loses nothing).
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, Field
from tqdm import tqdm

from config import Settings
from core.chunks import Chunk
from core.text import detect_language
from ingestion.documents import LoadedDocument, TextPiece
from ingestion.indexing import bm25_tokens, build_params, embed_in_batches, embedding_text, progress_interval
from ingestion.loaders import LoaderError, iter_source_files, load_document
from ingestion.records import RECORD_SUFFIXES, load_records
from ingestion.splitter import SplitConfig, split_document
from providers.embeddings import Embedder
from retrievers.docstore import FileRecord
from retrievers.index import IndexError_, read_generation, write_generation, write_lock


class FailedFile(BaseModel):
    source: str
    reason: str


class IngestReport(BaseModel):
    index_dir: str
    files_seen: int = 0
    added: list[str] = Field(default_factory=list)
    updated: list[str] = Field(default_factory=list)
    unchanged: list[str] = Field(default_factory=list)
    removed: list[str] = Field(default_factory=list)
    failed: list[FailedFile] = Field(default_factory=list)
    chunks_total: int = 0
    chunks_embedded: int = 0
    seconds: float = 0.0


def chunk_id(source: str, index: int, content_hash: str) -> str:
    return hashlib.sha1(f"{source}\0{index}\0{content_hash}".encode()).hexdigest()[:20]


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def pieces_to_chunks(
    doc: LoadedDocument, pieces: list[TextPiece], *, start: int = 0, extra: dict | None = None
) -> list[Chunk]:
    chunks = []
    for number, piece in enumerate(pieces, start=start):
        content_hash = hashlib.sha1(piece.text.encode()).hexdigest()
        chunks.append(
            Chunk(
                id=chunk_id(doc.source, number, content_hash),
                text=piece.text,
                source=doc.source,
                title=doc.title,
                heading_path=piece.heading_path,
                chunk_index=number,
                char_start=piece.char_start,
                char_end=piece.char_end,
                language=detect_language(piece.text),
                content_hash=content_hash,
                mtime=doc.mtime,
                metadata={"kind": piece.kind, "suffix": Path(doc.source).suffix.lower(), **(extra or {})},
            )
        )
    return chunks


def load_chunks(
    path: Path, max_bytes: int, config: SplitConfig, embed: Any, digest: str
) -> tuple[LoadedDocument, list[Chunk]]:
    """Chunks of one file: a document, or for JSON Lines one document per record."""
    if path.suffix.lower() not in RECORD_SUFFIXES:
        doc = load_document(path, max_bytes=max_bytes)
        return doc, pieces_to_chunks(doc, split_document(doc, config, embed))
    records = load_records(path, max_bytes=max_bytes, mtime=path.stat().st_mtime, file_hash=digest)
    chunks: list[Chunk] = []
    for doc, metadata in records:
        chunks.extend(
            pieces_to_chunks(doc, split_document(doc, config, embed), start=len(chunks), extra=metadata)
        )
    return records[0][0], chunks


def _under(path: str, roots: list[Path]) -> bool:
    p = Path(path)
    return any(p == root or root in p.parents for root in roots)


def ingest_paths(
    paths: list[Path],
    settings: Settings,
    embedder: Embedder,
    *,
    index_dir: Path | None = None,
    rebuild: bool = False,
    progress: bool = True,
) -> IngestReport:
    folder = Path(index_dir or settings.index_dir)
    started = time.perf_counter()
    report = IngestReport(index_dir=str(folder))
    roots = [Path(p).resolve() for p in paths]
    for root in roots:
        if not root.exists():
            raise FileNotFoundError(f"{root} does not exist")
    split_config = SplitConfig(
        chunk_size=settings.chunk_size,
        chunk_overlap=settings.chunk_overlap,
        semantic=settings.semantic_split,
        semantic_threshold=settings.semantic_threshold,
    )
    max_bytes = int(settings.max_file_mb * 1024 * 1024)
    with write_lock(folder):
        previous = None if rebuild else read_generation(folder)
        if previous is not None and previous[2]["embedder"] != embedder.name:
            raise IndexError_(
                f"the index in {folder} was built with embedder {previous[2]['embedder']!r}, not "
                f"{embedder.name!r}; re-ingest everything with --rebuild"
            )
        old_files = previous[0].files() if previous else {}
        files = [p.resolve() for p in iter_source_files(roots)]
        report.files_seen = len(files)
        keep_sources: set[str] = set()
        new_chunks: list[Chunk] = []
        records: dict[str, FileRecord] = {}
        semantic_embed = embedder.embed_documents if settings.semantic_split else None
        for path in tqdm(
            files,
            desc="reading",
            unit="file",
            disable=not progress,
            leave=False,
            mininterval=progress_interval(),
        ):
            source = str(path)
            try:
                if path.stat().st_size > max_bytes:
                    raise LoaderError(
                        f"file too large ({path.stat().st_size / 1e6:.1f} MB > {settings.max_file_mb} MB)"
                    )
                digest = file_sha256(path)
                old = old_files.get(source)
                if old is not None and old.file_hash == digest:
                    keep_sources.add(source)
                    records[source] = old
                    report.unchanged.append(source)
                    continue
                doc, chunks = load_chunks(path, max_bytes, split_config, semantic_embed, digest)
                if not chunks:
                    raise LoaderError("no text to index")
            except (LoaderError, OSError) as exc:
                reason = getattr(exc, "reason", None) or str(exc)
                report.failed.append(FailedFile(source=source, reason=reason))
                if source in old_files:  # keep the last good version
                    keep_sources.add(source)
                    records[source] = old_files[source]
                continue
            new_chunks.extend(chunks)
            records[source] = FileRecord(
                source=source,
                file_hash=digest,
                mtime=doc.mtime,
                size=doc.size,
                n_chunks=len(chunks),
                ingested_at=time.time(),
            )
            (report.updated if source in old_files else report.added).append(source)
        scanned = {str(p) for p in files}
        for source in old_files:
            if source in keep_sources or source in records:
                continue
            if _under(source, roots) and source not in scanned:
                report.removed.append(source)
            elif not _under(source, roots):  # outside this run's paths: untouched
                keep_sources.add(source)
                records[source] = old_files[source]
        vectors = embed_in_batches(
            embedder, [embedding_text(c) for c in new_chunks], settings.embed_batch_size, progress
        )
        report.chunks_embedded = len(new_chunks)

        def rows() -> Iterator[tuple[Chunk, list[str], np.ndarray]]:
            if previous is not None:
                store, old_vectors, _ = previous
                for pos, chunk, tokens in store.iter_rows(keep_sources):
                    yield chunk, tokens.split(" ") if tokens else [], old_vectors[pos]
            for chunk, vector in zip(new_chunks, vectors, strict=True):
                yield chunk, bm25_tokens(chunk, settings.bm25_title_boost), vector

        counted = _Counted(rows())
        write_generation(
            folder,
            counted,
            records.values(),
            embedder=embedder.name,
            dim=embedder.dim,
            params=build_params(settings),
        )
        if previous is not None:
            previous[0].close()
        report.chunks_total = counted.n
    report.seconds = round(time.perf_counter() - started, 2)
    return report


class _Counted:
    """Pass rows through while counting them."""

    def __init__(self, rows: Iterator) -> None:
        self.rows = rows
        self.n = 0

    def __iter__(self) -> Iterator:
        for row in self.rows:
            self.n += 1
            yield row
