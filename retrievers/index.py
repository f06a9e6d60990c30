"""The index folder: a SQLite docstore, a FAISS vector index and a BM25 matrix, written atomically.

Layout::

    DIR/index.json        {"format": "agentic-rag-index", "format_version": 2, "current": "gen-000003",
                           "generations": ["gen-000002", "gen-000003"]}
    DIR/gen-000003/       manifest.json, docstore.sqlite, vectors.npy, vectors.faiss, bm25.npz, ...,
                          reader.lock
    DIR/.lock             held while an ingest writes

A write builds a complete new generation folder, syncs it, then swaps ``index.json`` with
``os.replace``; a process killed at any point before the swap leaves the previous generation in use.

The manifest records a SHA-256 per file, checked when a generation is opened, so damage is reported and
never served (nor copied into the next generation by an incremental ingest). A reader holds a shared
lock on the generation's ``reader.lock`` until it closes; an old generation is deleted only when no
reader holds it, and only folders the pointer names as the index's own are ever deleted.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import time
from collections.abc import Collection, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from core.chunks import Chunk, Filters
from core.command import command
from core.tokenize import TOKENIZER_VERSION
from retrievers.bm25 import BM25Index
from retrievers.docstore import DocStore, FileRecord
from retrievers.levels import LEVEL_KEY, names_level
from retrievers.vector_index import DEFAULT_EF_SEARCH, HnswParams, VectorIndex

FORMAT_NAME = "agentic-rag-index"
FORMAT_VERSION = 2
POINTER = "index.json"
READER_LOCK = "reader.lock"
# Marks a generation being built, so a crashed build is recognised as ours and nothing else is removed.
BUILDING_MARK = ".agentic-rag-building"
_OPEN_ATTEMPTS = 5


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
    return f"the index is empty: run ingest ({command('ingest PATH...')}; the index is {location})"


def require_chunks(store: Any) -> None:
    """Refuse to search a store (local index or Milvus) without chunks, saying what to do instead of
    answering from nothing."""
    if store.count() == 0:
        raise IndexEmptyError(empty_index_message(store.location))


def rebuild_hint(folder: Path) -> str:
    return f"rebuild it with: {command(f'ingest --rebuild --index {folder} PATH...')}"


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
        reader_lock: int | None = None,
    ) -> None:
        self.folder = folder
        self._reader_lock = reader_lock
        self.generation = generation
        self.manifest = manifest
        self.docstore = docstore
        self.vectors = vectors
        self.bm25 = bm25
        self._mask_cache: dict[str, np.ndarray | None] = {}
        self._group_masks: tuple[np.ndarray, dict[str, np.ndarray]] | None = None

    @property
    def size(self) -> int:
        return self.vectors.size

    @property
    def embedder_name(self) -> str:
        return str(self.manifest["embedder"])

    def mask(self, filters: Filters | None) -> np.ndarray | None:
        """Positions a search may return: those passing the filters, and only passages (no summary
        chunks) unless the filters name a level."""
        key = filters.model_dump_json() if filters is not None else ""
        if key not in self._mask_cache:
            if len(self._mask_cache) > 64:
                self._mask_cache.clear()
            rest = filters.model_copy(update={"access": None}) if filters is not None else None
            allowed = None if rest is None or rest.is_empty() else self.docstore.allowed_mask(rest, self.size)
            if filters is not None and filters.access is not None:
                readable = self.access_mask(filters.access)
                allowed = readable if allowed is None else allowed & readable
            passages = None if names_level(filters) else self._passages()
            if allowed is not None and passages is not None:
                allowed = allowed & passages
            self._mask_cache[key] = passages if allowed is None else allowed
        return self._mask_cache[key]

    def _passages(self) -> np.ndarray | None:
        """Mask of the passages when the index holds summary chunks, else None (nothing to leave out)."""
        if "passages" not in self._mask_cache:
            self._mask_cache["passages"] = self.docstore.passage_mask(self.size)
        return self._mask_cache["passages"]

    def access_mask(self, groups: list[str]) -> np.ndarray:
        """Positions a caller in ``groups`` may read: the public ones and those of any of their groups.

        One pass over the docstore per generation gives every group's positions, so a new combination
        of groups (another user) costs array ORs, not another scan."""
        if self._group_masks is None:
            public, by_group = self.docstore.group_positions(self.size)
            self._group_masks = (public, by_group)
        public, by_group = self._group_masks
        mask = public.copy()
        for group in groups:
            if group in by_group:
                mask |= by_group[group]
        return mask

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

    def holders(self, token: str, k: int, filters: Filters | None = None) -> np.ndarray:
        """Positions of at most ``k`` chunks the caller may read that hold the (tokenized) term."""
        return self.bm25.holders(token, k, self.mask(filters))

    def known(self, tokens: Iterable[str]) -> set[str]:
        """The tokens the keyword index's vocabulary holds (whichever chunks hold them)."""
        return {t for t in tokens if t in self.bm25.vocab}

    def mentions(
        self, texts: Iterable[str], filters: Filters | None = None, without: Collection[str] = ()
    ) -> bool:
        """Whether a chunk the caller may read, other than ``without`` (chunk ids), holds any of
        ``texts`` as written (one scan)."""
        allowed = self.mask(filters)
        found = self.docstore.containing(list(dict.fromkeys(texts)))
        return any((allowed is None or allowed[pos]) and chunk_id not in without for pos, chunk_id in found)

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

    def chunks_by_id(self, chunk_ids: Iterable[str]) -> dict[str, Chunk]:
        found = self.docstore.get(self.docstore.positions_of(chunk_ids).values())
        return {chunk.id: chunk for chunk in found.values()}

    def count(self) -> int:
        return self.docstore.count()

    def iter_chunks(self) -> Iterator[Chunk]:
        for _, chunk, _ in self.docstore.iter_rows():
            yield chunk

    def close(self) -> None:
        self.docstore.close()
        if self._reader_lock is not None:
            os.close(self._reader_lock)  # releases the shared lock: the generation may now be removed
            self._reader_lock = None


