"""Incremental ingestion: new and changed files are split and embedded, unchanged files keep their
chunks and vectors, deleted files lose theirs, and the result is written to the selected store (a new
local index generation, or upserts and deletes in Milvus: ``ingestion.sinks``).

A file that fails to load is reported with its reason and never aborts the run. An indexed file that
has become empty, binary, unreadable or otherwise unindexable loses its old chunks: they no longer say
what the file says, and serving them would cite text that is not there (reported as removed, with the
reason). A file symlink that leads outside the folders given is followed and listed in the report, or
refused with ``AGENTIC_RAG_OUTSIDE_SYMLINKS=false``.
"""

from __future__ import annotations

import hashlib
import logging
import os
import stat
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from pydantic import BaseModel, Field
from tqdm import tqdm

from config import Settings
from core.access import ACCESS_KEY
from core.access import groups as access_groups
from core.chunks import Chunk
from core.text import detect_language
from ingestion.documents import LoadedDocument, TextPiece
from ingestion.entities import with_entities, with_model_entities
from ingestion.indexing import embed_in_batches, embedding_text, progress_interval
from ingestion.loaders import LoaderError, load_document, regular_file
from ingestion.records import RECORD_SUFFIXES, load_records
from ingestion.sinks import open_sink
from ingestion.sources import scan_sources
from ingestion.splitter import SplitConfig, split_document
from ingestion.summaries import summary_chunks
from ingestion.tables import sync_tables
from providers.embeddings import Embedder
from retrievers.docstore import FileRecord
from retrievers.levels import LEVEL_KEY

if TYPE_CHECKING:
    from providers.ingest_llm import IngestWriter

log = logging.getLogger(__name__)


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
    removal_reasons: dict[str, str] = Field(
        default_factory=dict, description="why each removed file lost its chunks (deleted, empty, binary ...)"
    )
    outside_links: list[str] = Field(
        default_factory=list, description="file symlinks followed to a target outside the folders given"
    )
    failed: list[FailedFile] = Field(default_factory=list)
    unsupported: list[str] = Field(default_factory=list, description="files found with no loader, not read")
    excluded: int = Field(default=0, description="files left out by the include/exclude globs")
    chunks_total: int = 0
    chunks_embedded: int = 0
    seconds: float = 0.0


def chunk_id(source: str, index: int, content_hash: str) -> str:
    return hashlib.sha1(f"{source}\0{index}\0{content_hash}".encode()).hexdigest()[:20]


def file_sha256(path: Path) -> str:
    """SHA-256 of a regular file; opened without blocking and re-checked, so a FIFO swapped in never hangs."""
    digest = hashlib.sha256()
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    with open(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise LoaderError("not a regular file; skipped")
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def with_access(digest: str, access: list[str]) -> str:
    """The recorded file hash: its sha256, plus the run's groups so a change of access re-indexes it."""
    if not access:
        return digest
    return f"{digest}+access:{hashlib.sha1(','.join(access).encode()).hexdigest()[:16]}"  # fits Milvus


def grant(chunks: list[Chunk], access: list[str]) -> list[Chunk]:
    """The run's groups on chunks whose document named none in its front matter."""
    if access:
        for chunk in chunks:
            chunk.metadata.setdefault(ACCESS_KEY, list(access))
    return chunks


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
                metadata={
                    "kind": piece.kind,
                    "suffix": Path(doc.source).suffix.lower(),
                    **({ACCESS_KEY: doc.access} if doc.access else {}),
                    **(extra or {}),
                },
            )
        )
    return chunks


