"""Chunks in a Milvus collection: the same searches as the local index, through ``pymilvus.MilvusClient``.

One code path serves Milvus Lite (a file path: embedded in this process) and a Milvus server or cluster
(``http://host:19530``). Per store name ``C`` there are two collections:

- ``C``: one row per chunk, primary key ``pk`` = SHA-1 of the chunk id. ``dense (HNSW, inner product), ``sparse`` (produced server-side by Milvus's
  BM25 function from ``bm25_text``), the chunk's fields as scalar columns (``source``, ``language``,
  ``title``, ``mtime``, ``chunk_index``, ...) and its metadata twice: ``metadata`` as written and
  ``meta_text`` (values as text) for exact-match filters. Store facts (embedder, dim, tokenizer version)
  are collection properties.
- ``C_files``: one row per ingested file (the incremental-ingest records), primary key SHA-1 of the
  source; Milvus wants a vector field in every collection, so it carries a 2-d placeholder.

Primary keys are hashes because pymilvus's query iterator pages by pasting the last key into a filter
expression unescaped: a key holding a quote (a dataset's own id, a file name) would break it.

BM25 tokens: Milvus has only ``standard`` and ``jieba`` analyzers, neither of which reproduces the
project's tokenizer (jieba search mode + stemming + traditional-to-simplified + whole identifiers). So the
tokens are computed here and written as ``bm25_text``: each token hex-encoded, space-separated, which the
``standard`` analyzer splits back into exactly those tokens. Milvus then counts, weights and scores them
with its own BM25 (k1, b from settings), and queries use the same encoding: index and query tokens match
on every Milvus version. ``bench/milvus_store.py`` compares this with Milvus's own jieba analyzer.

Scores: BM25 distances come back negated from Milvus Lite and positive from a server; the store reports
their absolute value and callers rank by order only.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import threading
from collections.abc import Collection, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from core.access import document_groups
from core.chunks import Chunk, Filters
from core.command import command
from core.tokenize import TOKENIZER_VERSION
from retrievers.docstore import FileRecord
from retrievers.index import IndexError_, IndexNotFoundError, IndexVersionError
from retrievers.levels import names_level
from retrievers.milvus_filters import NOTHING, access_key, literal, meta_text, to_expression

STORE_FORMAT = 1
ACCESS_FIELD = "access_key"
META_KEY = "agentic_rag.meta"
MAX_VARCHAR = 65_535  # bytes, Milvus's limit for one VARCHAR value
_MAX_TOKEN_BYTES = 60
CHUNK_FIELDS = [
    "id",
    "text",
    "source",
    "title",
    "heading_path",
    "chunk_index",
    "char_start",
    "char_end",
    "language",
    "content_hash",
    "mtime",
    "metadata",
]
FILE_FIELDS = ["source", "file_hash", "mtime", "size", "n_chunks", "ingested_at"]
# Milvus JSON: a passage has no ``level`` key (summary chunks do; issue 26)
PASSAGES_ONLY = 'not exists meta_text["level"]'
_BATCH = 500
_EMPTY_KEYS = np.array([], dtype=object)
_LIKE_SPECIAL = re.compile(r'[%_"\\\n]')  # a like pattern's wildcards, its quote, escapes
_EMPTY_SCORES = np.array([], dtype=np.float32)


class MilvusStoreError(IndexError_):
    """A Milvus problem, with the URI and collection named and what to do."""


@dataclass(frozen=True)
class MilvusTarget:
    """Where a store lives: URI (file path or http URL), credentials, database and collection name."""

    uri: str
    collection: str
    token: str | None = None
    db: str | None = None

    @property
    def is_remote(self) -> bool:
        return self.uri.startswith(("http://", "https://", "tcp://", "grpc://"))

    @property
    def files_collection(self) -> str:
        return f"{self.collection}_files"

    def describe(self) -> str:
        return f"Milvus collection {self.collection!r} at {self.uri}"


class _LiteNoise(logging.Filter):
    """Drops two harmless messages Milvus Lite causes: its in-process server lacks ``AllocTimestamp``
    (pymilvus falls back after asking, while creating an index) and iterators then use a client-side
    timestamp. Real problems still log."""

    def filter(self, record: logging.LogRecord) -> bool:
        text = record.getMessage()
        return "failed to get mvccTs" not in text and "Method not implemented" not in text


def _quiet_lite_logs() -> None:
    for name in ("grpc._server", "pymilvus.client.iterator.query_iterator"):
        logger = logging.getLogger(name)
        if not any(isinstance(f, _LiteNoise) for f in logger.filters):
            logger.addFilter(_LiteNoise())


_NO_KEEPALIVE = {"grpc.keepalive_time_ms": 2**31 - 1, "grpc.keepalive_permit_without_calls": 0}


def connect(target: MilvusTarget):
    """A ``MilvusClient`` for the target; a clear one-line error when it cannot be reached."""
    try:
        from pymilvus import MilvusClient
    except ImportError:
        raise MilvusStoreError(
            "the milvus store needs pymilvus, an optional extra: bash scripts/setup.sh milvus "
            "(or pip install '.[milvus]')"
        ) from None

    _quiet_lite_logs()

    kwargs: dict[str, Any] = {}
    if target.token:
        kwargs["token"] = target.token
    if target.db:
        kwargs["db_name"] = target.db
    uri = target.uri
    if not target.is_remote:
        path = Path(uri).expanduser()
        path.parent.mkdir(parents=True, exist_ok=True)
        uri = str(path.resolve())
    # No keepalive pings: Milvus Lite's gRPC server (in process, or `milvus_lite server`) answers
    # pymilvus's 10 s pings with GOAWAY "too many pings", which kills the shared connection for good;
    # without pings a connection a server dropped fails on its next call and pymilvus reconnects.
    kwargs["grpc_options"] = _NO_KEEPALIVE
    try:
        return MilvusClient(uri=uri, **kwargs)
    except Exception as exc:  # grpc/pymilvus raise several unrelated types for "cannot connect"
        raise MilvusStoreError(
            f"cannot open Milvus at {target.uri} ({_reason(exc)}); check AGENTIC_RAG_MILVUS_URI "
            "(a file path for Milvus Lite, http://host:19530 for a server) and AGENTIC_RAG_MILVUS_TOKEN"
        ) from None


def _reason(exc: Exception) -> str:
    text = str(exc).strip().splitlines()
    return text[0][:300] if text else type(exc).__name__


def encode_tokens(tokens: Iterable[str], limit: int = MAX_VARCHAR) -> str:
    """Tokens as space-separated hex words the ``standard`` analyzer keeps whole (see module docstring).

    Very long tokens are replaced by their SHA-1 (still one distinct word); the text stops at a token
    boundary below Milvus's VARCHAR limit.
    """
    words: list[str] = []
    size = 0
    for token in tokens:
        raw = token.encode()
        word = raw.hex() if len(raw) <= _MAX_TOKEN_BYTES else hashlib.sha1(raw).hexdigest()
        if size + len(word) + 1 > limit:
            break
        words.append(word)
        size += len(word) + 1
    return " ".join(words)


def key(value: str) -> str:
    """The primary key for a chunk id or a source: hex, so no expression ever needs to quote it."""
    return hashlib.sha1(value.encode()).hexdigest()


def chunk_row(chunk: Chunk, tokens: list[str], vector: np.ndarray) -> dict[str, Any]:
    text_bytes = len(chunk.text.encode())
    if text_bytes > MAX_VARCHAR:
        raise MilvusStoreError(
            f"a chunk of {chunk.source} has {text_bytes} bytes of text, over Milvus's {MAX_VARCHAR}-byte "
            "limit; ingest with a smaller --chunk-size"
        )
    return {
        "pk": key(chunk.id),
        "id": chunk.id,
        "dense": np.asarray(vector, dtype=np.float32).tolist(),
        "bm25_text": encode_tokens(tokens),
        "text": chunk.text,
        "source": chunk.source,
        "title": chunk.title,
        "heading_path": chunk.heading_path,
        "chunk_index": chunk.chunk_index,
        "char_start": chunk.char_start,
        "char_end": chunk.char_end,
        "language": chunk.language,
        "content_hash": chunk.content_hash,
        "mtime": float(chunk.mtime),
        "metadata": chunk.metadata,
        "meta_text": meta_text(chunk.metadata),
        ACCESS_FIELD: access_key(document_groups(chunk.metadata)),
    }


def _chunk(entity: dict[str, Any]) -> Chunk:
    return Chunk(**{name: entity[name] for name in CHUNK_FIELDS})


@dataclass(frozen=True)
class MilvusBuild:
    """What shapes a new collection: the embedder, and HNSW/BM25 parameters from settings."""

    embedder: str
    dim: int
    hnsw_m: int = 32
    ef_construction: int = 80
    k1: float = 1.2
    b: float = 0.75


class MilvusStore:
    """An opened Milvus collection of chunks; the same search methods as the local ``Index``."""

    def __init__(self, client, target: MilvusTarget, meta: dict[str, Any], *, ef_search: int = 64) -> None:
        self.client = client
        self.target = target
        self.meta = meta
        self.ef_search = ef_search
        self._titles: list[str] | None = None
        self._summaries: bool | None = None
        self._lock = threading.Lock()
        # Collections made before access groups had their own field filter on the JSON metadata (slower).
        fields = client.describe_collection(target.collection).get("fields") or []
        self.access_field = any(f.get("name") == ACCESS_FIELD for f in fields)

    # --- opening ------------------------------------------------------------------------------
    @classmethod
    def open(cls, target: MilvusTarget, *, ef_search: int = 64) -> MilvusStore:
        client = connect(target)
        if not client.has_collection(target.collection):
            raise IndexNotFoundError(
                f"no {target.describe()}; create it with: AGENTIC_RAG_STORE=milvus {command('ingest')} "
                f"PATH... (or copy a local index: {command('index migrate')})"
            )
        meta = _read_meta(client, target)
        for name in (target.collection, target.files_collection):
            client.load_collection(name)  # a reopened collection starts released
        if meta.get("tokenizer_version") != TOKENIZER_VERSION or meta.get("format") != STORE_FORMAT:
            raise IndexVersionError(
                f"the {target.describe()} was written with tokenizer version "
                f"{meta.get('tokenizer_version')} / store format {meta.get('format')}; this version uses "
                f"{TOKENIZER_VERSION} / {STORE_FORMAT}; rebuild it with: {command('ingest --rebuild PATH...')}"
            )
        return cls(client, target, meta, ef_search=ef_search)

    @classmethod
    def create(cls, target: MilvusTarget, build: MilvusBuild, *, replace: bool = False) -> MilvusStore:
        """Create (or with ``replace``, drop and re-create) the collections; open an existing one as is."""
        client = connect(target)
        if replace:
            for name in (target.collection, target.files_collection):
                if client.has_collection(name):
                    client.drop_collection(name)
        if not client.has_collection(target.collection):
            _create_chunks(client, target.collection, build)
            _create_files(client, target.files_collection)
            meta = {
                "format": STORE_FORMAT,
                "embedder": build.embedder,
                "dim": build.dim,
                "tokenizer_version": TOKENIZER_VERSION,
                "hnsw": {"M": build.hnsw_m, "efConstruction": build.ef_construction},
                "bm25": {"k1": build.k1, "b": build.b},
            }
            client.alter_collection_properties(
                target.collection, properties={META_KEY: json.dumps(meta, sort_keys=True)}
            )
        for name in (target.collection, target.files_collection):
            client.load_collection(name)
        return cls(client, target, _read_meta(client, target))

    # --- the search interface (same as retrievers.index.Index) --------------------------------
    @property
    def embedder_name(self) -> str:
        return str(self.meta["embedder"])

    @property
    def location(self) -> str:
        return self.target.describe()

    @property
    def size(self) -> int:
        return self.count()

    def vector_search(
        self, query_vector: np.ndarray, k: int, filters: Filters | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Keys (primary keys) and inner-product scores of the best ``k`` chunks, best first."""
        vector = np.asarray(query_vector, dtype=np.float32).reshape(-1).tolist()
        params = {"metric_type": "IP", "params": {"ef": max(self.ef_search, k)}}
        return self._search([vector], "dense", k, filters, params)

    def keyword_search(
        self, tokens: list[str], k: int, filters: Filters | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Keys and BM25 scores of the best ``k`` chunks holding a query token, best first."""
        query = encode_tokens(tokens)
        if not query:
            return _EMPTY_KEYS, _EMPTY_SCORES
        return self._search([query], "sparse", k, filters, {"metric_type": "BM25"})

    def holders(self, token: str, k: int, filters: Filters | None = None) -> np.ndarray:
        """Keys of at most ``k`` chunks holding the term (Milvus's BM25 idf is always positive, so every
        chunk holding it is a hit)."""
        return self.keyword_search([token], k, filters)[0]

    def known(self, tokens: Iterable[str]) -> set[str]:
        """None: Milvus exposes no vocabulary to read (near spellings are not tried on this store)."""
        return set()

    def mentions(
        self, texts: Iterable[str], filters: Filters | None = None, without: Collection[str] = ()
    ) -> bool:
        """Whether a chunk the caller may read, other than ``without``, holds any of ``texts`` as written
        (one ``like`` query). Text a ``like`` pattern cannot hold literally counts as mentioned (cannot
        tell)."""
        texts = list(dict.fromkeys(texts))
        if any(_LIKE_SPECIAL.search(text) for text in texts):
            return True
        expression = self.expression(filters)
        if expression == NOTHING or not texts:
            return False
        clause = "(" + " or ".join(f'text like "%{text}%"' for text in texts) + ")"
        found = self.client.query(
            self.target.collection,
            filter=f"({expression}) and {clause}" if expression else clause,
            output_fields=["id"],
            limit=len(without) + 1,
        )
        return any(row["id"] not in without for row in found)

    def _search(
        self, data: list, field: str, k: int, filters: Filters | None, params: dict
    ) -> tuple[np.ndarray, np.ndarray]:
        expression = self.expression(filters)
        if expression == NOTHING or k <= 0:
            return _EMPTY_KEYS, _EMPTY_SCORES
        hits = self.client.search(
            self.target.collection,
            data=data,
            anns_field=field,
            filter=expression,
            limit=k,
            search_params=params,
            output_fields=[],
        )[0]
        keys = np.array([hit["pk"] for hit in hits], dtype=object)
        # Milvus reports BM25 as a negative distance; an inner product keeps its sign (a negative cosine
        # must stay below a positive one when fusion scales the scores).
        scores = [float(hit["distance"]) for hit in hits]
        if field == "sparse":
            scores = [abs(s) for s in scores]
        return keys, np.array(scores, dtype=np.float32)

    def chunks_at(self, keys: Iterable[str]) -> dict[str, Chunk]:
        """The chunks with these keys (one request); fetch only what will be returned."""
        wanted = list(dict.fromkeys(keys))
        if not wanted:
            return {}
        rows = self.client.get(self.target.collection, ids=wanted, output_fields=["pk", *CHUNK_FIELDS])
        return {row["pk"]: _chunk(row) for row in rows}

    def chunks_by_id(self, chunk_ids: Iterable[str]) -> dict[str, Chunk]:
        return {chunk.id: chunk for chunk in self.chunks_at(key(i) for i in chunk_ids).values()}

    def resolve(self, keys: Iterable[str], scores: Iterable[float]) -> list[tuple[Chunk, float]]:
        """(chunk, score) pairs in the given order."""
        pairs = list(zip(keys, scores, strict=True))
        chunks = self.chunks_at(k for k, _ in pairs)
        return [(chunks[k], float(s)) for k, s in pairs if k in chunks]

    def expression(self, filters: Filters | None) -> str:
        """The filters' expression; summary chunks (issue 26) are left out unless the filters name a level."""
        expression = to_expression(filters, self.sources, access_field=self.access_field)
        if expression == NOTHING or names_level(filters) or not self._has_summaries():
            return expression
        return f"({expression}) and ({PASSAGES_ONLY})" if expression else PASSAGES_ONLY

    def matching_ids(self, filters: Filters | None) -> set[str]:
        """Ids of the chunks the filters let through (the same expression a search applies): what
        the entity graph walks over for a caller."""
        expression = self.expression(filters)
        if expression == NOTHING:
            return set()
        return {row["id"] for row in self._scan(["id"], expression)}

    def _has_summaries(self) -> bool:
        """Whether any chunk carries a summary-tree level (checked once per opened store and write)."""
        with self._lock:
            if self._summaries is None:
                found = self.client.query(
                    self.target.collection, filter=f"not ({PASSAGES_ONLY})", output_fields=["pk"], limit=1
                )
                self._summaries = bool(found)
            return self._summaries

    def titles(self) -> list[str]:
        """Distinct non-empty titles (for multi-hop title linking); read once per opened store."""
        with self._lock:
            if self._titles is None:
                titles = {row["title"] for row in self._scan(["title"], 'title != ""')}
                self._titles = sorted(titles)
            return self._titles

    def sources(self) -> list[str]:
        return [row["source"] for row in self._scan(["source"], "", collection=self.target.files_collection)]

    def count(self) -> int:
        rows = self.client.query(self.target.collection, filter="", output_fields=["count(*)"])
        return int(rows[0]["count(*)"])

    def iter_chunks(self) -> Iterator[Chunk]:
        for row in self._scan(CHUNK_FIELDS, ""):
            yield _chunk(row)

    def iter_rows(self) -> Iterator[tuple[Chunk, np.ndarray]]:
        """Every chunk with its stored vector (copying a store, checking parity)."""
        for row in self._scan([*CHUNK_FIELDS, "dense"], ""):
            yield _chunk(row), np.asarray(row["dense"], dtype=np.float32)

    def stats(self) -> dict[str, object]:
        languages: dict[str, int] = {}
        for row in self._scan(["language"], ""):
            languages[row["language"]] = languages.get(row["language"], 0) + 1
        return {
            "store": "milvus",
            "uri": self.target.uri,
            "collection": self.target.collection,
            "format_version": self.meta.get("format"),
            "embedder": self.meta["embedder"],
            "dim": self.meta["dim"],
            "vector_index": "hnsw",
            "bm25": self.meta.get("bm25"),
            "chunks": sum(languages.values()),
            "sources": len(self.sources()),
            "languages": languages,
        }

    def _scan(self, fields: list[str], expression: str, *, collection: str | None = None) -> Iterator[dict]:
        iterator = self.client.query_iterator(
            collection or self.target.collection,
            batch_size=1000,
            filter=expression,
            output_fields=fields,
        )
        try:
            while batch := iterator.next():
                yield from batch
        finally:
            iterator.close()

    # --- writing (incremental ingest, migration) ------------------------------------------------
    def upsert(self, rows: Iterable[tuple[Chunk, list[str], np.ndarray]]) -> int:
        """Insert or replace chunks by id, in batches; returns how many were written."""
        written = 0
        batch: list[dict[str, Any]] = []
        for chunk, tokens, vector in rows:
            batch.append(chunk_row(chunk, tokens, vector))
            if len(batch) >= _BATCH:
                written += self._upsert(batch)
                batch = []
        written += self._upsert(batch)
        self._titles = None
        self._summaries = None
        return written

    def _upsert(self, batch: list[dict[str, Any]]) -> int:
        if batch:
            if not self.access_field:
                batch = [{k: v for k, v in row.items() if k != ACCESS_FIELD} for row in batch]
            self.client.upsert(self.target.collection, batch)
        return len(batch)

    def delete(self, chunk_ids: Iterable[str]) -> int:
        ids = list(chunk_ids)
        for start in range(0, len(ids), _BATCH):
            self.client.delete(self.target.collection, ids=[key(i) for i in ids[start : start + _BATCH]])
        self._titles = None
        self._summaries = None
        return len(ids)

    def ids_of(self, sources: Iterable[str]) -> dict[str, list[str]]:
        """Chunk ids per source (what an update or removal of those files replaces)."""
        out: dict[str, list[str]] = {}
        wanted = sorted(set(sources))
        for start in range(0, len(wanted), 100):
            part = wanted[start : start + 100]
            expression = "source in [" + ", ".join(literal(s) for s in part) + "]"
            for row in self._scan(["id", "source"], expression):
                out.setdefault(row["source"], []).append(row["id"])
        return out

    def files(self) -> dict[str, FileRecord]:
        rows = self._scan(FILE_FIELDS, "", collection=self.target.files_collection)
        return {row["source"]: FileRecord(**{f: row[f] for f in FILE_FIELDS}) for row in rows}

    def put_files(self, records: Iterable[FileRecord]) -> None:
        rows = [{**r.model_dump(), "pk": key(r.source), "placeholder": [0.0, 0.0]} for r in records]
        for start in range(0, len(rows), _BATCH):
            self.client.upsert(self.target.files_collection, rows[start : start + _BATCH])

    def delete_files(self, sources: Iterable[str]) -> None:
        names = list(sources)
        for start in range(0, len(names), _BATCH):
            part = names[start : start + _BATCH]
            self.client.delete(self.target.files_collection, ids=[key(n) for n in part])

    def flush(self) -> None:
        """Seal what was just written into indexed segments (once per ingest, not per batch): until then
        Milvus Lite searches new rows by brute force, 5-10x slower."""
        for name in (self.target.collection, self.target.files_collection):
            self.client.flush(name)

    def close(self) -> None:
        self.client.close()


def _read_meta(client, target: MilvusTarget) -> dict[str, Any]:
    properties = client.describe_collection(target.collection).get("properties") or {}
    if META_KEY not in properties:
        raise MilvusStoreError(
            f"the {target.describe()} was not written by agentic-rag; choose another "
            f"AGENTIC_RAG_MILVUS_COLLECTION or rebuild with: {command('ingest --rebuild PATH...')}"
        )
    return json.loads(properties[META_KEY])


def _create_chunks(client, name: str, build: MilvusBuild) -> None:
    from pymilvus import DataType, Function, FunctionType

    schema = client.create_schema(auto_id=False, enable_dynamic_field=False)
    schema.add_field("pk", DataType.VARCHAR, is_primary=True, max_length=40)
    schema.add_field("id", DataType.VARCHAR, max_length=1024)
    schema.add_field("dense", DataType.FLOAT_VECTOR, dim=build.dim)
    schema.add_field(
        "bm25_text",
        DataType.VARCHAR,
        max_length=MAX_VARCHAR,
        enable_analyzer=True,
        analyzer_params={"tokenizer": "standard"},
    )
    schema.add_field("sparse", DataType.SPARSE_FLOAT_VECTOR)
    schema.add_field("text", DataType.VARCHAR, max_length=MAX_VARCHAR)
    schema.add_field("source", DataType.VARCHAR, max_length=4096)
    schema.add_field("title", DataType.VARCHAR, max_length=4096)
    schema.add_field("heading_path", DataType.JSON)
    schema.add_field("chunk_index", DataType.INT64)
    schema.add_field("char_start", DataType.INT64)
    schema.add_field("char_end", DataType.INT64)
    schema.add_field("language", DataType.VARCHAR, max_length=16)
    schema.add_field("content_hash", DataType.VARCHAR, max_length=128)
    schema.add_field("mtime", DataType.DOUBLE)
    schema.add_field("metadata", DataType.JSON)
    schema.add_field("meta_text", DataType.JSON)
    # Access groups (core/access.py) as one string (milvus_filters.access_key): matching it is as fast as
    # no filter, where an ARRAY field or the JSON metadata costs seconds a query in Milvus Lite at 10k rows.
    schema.add_field(ACCESS_FIELD, DataType.VARCHAR, max_length=MAX_VARCHAR)
    schema.add_function(
        Function(
            name="bm25",
            function_type=FunctionType.BM25,
            input_field_names=["bm25_text"],
            output_field_names=["sparse"],
        )
    )
    index = client.prepare_index_params()
    index.add_index(
        "dense",
        index_type="HNSW",
        metric_type="IP",
        params={"M": build.hnsw_m, "efConstruction": build.ef_construction},
    )
    index.add_index(
        "sparse",
        index_type="SPARSE_INVERTED_INDEX",
        metric_type="BM25",
        params={"bm25_k1": build.k1, "bm25_b": build.b},
    )
    client.create_collection(name, schema=schema, index_params=index, consistency_level="Strong")


def _create_files(client, name: str) -> None:
    from pymilvus import DataType

    schema = client.create_schema(auto_id=False, enable_dynamic_field=False)
    schema.add_field("pk", DataType.VARCHAR, is_primary=True, max_length=40)
    schema.add_field("source", DataType.VARCHAR, max_length=4096)
    schema.add_field("file_hash", DataType.VARCHAR, max_length=128)
    schema.add_field("mtime", DataType.DOUBLE)
    schema.add_field("size", DataType.INT64)
    schema.add_field("n_chunks", DataType.INT64)
    schema.add_field("ingested_at", DataType.DOUBLE)
    schema.add_field("placeholder", DataType.FLOAT_VECTOR, dim=2)
    index = client.prepare_index_params()
    index.add_index("placeholder", index_type="FLAT", metric_type="L2")
    client.create_collection(name, schema=schema, index_params=index, consistency_level="Strong")
