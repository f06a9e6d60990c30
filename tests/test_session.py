"""The interactive session, driven the way a person uses it: at a terminal (a pty) and through a pipe."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pexpect
import pytest

from cli.session import last_thread_file
from config import load_settings
from ingestion.pipeline import ingest_paths
from memory.checkpointer import open_checkpointer
from memory.threads import list_threads, show_thread
from tests.corpus import index_of_files

ROOT = Path(__file__).resolve().parent.parent
MAIN = str(ROOT / "main.py")
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07|[\x01\x02]")
PROMPT = "» "

DOCS = {
    "hybrid_en.md": (
        "# Hybrid search\n\n"
        "Hybrid search merges the results of vector search and keyword search with reciprocal rank "
        "fusion (RRF).\nThe fusion constant k is 60, so a chunk ranked first by both retrievers gets "
        "the highest fused score.\n\n"
        "## Keyword search\n\n"
        "Keyword search ranks chunks with BM25 (k1 = 1.2, b = 0.75) and keeps identifiers such as "
        "E-4711 whole.\n"
    ),
    "hnsw_zh.md": (
        "# 向量索引\n\n当分块数量超过二十万时，向量索引会从精确搜索切换为 HNSW 图索引。\n\n"
        "## 性能调优\n\nHNSW 索引的性能问题可以通过调大 ef_search 参数来解决，代价是查询变慢。"
        "构建时的 M 参数默认为 32。\n"
    ),
    "install_en.md": (
        "# Installation\n\nInstalling agentic-rag takes about five minutes. You need Python 3.11 or "
        "newer and a virtual environment.\n"
    ),
}


@pytest.fixture(scope="module")
def index_dir(tmp_path_factory, embedder) -> Path:
    return index_of_files(tmp_path_factory, embedder, DOCS)


def session_env(index_dir: Path, checkpoint_db: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTIC_RAG_")}
    env.update(
        AGENTIC_RAG_INDEX_DIR=str(index_dir),
        AGENTIC_RAG_CHECKPOINT_DB=str(checkpoint_db),
        AGENTIC_RAG_EMBEDDER="use-multilingual",
        AGENTIC_RAG_RERANKER="lexical",  # the reranker is not what these tests are about; keep them fast
        AGENTIC_RAG_BRAIN="offline",
        LANG="C.UTF-8",
        LC_ALL="C.UTF-8",
        TERM="xterm-256color",
        PYTHONUNBUFFERED="1",
    )
    env.pop("NO_COLOR", None)
    return env


class Terminal:
    """`python main.py` in a pseudo-terminal; reads the screen as plain text."""

    def __init__(self, cwd: Path, env: dict[str, str], preexec_fn: Callable[[], None] | None = None) -> None:
        self.child = pexpect.spawn(
            sys.executable,
            [MAIN],
            cwd=str(cwd),
            env=env,
            encoding="utf-8",
            codec_errors="replace",
            dimensions=(50, 220),
            timeout=90,
            preexec_fn=preexec_fn,
        )

    def wait_prompt(self) -> str:
        self.child.expect_exact(PROMPT)
        return ANSI.sub("", self.child.before)

    def type(self, line: str) -> str:
        """Type a line at the prompt; the screen output up to the next prompt."""
        self.child.sendline(line)
        return self.wait_prompt()

    def quit(self) -> int:
        self.child.sendline("/quit")
        self.child.expect(pexpect.EOF)
        self.child.close()
        return self.child.exitstatus


@pytest.mark.slow
def test_a_conversation_at_the_terminal_resumes_after_a_restart(index_dir, tmp_path):
    env = session_env(index_dir, tmp_path / "state" / "checkpoints.sqlite")

    first = Terminal(tmp_path, env)
    banner = first.wait_prompt()
    assert "new thread" in banner and "/help" in banner
    thread_id = re.search(r"new thread (\w+)", banner).group(1)

    screen = first.type("How does hybrid search merge results?")
    assert (
        re.search(r"analysing -> (hybrid|multi-hop)", screen) and "-> answer" in screen
    )  # steps stream first
    assert re.search(r"reciprocal rank fusion.*\[1\]", screen)
    assert re.search(r"\[1\] \S*hybrid_en\.md", screen)

    screen = first.type("它的常数 k 是多少？")  # a Chinese follow-up that only makes sense with the history
    assert "它的常数 k 是多少？" in screen  # the terminal echoed the UTF-8 input intact
    assert 'follow-up: "' in screen and "hybrid search" in screen
    assert "60" in screen and re.search(r"\[1\] \S*hybrid_en\.md", screen)

    trace = first.type("/trace")
    assert "follow_up" in trace
    for node in ("contextualize", "analyze_query", "retrieve_", "rerank", "evaluate", "generate"):
        assert node in trace
    assert "stop reason: sufficient" in trace

    sources = first.type("/sources")
    assert "The fusion constant k is 60" in sources and "hybrid_en.md" in sources

    screen = first.type("/new")
    assert re.search(r"new thread (\w+)", screen).group(1) != thread_id
    assert first.quit() == 0

    # A restart picks up the last conversation: it is listed, and a follow-up still has its history.
    second = Terminal(tmp_path, env)
    banner = second.wait_prompt()
    assert f"resuming thread {thread_id} (2 questions so far)" in banner
    assert re.search(rf"{thread_id} \*", second.type("/threads"))

    # Ctrl-C cancels the running question, not the session, and leaves no trace in the conversation.
    second.child.sendline("What does error code E-4711 mean?")
    second.child.expect_exact("analysing")
    second.child.sendintr()
    assert "cancelled" in second.wait_prompt()

    screen = second.type("And how does its keyword search rank chunks?")
    assert 'follow-up: "' in screen and "hybrid search" in screen.split("follow-up:")[1].splitlines()[0]
    assert "BM25" in screen and re.search(r"\[\d\] \S*hybrid_en\.md", screen)
    assert second.quit() == 0

    with open_checkpointer(sqlite_path=Path(env["AGENTIC_RAG_CHECKPOINT_DB"])) as saver:
        turns = show_thread(saver, thread_id).turns
    questions = [text for role, text in turns if role == "user"]
    assert questions == [
        "How does hybrid search merge results?",
        "它的常数 k 是多少？",
        "And how does its keyword search rank chunks?",
    ]


@pytest.mark.slow
def test_ctrl_c_cancels_the_question_even_when_the_session_was_started_with_sigint_ignored(
    index_dir, tmp_path
):
    """A launcher (or a test runner) that ignores SIGINT passes that on; the session still listens."""
    env = session_env(index_dir, tmp_path / "state" / "checkpoints.sqlite")
    terminal = Terminal(tmp_path, env, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
    terminal.wait_prompt()
    terminal.child.sendline("错误代码 E-4711 是什么意思？")
    terminal.child.expect_exact("analysing")
    terminal.child.sendintr()
    assert "cancelled" in terminal.wait_prompt()
    assert terminal.quit() == 0


@pytest.mark.slow
def test_questions_piped_on_stdin_are_answered_in_plain_text(index_dir, tmp_path):
    env = session_env(index_dir, tmp_path / "checkpoints.sqlite")
    env.pop("TERM")
    questions = "How does hybrid search merge results?\n\nHNSW 的性能问题怎么解决？\n/trace\n"
    done = subprocess.run(
        [sys.executable, MAIN],
        input=questions,
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=180,
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "\x1b[" not in out and "Traceback" not in done.stderr
    assert "» How does hybrid search merge results?" in out and "» HNSW 的性能问题怎么解决？" in out
    english, chinese = out.split("» HNSW 的性能问题怎么解决？")
    assert re.search(r"reciprocal rank fusion.*\[1\]", english) and "hybrid_en.md" in english
    assert "ef_search" in chinese and re.search(r"\[\d\] \S*hnsw_zh\.md", chinese)
    assert "retrieve_" in chinese.split("stop reason")[0]  # /trace ran after the last answer
    assert not list(tmp_path.glob("checkpoints.sqlite.last-thread*"))  # a script does not move "last"


def piped(env: dict[str, str], cwd: Path, text: str, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, MAIN, "session", *args],
        input=text,
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=180,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.slow
def test_piped_input_starts_a_new_thread_unless_one_is_named(index_dir, tmp_path):
    db = tmp_path / "checkpoints.sqlite"
    env = session_env(index_dir, db)
    env.pop("TERM")
    piped(env, tmp_path, "How does hybrid search merge results?\n", "--thread", "t1")
    # the interactive session would resume t1 over this index
    last_thread_file(db, index_dir).write_text("t1\n", encoding="utf-8")

    fresh = piped(env, tmp_path, "它的常数 k 是多少？\n")
    assert "follow-up:" not in fresh
    with open_checkpointer(sqlite_path=db) as saver:
        assert len(list_threads(saver)) == 2
        assert [r for r, _ in show_thread(saver, "t1").turns].count("user") == 1

    continued = piped(env, tmp_path, "它的常数 k 是多少？\n", "--thread", "t1")
    assert "follow-up:" in continued
    with open_checkpointer(sqlite_path=db) as saver:
        assert [r for r, _ in show_thread(saver, "t1").turns].count("user") == 2
    assert last_thread_file(db, index_dir).read_text().strip() == "t1"


@pytest.mark.slow
def test_a_checkpoint_database_deleted_mid_session_is_reported_not_silently_lost(index_dir, tmp_path):
    db = tmp_path / "state" / "checkpoints.sqlite"
    terminal = Terminal(tmp_path, session_env(index_dir, db))
    terminal.wait_prompt()
    assert "reciprocal rank fusion" in terminal.type("How does hybrid search merge results?")
    for leftover in db.parent.glob("checkpoints.sqlite*"):
        if leftover.is_file():
            leftover.unlink()  # someone removes the store (and its WAL) while the session runs

    screen = " ".join(terminal.type("HNSW 的性能问题怎么解决？").split())
    assert "was deleted or replaced while this session ran" in screen and "restart the session" in screen
    assert "ef_search" not in screen  # no answer that would be lost with the deleted file
    assert "Traceback" not in screen
    assert terminal.quit() == 0


def test_the_remembered_thread_is_per_index(tmp_path):
    db = tmp_path / "checkpoints.sqlite"
    first, second = last_thread_file(db, tmp_path / "a"), last_thread_file(db, tmp_path / "b")
    assert first != second and first.parent == second.parent == tmp_path
    assert last_thread_file(db, tmp_path / "a") == first


def test_without_an_index_the_session_says_how_to_create_one(tmp_path):
    env = session_env(tmp_path / "no-index-yet", tmp_path / "checkpoints.sqlite")
    done = subprocess.run(
        [sys.executable, MAIN],
        input="What is RRF?\n",
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1
    assert "python main.py ingest PATH" in done.stderr and str(tmp_path / "no-index-yet") in done.stderr
    assert "Traceback" not in done.stderr