def load_chunks(
    path: Path, max_bytes: int, config: SplitConfig, embed: Any, digest: str
) -> tuple[LoadedDocument, list[Chunk]]:
    """Chunks of one file: a document, or for JSON Lines one document per record."""
    if path.suffix.lower() not in RECORD_SUFFIXES:
        doc = load_document(path, max_bytes=max_bytes)
        return doc, with_entities(pieces_to_chunks(doc, split_document(doc, config, embed)))
    records = load_records(path, max_bytes=max_bytes, mtime=path.stat().st_mtime, file_hash=digest)
    chunks: list[Chunk] = []
    for doc, metadata in records:
        chunks.extend(
            pieces_to_chunks(doc, split_document(doc, config, embed), start=len(chunks), extra=metadata)
        )
    return records[0][0], with_entities(chunks)


def _resolved_root(path: Path) -> Path:
    try:
        root = path.resolve()
    except (RuntimeError, OSError):
        raise FileNotFoundError(f"{path} cannot be followed (symlink loop)") from None
    if not root.exists():
        raise FileNotFoundError(f"{root} does not exist")
    return root


def _under(path: str, roots: list[Path]) -> bool:
    p = Path(path)
    return any(p == root or root in p.parents for root in roots)


class FileOutcome(BaseModel):
    """One file read and split: its record and chunks, or why it failed."""

    source: str
    record: FileRecord | None = None
    chunks: list[Chunk] = Field(default_factory=list)
    error: str | None = None


def split_config(settings: Settings) -> SplitConfig:
    return SplitConfig(
        chunk_size=settings.chunk_size,
        chunk_overlap=settings.chunk_overlap,
        semantic=settings.semantic_split,
        semantic_threshold=settings.semantic_threshold,
    )


def load_file(path: Path, digest: str, settings: Settings, semantic_embed: Any = None) -> FileOutcome:
    """Read and split one file; a loader failure becomes the outcome's ``error``, never an exception."""
    source = str(path)
    max_bytes = int(settings.max_file_mb * 1024 * 1024)
    try:
        doc, chunks = load_chunks(path, max_bytes, split_config(settings), semantic_embed, digest)
        if not chunks:
            raise LoaderError("no text to index")
    except (LoaderError, OSError) as exc:
        return FileOutcome(source=source, error=getattr(exc, "reason", None) or str(exc))
    record = FileRecord(
        source=source,
        file_hash=digest,
        mtime=doc.mtime,
        size=doc.size,
        n_chunks=len(chunks),
        ingested_at=time.time(),
    )
    return FileOutcome(source=source, record=record, chunks=chunks)


# Reads, splits and embeds the files to (re)index: (path, sha256) pairs -> outcomes and the vectors of
# all their chunks in order. The plain one runs here; ``ingestion.ray_ingest`` runs on a Ray cluster.
Processor = Callable[[list[tuple[Path, str]]], tuple[list[FileOutcome], np.ndarray]]


def add_summaries(
    outcomes: list[FileOutcome], embedder: Embedder, writer: IngestWriter | None = None
) -> None:
    """Each loaded document gets its summary tree (section and document summaries) beside its passages;
    with ``writer`` the model writes them where it can (the extractive ones elsewhere)."""
    summarise = writer.summarise if writer is not None and writer.summaries else None
    label = writer.label if writer is not None else ""
    for outcome in outcomes:
        if outcome.record is not None and outcome.chunks:
            documents: dict[object, list[Chunk]] = {}  # a JSON Lines file holds one document per record
            for chunk in outcome.chunks:
                documents.setdefault(chunk.metadata.get("doc_id"), []).append(chunk)
            for passages in documents.values():
                outcome.chunks += summary_chunks(
                    passages, embedder.embed_documents, summarise=summarise, written_by=label
                )
            outcome.record.n_chunks = len(outcome.chunks)


def write_with_model(
    outcomes: list[FileOutcome], embedder: Embedder, writer: IngestWriter, tree: bool
) -> None:
    """The model's part of ingest, one file at a time (its requests count against that file's cap):
    the summary tree first (few requests), then each passage's entities."""
    for outcome in outcomes:
        with writer.document(outcome.source):
            if tree:
                add_summaries([outcome], embedder, writer)
            if writer.entities_on and outcome.record is not None:
                with_model_entities(outcome.chunks, writer.entities, writer.label)
    log.info("%s", writer.report())


