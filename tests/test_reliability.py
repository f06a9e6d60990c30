"""The reliability catalogue: kills, concurrency, damaged files and hostile input, through the real CLI.

Each test is one failure found by a fault-and-bad-input run (issue 12), kept so it cannot come back.
Processes are real (``python main.py ...``), killed with SIGKILL where the failure is a kill; kill loops
run a few iterations only. Figures for docs/reliability.md come from ``bench/reliability.py``.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.openai_server import by_step, hang, openai_server, plausible_reply
from tests.postgres_server import postgres_url

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "ingest"
CLI_TIMEOUT_S = 180


def cli_env(index_dir: Path, db: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTIC_RAG_")}
    env.update(
        PYTHONPATH=str(ROOT),
        AGENTIC_RAG_INDEX_DIR=str(index_dir),
        AGENTIC_RAG_CHECKPOINT_DB=str(db),
        AGENTIC_RAG_EMBEDDER="use-multilingual",
        AGENTIC_RAG_RERANKER="lexical",
        AGENTIC_RAG_BRAIN="offline",
        **extra,
    )
    return env


def start(env: dict[str, str], *argv: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "main.py", *argv],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def run(env: dict[str, str], *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "main.py", *argv],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=CLI_TIMEOUT_S,
        check=False,
    )


def run_json(env: dict[str, str], *argv: str):
    done = run(env, *argv, "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def thread_turns(env: dict[str, str], thread: str) -> list[tuple[str, str]]:
    return [tuple(turn) for turn in run_json(env, "threads", "show", thread)["turns"]]


@pytest.fixture(scope="module")
def index_dir(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("reliability") / "index"
    env = cli_env(folder, folder.parent / "unused.sqlite")
    done = run(
        env,
        "ingest",
        "--index",
        str(folder),
        str(FIXTURES / "quickstart_en.md"),
        str(FIXTURES / "install_zh.md"),
    )
    assert done.returncode == 0, done.stderr
    return folder


# --- conversations ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("killed", "next_question"),
    [
        ("How do I ask my first question?", "What is the default chunk size?"),
        ("安装大约需要多长时间？", "需要什么 Python 版本？"),
    ],
)
def test_a_turn_killed_mid_run_leaves_nothing_the_next_question_inherits(
    index_dir, tmp_path, openai_server, killed, next_question
):
    env = cli_env(index_dir, tmp_path / "checkpoints.sqlite")
    run_json(env, "ask", "What Python version do I need?", "--thread", "T")
    # The LLM brain rewrites the follow-up, then hangs on analysis: the process is inside the turn.
    openai_server.responder = by_step({"contextualize": plausible_reply, "analyze": hang(120)})
    victim = start(
        {**env, "OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": openai_server.base_url},
        "ask",
        killed,
        "--thread",
        "T",
        "--brain",
        "llm",
    )
    try:
        deadline = time.monotonic() + CLI_TIMEOUT_S
        while "analyze" not in openai_server.steps():
            assert victim.poll() is None, victim.communicate()
            assert time.monotonic() < deadline, "the killed run never reached analysis"
            time.sleep(0.05)
    finally:
        victim.send_signal(signal.SIGKILL)
        victim.communicate()

    result = run_json(env, "ask", next_question, "--thread", "T")
    assert result["question"] == next_question
    assert killed not in result["standalone_question"]
    users = [text for role, text in thread_turns(env, "T") if role == "user"]
    assert users == ["What Python version do I need?", next_question]


def test_a_turn_ended_by_an_error_is_dropped_by_the_next_turn(index_dir, tmp_path):
    """A turn cut off in the graph (not by a kill) is persisted with its question unanswered."""
    from langchain_core.messages import AIMessage, HumanMessage

    from nodes.contextualize import abandoned_questions

    history = [
        HumanMessage("What Python version do I need?", id="1"),
        AIMessage("Python 3.11 [1]", id="2"),
        HumanMessage("安装大约需要多长时间？", id="3"),
        HumanMessage("What is the default chunk size?", id="4"),
    ]
    assert [m.id for m in abandoned_questions(history)] == ["3"]
    assert abandoned_questions(history[:2] + history[3:]) == []


def test_concurrent_turns_on_one_thread_are_serialised_nothing_lost_or_crossed(index_dir, tmp_path):
    env = cli_env(index_dir, tmp_path / "checkpoints.sqlite")
    questions = [
        "What Python version do I need?",
        "什么是多跳检索？",
        "How do I ask my first question?",
        "安装大约需要多长时间？",
    ]
    procs = [start(env, "ask", q, "--thread", "same", "--json") for q in questions]
    answers = {}
    for q, proc in zip(questions, procs, strict=True):
        out, err = proc.communicate(timeout=CLI_TIMEOUT_S)
        assert proc.returncode == 0, err
        result = json.loads(out)
        assert result["question"] == q
        answers[q] = result["answer"]
    turns = thread_turns(env, "same")
    assert sorted(text for role, text in turns if role == "user") == sorted(questions)
    pairs = dict(zip(turns[0::2], turns[1::2], strict=True))
    for q in questions:
        assert pairs[("user", q)] == ("assistant", answers[q])


def test_a_turn_that_cannot_get_the_thread_reports_it_busy(tmp_path):
    from memory.thread_lock import ThreadBusyError, thread_lock

    db = tmp_path / "checkpoints.sqlite"
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time\n"
            "from memory.thread_lock import thread_lock\n"
            f"with thread_lock('会话-1', sqlite_path={str(db)!r}):\n"
            "    print('held', flush=True)\n"
            "    sys.stdin.read()\n",
        ],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        with (
            pytest.raises(ThreadBusyError, match=r"会话-1.*busy"),
            thread_lock("会话-1", sqlite_path=db, timeout_s=0),
        ):
            pass
        with thread_lock("another thread", sqlite_path=db, timeout_s=0):
            pass
    finally:
        holder.stdin.close()
        holder.wait(timeout=30)
    with thread_lock("会话-1", sqlite_path=db, timeout_s=0):
        pass


def test_the_postgres_thread_lock_excludes_other_sessions(postgres_url):
    from memory.thread_lock import ThreadBusyError, thread_lock

    with thread_lock("pg-thread", sqlite_path=Path("unused"), postgres_url=postgres_url):
        with (
            pytest.raises(ThreadBusyError),
            thread_lock("pg-thread", sqlite_path=Path("unused"), postgres_url=postgres_url, timeout_s=0),
        ):
            pass
        with thread_lock("其他", sqlite_path=Path("unused"), postgres_url=postgres_url, timeout_s=0):
            pass
    with thread_lock("pg-thread", sqlite_path=Path("unused"), postgres_url=postgres_url, timeout_s=0):
        pass
