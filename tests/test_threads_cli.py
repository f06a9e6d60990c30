"""`python main.py threads ...` and the checkpoint cap after `ask --thread`, run through main() in-process."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from langgraph.checkpoint.base import empty_checkpoint

from config import load_settings
from ingestion.pipeline import ingest_paths
from main import main
from memory.checkpointer import open_checkpointer

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "ingest"
MAX_CHECKPOINTS = 5


@pytest.fixture(scope="module")
def index_dir(tmp_path_factory, embedder) -> Path:
    folder = tmp_path_factory.mktemp("index")
    settings = load_settings(index_dir=folder, embedder="use-multilingual")
    ingest_paths(
        [FIXTURES / "quickstart_en.md", FIXTURES / "install_zh.md"],
        settings,
        embedder,
        index_dir=folder,
        progress=False,
    )
    return folder


@pytest.fixture
def db(tmp_path, monkeypatch, index_dir) -> Path:
    path = tmp_path / "checkpoints.sqlite"
    monkeypatch.setenv("AGENTIC_RAG_CHECKPOINT_DB", str(path))
    monkeypatch.setenv("AGENTIC_RAG_INDEX_DIR", str(index_dir))
    monkeypatch.setenv("AGENTIC_RAG_EMBEDDER", "use-multilingual")
    monkeypatch.setenv("AGENTIC_RAG_RERANKER", "lexical")
    monkeypatch.setenv("AGENTIC_RAG_BRAIN", "offline")
    monkeypatch.setenv("AGENTIC_RAG_MAX_CHECKPOINTS_PER_THREAD", str(MAX_CHECKPOINTS))
    return path


def run_json(capsys, *argv: str):
    capsys.readouterr()
    assert main(list(argv)) == 0
    return json.loads(capsys.readouterr().out)


@pytest.fixture
def conversations(db, capsys) -> None:
    """Two threads: an English conversation with a follow-up, and a Chinese question."""
    for thread, question in [
        ("docs-en", "What Python version do I need?"),
        ("docs-en", "And how do I ask my first question?"),
        ("安装-zh", "安装大约需要多长时间？"),
    ]:
        assert main(["ask", question, "--thread", thread]) == 0
    capsys.readouterr()


@pytest.mark.slow
def test_ask_with_a_thread_keeps_at_most_the_configured_checkpoints(conversations, capsys):
    threads = run_json(capsys, "threads", "list", "--json")
    assert [t["thread_id"] for t in threads] == ["安装-zh", "docs-en"]  # most recent first
    assert all(1 <= t["n_checkpoints"] <= MAX_CHECKPOINTS for t in threads)
    assert {t["thread_id"]: t["title"] for t in threads} == {
        "docs-en": "What Python version do I need?",
        "安装-zh": "安装大约需要多长时间？",
    }
    # Capping old checkpoints never loses the conversation itself.
    detail = run_json(capsys, "threads", "show", "docs-en", "--json")
    assert [role for role, _ in detail["turns"]] == ["user", "assistant", "user", "assistant"]
    assert "3.11" in detail["turns"][1][1]


@pytest.mark.slow
def test_show_prints_the_conversation_and_accepts_a_unique_prefix(conversations, capsys):
    assert main(["threads", "show", "安装"]) == 0
    out = capsys.readouterr().out
    assert "thread 安装-zh" in out
    assert "you: 安装大约需要多长时间？" in out
    assert "agent:" in out and "[1]" in out


@pytest.mark.slow
def test_delete_removes_a_thread(conversations, capsys):
    assert main(["threads", "delete", "docs-en"]) == 0
    assert "deleted thread docs-en" in capsys.readouterr().out
    assert [t["thread_id"] for t in run_json(capsys, "threads", "list", "--json")] == ["安装-zh"]
    assert main(["threads", "show", "docs-en"]) == 1
    assert "error: no conversation thread 'docs-en'" in capsys.readouterr().err


def test_prune_deletes_only_threads_older_than_the_given_age(db, capsys):
    with open_checkpointer(sqlite_path=db) as saver:
        for thread, stamp in [("old", "2020-01-01T00:00:00+00:00"), ("fresh", None)]:
            checkpoint = empty_checkpoint()
            if stamp:
                checkpoint["ts"] = stamp
            config = {"configurable": {"thread_id": thread, "checkpoint_ns": ""}}
            saver.put(config, checkpoint, {"source": "input", "step": -1}, {})

    assert run_json(capsys, "threads", "prune", "--older-than", "30d", "--json")["deleted"] == ["old"]
    assert [t["thread_id"] for t in run_json(capsys, "threads", "list", "--json")] == ["fresh"]
    assert main(["threads", "prune", "--older-than", "1w"]) == 0
    assert "deleted 0 thread(s)" in capsys.readouterr().out


@pytest.mark.parametrize("age", ["30", "thirty days", "-5d", "0h"])
def test_a_bad_age_is_a_clear_error(db, capsys, age):
    assert main(["threads", "prune", f"--older-than={age}"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: invalid duration '{age}'") and "Traceback" not in err


def test_an_empty_store_lists_no_threads(db, capsys):
    assert main(["threads", "list"]) == 0
    assert "no conversation threads" in capsys.readouterr().out
    assert main(["threads", "delete", "nope"]) == 1
    assert "no conversation thread 'nope'" in capsys.readouterr().err