def local_processor(
    settings: Settings, embedder: Embedder, progress: bool, index_dir: Path | None = None
) -> Processor:
    def process(items: list[tuple[Path, str]]) -> tuple[list[FileOutcome], np.ndarray]:
        semantic_embed = embedder.embed_documents if settings.semantic_split else None
        outcomes = [
            load_file(path, digest, settings, semantic_embed)
            for path, digest in tqdm(
                items,
                desc="reading",
                unit="file",
                disable=not progress,
                leave=False,
                mininterval=progress_interval(),
            )
        ]
        tree = settings.summary_tree and settings.store == "local"
        writer = None
        if items and settings.llm_configured:  # imported here: the offline path loads no LLM client
            from providers.ingest_llm import open_ingest_writer

            writer = open_ingest_writer(settings, index_dir)
        if writer is not None:
            try:
                write_with_model(outcomes, embedder, writer, tree)
            finally:
                writer.close()
        elif tree:
            add_summaries(outcomes, embedder)
        chunks = [c for o in outcomes for c in o.chunks]
        return outcomes, embed_passages_first(embedder, chunks, settings.embed_batch_size, progress)

    return process


def embed_passages_first(
    embedder: Embedder, chunks: list[Chunk], batch_size: int, progress: bool
) -> np.ndarray:
    """The chunks' vectors, in order, with the summary chunks embedded in batches of their own after
    the passages: a batch is padded to its longest text, which moves vectors in the fourth decimal,
    so a passage's vector (and every near-tie of a search) stays the same whether the tree is on."""
    summary = np.array([bool(c.metadata.get(LEVEL_KEY)) for c in chunks], dtype=bool)
    texts = [embedding_text(c) for c in chunks]
    if not summary.any():
        return embed_in_batches(embedder, texts, batch_size, progress)
    passages = embed_in_batches(embedder, [texts[i] for i in np.flatnonzero(~summary)], batch_size, progress)
    summaries = embed_in_batches(embedder, [texts[i] for i in np.flatnonzero(summary)], batch_size, progress)
    vectors = np.zeros((len(chunks), embedder.dim), dtype=np.float32)
    vectors[~summary] = passages
    vectors[summary] = summaries
    return vectors


