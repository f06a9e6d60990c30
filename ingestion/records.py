"""JSON Lines corpora: one record per line, ``{"id", "title", "text", ...}``, each its own document.

Many corpora (BEIR, the evaluation sets under ../shared/data, exports from other tools) come as JSONL.
Every record is split on its own, keeps its id as ``metadata["doc_id"]`` and any other scalar fields
as metadata, so records never merge into one chunk.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ingestion.documents import Block, LoadedDocument, LoaderError

RECORD_SUFFIXES = (".jsonl",)
TEXT_KEYS = ("text", "contents", "content", "body", "passage")


def load_records(
    path: Path, *, max_bytes: int, mtime: float, file_hash: str
) -> list[tuple[LoadedDocument, dict[str, Any]]]:
    """One (document, metadata) pair per record; a malformed line fails the file with its line number."""
    size = path.stat().st_size
    if max_bytes > 0 and size > max_bytes:
        raise LoaderError(f"file too large ({size / 1e6:.1f} MB > {max_bytes / 1e6:.1f} MB)")
    out: list[tuple[LoadedDocument, dict[str, Any]]] = []
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except UnicodeDecodeError:
        raise LoaderError("not valid UTF-8 JSON Lines") from None
    except OSError as exc:
        raise LoaderError(f"cannot read file ({exc.strerror or exc})") from None
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        record = _parse(line, number)
        text = next((str(record[k]) for k in TEXT_KEYS if record.get(k)), "")
        if not text.strip():
            continue
        record_id = str(record.get("id", record.get("_id", number)))
        metadata = {
            k: v
            for k, v in record.items()
            if k not in (*TEXT_KEYS, "title", "id", "_id") and isinstance(v, str | int | float | bool)
        }
        metadata["doc_id"] = record_id
        doc = LoadedDocument(
            source=str(path.absolute()),
            title=str(record.get("title") or ""),
            blocks=[Block(kind="paragraph", text=text)],
            mtime=mtime,
            file_hash=file_hash,
            size=size,
        )
        out.append((doc, metadata))
    if not out:
        raise LoaderError("no records with text (expected JSON objects with a 'text' field)")
    return out


def _parse(line: str, number: int) -> dict[str, Any]:
    try:
        record = json.loads(line)
    except ValueError as exc:
        raise LoaderError(f"line {number} is not valid JSON ({exc.msg})") from None
    if not isinstance(record, dict):
        raise LoaderError(f"line {number} is not a JSON object")
    return record
