"""The SQL route's databases: their schema (tables, columns, a few sample values) and one guarded way to
run a query over them.

Every statement, whoever wrote it (the offline rules or a model), passes ``check_select`` before it
runs: parsed with sqlglot, exactly one statement, a SELECT (or a UNION of SELECTs) with no write, DDL,
PRAGMA, ATTACH or ``SELECT ... INTO`` anywhere inside, naming only the tables the schema lists (never
sqlite_master, pg_catalog or information_schema) and no function that reaches outside the data. It then
runs on a read-only connection (SQLite ``mode=ro`` plus ``query_only`` and an authorizer that allows
reads only; PostgreSQL in a read-only transaction) with a time limit and a row limit.
"""

from __future__ import annotations

import re
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlparse

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError

Dialect = Literal["sqlite", "postgres"]
MAX_ROWS = 200
TIMEOUT_S = 5.0
SAMPLE_VALUES = 5
# Functions that read files, load code, sleep or reach the server's own state: never in a query.
_FORBIDDEN_FUNCTIONS = re.compile(
    r"^(?:load_extension|readfile|writefile|edit|fts\w*|zipfile|sqlar\w*|pg_\w+|lo_\w+|dblink\w*|"
    r"current_setting|set_config|query_to_xml\w*|copy|txid\w*|version)$",
    re.I,
)
_WRITES = (
    exp.Insert,
    exp.Update,
    exp.Delete,
    exp.Drop,
    exp.Create,
    exp.Alter,
    exp.Command,
    exp.Pragma,
    exp.Attach,
    exp.Detach,
    exp.Merge,
    exp.TruncateTable,
    exp.Set,
    exp.Transaction,
    exp.Commit,
    exp.Rollback,
    exp.Into,
    exp.Copy,
)


INDEX_TABLES = "tables.sqlite"  # the index folder's database of ingested CSV/TSV tables


def index_tables_path(index_dir: Path) -> Path:
    return Path(index_dir) / INDEX_TABLES


class SqlError(ValueError):
    """A query that may not run, or failed when it ran, with a one-line reason."""


@dataclass(frozen=True)
class Column:
    name: str
    kind: Literal["number", "text"]
    samples: tuple[str, ...] = ()


@dataclass(frozen=True)
class Table:
    name: str
    columns: tuple[Column, ...]
    rows: int = 0

    def column(self, name: str) -> Column | None:
        return next((c for c in self.columns if c.name == name), None)


@dataclass
class SqlResult:
    sql: str
    database: str
    columns: list[str]
    rows: list[tuple[Any, ...]]
    truncated: bool = False
    ms: float = 0.0


def describe(tables: list[Table]) -> str:
    """The schema as a model reads it: one line per table with its columns, kinds and sample values."""
    lines = []
    for table in tables:
        columns = ", ".join(
            f'"{c.name}" {c.kind}' + (f" (e.g. {', '.join(map(repr, c.samples[:3]))})" if c.samples else "")
            for c in table.columns
        )
        lines.append(f'TABLE "{table.name}" ({table.rows} rows): {columns}')
    return "\n".join(lines)


def check_select(sql: str, dialect: Dialect, tables: list[str]) -> str:
    """The one statement in ``sql`` when it only reads the listed ``tables``; else a ``SqlError``."""
    text = sql.strip().rstrip(";").strip()
    if not text:
        raise SqlError("empty SQL")
    try:
        statements = [s for s in sqlglot.parse(text, read=dialect) if s is not None]
    except ParseError as exc:
        raise SqlError(f"SQL does not parse: {str(exc).splitlines()[0]}") from None
    if len(statements) != 1:
        raise SqlError(f"one statement only, got {len(statements)}")
    tree = statements[0]
    if not isinstance(tree, exp.Select | exp.Union | exp.Intersect | exp.Except):
        raise SqlError(f"SELECT only, got {type(tree).__name__.upper()}")
    for node in tree.walk():
        if isinstance(node, _WRITES) or (isinstance(node, exp.Select) and node.args.get("into")):
            raise SqlError(f"SELECT only: {type(node).__name__.upper()} is not allowed")
        if isinstance(node, exp.Func):
            name = node.sql_name() if not isinstance(node, exp.Anonymous) else str(node.this)
            if _FORBIDDEN_FUNCTIONS.match(name):
                raise SqlError(f"function {name} is not allowed")
    known = {t.lower() for t in tables}
    ctes = {cte.alias_or_name.lower() for cte in tree.find_all(exp.CTE)}
    for table in tree.find_all(exp.Table):
        name = table.name.lower()
        if table.args.get("db") or table.args.get("catalog"):
            raise SqlError(f"table {table.sql()} is outside the schema")
        if name not in known and name not in ctes:
            raise SqlError(f"unknown table {table.name!r} (known: {', '.join(tables)})")
    return text


