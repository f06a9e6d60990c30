"""Named collections on one server, each an index opened once and reopened when it gets a new generation.

``default`` is the index the server was started on (``AGENTIC_RAG_INDEX_DIR``): readable by every user,
written by admins. Others are made with ``POST /v1/collections`` and live under the server's data dir
(``<data>/collections/<name>/index``, uploaded files beside it in ``files``), each with reader and writer
groups. Models (embedder, brain, reranker) are shared; each collection has its own retrievers and answer
cache.

Between requests a collection compares its opened generation with the one on disk (a stat of the index
pointer, then two small JSON reads when it changed): an ingest by the API, the CLI or another process is
picked up by the next request, while requests already running finish on the generation they started
with (it is closed once the last of them is done). Milvus collections have no generations: their rows
are live.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import threading
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memory.users import CollectionRow, UserStore, users_path
from retrievers.index import POINTER, generation_on_disk
from server.errors import ApiError
from server.identity import Caller

log = logging.getLogger(__name__)
DEFAULT = "default"


def can_read(row: CollectionRow, caller: Caller) -> bool:
    return caller.admin or not row.readers or bool(set(row.readers) & set(caller.groups))


def can_write(row: CollectionRow, caller: Caller) -> bool:
    return caller.admin or bool(set(row.writers) & set(caller.groups))


def source_root(store: Any) -> str:
    """The folder every source of the store lies under (citations are shown relative to it)."""
    files = store.docstore.files() if hasattr(store, "docstore") else store.files()
    parents = [os.path.dirname(s) for s in files if os.path.isabs(s)]
    return os.path.commonpath(parents) if parents else ""


def warm(index: Any) -> None:
    """Build the local index's per-group masks now, so no request waits for that pass."""
    if hasattr(index, "access_mask"):
        index.access_mask([])


@dataclass(frozen=True)
class Leased:
    """What one request runs on: the collection's name, context and source root at the request's start."""

    name: str
    context: Any
    root: str


@dataclass
class Live:
    """One collection: its opened context, the generation it holds, and the requests using it."""

    row: CollectionRow
    index_dir: Path
    context: Any
    generation: str | None
    root: str
    pointer_stamp: int | None = None
    users: dict[int, int] = field(default_factory=dict)  # id(context) -> requests running on it
    retired: list[Any] = field(default_factory=list)


