"""A checkpointer that keeps what a conversation needs, and not too much of it.

``BoundedSaver`` wraps a SQLite or PostgreSQL saver: every checkpoint (and pending write) is stored
through ``slim`` (the graph says which values a conversation needs; bulky per-turn evidence goes), a
root checkpoint keeps only the last ``window_turns`` turns of ``messages`` while every answered turn
goes once into the conversation log in the same transaction (memory/conversation_log.py), and after
each checkpoint the thread is capped to its latest ``keep`` checkpoints. So a thread's checkpoints
stay the same size however long it runs, and ``graph.ask``, the session and any app that compiles
the graph with a saver get bounded storage without doing anything.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator, Sequence
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
)

from memory.checkpointer import loading
from memory.conversation_log import answered_turns, delete_logged, ensure_log, put_logged
from memory.history import CONTEXT_TURNS, recent_messages
from memory.threads import cap_checkpoints, supports_capping

Slim = Callable[[dict[str, Any]], dict[str, Any]]
MESSAGES = "messages"


class BoundedSaver(BaseCheckpointSaver):
    """Stores slimmed checkpoints and keeps at most ``keep`` per thread; reads pass straight through."""

    def __init__(
        self,
        saver: BaseCheckpointSaver,
        *,
        slim: Slim,
        keep: int,
        allowed_types: Collection[type] = (),
        window_turns: int = CONTEXT_TURNS,
    ) -> None:
        if keep < 1:
            raise ValueError(f"keep must be at least 1 checkpoint per thread, got {keep}")
        if not supports_capping(saver):
            raise TypeError(f"BoundedSaver needs a SqliteSaver or PostgresSaver, not {type(saver).__name__}")
        saver = loading(saver, allowed_types) if allowed_types else saver
        super().__init__(serde=saver.serde)
        self.saver = saver
        self.slim = slim
        self.keep = keep
        self.window_turns = window_turns
        ensure_log(saver)

    @property
    def config_specs(self) -> list:
        return self.saver.config_specs

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return self.saver.get_tuple(config)

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        return self.saver.list(config, filter=filter, before=before, limit=limit)

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        values = self.slim(dict(checkpoint["channel_values"]))
        if config["configurable"].get("checkpoint_ns"):  # a subgraph's: its root checkpoint keeps the turn
            return self.saver.put(config, {**checkpoint, "channel_values": values}, metadata, new_versions)
        messages = values.get(MESSAGES) or []
        turns = answered_turns(messages)
        if messages:
            values[MESSAGES] = recent_messages(messages, self.window_turns)
        slimmed: Checkpoint = {**checkpoint, "channel_values": values}
        stored = put_logged(self.saver, config, slimmed, metadata, new_versions, turns)
        cap_checkpoints(self.saver, stored["configurable"]["thread_id"], self.keep)
        return stored

    def put_writes(
        self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str, task_path: str = ""
    ) -> None:
        slimmed = [(channel, self.slim({channel: value}).get(channel, value)) for channel, value in writes]
        self.saver.put_writes(config, slimmed, task_id, task_path)

    def delete_thread(self, thread_id: str) -> None:
        delete_logged(self.saver, thread_id)

    def get_next_version(self, current: Any, channel: None) -> Any:
        return self.saver.get_next_version(current, channel)

    def with_allowlist(self, extra_allowlist: Collection[tuple[str, ...]]) -> BoundedSaver:
        return BoundedSaver(
            self.saver.with_allowlist(extra_allowlist),
            slim=self.slim,
            keep=self.keep,
            window_turns=self.window_turns,
        )