@dataclass
class SqlDatabase:
    """One database of the SQL route: a SQLite file or a PostgreSQL URL."""

    url: str
    max_rows: int = MAX_ROWS
    timeout_s: float = TIMEOUT_S
    _tables: list[Table] | None = field(default=None, repr=False)

    @property
    def dialect(self) -> Dialect:
        return "postgres" if self.url.startswith(("postgresql://", "postgres://")) else "sqlite"

    @property
    def label(self) -> str:
        """The URL without credentials, for citations and traces."""
        parsed = urlparse(self.url)
        if parsed.password or parsed.username:
            netloc = parsed.hostname or ""
            netloc += f":{parsed.port}" if parsed.port else ""
            return parsed._replace(netloc=netloc).geturl()
        return self.url

    @property
    def path(self) -> Path:
        if not self.url.startswith("sqlite:///"):
            raise SqlError(f"not a SQLite URL: {self.label} (sqlite:///path.db or postgresql://...)")
        return Path(self.url[len("sqlite:///") :])

    def tables(self) -> list[Table]:
        """The schema, read once (a database that cannot be opened has no tables: the route is skipped)."""
        if self._tables is None:
            self._tables = self._read_schema()
        return self._tables

    def refresh(self) -> None:
        self._tables = None

    def run(self, sql: str) -> SqlResult:
        """Run a checked SELECT read-only, at most ``max_rows`` rows, within ``timeout_s``."""
        text = check_select(sql, self.dialect, [t.name for t in self.tables()])
        started = time.perf_counter()
        columns, rows = self._execute(text)
        return SqlResult(
            sql=text,
            database=self.label,
            columns=columns,
            rows=rows[: self.max_rows],
            truncated=len(rows) > self.max_rows,
            ms=round((time.perf_counter() - started) * 1000, 1),
        )

    # --- one read-only cursor per dialect; everything else is shared ----------------------------------

    @contextmanager
    def _cursor(self, *, guarded: bool = True) -> Iterator[Any]:
        """A DB-API cursor on a read-only connection, closed after; the driver's errors become
        ``SqlError`` (a cancelled statement: "took longer"). ``guarded``: a checked statement is about
        to run (SQLite adds ``query_only``, the read-only authorizer and the time limit; the schema
        reader needs PRAGMA table_info, which the authorizer refuses)."""
        if self.dialect == "sqlite":
            with self._sqlite_cursor(guarded) as cursor:
                yield cursor
        else:
            with self._postgres_cursor() as cursor:
                yield cursor

    @contextmanager
    def _sqlite_cursor(self, guarded: bool) -> Iterator[sqlite3.Cursor]:
        if not self.path.is_file():
            raise SqlError(f"no such database file: {self.path}")
        conn = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True, timeout=self.timeout_s)
        try:
            if guarded:
                conn.execute("PRAGMA query_only = ON")
                conn.set_authorizer(_read_only_authorizer)
                deadline = time.monotonic() + self.timeout_s
                conn.set_progress_handler(lambda: int(time.monotonic() > deadline), 10_000)
            yield conn.cursor()
        except sqlite3.DatabaseError as exc:
            if "interrupted" in str(exc):
                raise SqlError(f"query took longer than {self.timeout_s:g} s") from None
            raise SqlError(f"query failed: {exc}") from None
        finally:
            conn.close()

    @contextmanager
    def _postgres_cursor(self) -> Iterator[Any]:
        import psycopg

        options = f"-c default_transaction_read_only=on -c statement_timeout={int(self.timeout_s * 1000)}"
        try:
            conn = psycopg.connect(self.url, connect_timeout=max(1, int(self.timeout_s)), options=options)
        except psycopg.Error as exc:
            raise SqlError(f"cannot connect to {self.label}: {str(exc).strip().splitlines()[0]}") from None
        conn.read_only = True
        with conn:
            try:
                with conn.cursor() as cursor:
                    yield cursor
            except psycopg.errors.QueryCanceled:
                raise SqlError(f"query took longer than {self.timeout_s:g} s") from None
            except psycopg.Error as exc:
                raise SqlError(f"query failed: {str(exc).strip().splitlines()[0]}") from None
            finally:
                conn.rollback()

    def _execute(self, sql: str) -> tuple[list[str], list[tuple[Any, ...]]]:
        with self._cursor() as cursor:
            cursor.execute(sql)
            rows = cursor.fetchmany(self.max_rows + 1)
            return [d[0] for d in cursor.description or []], [tuple(r) for r in rows]

    def _layout(self, cursor: Any) -> dict[str, list[tuple[str, str]]]:
        """Each table or view with its (column, declared type) pairs, in the database's order."""
        if self.dialect == "postgres":
            cursor.execute(
                "SELECT table_name, column_name, data_type FROM information_schema.columns "
                "WHERE table_schema = current_schema() ORDER BY table_name, ordinal_position"
            )
            layout: dict[str, list[tuple[str, str]]] = {}
            for table, column, declared in cursor.fetchall():
                layout.setdefault(table, []).append((column, declared))
            return layout
        cursor.execute(
            "SELECT name FROM sqlite_master WHERE type IN ('table', 'view') "
            "AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '\\_\\_%' ESCAPE '\\' ORDER BY name"
        )
        names = [r[0] for r in cursor.fetchall()]
        return {
            name: [(r[1], r[2]) for r in cursor.execute(f"PRAGMA table_info({_quote(name)})").fetchall()]
            for name in names
        }

    def _read_schema(self) -> list[Table]:
        if self.dialect == "sqlite" and not self.path.is_file():
            return []
        with self._cursor(guarded=False) as cursor:
            tables = []
            for name, columns in self._layout(cursor).items():
                quoted = _quote(name)
                cursor.execute(f"SELECT COUNT(*) FROM {quoted}")
                count = cursor.fetchone()[0]
                read = []
                for column, declared in columns:
                    kind = _kind(declared)
                    cursor.execute(
                        f"SELECT DISTINCT {_quote(column)} FROM {quoted} WHERE {_quote(column)} IS NOT NULL "
                        f"LIMIT {SAMPLE_VALUES if kind == 'number' else 50}"
                    )
                    read.append(Column(column, kind, tuple(str(r[0]) for r in cursor.fetchall())))
                tables.append(Table(name, tuple(read), count))
            return tables


