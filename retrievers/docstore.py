"""SQLite docstore: chunk text and metadata by position, file records for incremental ingest.

Positions (0..n-1) are shared with the FAISS index and the BM25 matrix of the same generation.
Each chunk's BM25 tokens are stored too, so an incremental re-index never re-tokenises old text.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path

import numpy as np
from pydantic import BaseModel

from core.access import ACCESS_KEY
from core.chunks import Chunk, Filters

_SCHEMA = """
CREATE TABLE chunks (
    pos INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    source TEXT NOT NULL,
    title TEXT NOT NULL,
    heading_path TEXT NOT NULL,
    chunk_index INTEGER NOT NULL,
    char_start INTEGER NOT NULL,
    char_end INTEGER NOT NULL,
    language TEXT NOT NULL,
    content_hash TEXT NOT NULL,
    mtime REAL NOT NULL,
    text TEXT NOT NULL,
    tokens TEXT NOT NULL,
    metadata TEXT NOT NULL
);
CREATE INDEX chunks_source ON chunks(source);
CREATE TABLE files (
    source TEXT PRIMARY KEY,
    file_hash TEXT NOT NULL,
    mtime REAL NOT NULL,
    size INTEGER NOT NULL,
    n_chunks INTEGER NOT NULL,
    ingested_at REAL NOT NULL
);
"""
_COLUMNS = (
    "id, source, title, heading_path, chunk_index, char_start, char_end, language, content_hash, mtime, "
    "text, metadata"
)
_PLAIN_COLUMNS = {"id", "source", "title", "chunk_index", "language", "content_hash"}


class FileRecord(BaseModel):
    source: str
    file_hash: str
    mtime: float
    size: int
    n_chunks: int
    ingested_at: float


class DocStore:
    """Read access is thread-safe (one connection behind a lock); writes happen only while building."""

    def __init__(self, path: Path, *, readonly: bool = True) -> None:
        self.path = path
        uri = f"file:{path}?mode=ro" if readonly else f"file:{path}"
        self._conn = sqlite3.connect(uri, uri=True, check_same_thread=False)
        self._lock = threading.Lock()

    @classmethod
    def create(cls, path: Path) -> DocStore:
        store = cls(path, readonly=False)
        store._conn.executescript(_SCHEMA)
        return store

    def close(self) -> None:
        self._conn.close()

    # --- writing ----------------------------------------------------------------------------
    def add_chunks(self, start: int, rows: Iterable[tuple[Chunk, str]]) -> int:
        """Insert (chunk, space-joined tokens) rows at positions start, start+1, ...; return next position."""
        pos = start
        batch = []
        for chunk, tokens in rows:
            batch.append(
                (
                    pos,
                    chunk.id,
                    chunk.source,
                    chunk.title,
                    json.dumps(chunk.heading_path, ensure_ascii=False),
                    chunk.chunk_index,
                    chunk.char_start,
                    chunk.char_end,
                    chunk.language,
                    chunk.content_hash,
                    chunk.mtime,
                    chunk.text,
                    tokens,
                    json.dumps(chunk.metadata, ensure_ascii=False),
                )
            )
            pos += 1
            if len(batch) >= 5000:
                self._insert(batch)
                batch = []
        self._insert(batch)
        return pos

    def _insert(self, batch: list[tuple]) -> None:
        if batch:
            self._conn.executemany(
                f"INSERT INTO chunks (pos, {_COLUMNS.replace('metadata', 'tokens, metadata')}) "
                "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                batch,
            )

    def put_files(self, records: Iterable[FileRecord]) -> None:
        self._conn.executemany(
            "INSERT OR REPLACE INTO files VALUES (?,?,?,?,?,?)",
            [(r.source, r.file_hash, r.mtime, r.size, r.n_chunks, r.ingested_at) for r in records],
        )

    def commit(self) -> None:
        self._conn.commit()

    # --- reading ----------------------------------------------------------------------------
    def count(self) -> int:
        with self._lock:
            return int(self._conn.execute("SELECT COUNT(*) FROM chunks").fetchone()[0])

    def get(self, positions: Iterable[int]) -> dict[int, Chunk]:
        wanted = [int(p) for p in positions]
        if not wanted:
            return {}
        marks = ",".join("?" * len(wanted))
        with self._lock:
            rows = self._conn.execute(
                f"SELECT pos, {_COLUMNS} FROM chunks WHERE pos IN ({marks})", wanted
            ).fetchall()
        return {row[0]: _row_to_chunk(row[1:]) for row in rows}

    def positions_of(self, chunk_ids: Iterable[str]) -> dict[str, int]:
        ids = list(chunk_ids)
        if not ids:
            return {}
        marks = ",".join("?" * len(ids))
        with self._lock:
            rows = self._conn.execute(f"SELECT id, pos FROM chunks WHERE id IN ({marks})", ids).fetchall()
        return dict(rows)

    def iter_rows(self, sources: set[str] | None = None) -> Iterator[tuple[int, Chunk, str]]:
        """(position, chunk, tokens) in position order, optionally only for some sources."""
        cursor = self._conn.execute(f"SELECT pos, {_COLUMNS}, tokens FROM chunks ORDER BY pos")
        for row in cursor:
            chunk = _row_to_chunk(row[1:-1])
            if sources is None or chunk.source in sources:
                yield row[0], chunk, row[-1]

    def titles(self) -> list[str]:
        """Distinct non-empty titles, for linking names in passages to documents (multi-hop)."""
        with self._lock:
            return [r[0] for r in self._conn.execute("SELECT DISTINCT title FROM chunks WHERE title != ''")]

    def metadata_keys(self) -> set[str]:
        """Every free-form metadata key some chunk holds (what ``Filters.equals`` can match)."""
        sql = "SELECT DISTINCT j.key FROM chunks, json_each(chunks.metadata) AS j"
        with self._lock:
            return {row[0] for row in self._conn.execute(sql)}

    def files(self) -> dict[str, FileRecord]:
        with self._lock:
            rows = self._conn.execute(
                "SELECT source, file_hash, mtime, size, n_chunks, ingested_at FROM files"
            ).fetchall()
        return {
            r[0]: FileRecord(
                source=r[0], file_hash=r[1], mtime=r[2], size=r[3], n_chunks=r[4], ingested_at=r[5]
            )
            for r in rows
        }

    def stats(self) -> dict[str, object]:
        with self._lock:
            langs = dict(self._conn.execute("SELECT language, COUNT(*) FROM chunks GROUP BY language"))
            n_sources = self._conn.execute("SELECT COUNT(DISTINCT source) FROM chunks").fetchone()[0]
        return {"chunks": self.count(), "sources": n_sources, "languages": langs}

    def group_positions(self, size: int) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        with self._lock:
            return _group_positions(self._conn, size)

    def containing(self, texts: list[str]) -> list[tuple[int, str]]:
        """(position, id) of the chunks whose text holds any of ``texts`` as written: one scan, for a
        word a posting lookup found nowhere (a Chinese name jieba cuts differently inside a passage than
        alone), so its hits are few."""
        if not texts:
            return []
        wanted = " OR ".join("instr(text, ?) > 0" for _ in texts)
        with self._lock:
            rows = self._conn.execute(f"SELECT pos, id FROM chunks WHERE {wanted}", texts).fetchall()
        return [(int(pos), str(chunk_id)) for pos, chunk_id in rows]

    def allowed_mask(self, filters: Filters | None, size: int) -> np.ndarray | None:
        """Boolean mask of positions passing the filters; None when there is nothing to filter."""
        if filters is None or filters.is_empty():
            return None
        clauses, params = _filter_sql(filters)
        sql = "SELECT pos FROM chunks WHERE " + " AND ".join(clauses)
        with self._lock:
            positions = np.fromiter((r[0] for r in self._conn.execute(sql, params)), dtype=np.int64)
        mask = np.zeros(size, dtype=bool)
        mask[positions[positions < size]] = True
        return mask

    def passage_mask(self, size: int) -> np.ndarray | None:
        """Boolean mask of chunks that are passages, None when every chunk is one (no summary tree)."""
        sql = "SELECT pos FROM chunks WHERE json_extract(metadata, '$.level') IN ('section', 'document')"
        with self._lock:
            positions = np.fromiter((r[0] for r in self._conn.execute(sql)), dtype=np.int64)
        if not len(positions):
            return None
        mask = np.ones(size, dtype=bool)
        mask[positions[positions < size]] = False
        return mask


def _group_positions(conn: sqlite3.Connection, size: int) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """(public mask, {group: mask}) from one pass over the chunks that name access groups."""
    sql = f"SELECT pos, value FROM chunks, json_each(chunks.metadata, '$.{ACCESS_KEY}')"
    rows = conn.execute(sql).fetchall()
    positions = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
    names, which = np.unique(np.asarray([str(r[1]) for r in rows], dtype=object), return_inverse=True)
    keep = positions < size
    positions, which = positions[keep], which[keep]
    restricted = np.zeros(size, dtype=bool)
    restricted[positions] = True
    by_group: dict[str, np.ndarray] = {}
    for number, name in enumerate(names):
        mask = np.zeros(size, dtype=bool)
        mask[positions[which == number]] = True
        by_group[str(name)] = mask
    return ~restricted, by_group


def _filter_sql(filters: Filters) -> tuple[list[str], list[object]]:
    clauses: list[str] = []
    params: list[object] = []
    if filters.source:
        pattern = filters.source if any(c in filters.source for c in "*?[") else f"*{filters.source}*"
        clauses.append("source GLOB ?")
        params.append(pattern)
    if filters.language:
        clauses.append("language = ?")
        params.append(filters.language)
    if filters.modified_after:
        clauses.append("mtime >= ?")
        params.append(filters.modified_after.timestamp())
    if filters.modified_before:
        clauses.append("mtime <= ?")
        params.append(filters.modified_before.timestamp())
    for key, value in filters.equals.items():
        if key in _PLAIN_COLUMNS:
            clauses.append(f"CAST({key} AS TEXT) = ?")
        else:
            clauses.append("CAST(json_extract(metadata, ?) AS TEXT) = ?")
            params.append(f'$."{key}"')
        params.append(_as_text(value))
    if filters.access is not None:
        clauses.append(access_sql(filters.access))
        params.extend(filters.access)
    return clauses, params


def access_sql(groups: list[str]) -> str:
    """Chunks without access groups, or sharing one of ``groups`` (one ``?`` per group)."""
    public = f"NOT EXISTS (SELECT 1 FROM json_each(metadata, '$.{ACCESS_KEY}'))"  # a string is one group
    if not groups:
        return f"({public})"
    marks = ",".join("?" * len(groups))
    shared = f"EXISTS (SELECT 1 FROM json_each(metadata, '$.{ACCESS_KEY}') WHERE value IN ({marks}))"
    return f"({public} OR {shared})"


def _as_text(value: object) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    return str(value)


def _row_to_chunk(row: tuple) -> Chunk:
    return Chunk(
        id=row[0],
        source=row[1],
        title=row[2],
        heading_path=json.loads(row[3]),
        chunk_index=row[4],
        char_start=row[5],
        char_end=row[6],
        language=row[7],
        content_hash=row[8],
        mtime=row[9],
        text=row[10],
        metadata=json.loads(row[11]),
    )
