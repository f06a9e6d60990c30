"""Writing a generation on a disk that fills up: stop with one line, leave nothing half-written behind.

A generation is written into ``gen-N.tmp-PID`` and renamed when complete, so the previous generation
serves until then. When the disk fills (``ENOSPC`` from a write, SQLite's "database or disk is full",
FAISS's write error) the temporary folder is removed at once (it would keep the disk full until the
next ingest) and :class:`DiskFullError` names the disk, the space the write needs and the space free.
A write whose lower bound (the vectors alone, twice: ``vectors.npy`` and the FAISS index) does not fit
is refused before it starts.
"""

from __future__ import annotations

import errno
import os
import shutil
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from retrievers.index import IndexError_


class DiskFullError(IndexError_):
    """The index's disk has no room for the new generation; the previous one is untouched."""


def mount_point(path: Path) -> Path:
    """The mount point holding ``path`` (the disk a user must free space on)."""
    current = Path(os.path.abspath(path))
    while not current.exists():
        current = current.parent
    while not os.path.ismount(current):
        current = current.parent
    return current


def free_bytes(path: Path) -> int:
    return shutil.disk_usage(mount_point(path)).free


def megabytes(n: int) -> str:
    return f"{n / 1e6:.1f} MB"


def is_disk_full(exc: BaseException) -> bool:
    if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return True
    if isinstance(exc, sqlite3.OperationalError) and "disk is full" in str(exc):
        return True
    return isinstance(exc, RuntimeError) and "No space left on device" in str(exc)  # faiss


def vectors_lower_bound(n_chunks: int, dim: int) -> int:
    """Bytes the vectors alone take (``vectors.npy`` plus the FAISS index): a generation needs more."""
    return 2 * n_chunks * dim * 4


def disk_full_error(folder: Path, needed: int, free: int, cause: str) -> DiskFullError:
    disk = mount_point(folder)
    return DiskFullError(
        f"the disk at {disk} is full ({cause}): the new index generation in {folder} needs about "
        f"{megabytes(needed)} and {megabytes(free)} were free; nothing was changed and the previous index "
        "still serves; free space there or ingest into a larger disk (--index)"
    )


def _temporary_generations(folder: Path) -> set[Path]:
    return set(folder.glob(f"gen-*.tmp-{os.getpid()}"))


def generation_estimate(n_chunks: int, dim: int, text_bytes: int, previous: tuple[int, int] | None) -> int:
    """Bytes a generation of ``n_chunks`` will take: the previous generation's size per chunk when there
    is one (``previous``: its bytes and chunks), else the vectors twice plus the text three times
    (docstore, BM25 tokens, SQLite overhead)."""
    if previous is not None and previous[1] > 0:
        return max(vectors_lower_bound(n_chunks, dim), previous[0] * n_chunks // previous[1])
    return vectors_lower_bound(n_chunks, dim) + 3 * text_bytes + 64 * 1024


@contextmanager
def room_for_generation(folder: Path, *, needed_at_least: int, estimate: int) -> Iterator[None]:
    """Around a ``write_generation``: refuse a write whose lower bound cannot fit; on a full disk remove
    this process's temporary generation and raise :class:`DiskFullError` naming ``estimate``."""
    folder = Path(folder)
    free = free_bytes(folder)
    if folder.exists() and free < needed_at_least:
        raise disk_full_error(folder, max(needed_at_least, estimate), free, "checked before writing")
    before = _temporary_generations(folder) if folder.exists() else set()
    try:
        yield
    except Exception as exc:
        if not is_disk_full(exc):
            raise
        written = 0
        for path in _temporary_generations(folder) - before:
            written += sum(f.stat().st_size for f in path.rglob("*") if f.is_file())
            shutil.rmtree(path, ignore_errors=True)
        needed = max(estimate, written * 5 // 4)  # it filled the disk with ``written`` bytes, unfinished
        cause = "database or disk is full" if isinstance(exc, sqlite3.Error) else "no space left on device"
        raise disk_full_error(folder, needed, free, f"{cause} while writing") from None