# SQLite authorizer action codes a SELECT needs; everything else (writes, ATTACH, PRAGMA) is denied.
_ALLOWED_ACTIONS = {sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ, sqlite3.SQLITE_FUNCTION, 33}  # 33: RECURSIVE


def _read_only_authorizer(action: int, arg1: Any, arg2: Any, db: Any, trigger: Any) -> int:
    if action == sqlite3.SQLITE_FUNCTION and arg2 and _FORBIDDEN_FUNCTIONS.match(str(arg2)):
        return sqlite3.SQLITE_DENY
    return sqlite3.SQLITE_OK if action in _ALLOWED_ACTIONS else sqlite3.SQLITE_DENY


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _kind(declared: str | None) -> Literal["number", "text"]:
    text = (declared or "").lower()
    numeric = ("int", "real", "floa", "doub", "num", "dec")
    return "number" if any(word in text for word in numeric) else "text"


def parse_sql_urls(value: str | list[str] | None) -> list[str]:
    """``AGENTIC_RAG_SQL_URLS``: comma-separated sqlite:///path.db or postgresql://... URLs."""
    items = value if isinstance(value, list) else (value or "").split(",")
    urls = [item.strip() for item in items if item and item.strip()]
    for url in urls:
        if not url.startswith(("sqlite:///", "postgresql://", "postgres://")):
            raise SqlError(f"not a database URL: {url!r} (sqlite:///path.db or postgresql://user@host/db)")
    return urls


@dataclass
class SqlSources:
    """The databases a collection names: the index's own tables.sqlite (ingested CSV/TSV) and the
    configured URLs. Each table belongs to the first database that has it."""

    databases: list[SqlDatabase]

    def tables(self) -> list[Table]:
        seen: set[str] = set()
        found = []
        for database in self.databases:
            for table in database.tables():
                if table.name.lower() not in seen:
                    seen.add(table.name.lower())
                    found.append(table)
        return found

    def database_of(self, table: str) -> SqlDatabase | None:
        return next(
            (d for d in self.databases if table.lower() in {t.name.lower() for t in d.tables()}), None
        )

    def refresh(self) -> None:
        for database in self.databases:
            database.refresh()


def open_sql_sources(
    urls: list[str],
    index_tables: Path | None = None,
    *,
    max_rows: int = MAX_ROWS,
    timeout_s: float = TIMEOUT_S,
) -> SqlSources | None:
    """The SQL route's databases, or None when there are none (no route)."""
    found = [f"sqlite:///{index_tables}"] if index_tables is not None and index_tables.is_file() else []
    found += [url for url in urls if url not in found]
    if not found:
        return None
    return SqlSources([SqlDatabase(url, max_rows=max_rows, timeout_s=timeout_s) for url in found])
