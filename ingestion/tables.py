"""CSV/TSV files as tables of the index's SQLite database (``<index>/tables.sqlite``), beside their text
chunks, so the SQL route can count, sum and filter their records.

One table per file, named after the file (``sales.csv`` -> ``sales``; a second ``sales.tsv`` elsewhere
gets ``sales_2``); a column whose non-empty values all read as numbers is REAL or INTEGER, others TEXT.
The sync is incremental like the text index: a changed file's table is rebuilt, a removed file's table
dropped, an unchanged one left alone (``__sources`` records which file and hash each table holds).
"""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

from ingestion.formats import _csv_rows
from retrievers.sql import index_tables_path

TABLE_SUFFIXES = {".csv": None, ".tsv": "\t"}
_META = "__sources"


def tables_path(index_dir: Path) -> Path:
    return index_tables_path(index_dir)


def _identifier(text: str, fallback: str) -> str:
    """A table or column name from a file stem or header: letters of any script, digits and _."""
    name = re.sub(r"[^\w]+", "_", text.strip(), flags=re.UNICODE).strip("_")
    return name or fallback


def _number(value: str) -> float | int | None:
    text = value.strip().replace(",", "")
    if not re.fullmatch(r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?", text):
        return None
    number = float(text)
    return int(number) if re.fullmatch(r"-?\d+", text) and abs(number) < 2**63 else number


def _columns(header: list[str]) -> list[str]:
    names: list[str] = []
    for i, cell in enumerate(header, start=1):
        name = _identifier(cell, f"column_{i}")
        while name.lower() in {n.lower() for n in names}:
            name += "_2"
        names.append(name)
    return names


def load_table(conn: sqlite3.Connection, table: str, rows: list[list[str]]) -> int:
    """(Re)create ``table`` from rows whose first is the header; the number of records written."""
    header, records = rows[0], rows[1:]
    columns = _columns(header)
    width = len(columns)
    records = [(r + [""] * width)[:width] for r in records]
    kinds = []
    for i in range(width):
        values = [r[i] for r in records if r[i].strip()]
        numbers = [_number(v) for v in values]
        if values and all(n is not None for n in numbers):
            kinds.append("INTEGER" if all(isinstance(n, int) for n in numbers) else "REAL")
        else:
            kinds.append("TEXT")
    quoted = _quote(table)
    conn.execute(f"DROP TABLE IF EXISTS {quoted}")
    conn.execute(
        f"CREATE TABLE {quoted} ({', '.join(f'{_quote(c)} {k}' for c, k in zip(columns, kinds, strict=True))})"
    )
    typed = [
        tuple(
            (None if not v.strip() else _number(v)) if kind != "TEXT" else v.strip()
            for v, kind in zip(r, kinds, strict=True)
        )
        for r in records
    ]
    conn.executemany(f"INSERT INTO {quoted} VALUES ({', '.join('?' * width)})", typed)
    return len(typed)


def sync_tables(index_dir: Path, files: dict[str, str]) -> dict[str, str]:
    """Bring ``tables.sqlite`` in line with ``files`` (source path -> content hash of every CSV/TSV the
    index holds); returns source -> table for the tables that now exist. A file that no longer parses
    keeps no table (its text chunks say why it failed)."""
    wanted = {s: h for s, h in files.items() if Path(s).suffix.lower() in TABLE_SUFFIXES}
    path = tables_path(index_dir)
    if not wanted and not path.exists():
        return {}
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path)
    try:
        with conn:
            conn.execute(f"CREATE TABLE IF NOT EXISTS {_META} (source TEXT PRIMARY KEY, tbl TEXT, hash TEXT)")
            held = {s: (t, h) for s, t, h in conn.execute(f"SELECT source, tbl, hash FROM {_META}")}
            for source, (table, _) in held.items():
                if source not in wanted:
                    conn.execute(f"DROP TABLE IF EXISTS {_quote(table)}")
                    conn.execute(f"DELETE FROM {_META} WHERE source = ?", (source,))
            taken = {t.lower() for s, (t, _) in held.items() if s in wanted}
            for source, digest in sorted(wanted.items()):
                old = held.get(source)
                if old is not None and old[1] == digest:
                    continue
                table = old[0] if old else _free_name(_identifier(Path(source).stem, "table"), taken)
                taken.add(table.lower())
                try:
                    data = Path(source).read_bytes()
                    rows = _csv_rows(data, TABLE_SUFFIXES[Path(source).suffix.lower()])
                except (OSError, ValueError):
                    rows = []
                if len(rows) < 2:
                    conn.execute(f"DROP TABLE IF EXISTS {_quote(table)}")
                    conn.execute(f"DELETE FROM {_META} WHERE source = ?", (source,))
                    continue
                load_table(conn, table, rows)
                conn.execute(f"INSERT OR REPLACE INTO {_META} VALUES (?, ?, ?)", (source, table, digest))
            return {s: t for s, t, _ in conn.execute(f"SELECT source, tbl, hash FROM {_META}")}
    finally:
        conn.close()


def _free_name(name: str, taken: set[str]) -> str:
    candidate, n = name, 2
    while candidate.lower() in taken or candidate.lower().startswith(("sqlite_", "__")):
        candidate, n = f"{name}_{n}", n + 1
    return candidate


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'