def _read_pointer(folder: Path) -> dict:
    pointer = folder / POINTER
    if not pointer.exists():
        raise IndexNotFoundError(
            f"no index in {folder}; create one with: {command(f'ingest --index {folder} PATH...')}"
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


def generation_on_disk(folder: Path) -> str | None:
    """``name@created_at`` of the folder's current generation (how ``app.wiring.generation_key`` names
    an opened one), read from the pointer and manifest only; None when there is no readable index.

    A server compares it between requests to notice an ingest by another process (or the CLI)."""
    try:
        current = str(_read_pointer(folder).get("current", ""))
        manifest = json.loads((folder / current / "manifest.json").read_text(encoding="utf-8"))
    except (IndexError_, OSError, ValueError):
        return None
    return f"{current}@{manifest.get('created_at')}"


def index_exists(folder: Path) -> bool:
    return (folder / POINTER).exists()


def _current_generation(folder: Path) -> tuple[Path, dict]:
    """The current generation folder and its manifest, after version and checksum checks."""
    pointer = _read_pointer(folder)
    generation = folder / str(pointer.get("current", ""))
    manifest = json.loads((generation / "manifest.json").read_text(encoding="utf-8"))
    if manifest.get("tokenizer_version", 1) != TOKENIZER_VERSION:
        raise IndexVersionError(
            f"the index in {folder} was built with keyword tokenizer version "
            f"{manifest.get('tokenizer_version', 1)}; this version uses {TOKENIZER_VERSION}; "
            f"{rebuild_hint(folder)}"
        )
    verify_files(generation, manifest)
    return generation, manifest


def file_sha256(path: Path) -> str:
    with open(path, "rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


# Files already hashed by this process, keyed by identity and change stamps: a long-running server
# reopening the same generation pays for the hashing once; any write to a file changes its stamps.
_VERIFIED: set[tuple] = set()


def verify_files(generation: Path, manifest: dict) -> None:
    """Raise ``ValueError`` naming the first file whose size or SHA-256 differs from the manifest."""
    checksums = manifest.get("sha256") or {}
    for name, size in manifest["files"].items():
        path = generation / name
        info = path.stat()
        if info.st_size != size:
            raise ValueError(f"{name} has {info.st_size} bytes, expected {size}")
        key = (str(path), info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)
        if key in _VERIFIED:
            continue
        expected = checksums.get(name)
        if expected is None:
            raise ValueError(f"the manifest has no checksum for {name}")
        if file_sha256(path) != expected:
            raise ValueError(f"{name} does not match its checksum (the file was changed or damaged)")
        _VERIFIED.add(key)


def _damaged(folder: Path, exc: Exception) -> IndexCorruptedError:
    return IndexCorruptedError(
        f"the index in {folder} is damaged ({type(exc).__name__}: {exc}); {rebuild_hint(folder)}"
    )


def _lock_generation(folder: Path) -> int | None:
    """Take a shared lock on the current generation, so no ingest deletes it while we read it.

    The pointer may move on between reading it and locking: a generation found gone is retried with
    the new pointer. Returns the lock's file descriptor (None for a generation without a lock file).
    """
    for _ in range(_OPEN_ATTEMPTS):
        generation = folder / str(_read_pointer(folder).get("current", ""))
        try:
            fd = os.open(generation / READER_LOCK, os.O_RDONLY)
        except FileNotFoundError:
            if (generation / "manifest.json").exists():
                return None
            continue
        except NotADirectoryError:
            raise IndexCorruptedError(
                f"the index in {folder} is damaged: its generation {generation.name} is a file, not a folder; "
                f"{rebuild_hint(folder)}"
            ) from None
        fcntl.flock(fd, fcntl.LOCK_SH)
        if (generation / "manifest.json").exists() and _read_pointer(folder).get(
            "current"
        ) == generation.name:
            return fd
        os.close(fd)
    return None


def open_index(folder: Path, *, ef_search: int = DEFAULT_EF_SEARCH) -> Index:
    """Open the current generation, checking format version and file integrity.

    The generation stays locked for reading until ``Index.close()`` (or the process ends).
    """
    folder = Path(folder)
    if folder.exists() and not folder.is_dir():
        raise IndexNotFoundError(f"--index {folder} is a file; give the index folder")
    reader_lock = _lock_generation(folder)
    try:
        generation, manifest = _current_generation(folder)
        docstore = DocStore(generation / "docstore.sqlite")
        n_chunks = docstore.count()
        vectors = VectorIndex.load(generation / "vectors.faiss", ef_search)
        bm25 = BM25Index.load(generation)
    except IndexError_:
        _release(reader_lock)
        raise
    except Exception as exc:  # any damage: missing file, truncated FAISS, broken SQLite, bad JSON
        _release(reader_lock)
        raise _damaged(folder, exc) from None
    if not (n_chunks == vectors.size == bm25.n_docs == manifest["n_chunks"]):
        _release(reader_lock)
        raise IndexCorruptedError(
            f"the index in {folder} is inconsistent (docstore {n_chunks}, vectors {vectors.size}, "
            f"bm25 {bm25.n_docs}); {rebuild_hint(folder)}"
        )
    return Index(folder, generation, manifest, docstore, vectors, bm25, reader_lock)


def _release(fd: int | None) -> None:
    if fd is not None:
        os.close(fd)


def check_index_folder(folder: Path) -> None:
    """Refuse to write an index into a file, or into a folder of other files (they would be mixed)."""
    if folder.exists() and not folder.is_dir():
        raise IndexError_(f"--index {folder} is a file; give a folder for the index (new or empty)")
    if not folder.is_dir() or index_exists(folder):
        return
    foreign = sorted(
        entry.name
        for entry in folder.iterdir()
        if entry.name not in (".lock", "cache")  # the write lock; the reranker's embedding cache
        and not entry.name.startswith(POINTER + ".tmp-")
        and not _is_our_build(entry)
    )
    if foreign:
        shown = ", ".join(foreign[:3]) + (", ..." if len(foreign) > 3 else "")
        raise IndexError_(
            f"--index {folder} is not empty and holds no agentic-rag index ({shown}); "
            "give a new or empty folder for the index"
        )


@contextmanager
def write_lock(folder: Path) -> Iterator[None]:
    """Exclusive lock so two ingests into one folder never interleave."""
    check_index_folder(folder)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        handle = open(folder / ".lock", "w")  # noqa: SIM115 - closed by the with below
    except OSError as exc:
        raise IndexError_(
            f"cannot write the index in {folder} ({exc.strerror or exc}); choose a writable folder"
        ) from None
    with handle:
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
    (tmp / BUILDING_MARK).touch()
    docstore = DocStore.create(tmp / "docstore.sqlite")
    vectors = _VectorRows(dim)

    def tokens_in_order() -> Iterator[list[str]]:
        """Each row goes to the docstore and the vector buffer as BM25 reads its tokens: no list of
        every chunk's tokens is kept (at a million chunks that list alone took several GB)."""
        for chunk, tokens, vector in rows:
            docstore.add_chunks(vectors.count, [(chunk, " ".join(tokens))])
            vectors.append(vector)
            passages.append(not chunk.metadata.get(LEVEL_KEY))
            yield tokens

    # BM25's statistics are the passages' only: summary chunks repeat their sentences, and turning the
    # summary tree on must not move any passage's keyword score (docs/evaluation.md, session 9).
    passages: list[bool] = []
    bm25 = BM25Index.build(tokens_in_order(), k1=params.k1, b=params.b, counted=passages)
    docstore.put_files(files)
    docstore.commit()
    docstore.close()
    bm25.save(tmp)
    del bm25
    matrix = vectors.save(tmp / "vectors.npy")
    VectorIndex.build(matrix, dim, params.hnsw).save(tmp / "vectors.faiss")
    del matrix
    names = sorted(p.name for p in tmp.iterdir() if p.name != BUILDING_MARK)
    (tmp / READER_LOCK).touch()
    manifest = {
        "format": FORMAT_NAME,
        "format_version": FORMAT_VERSION,
        "embedder": embedder,
        "dim": dim,
        "n_chunks": vectors.count,
        "created_at": time.time(),
        "bm25": {"k1": params.k1, "b": params.b},
        "tokenizer_version": TOKENIZER_VERSION,
        "hnsw": params.hnsw.__dict__,
        "extra": extra or {},
        "files": {name: (tmp / name).stat().st_size for name in names},
        "sha256": {name: file_sha256(tmp / name) for name in names},
    }
    _write_json(tmp / "manifest.json", manifest)
    (tmp / BUILDING_MARK).unlink()
    _fsync_tree(tmp)
    os.rename(tmp, final)
    owned = _owned_generations(folder)
    _write_pointer(folder, final.name, [*owned, final.name])
    _fsync_dir(folder)
    kept = [name for name in owned if not _remove_unread(folder / name)]
    if kept != owned:
        _write_pointer(folder, final.name, [*kept, final.name])
    return final


class _VectorRows:
    """Vectors collected in fixed-size blocks, then written once into ``vectors.npy``.

    The file is written through a memory map and the blocks are freed as they are copied, so the
    vectors are never held twice (a list of row arrays plus their concatenation would be).
    """

    _BLOCK = 8192

    def __init__(self, dim: int) -> None:
        self.dim = dim
        self.count = 0
        self._blocks: list[np.ndarray] = []

    def append(self, vector: np.ndarray) -> None:
        row = self.count % self._BLOCK
        if row == 0:
            self._blocks.append(np.empty((self._BLOCK, self.dim), dtype=np.float32))
        self._blocks[-1][row] = np.asarray(vector, dtype=np.float32).reshape(self.dim)
        self.count += 1

    def save(self, path: Path) -> np.ndarray:
        """Write the rows to ``path`` (.npy) and return them memory-mapped from there."""
        if self.count == 0:  # an empty file cannot be memory-mapped
            empty = np.zeros((0, self.dim), dtype=np.float32)
            np.save(path, empty, allow_pickle=False)
            return empty
        out = np.lib.format.open_memmap(path, mode="w+", dtype=np.float32, shape=(self.count, self.dim))
        with open(path, "r+b") as handle:  # reserve the blocks: a full disk is ENOSPC here, not SIGBUS later
            os.posix_fallocate(handle.fileno(), 0, os.fstat(handle.fileno()).st_size)
        start = 0
        while self._blocks:
            block = self._blocks.pop(0)
            size = min(self._BLOCK, self.count - start)
            out[start : start + size] = block[:size]
            start += size
        out.flush()
        del out
        return np.load(path, mmap_mode="r", allow_pickle=False)


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


def _write_pointer(folder: Path, current: str, generations: list[str]) -> None:
    _write_json(
        folder / POINTER,
        {
            "format": FORMAT_NAME,
            "format_version": FORMAT_VERSION,
            "current": current,
            "generations": list(dict.fromkeys(generations)),
        },
    )


def _owned_generations(folder: Path) -> list[str]:
    """Generation folders the pointer names as the index's own (current last); [] without a pointer."""
    try:
        pointer = json.loads((folder / POINTER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    if not isinstance(pointer, dict) or pointer.get("format") != FORMAT_NAME:
        return []
    names = [n for n in pointer.get("generations") or [] if isinstance(n, str)]
    current = pointer.get("current")
    if isinstance(current, str):
        names.append(current)
    return [n for n in dict.fromkeys(names) if _is_generation_name(n)]


def _is_generation_name(name: str) -> bool:
    return len(name) == 10 and name.startswith("gen-") and name[4:].isdigit()


def _is_our_build(path: Path) -> bool:
    """A generation folder left half-built by a killed ingest (named and marked by ``write_generation``)."""
    name, _, pid = path.name.partition(".tmp-")
    if not (_is_generation_name(name) and pid.isdigit() and path.is_dir() and not path.is_symlink()):
        return False
    return (path / BUILDING_MARK).exists() or not any(path.iterdir())


def _remove_unread(generation: Path) -> bool:
    """Delete a generation no reader holds; False (kept for a later ingest) while one does."""
    try:
        fd = os.open(generation / READER_LOCK, os.O_RDONLY)
    except FileNotFoundError:
        fd = None
    except OSError:
        return False
    try:
        if fd is not None:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return False
        shutil.rmtree(generation, ignore_errors=True)
        return not generation.exists()
    finally:
        _release(fd)


def _next_generation_number(folder: Path) -> int:
    numbers = [
        int(p.name.split("-")[1].split(".")[0]) for p in folder.glob("gen-*") if p.name[4:10].isdigit()
    ]
    return max(numbers, default=0) + 1


def _remove_stale(folder: Path) -> None:
    """Drop what a killed ingest left and old generations no reader holds (safe: we hold the write lock).

    Only half-built generations marked by ``write_generation`` and generations the pointer names are
    touched; any other folder, even one called ``gen-...``, is the user's and stays.
    """
    for path in folder.glob("gen-*.tmp-*"):
        if _is_our_build(path):
            shutil.rmtree(path, ignore_errors=True)
    owned = _owned_generations(folder)
    if len(owned) > 1:
        *old, current = owned
        kept = [name for name in old if not _remove_unread(folder / name)]
        if kept != old:
            _write_pointer(folder, current, [*kept, current])
