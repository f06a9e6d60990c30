"""The session shows the answer token by token when an LLM writes it (SSE from the local
OpenAI-protocol server), and does not print it a second time afterwards."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from cli.session import Session
from graph.builder import build_graph
from ingestion.indexing import index_chunks
from memory.checkpointer import open_checkpointer
from nodes.context import AgentContext
from nodes.state import CHECKPOINT_TYPES
from providers.brain import make_brain
from retrievers.factory import build_retrievers
from retrievers.index import open_index
from tests.graph_fixtures import graph_corpus
from tests.openai_server import openai_server, plausible_reply, step_of

__all__ = ["openai_server"]  # the fixture is used by name


class Writes(io.StringIO):
    """A terminal stand-in that keeps every write apart, to see tokens arrive one by one."""

    def __init__(self) -> None:
        super().__init__()
        self.pieces: list[str] = []

    def write(self, text: str) -> int:
        self.pieces.append(text)
        return super().write(text)


@pytest.mark.parametrize("question", ["What does error code E-4711 mean?", "混合检索用什么算法合并结果？"])
def test_session_streams_llm_answer_tokens_once(settings, embedder, openai_server, tmp_path, question):
    index_chunks(graph_corpus(), settings, embedder, index_dir=settings.index_dir, progress=False)
    current = settings.model_copy(update={"openai_base_url": openai_server.base_url, "openai_api_key": "k"})
    openai_server.responder = plausible_reply
    index = open_index(current.index_dir)
    out = Writes()
    try:
        context = AgentContext(
            settings=current, retrievers=build_retrievers(index, current, embedder), brain=make_brain(current)
        )
        with open_checkpointer(sqlite_path=tmp_path / "cp.sqlite", allowed_types=CHECKPOINT_TYPES) as saver:
            session = Session(
                app=build_graph(checkpointer=saver),
                context=context,
                saver=saver,
                console=Console(file=out, width=200, soft_wrap=True),
                state_file=tmp_path / "last-thread",
                mode="agentic",
                interactive=False,
            )
            session.ask(question)
    finally:
        index.close()
    answer = session.last.answer
    [answer_request] = [b for b in openai_server.requests if step_of(b) == "answer"]
    assert answer_request.get("stream") is True
    tokens = [p for p in out.pieces if p.strip() and p in answer and p != answer]
    assert len(tokens) > 3  # printed piece by piece as the server sent them
    shown = out.getvalue().split("\n[1]")[0]  # the screen above the numbered sources
    assert shown.count(answer.split(" [")[0]) == 1  # and not printed again at the end
    assert "checked answer" not in shown
