"""The serving engine: one graph, one set of indexes and models, one checkpointer per process.

Graph runs are blocking (the nodes call FAISS, ONNX models and SQLite), so they go to a bounded thread
pool: ``serve_workers`` questions run at once, the rest wait their turn. Everything the runs share is
safe across threads (the docstore, embedding cache and checkpoint savers lock themselves; the LLM brain
keeps its trace records per thread). Two runs on one conversation thread would interleave its
checkpoints, so they take turns through a per-thread lock.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import AnyMessage
from langgraph.errors import GraphRecursionError

from config import Settings
from core.chunks import Filters
from graph.run import (
    AskResult,
    build_input,
    question_budget_for,
    result_from_state,
    run_config,
    turn_durability,
)
from retrievers.index import empty_index_message, require_chunks
from server.spans import sentence_pieces

log = logging.getLogger(__name__)

# Trace entries sent to streaming clients keep these keys (the rest is internal detail).
STEP_KEYS = ("node", "decision", "detail", "query", "counts", "ms", "model_calls", "fallback_reason")


@dataclass
class Event:
    """One thing a streaming client hears about: a step, an answer token, the result, or an error."""

    kind: str  # "step" | "token" | "result" | "error"
    data: Any


@dataclass
class _ThreadLocks:
    """An asyncio lock per conversation thread, dropped when nobody holds or waits for it."""

    locks: dict[str, tuple[asyncio.Lock, int]] = field(default_factory=dict)

    @contextlib.asynccontextmanager
    async def hold(self, thread_id: str | None) -> AsyncIterator[None]:
        if thread_id is None:
            yield
            return
        lock, users = self.locks.get(thread_id, (asyncio.Lock(), 0))
        self.locks[thread_id] = (lock, users + 1)
        try:
            async with lock:
                yield
        finally:
            lock, users = self.locks[thread_id]
            if users <= 1:
                del self.locks[thread_id]
            else:
                self.locks[thread_id] = (lock, users - 1)


@contextlib.contextmanager
def running_engine(settings: Settings) -> Iterator[Engine]:
    """Indexes, models and the checkpointer opened once (a broken setup fails here, with one clear line,
    before anything listens), the engine closed on the way out: shared by ``serve`` and ``mcp``."""
    from app.wiring import build_context
    from core.tokenize import tokenize
    from memory.checkpointer import open_checkpointer
    from nodes.state import CHECKPOINT_TYPES

    context = build_context(settings)
    # jieba reads its dictionary on the first Chinese text (1-6 s here): pay it now, not in the first
    # Chinese question (bench/mcp_latency.py).
    tokenize("预热中文分词")
    with open_checkpointer(
        sqlite_path=settings.checkpoint_db, postgres_url=settings.postgres_url, allowed_types=CHECKPOINT_TYPES
    ) as saver:
        engine = Engine(settings, context, saver)
        if engine.chunk_count() == 0:
            log.warning(engine.empty_index_message())
        try:
            yield engine
        finally:
            engine.close()


class Engine:
    """Answer questions for many concurrent requests with shared, once-built components."""

    def __init__(self, settings: Settings, context: Any, saver: Any) -> None:
        from graph.builder import build_graph
        from memory.checkpointer import sqlite_identity

        self.settings = settings
        self.context = context
        self.saver = saver
        self.store_identity = None if settings.postgres_url else sqlite_identity(settings.checkpoint_db)
        self.threaded_app = build_graph(checkpointer=saver)  # runs that continue a conversation
        self.stateless_app = build_graph()  # one-off questions and OpenAI-style requests
        self.pool = ThreadPoolExecutor(max_workers=settings.serve_workers, thread_name_prefix="agentic-rag")
        self._thread_locks = _ThreadLocks()

    def close(self) -> None:
        self.pool.shutdown(wait=True, cancel_futures=True)

    # -- readiness ------------------------------------------------------------------------------

    def chunk_count(self) -> int:
        return self.context.retrievers.index.count()

    def empty_index_message(self) -> str:
        return empty_index_message(self.context.retrievers.index.location)

    def require_documents(self) -> None:
        require_chunks(self.context.retrievers.index)

    def check_filters(self, filters: Filters | None) -> None:
        """Refuse a filter key no chunk holds (``UnknownFilterKeyError`` lists the keys it does hold)."""
        from retrievers.filter_keys import require_known_keys

        require_known_keys(self.context.retrievers.index, filters)

    def reopen(self) -> None:
        """Read the index as it is now (after an ingest); later runs see the new chunks."""
        from app.wiring import reopened

        self.context = reopened(self.context)

    # -- running --------------------------------------------------------------------------------

    async def call(self, fn: Callable[..., Any], *args: Any) -> Any:
        """Run blocking work (graph runs, checkpoint reads) in the shared pool."""
        return await asyncio.get_running_loop().run_in_executor(self.pool, fn, *args)

    def _payload(
        self, question: str, messages: list[AnyMessage] | None, mode: str | None, filters: Filters | None
    ) -> dict[str, Any]:
        payload = build_input(question, mode, filters)
        if messages:
            payload.pop("question")
            payload["messages"] = messages
        return payload

    async def ask(
        self,
        question: str,
        *,
        mode: str | None = None,
        thread_id: str | None = None,
        filters: Filters | None = None,
        messages: list[AnyMessage] | None = None,
        context: Any = None,
    ) -> AskResult:
        result: AskResult | None = None
        async for event in self.stream(
            question,
            mode=mode,
            thread_id=thread_id,
            filters=filters,
            messages=messages,
            tokens=False,
            context=context,
        ):
            if event.kind == "error":
                raise event.data
            if event.kind == "result":
                result = event.data
        if result is None:
            raise RuntimeError("the run ended without a result")
        return result

    async def stream(
        self,
        question: str,
        *,
        mode: str | None = None,
        thread_id: str | None = None,
        filters: Filters | None = None,
        messages: list[AnyMessage] | None = None,
        tokens: bool = True,
        context: Any = None,
    ) -> AsyncIterator[Event]:
        """Steps as they happen, the answer once it is checked, then the result (verified, cited).

        The answering model's tokens are never sent as they arrive: its answer is checked independently
        of it first (providers/brain/answer_check.py) and may be replaced by the offline answer, and a
        client cannot take back text it was sent. So the answer arrives as soon as the generate step has
        finished (the offline brain's sentence by sentence, an LLM's as one token event), or after
        verify when ``remove_unsupported`` may still cut sentences. Closing the iterator early (a client
        that went away) stops the run at its next step.
        ``context``: the collection's (server/collections.py); the engine's own by default.
        """
        context = context or self.context
        require_chunks(context.retrievers.index)
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[Event | None] = asyncio.Queue()
        cancelled = threading.Event()
        payload = self._payload(question, messages, mode, filters)

        def emit(event: Event | None) -> None:
            loop.call_soon_threadsafe(queue.put_nowait, event)

        def work() -> None:
            from memory.checkpointer import require_same_store
            from memory.thread_lock import thread_lock

            # The asyncio lock orders this process's turns; this one also orders other replicas' turns.
            lock = (
                thread_lock(
                    thread_id,
                    sqlite_path=self.settings.checkpoint_db,
                    postgres_url=self.settings.postgres_url,
                )
                if thread_id
                else contextlib.nullcontext()
            )
            try:
                if thread_id:
                    require_same_store(self.settings.checkpoint_db, self.store_identity, "server")
                with lock:
                    result = self._run(payload, question, mode, thread_id, emit, cancelled, tokens, context)
                emit(Event("result", result))
            except Exception as exc:  # reported to the client as a JSON error, logged with its traceback
                log.exception("question failed")
                emit(Event("error", exc))
            finally:
                emit(None)

        async with self._thread_locks.hold(thread_id):
            future = loop.run_in_executor(self.pool, work)
            try:
                while (event := await queue.get()) is not None:
                    yield event
            finally:
                cancelled.set()
                with contextlib.suppress(Exception):
                    await asyncio.shield(future)

    def _run(
        self,
        payload: dict[str, Any],
        question: str,
        mode: str | None,
        thread_id: str | None,
        emit: Callable[[Event], None],
        cancelled: threading.Event,
        tokens: bool,
        context: Any = None,
    ) -> AskResult:
        """One graph run in a worker thread, reporting steps and tokens through ``emit``."""
        from memory.threads import cap_checkpoints
        from providers.brain.budget import question_budget

        started = time.perf_counter()
        context = context or self.context
        budget = question_budget_for(context)
        app = self.threaded_app if thread_id else self.stateless_app
        config = run_config(context, thread_id)
        state: dict[str, Any] = {}
        streamed = ""
        early = tokens and not self.settings.remove_unsupported  # else verify may still cut sentences
        try:
            with question_budget(budget):
                for stream_mode, chunk in app.stream(
                    payload,
                    config=config,
                    context=context,
                    stream_mode=["updates", "values"],
                    durability=turn_durability(app),
                ):
                    if cancelled.is_set():
                        log.info("run cancelled by the client")
                        break
                    if stream_mode == "values":
                        state = chunk
                        continue
                    for step in steps_of(chunk):
                        emit(Event("step", step))
                    checked = checked_answer(chunk) if early else ""
                    if checked:
                        streamed = checked
                        self._emit_answer(checked, emit)
        except GraphRecursionError:
            limit = self.settings.recursion_limit
            error = f"stopped after {limit} steps (AGENTIC_RAG_RECURSION_LIMIT) without an answer"
            return AskResult(
                question=question,
                mode=mode or self.settings.mode,
                stop_reason="recursion_limit",
                error=error,
                warnings=budget.warnings,
            )
        result = result_from_state(question, state, started, thread_id)
        result.warnings = budget.warnings
        if tokens and not streamed and result.answer:
            self._emit_answer(result.answer, emit)
        if thread_id:
            cap_checkpoints(self.saver, thread_id, self.settings.max_checkpoints_per_thread)
        log.info("answered in %.0f ms (mode %s, stop %s)", result.latency_ms, result.mode, result.stop_reason)
        return result

    def _emit_answer(self, answer: str, emit: Callable[[Event], None]) -> None:
        """The offline brain's answer sentence by sentence (pieces that join back into it exactly); an LLM's
        answer whole, as it was checked."""
        pieces = [answer] if self.settings.llm_configured else sentence_pieces(answer)
        for piece in pieces:
            emit(Event("token", piece))


def checked_answer(update: dict[str, Any]) -> str:
    """The answer in the generate node's update: written, checked and, if rejected, replaced."""
    generated = update.get("generate")
    return str(generated.get("answer") or "") if isinstance(generated, dict) else ""


def steps_of(update: dict[str, Any]) -> list[dict[str, Any]]:
    """The trace entries in one ``updates`` chunk (parallel nodes arrive together), trimmed for clients."""
    steps = []
    for node_update in update.values():
        if not isinstance(node_update, dict):
            continue
        for entry in node_update.get("trace") or []:
            if hasattr(entry, "model_dump"):
                entry = entry.model_dump(mode="json")
            if isinstance(entry, dict) and "node" in entry:
                steps.append({key: entry[key] for key in STEP_KEYS if key in entry})
    return steps
