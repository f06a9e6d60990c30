"""What the LLM wrote at ingest (summaries, passage entities), kept on disk so no text is paid for twice.

Keyed by (kind, model, prompt version, content hash): re-ingesting a folder, or an incremental ingest
that re-reads a changed file whose sections did not change, finds every unchanged section's summary and
every unchanged passage's entities here and sends no request. Changing the model or the prompt (its
version) asks again. Only usable replies are stored; a failed one is asked again next time.

The file is optional like every cache of the project (``providers.cache_file``): a damaged file is
moved aside with one warning and rebuilt empty, a read-only one is read, a full disk stores nothing.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import time
from pathlib import Path
from typing import Any

from providers.cache_file import CacheFile

CACHE_NAME = "llm_ingest.sqlite"  # in the index folder's cache/ (beside the answer cache)
_SCHEMA = """
CREATE TABLE IF NOT EXISTS written (
    kind    TEXT NOT NULL,
    model   TEXT NOT NULL,
    version TEXT NOT NULL,
    content TEXT NOT NULL,
    value   TEXT NOT NULL,
    created REAL NOT NULL,
    PRIMARY KEY (kind, model, version, content)
) WITHOUT ROWID
"""


def content_hash(*parts: str) -> str:
    """SHA-256 of the parts of a request's input, separated so that no two splits collide."""
    digest = hashlib.sha256()
    for part in parts:
        digest.update(part.encode("utf-8"))
        digest.update(b"\0")
    return digest.hexdigest()


def cache_path(index_dir: Path) -> Path:
    return Path(index_dir) / "cache" / CACHE_NAME


class IngestCache:
    """JSON values by (kind, model, version, content hash); ``path=None`` keeps them in memory."""

    def __init__(self, path: Path | str | None) -> None:
        self.file = CacheFile(path, _SCHEMA, "LLM ingest cache")

    def get(self, kind: str, model: str, version: str, content: str) -> Any | None:
        def read(conn: sqlite3.Connection) -> Any | None:
            row = conn.execute(
                "SELECT value FROM written WHERE kind = ? AND model = ? AND version = ? AND content = ?",
                (kind, model, version, content),
            ).fetchone()
            if row is None:
                return None
            try:
                return json.loads(row[0])
            except (TypeError, ValueError):  # a value the pages' checks let through damaged: ask again
                return None

        return self.file.read(read, None)

    def put(self, kind: str, model: str, version: str, content: str, value: Any) -> bool:
        row = (kind, model, version, content, json.dumps(value, ensure_ascii=False), time.time())
        return self.file.write(
            lambda conn: conn.execute("INSERT OR REPLACE INTO written VALUES (?, ?, ?, ?, ?, ?)", row)
        )

    def count(self) -> int:
        return self.file.read(lambda conn: int(conn.execute("SELECT COUNT(*) FROM written").fetchone()[0]), 0)

    def close(self) -> None:
        self.file.close()
