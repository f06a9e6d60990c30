"""Feedback store: verdicts with the turn's question, answer, citations, passages and trace, kept in
SQLite beside the checkpoints or in PostgreSQL (a real server) when configured."""

from __future__ import annotations

from pathlib import Path

import pytest

from memory.checkpointer import CheckpointerError
from memory.feedback import FeedbackRecord, feedback_path, open_feedback_store
from tests.postgres_server import postgres_url

TRACE = [{"node": "retrieve_hybrid", "decision": "", "counts": {"hits": 3}}]


@pytest.fixture(params=["sqlite", "postgres"])
def store_args(request, tmp_path: Path) -> dict:
    if request.param == "sqlite":
        return {"checkpoint_db": tmp_path / "memory" / "checkpoints.sqlite", "postgres_url": None}
    return {
        "checkpoint_db": tmp_path / "unused.sqlite",
        "postgres_url": request.getfixturevalue("postgres_url"),
    }


def test_records_round_trip_in_both_languages(store_args: dict) -> None:
    zh = FeedbackRecord(
        thread_id="t-zh",
        turn=2,
        verdict="bad",
        note="答案应为 1636 年",
        question="哈佛大学是哪一年建立的？",
        answer="哈佛大学建立于 1639 年 [1]。",
        mode="agentic",
        citations=[{"number": 1, "chunk_id": "harvard#0", "source": "harvard.md"}],
        passages=[
            {"number": 1, "chunk_id": "harvard#0", "source": "harvard.md", "text": "哈佛大学建立于1636年。"}
        ],
        trace=TRACE,
    )
    en = FeedbackRecord(
        thread_id="t-en", turn=1, verdict="good", question="What is BM25?", answer="A ranking [1]."
    )
    with open_feedback_store(**store_args) as store:
        before = len(store.records())
        first = store.add(zh)
        second = store.add(en)
        assert second > first
        bad = [r for r in store.records("bad") if r.id == first]
        assert bad and bad[0].model_dump(exclude={"id"}) == zh.model_dump(exclude={"id"})
        assert len(store.records()) == before + 2
    with open_feedback_store(**store_args) as store:  # persisted
        assert {r.thread_id for r in store.records("good") if r.id == second} == {"t-en"}


def test_sqlite_store_sits_beside_the_checkpoints(tmp_path: Path) -> None:
    checkpoints = tmp_path / "state" / "checkpoints.sqlite"
    with open_feedback_store(checkpoint_db=checkpoints) as store:
        store.add(FeedbackRecord(thread_id="t", turn=1, verdict="good", question="q", answer="a"))
    assert feedback_path(checkpoints) == tmp_path / "state" / "feedback.sqlite"
    assert feedback_path(checkpoints).exists()


def test_unreachable_postgres_is_one_clear_error_without_the_password(tmp_path: Path) -> None:
    url = "postgresql://user:secret@127.0.0.1:1/nothing"
    with (
        pytest.raises(CheckpointerError) as info,
        open_feedback_store(checkpoint_db=tmp_path / "c", postgres_url=url),
    ):
        pass
    assert "secret" not in str(info.value) and "feedback store" in str(info.value)


def test_records_keep_who_gave_them_and_list_one_users(store_args: dict) -> None:
    def record(author: str, verdict: str, question: str) -> FeedbackRecord:
        return FeedbackRecord(
            thread_id=f"t-{author or 'cli'}",
            author=author,
            turn=1,
            verdict=verdict,
            question=question,
            answer="a",
        )

    with open_feedback_store(**store_args) as store:
        ids = {
            store.add(record("alice", "bad", "年假有几天？")),
            store.add(record("bob", "bad", "What is the build passphrase?")),
            store.add(record("bob", "good", "构建服务器在哪里？")),
            store.add(record("", "good", "asked in the CLI")),
        }
        mine = [r for r in store.records(author="bob") if r.id in ids]
        assert [(r.author, r.verdict) for r in mine] == [("bob", "bad"), ("bob", "good")]
        assert [r.question for r in store.records("bad", author="alice") if r.id in ids] == ["年假有几天？"]
        assert {r.author for r in store.records() if r.id in ids} == {"alice", "bob", ""}


def test_a_store_written_before_feedback_had_authors_gains_the_column(tmp_path: Path) -> None:
    import sqlite3

    checkpoints = tmp_path / "checkpoints.sqlite"
    old = sqlite3.connect(feedback_path(checkpoints))
    columns = "thread_id, turn, verdict, note, question, answer, mode, citations, passages, trace, created_at"
    old.execute(f"CREATE TABLE feedback (id INTEGER PRIMARY KEY AUTOINCREMENT, {columns})")
    old.execute(
        f"INSERT INTO feedback ({columns}) VALUES ('t', 1, 'bad', '', '问', '答', '', '[]', '[]', '[]', 0)"
    )
    old.commit()
    old.close()
    with open_feedback_store(checkpoint_db=checkpoints) as store:
        (kept,) = store.records()
        assert kept.author == "" and kept.question == "问"  # the CLI's, as before
        store.add(
            FeedbackRecord(thread_id="t", author="alice", turn=1, verdict="good", question="q", answer="a")
        )
        assert [r.author for r in store.records(author="alice")] == ["alice"]