def ingest_paths(
    paths: list[Path],
    settings: Settings,
    embedder: Embedder,
    *,
    index_dir: Path | None = None,
    rebuild: bool = False,
    progress: bool = True,
    processor: Processor | None = None,
    include: list[str] | None = None,
    exclude: list[str] | None = None,
    access: list[str] | None = None,
) -> IngestReport:
    """Bring the index in line with ``paths``; ``include``/``exclude`` are globs on paths relative to the
    folders given (or file names), e.g. ``*.md``, ``docs/**``, ``build``.

    ``access``: the groups that may read this run's files (core/access.py) where a file's own front
    matter names none. A file whose groups change is re-indexed even when its bytes did not.
    """
    access = access_groups(access)
    started = time.perf_counter()
    roots = [_resolved_root(Path(p)) for p in paths]
    max_bytes = int(settings.max_file_mb * 1024 * 1024)
    process = processor or local_processor(settings, embedder, progress, index_dir)
    with open_sink(settings, embedder.name, embedder.dim, index_dir=index_dir, rebuild=rebuild) as sink:
        report = IngestReport(index_dir=sink.location)
        old_files = sink.files()
        scan = scan_sources(roots, include or (), exclude or ())
        files = scan.files  # resolved one by one below: a symlink loop fails its own file only
        report.unsupported = [str(p) for p in scan.unsupported]
        report.excluded = len(scan.excluded)
        # Files a filter left out are outside this run, like files outside its paths: kept as they are.
        filtered_out = {str(p.resolve()) for p in scan.excluded}
        for path in report.unsupported:
            log.debug("unsupported %s", path)
        report.files_seen = len(files)
        report.failed.extend(
            FailedFile(source=str(folder), reason=reason) for folder, reason in scan.unreadable
        )
        scanned: set[str] = set()
        keep_sources: set[str] = set()
        records: dict[str, FileRecord] = {}
        to_load: list[tuple[Path, str]] = []

        def failed(source: str, reason: str) -> None:
            if source in old_files:  # its old chunks describe a file that is no longer there as it was
                scanned.add(source)
                removed(source, reason)
                return
            report.failed.append(FailedFile(source=source, reason=reason))
            log.info("failed %s: %s", source, reason)

        def removed(source: str, reason: str) -> None:
            report.removed.append(source)
            report.removal_reasons[source] = reason
            log.info("removed %s (%s)", source, reason)

        for path in files:
            source = str(path.absolute())
            try:
                link = path
                path = regular_file(path)  # before anything opens it: a FIFO or /dev/zero never ends
                if path != link.absolute() and not _under(str(path), roots):
                    if not settings.outside_symlinks:
                        raise LoaderError(
                            f"symlink to {path}, outside the folders given; refused "
                            "(AGENTIC_RAG_OUTSIDE_SYMLINKS=false)"
                        )
                    report.outside_links.append(f"{link.absolute()} -> {path}")
                    log.info("followed %s outside the folders given", f"{link} -> {path}")
                source = str(path)
                scanned.add(source)
                if path.stat().st_size > max_bytes:
                    raise LoaderError(
                        f"file too large ({path.stat().st_size / 1e6:.1f} MB > {settings.max_file_mb} MB)"
                    )
                digest = with_access(file_sha256(path), access)
            except (LoaderError, OSError) as exc:
                failed(source, getattr(exc, "reason", None) or str(exc))
                continue
            old = old_files.get(source)
            if old is not None and old.file_hash == digest:
                keep_sources.add(source)
                records[source] = old
                report.unchanged.append(source)
                log.debug("unchanged %s", source)
            else:
                to_load.append((path, digest))
        outcomes, all_vectors = process(to_load)
        new_chunks: list[Chunk] = []
        vector_rows: list[int] = []
        row = 0
        for outcome in outcomes:
            count = len(outcome.chunks)
            if outcome.error is not None or outcome.record is None:
                failed(outcome.source, outcome.error or "not processed")
            else:
                new_chunks.extend(grant(outcome.chunks, access))
                vector_rows.extend(range(row, row + count))
                records[outcome.source] = outcome.record
                (report.updated if outcome.source in old_files else report.added).append(outcome.source)
                log.debug(
                    "%s %s (%d chunks)",
                    "updated" if outcome.source in old_files else "added",
                    outcome.source,
                    count,
                )
            row += count
        for source in old_files:
            if source in keep_sources or source in records or source in report.removal_reasons:
                continue
            if _under(source, roots) and source not in scanned and source not in filtered_out:
                removed(source, "no longer on disk")
            elif not _under(source, roots) or source in filtered_out:  # outside this run: untouched
                keep_sources.add(source)
                records[source] = old_files[source]
        vectors = all_vectors[vector_rows] if len(vector_rows) else all_vectors[:0]
        report.chunks_embedded = len(new_chunks)
        report.chunks_total = sink.write(new_chunks, vectors, records, keep_sources)
        # CSV/TSV files also become tables of the index's SQLite database (the SQL route's).
        sync_tables(Path(index_dir or settings.index_dir), {s: r.file_hash for s, r in records.items()})
    report.seconds = round(time.perf_counter() - started, 2)
    log.info(
        "ingested into %s: %d added, %d updated, %d unchanged, %d removed, %d failed, %d unsupported, "
        "%d chunks (%.1f s)",
        report.index_dir,
        len(report.added),
        len(report.updated),
        len(report.unchanged),
        len(report.removed),
        len(report.failed),
        len(report.unsupported),
        report.chunks_total,
        report.seconds,
    )
    return report
