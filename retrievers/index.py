"""The index folder: a SQLite docstore, a FAISS vector index and a BM25 matrix, written atomically.

Layout::

    DIR/index.json        {"format": "agentic-rag-index", "format_version": 1, "current": "gen-000003"}
    DIR/gen-000003/       manifest.json, docstore.sqlite, vectors.npy, vectors.faiss, bm25.npz, ...
    DIR/.lock             held while an ingest writes

A write builds a complete new generation folder, syncs it, then swaps ``index.json`` with
``os.replace``; a process killed at any point before the swap leaves the previous generation in use.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from core.chunks import Chunk, Filters
from core.tokenize import TOKENIZER_VERSION
from retrievers.bm25 import BM25Index
from retrievers.docstore import DocStore, FileRecord
from retrievers.vector_index import HnswParams, VectorIndex

FORMAT_NAME = "agentic-rag-index"
FORMAT_VERSION = 1
POINTER = "index.json"


class IndexError_(Exception):
    """Base for index problems; the message always says how to fix it."""


class IndexNotFoundError(IndexError_):
    pass


class IndexVersionError(IndexError_):
    pass


class IndexCorruptedError(IndexError_):
    pass


class IndexEmptyError(IndexError_):
    """The index exists but holds no chunks (an ingest that found nothing to index)."""


def empty_index_message(location: object) -> str:
    return f"the index is empty: run ingest (python main.py ingest PATH...; the index is {location})"


def require_chunks(store: Any) -> None:
    """Refuse to search a store (local index or Milvus) without chunks, saying what to do instead of
    answering from nothing."""
    if store.count() == 0:
        raise IndexEmptyError(empty_index_message(store.location))


def rebuild_hint(folder: Path) -> str:
    return f"rebuild it with: python main.py ingest --rebuild --index {folder} PATH..."


@dataclass(frozen=True)
class BuildParams:
    hnsw: HnswParams
    k1: float = 1.2
    b: float = 0.75


class Index:
    """An opened, read-only generation of the index folder."""

    def __init__(
        self,
        folder: Path,
        generation: Path,
        manifest: dict,
        docstore: DocStore,
        vectors: VectorIndex,
        bm25: BM25Index,
    ) -> None:
        self.folder = folder
        self.generation = generation
        self.manifest = manifest
        self.docstore = docstore
        self.vectors = vectors
        self.bm25 = bm25
        self._mask_cache: dict[str, np.ndarray | None] = {}

    @property
    def size(self) -> int:
        return self.vectors.size

    @property
    def embedder_name(self) -> str:
        return str(self.manifest["embedder"])

    def mask(self, filters: Filters | None) -> np.ndarray | None:
        if filters is None or filters.is_empty():
            return None
        key = filters.model_dump_json()
        if key not in self._mask_cache:
            if len(self._mask_cache) > 64:
                self._mask_cache.clear()
            self._mask_cache[key] = self.docstore.allowed_mask(filters, self.size)
        return self._mask_cache[key]

    # --- search: positions first, chunks only for what the caller keeps -------------------------
    def vector_search(
        self, query_vector: np.ndarray, k: int, filters: Filters | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Positions (int64) and cosine scores (float32) of the best ``k`` chunks, best first."""
        return self.vectors.search(query_vector, k, self.mask(filters))

    def keyword_search(
        self, tokens: list[str], k: int, filters: Filters | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Positions (int64) and BM25 scores (float32) of the best ``k`` chunks with a positive score."""
        return self.bm25.top_k(tokens, k, self.mask(filters))

    def chunks_at(self, positions: Iterable[int]) -> dict[int, Chunk]:
        """The chunks at these positions (one SQLite query); fetch only what will be returned."""
        return self.docstore.get(positions)

    def resolve(self, positions: Iterable[int], scores: Iterable[float]) -> list[tuple[Chunk, float]]:
        """(chunk, score) pairs in the given order."""
        pairs = [(int(p), float(s)) for p, s in zip(positions, scores, strict=True)]
        chunks = self.chunks_at(p for p, _ in pairs)
        return [(chunks[p], s) for p, s in pairs if p in chunks]

    def stats(self) -> dict[str, object]:
        files = {
            name: (self.generation / name).stat().st_size
            for name in self.manifest.get("files", {})
            if (self.generation / name).exists()
        }
        return {
            "index_dir": str(self.folder),
            "generation": self.generation.name,
            "format_version": self.manifest["format_version"],
            "embedder": self.manifest["embedder"],
            "dim": self.manifest["dim"],
            "vector_index": "hnsw" if self.vectors.is_hnsw else "flat",
            "bm25_terms": len(self.bm25.vocab),
            "created_at": self.manifest.get("created_at"),
            "bytes": sum(files.values()),
            **self.docstore.stats(),
        }

    @property
    def location(self) -> str:
        return str(self.folder)

    def titles(self) -> list[str]:
        return self.docstore.titles()

    def count(self) -> int:
        return self.docstore.count()

    def iter_chunks(self) -> Iterator[Chunk]:
        for _, chunk, _ in self.docstore.iter_rows():
            yield chunk

    def close(self) -> None:
        self.docstore.close()


def _read_pointer(folder: Path) -> dict:
    pointer = folder / POINTER
    if not pointer.exists():
        raise IndexNotFoundError(
            f"no index in {folder}; create one with: python main.py ingest --index {folder} PATH..."
        )
    try:
        data = json.loads(pointer.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise IndexCorruptedError(f"{pointer} is unreadable ({exc}); {rebuild_hint(folder)}") from None
    if data.get("format") != FORMAT_NAME:
        raise IndexCorruptedError(f"{folder} is not an agentic-rag index; {rebuild_hint(folder)}")
    if data.get("format_version") != FORMAT_VERSION:
        raise IndexVersionError(
            f"{folder} holds index format version {data.get('format_version')}, but this version of "
            f"agentic-rag reads format {FORMAT_VERSION}; {rebuild_hint(folder)}"
        )
    return data


def index_exists(folder: Path) -> bool:
    return (folder / POINTER).exists()


def _current_generation(folder: Path) -> tuple[Path, dict]:
    """The current generation folder and its manifest, after version and file-size checks."""
    pointer = _read_pointer(folder)
    generation = folder / str(pointer.get("current", ""))
    manifest = json.loads((generation / "manifest.json").read_text(encoding="utf-8"))
    if manifest.get("tokenizer_version", 1) != TOKENIZER_VERSION:
        raise IndexVersionError(
            f"the index in {folder} was built with keyword tokenizer version "
            f"{manifest.get('tokenizer_version', 1)}; this version uses {TOKENIZER_VERSION}; "
            f"{rebuild_hint(folder)}"
        )
    for name, size in manifest["files"].items():
        actual = (generation / name).stat().st_size
        if actual != size:
            raise ValueError(f"{name} has {actual} bytes, expected {size}")
    return generation, manifest


def _damaged(folder: Path, exc: Exception) -> IndexCorruptedError:
    return IndexCorruptedError(
        f"the index in {folder} is damaged ({type(exc).__name__}: {exc}); {rebuild_hint(folder)}"
    )


def open_index(folder: Path, *, ef_search: int = 64) -> Index:
    """Open the current generation, checking format version and file integrity."""
    folder = Path(folder)
    try:
        generation, manifest = _current_generation(folder)
        docstore = DocStore(generation / "docstore.sqlite")
        n_chunks = docstore.count()
        vectors = VectorIndex.load(generation / "vectors.faiss", ef_search)
        bm25 = BM25Index.load(generation)
    except IndexError_:
        raise
    except Exception as exc:  # any damage: missing file, truncated FAISS, broken SQLite, bad JSON
        raise _damaged(folder, exc) from None
    if not (n_chunks == vectors.size == bm25.n_docs == manifest["n_chunks"]):
        raise IndexCorruptedError(
            f"the index in {folder} is inconsistent (docstore {n_chunks}, vectors {vectors.size}, "
            f"bm25 {bm25.n_docs}); {rebuild_hint(folder)}"
        )
    return Index(folder, generation, manifest, docstore, vectors, bm25)


@contextmanager
def write_lock(folder: Path) -> Iterator[None]:
    """Exclusive lock so two ingests into one folder never interleave."""
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / ".lock", "w") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise IndexError_(f"another ingest is writing to {folder}; wait for it to finish") from None
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def write_generation(
    folder: Path,
    rows: Iterable[tuple[Chunk, list[str], np.ndarray]],
    files: Iterable[FileRecord],
    *,
    embedder: str,
    dim: int,
    params: BuildParams,
    extra: dict | None = None,
) -> Path:
    """Write a complete new generation from (chunk, tokens, vector) rows and switch to it atomically.

    Call inside ``write_lock``. Rows are consumed once, in order; their order defines positions.
    """
    folder.mkdir(parents=True, exist_ok=True)
    _remove_stale(folder)
    number = _next_generation_number(folder)
    final = folder / f"gen-{number:06d}"
    tmp = folder / f"gen-{number:06d}.tmp-{os.getpid()}"
    tmp.mkdir()
    docstore = DocStore.create(tmp / "docstore.sqlite")
    token_lists: list[list[str]] = []
    vector_blocks: list[np.ndarray] = []
    pos = 0
    for chunk, tokens, vector in rows:
        pos = docstore.add_chunks(pos, [(chunk, " ".join(tokens))])
        token_lists.append(tokens)
        vector_blocks.append(np.asarray(vector, dtype=np.float32).reshape(1, dim))
    docstore.put_files(files)
    docstore.commit()
    docstore.close()
    matrix = np.concatenate(vector_blocks) if vector_blocks else np.zeros((0, dim), np.float32)
    np.save(tmp / "vectors.npy", matrix, allow_pickle=False)
    VectorIndex.build(matrix, dim, params.hnsw).save(tmp / "vectors.faiss")
    BM25Index.build(token_lists, k1=params.k1, b=params.b).save(tmp)
    names = [p.name for p in tmp.iterdir()]
    manifest = {
        "format": FORMAT_NAME,
        "format_version": FORMAT_VERSION,
        "embedder": embedder,
        "dim": dim,
        "n_chunks": len(token_lists),
        "created_at": time.time(),
        "bm25": {"k1": params.k1, "b": params.b},
        "tokenizer_version": TOKENIZER_VERSION,
        "hnsw": params.hnsw.__dict__,
        "extra": extra or {},
        "files": {name: (tmp / name).stat().st_size for name in names},
    }
    _write_json(tmp / "manifest.json", manifest)
    _fsync_tree(tmp)
    os.rename(tmp, final)
    _write_json(
        folder / POINTER,
        {"format": FORMAT_NAME, "format_version": FORMAT_VERSION, "current": final.name},
    )
    _fsync_dir(folder)
    for old in folder.glob("gen-*"):
        if old != final:
            shutil.rmtree(old, ignore_errors=True)
    return final


def read_generation(folder: Path) -> tuple[DocStore, np.ndarray, dict] | None:
    """The current generation's docstore, stored vectors (memory-mapped) and manifest, for re-indexing.

    Only what a re-index reuses is opened: the FAISS index and BM25 matrix are rebuilt anyway.
    """
    if not index_exists(folder):
        return None
    try:
        generation, manifest = _current_generation(folder)
        docstore = DocStore(generation / "docstore.sqlite")
        n_chunks = docstore.count()
        vectors = np.load(generation / "vectors.npy", mmap_mode="r", allow_pickle=False)
    except IndexError_:
        raise
    except Exception as exc:
        raise _damaged(folder, exc) from None
    if not (n_chunks == vectors.shape[0] == manifest["n_chunks"]):
        raise IndexCorruptedError(
            f"the index in {folder} is inconsistent (docstore {n_chunks}, stored vectors "
            f"{vectors.shape[0]}); {rebuild_hint(folder)}"
        )
    return docstore, vectors, manifest


def _write_json(path: Path, data: dict) -> None:
    tmp = path.with_name(path.name + f".tmp-{os.getpid()}")
    with open(tmp, "w", encoding="utf-8") as handle:
        json.dump(data, handle, ensure_ascii=False, indent=1)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)


def _fsync_tree(folder: Path) -> None:
    for path in folder.iterdir():
        with open(path, "rb") as handle:
            os.fsync(handle.fileno())
    _fsync_dir(folder)


def _fsync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _next_generation_number(folder: Path) -> int:
    numbers = [
        int(p.name.split("-")[1].split(".")[0]) for p in folder.glob("gen-*") if p.name[4:10].isdigit()
    ]
    return max(numbers, default=0) + 1


def _remove_stale(folder: Path) -> None:
    """Drop half-written generations left by a killed process (safe: we hold the write lock)."""
    current = None
    if (folder / POINTER).exists():
        try:
            current = json.loads((folder / POINTER).read_text(encoding="utf-8")).get("current")
        except ValueError:
            current = None
    for path in folder.glob("gen-*"):
        if ".tmp-" in path.name or (current and path.name != current and path.is_dir()):
            shutil.rmtree(path, ignore_errors=True)
