"""Feedback end to end: verdicts recorded from threads (graph API, CLI, session), bad answers classified
by re-running them in the other modes, proposals shown with their effect and written only with --yes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from app.feedback import add_feedback, feedback_report, rerun_effect, with_passage_texts, write_env
from app.wiring import build_context
from config import load_settings
from evaluators.feedback_analysis import Diagnosis, gold_from_note, holds_answer, propose
from graph.builder import build_graph
from graph.run import ask
from ingestion.indexing import index_chunks
from main import main
from memory.checkpointer import open_checkpointer
from memory.feedback import FeedbackError, FeedbackRecord, open_feedback_store
from tests.graph_fixtures import graph_corpus

ROOT = Path(__file__).resolve().parent.parent

# --------------------------------------------------------------------------------------------- rules


@pytest.mark.parametrize(
    ("note", "gold"),
    [
        ("gold: disk quota exceeded", "disk quota exceeded"),
        ("wrong code. Answer: the disk quota", "the disk quota"),
        ("答案应为 1636 年。", "1636 年"),
        ("正确答案是：磁盘配额已满", "磁盘配额已满"),
        ("太长了", ""),
    ],
)
def test_gold_answer_from_the_note(note: str, gold: str) -> None:
    assert gold_from_note(note) == gold


def test_answer_terms_in_passages() -> None:
    texts = ["Error code E-4711 means the disk quota was exceeded."]
    assert holds_answer(texts, "What does E-4711 mean?", "Disk quota was EXCEEDED")
    assert not holds_answer(texts, "What does E-4711 mean?", "network unreachable")
    assert holds_answer(
        ["混合检索使用倒数排名融合（RRF）算法，常数 k 取 60。"], "混合检索的常数 k 是多少？", ""
    )
    assert not holds_answer(["安装时需要 Python 3.11。"], "混合检索的常数 k 是多少？", "")


def diagnosis(failure: str, found_by: list[str] = ()) -> Diagnosis:
    return Diagnosis(
        record_id=1,
        thread_id="t",
        turn=1,
        question="q",
        answer="a",
        failure=failure,
        reason="r",
        found_by=list(found_by),
    )


def test_proposals_follow_the_classes() -> None:
    settings = load_settings(reranker="e5")
    routing_dense = propose([diagnosis("routing", ["naive", "hybrid"])], settings)
    assert [(p.setting, p.proposed) for p in routing_dense] == [
        ("vector_weight", round(settings.vector_weight * 1.5, 3)),
        ("reranker", "none"),
    ]
    misses = propose([diagnosis("retrieval_miss"), diagnosis("other")], settings)
    assert [(p.setting, p.proposed) for p in misses] == [("max_retries", 3), ("candidate_k", 60)]
    assert propose([diagnosis("other")], settings) == []


# --------------------------------------------------------------------------------------------- graph API


@pytest.fixture
def settings(tmp_path, monkeypatch, embedder):
    current = load_settings(
        index_dir=tmp_path / "index",
        checkpoint_db=tmp_path / "checkpoints.sqlite",
        embedder="use-multilingual",
        reranker="none",
        brain="offline",
        top_k=1,  # one passage per answer: a wrong route is visible
    )
    index_chunks(graph_corpus(), current, embedder, index_dir=current.index_dir, progress=False)
    env = {
        "INDEX_DIR": current.index_dir,
        "CHECKPOINT_DB": current.checkpoint_db,
        "EMBEDDER": "use-multilingual",
        "RERANKER": "none",
        "BRAIN": "offline",
        "TOP_K": 1,
    }
    for name, value in env.items():
        monkeypatch.setenv(f"AGENTIC_RAG_{name}", str(value))
    return current


UNSUPPORTED = FeedbackRecord(
    thread_id="llm-thread",
    turn=1,
    verdict="bad",
    note="谷歌？资料里没有",
    question="混合检索的常数 k 取多少？",
    answer="混合检索的常数 k 取 60[1]。该算法由谷歌在2015年首次提出[1]。",  # as an LLM might over-reach
    mode="agentic",
    passages=[
        {
            "number": 1,
            "chunk_id": "rrf-zh",
            "source": "docs/zh/retrieval.md",
            "text": "混合检索使用倒数排名融合（RRF）算法，把向量检索和关键词检索的结果合并在一起，常数 k 取 60。",
        }
    ],
)


def test_bad_answers_are_classified_and_the_proposals_shown_with_their_effect(settings) -> None:
    context = build_context(settings)
    with (
        open_checkpointer(sqlite_path=settings.checkpoint_db) as saver,
        open_feedback_store(checkpoint_db=settings.checkpoint_db) as store,
    ):
        app = build_graph(checkpointer=saver)
        wrong = ask(app, "What does error code E-4711 mean?", context=context, thread_id="en", mode="naive")
        assert "E-4712" in wrong.answer  # dense search alone ranks the neighbouring code first
        ask(app, "谁赢得了1998年世界杯？", context=context, thread_id="zh")
        ask(app, "BM25 的 k1 参数是多少？", context=context, thread_id="zh")
        add_feedback(store, app, "en", "bad", note="gold: disk quota was exceeded")
        add_feedback(store, app, "zh", "bad", turn=1, note="世界杯不在资料里")
        good = add_feedback(store, app, "zh", "good")
        assert (good.turn, good.question, good.mode) == (2, "BM25 的 k1 参数是多少？", "agentic")
        assert good.passages and good.trace and good.citations
        # checkpoints keep passage ids, not their text: the report reads the text back from the index
        assert not any(p["text"] for p in good.passages)
        filled = with_passage_texts(good, context.retrievers.index)
        assert all(p["text"] for p in filled.passages) and "k1" in filled.passages[0]["text"]
        store.add(UNSUPPORTED)
        with pytest.raises(FeedbackError, match="between 1 and 2"):
            add_feedback(store, app, "zh", "bad", turn=3)
        with pytest.raises(FeedbackError, match="no answered question"):
            add_feedback(store, app, "nobody", "bad")

        report = feedback_report(store, app, context)
        assert (report.good, report.bad) == (1, 3)
        assert report.counts == {"retrieval_miss": 1, "routing": 1, "unsupported_generation": 1, "other": 0}
        by_class = {d.failure: d for d in report.diagnoses}
        assert by_class["routing"].question == "What does error code E-4711 mean?"
        assert "keyword" in by_class["routing"].found_by and "naive" not in by_class["routing"].found_by
        assert by_class["retrieval_miss"].question == "谁赢得了1998年世界杯？"
        assert by_class["unsupported_generation"].unsupported_share == pytest.approx(0.5)
        assert [(p.setting, p.proposed) for p in report.proposals] == [
            ("keyword_weight", 1.5),
            ("max_retries", 3),
            ("candidate_k", 60),
            ("remove_unsupported", True),
        ]
        routing_only = [by_class["routing"]]
        effects = rerun_effect(app, context, routing_only, report.proposals[:1])
        assert [(e.mode, e.before) for e in effects] == [("naive", False)]


def test_cli_add_report_and_apply_only_with_yes(settings, tmp_path, capsys) -> None:
    assert main(["ask", "What does error code E-4711 mean?", "--thread", "cli-en", "--mode", "naive"]) == 0
    assert main(["ask", "错误码 E-4710 是什么意思？", "--thread", "cli-zh"]) == 0
    capsys.readouterr()
    assert (
        main(["feedback", "add", "cli-en", "bad", "--note", "gold: disk quota was exceeded", "--json"]) == 0
    )
    added = json.loads(capsys.readouterr().out)
    assert (added["thread_id"], added["turn"], added["verdict"]) == ("cli-en", 1, "bad")
    assert main(["feedback", "add", "cli-z", "good"]) == 0  # a unique prefix of the thread id is enough
    assert "recorded good for turn 1 of thread cli-zh" in capsys.readouterr().out
    assert main(["feedback", "add", "nope", "bad"]) == 1
    assert "no conversation thread 'nope'" in capsys.readouterr().err

    assert main(["feedback", "report", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["counts"]["routing"] == 1 and report["good"] == 1
    assert main(["feedback", "report"]) == 0
    assert "routing" in capsys.readouterr().out

    env_file = tmp_path / "settings.env"
    env_file.write_text("AGENTIC_RAG_TOP_K=1\n", encoding="utf-8")
    assert main(["feedback", "apply", "--env-file", str(env_file)]) == 0
    shown = capsys.readouterr().out
    assert "keyword_weight: 1.0 -> 1.5" in shown and "nothing written" in shown
    assert env_file.read_text(encoding="utf-8") == "AGENTIC_RAG_TOP_K=1\n"
    assert main(["feedback", "apply", "--yes", "--env-file", str(env_file), "--json"]) == 0
    applied = json.loads(capsys.readouterr().out)
    assert applied["applied"] and applied["effects"][0]["mode"] == "naive"
    assert env_file.read_text(encoding="utf-8") == "AGENTIC_RAG_TOP_K=1\nAGENTIC_RAG_KEYWORD_WEIGHT=1.5\n"


def test_write_env_replaces_existing_values(tmp_path) -> None:
    env_file = tmp_path / ".env"
    env_file.write_text("OPENAI_MODEL=x\nAGENTIC_RAG_MAX_RETRIES=2\n", encoding="utf-8")
    from evaluators.feedback_analysis import Proposal

    write_env(env_file, [Proposal(setting="max_retries", current=2, proposed=3, reason="r")])
    write_env(env_file, [Proposal(setting="remove_unsupported", current=False, proposed=True, reason="r")])
    assert env_file.read_text(encoding="utf-8").splitlines() == [
        "OPENAI_MODEL=x",
        "AGENTIC_RAG_MAX_RETRIES=3",
        "AGENTIC_RAG_REMOVE_UNSUPPORTED=true",
    ]


@pytest.mark.slow
def test_good_and_bad_in_the_session(settings, tmp_path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "TERM"}
    lines = "What does error code E-4711 mean?\n/bad gold: disk quota was exceeded\n错误码 E-4710 是什么意思？\n/good\n"
    done = subprocess.run(
        [sys.executable, str(ROOT / "main.py")],
        input=lines,
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert "recorded bad for turn 1" in done.stdout and "recorded good for turn 2" in done.stdout
    with open_feedback_store(checkpoint_db=settings.checkpoint_db) as store:
        records = store.records()
    assert [(r.verdict, r.turn, r.note) for r in records] == [
        ("bad", 1, "gold: disk quota was exceeded"),
        ("good", 2, ""),
    ]
    assert records[1].question == "错误码 E-4710 是什么意思？" and records[1].passages