class Collections:
    """Every collection of the server, opened lazily; ``lease`` hands a request its current context."""

    def __init__(self, engine: Any, users: UserStore) -> None:
        self.engine = engine
        self.settings = engine.settings
        self.users = users
        self.data_dir = users_path(self.settings).parent
        self._live: dict[str, Live] = {}
        self._lock = threading.Lock()
        base = engine.context
        self._live[DEFAULT] = self._live_of(CollectionRow(name=DEFAULT), Path(self.settings.index_dir), base)

    # --- registry --------------------------------------------------------------------------------
    def rows(self) -> list[CollectionRow]:
        stored = {r.name: r for r in self.users.collections()}
        return [stored.pop(DEFAULT, CollectionRow(name=DEFAULT)), *stored.values()]

    def row(self, name: str, caller: Caller) -> CollectionRow:
        """The collection if the caller may read it; 404 otherwise (names of others' do not leak)."""
        found = next((r for r in self.rows() if r.name == name), None)
        if found is None or not can_read(found, caller):
            raise ApiError(404, "collection_not_found", f"no collection {name!r} (GET /v1/collections)")
        return found

    def folder(self, name: str) -> Path:
        return (
            Path(self.settings.index_dir)
            if name == DEFAULT
            else self.data_dir / "collections" / name / "index"
        )

    def files_dir(self, name: str) -> Path:
        return self.data_dir / "collections" / name / "files"

    def create(self, row: CollectionRow) -> None:
        """Register a collection and give it an empty index (documents come with POST .../documents)."""
        from ingestion.pipeline import ingest_paths
        from retrievers.index import index_exists

        self.users.put_collection(row)
        folder = self.folder(row.name)
        if row.name != DEFAULT and not index_exists(folder):
            self.files_dir(row.name).mkdir(parents=True, exist_ok=True)
            settings = self.settings.model_copy(update={"index_dir": folder, "store": "local"})
            embedder = self.engine.context.retrievers.embedder
            ingest_paths([self.files_dir(row.name)], settings, embedder, index_dir=folder, progress=False)

    # --- contexts --------------------------------------------------------------------------------
    def _stamp(self, folder: Path) -> int | None:
        try:
            return (folder / POINTER).stat().st_mtime_ns
        except OSError:
            return None

    def _live_of(self, row: CollectionRow, folder: Path, context: Any) -> Live:
        from app.wiring import generation_key

        index = context.retrievers.index
        warm(index)
        return Live(row, folder, context, generation_key(index), source_root(index), self._stamp(folder))

    def _open(self, name: str, folder: Path, previous: Any | None) -> Any:
        """A context over the collection's current generation, sharing the server's models."""
        from app.wiring import generation_key, open_answer_cache, reranker_for
        from nodes.context import AgentContext
        from retrievers.factory import build_retrievers
        from retrievers.store import open_store

        base = self.engine.context
        settings = self.settings if name == DEFAULT else self.settings.model_copy(update={"store": "local"})
        store = open_store(settings, folder)
        retrievers = build_retrievers(store, settings, base.retrievers.embedder)
        reranker = (
            previous.reranker if previous is not None else reranker_for(settings, retrievers.embedder, folder)
        )
        return AgentContext(
            settings=settings,
            retrievers=retrievers,
            brain=base.brain,
            reranker=reranker,
            cache=open_answer_cache(settings, folder, generation_key(store)),
        )

    def _current(self, name: str) -> Live:
        """The collection's Live, switched to a newer generation on disk first if there is one (under the lock)."""
        live = self._live.get(name)
        if live is None:
            folder = self.folder(name)
            row = next(r for r in self.rows() if r.name == name)
            live = self._live[name] = self._live_of(row, folder, self._open(name, folder, None))
            return live
        if live.generation is None:  # Milvus: rows are live
            return live
        stamp = self._stamp(live.index_dir)
        if stamp == live.pointer_stamp:
            return live
        live.pointer_stamp = stamp
        on_disk = generation_on_disk(live.index_dir)
        if on_disk is None or on_disk == live.generation:
            return live
        fresh = self._open(name, live.index_dir, live.context)
        warm(fresh.retrievers.index)
        log.info("collection %s: switched to generation %s", name, on_disk)
        live.retired.append(live.context)
        live.context, live.generation = fresh, on_disk
        live.root = source_root(fresh.retrievers.index)
        if name == DEFAULT:
            self.engine.context = fresh
        self._close_idle(live)
        return live

    def _close_idle(self, live: Live) -> None:
        for old in list(live.retired):
            if not live.users.get(id(old)):
                live.retired.remove(old)
                live.users.pop(id(old), None)
                with contextlib.suppress(Exception):
                    old.retrievers.index.close()
                    if old.cache is not None:
                        old.cache.close()

    def _acquire(self, name: str) -> tuple[Live, Any, str]:
        with self._lock:
            live = self._current(name)
            live.users[id(live.context)] = live.users.get(id(live.context), 0) + 1
            return live, live.context, live.root

    @contextlib.asynccontextmanager
    async def lease(self, name: str, caller: Caller) -> AsyncIterator[Leased]:
        """The collection's current context for one request; an older generation closes after its last."""
        self.row(name, caller)
        live, context, root = await asyncio.to_thread(self._acquire, name)
        try:
            yield Leased(name, context, root)
        finally:
            with self._lock:
                live.users[id(context)] -= 1
                self._close_idle(live)

    def close(self) -> None:
        with self._lock:
            for name, live in self._live.items():
                live.retired.append(live.context)
                live.users.clear()
                if name != DEFAULT:
                    self._close_idle(live)
