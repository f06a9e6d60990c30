"""The session previews the answer token by token when an LLM writes it (SSE from the local
OpenAI-protocol server), then shows the answer the independent check left: the same answer once when
it passed, the offline answer with a one-line notice when it was rejected. A rejected answer never
stays on screen; on a pipe (not a terminal) it never appears at all."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from rich.console import Console

from cli.session import Session
from config import Settings
from graph.builder import build_graph
from ingestion.indexing import index_chunks
from memory.checkpointer import open_checkpointer
from nodes.context import AgentContext
from nodes.state import CHECKPOINT_TYPES
from providers.brain import make_brain
from retrievers.factory import build_retrievers
from retrievers.index import open_index
from tests.corpus import index_of_files
from tests.graph_fixtures import graph_corpus
from tests.openai_server import by_step, openai_server, plausible_reply, reply, step_of
from tests.test_reliability import PLANTED

__all__ = ["openai_server"]  # the fixture is used by name

SHOW_CURSOR = "\x1b[?25h"  # written when the live preview stops and is erased
REDRAW = "\r\x1b[2K"  # the preview line redrawn with one more token
ERASE_LINE = "\r\x1b[1A\x1b[2K"  # cursor up one line, clear it: the preview leaves the screen


def session_ask(
    settings: Settings, embedder, index_dir: Path, tmp_path: Path, question: str, *, terminal: bool
):
    current = settings.model_copy(update={"index_dir": index_dir})
    index = open_index(index_dir)
    out = io.StringIO()
    try:
        context = AgentContext(
            settings=current,
            retrievers=build_retrievers(index, current, embedder),
            brain=make_brain(current, embedder),
        )
        with open_checkpointer(sqlite_path=tmp_path / "cp.sqlite", allowed_types=CHECKPOINT_TYPES) as saver:
            session = Session(
                app=build_graph(checkpointer=saver),
                context=context,
                saver=saver,
                console=Console(file=out, width=200, soft_wrap=True, force_terminal=terminal),
                state_file=tmp_path / "last-thread",
                mode="agentic",
                interactive=False,
            )
            session.ask(question)
    finally:
        index.close()
    return session, out.getvalue()


@pytest.fixture
def llm_settings(settings, openai_server):
    return settings.model_copy(
        update={"openai_base_url": openai_server.base_url, "openai_api_key": "k", "answer_cache": False}
    )


@pytest.mark.parametrize("question", ["What does error code E-4711 mean?", "混合检索用什么算法合并结果？"])
def test_session_previews_llm_answer_tokens_then_shows_it_once(
    llm_settings, embedder, openai_server, tmp_path, question
):
    index_chunks(graph_corpus(), llm_settings, embedder, index_dir=llm_settings.index_dir, progress=False)
    openai_server.responder = plausible_reply
    session, screen = session_ask(
        llm_settings, embedder, llm_settings.index_dir, tmp_path, question, terminal=True
    )
    answer = session.last.answer
    [answer_request] = [b for b in openai_server.requests if step_of(b) == "answer"]
    assert answer_request.get("stream") is True
    preview, after = screen.rsplit(SHOW_CURSOR, 1)
    assert preview.count(REDRAW) > 3  # redrawn piece by piece as the server sent them
    shown = after.split("\n\n")[0]  # the screen above the numbered sources, once the preview is gone
    assert shown.count(answer.split(" [")[0]) == 1  # shown once, as checked
    assert "checked answer" not in shown and "not used" not in shown


@pytest.mark.parametrize("language", ["en", "zh"])
@pytest.mark.parametrize("terminal", [True, False], ids=["terminal", "pipe"])
def test_a_rejected_llm_answer_is_replaced_on_screen_by_the_offline_answer(
    llm_settings, embedder, openai_server, tmp_path, tmp_path_factory, language, terminal
):
    document, question, fact = PLANTED[language]
    index_dir = index_of_files(tmp_path_factory, embedder, {f"handbook_{language}.md": document})
    openai_server.responder = by_step(
        {step: plausible_reply for step in ("analyze", "judge", "rewrite", "compress", "check_support")}
        | {"answer": reply("PWNED [1] .")}
    )
    session, screen = session_ask(llm_settings, embedder, index_dir, tmp_path, question, terminal=terminal)
    assert "answer" in openai_server.steps()
    answer = session.last.answer
    assert "PWNED" not in answer and fact in answer
    if terminal:
        preview, after = screen.rsplit(SHOW_CURSOR, 1)
        assert "PWNED [1]" in preview  # the model's tokens were previewed,
        assert after.startswith(ERASE_LINE)  # then erased
    else:
        after = screen  # nothing is previewed on a pipe
    assert "PWNED [1]" not in after
    lines = after.split("\n")
    at = next(i for i, line in enumerate(lines) if "not used" in line)
    notice, shown_answer = lines[at], lines[at + 1]
    assert "the model's answer was not used (" in notice
    assert "answer rejected: repeats an instruction planted in passage [1]" in notice
    assert shown_answer.startswith(answer.split(" [")[0][:20])
