"""The answer caches inside the graph: a repeated question is answered from the exact cache, a
paraphrase from the semantic cache, each with hit/miss in the trace; other modes miss; a thread keeps
its history on a hit; re-ingesting invalidates; `index stats` shows the counts; the setting turns it off."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from app.wiring import build_context
from config import load_settings
from graph.builder import build_graph
from graph.run import ask
from ingestion.indexing import index_chunks
from main import main
from memory.checkpointer import open_checkpointer
from tests.graph_fixtures import graph_corpus


@pytest.fixture
def env(tmp_path, monkeypatch, embedder):
    settings = load_settings(
        index_dir=tmp_path / "index",
        checkpoint_db=tmp_path / "checkpoints.sqlite",
        embedder="use-multilingual",
        reranker="none",
        brain="offline",
    )
    index_chunks(graph_corpus(), settings, embedder, index_dir=settings.index_dir, progress=False)
    for name in ("index_dir", "checkpoint_db"):
        monkeypatch.setenv(f"AGENTIC_RAG_{name.upper()}", str(getattr(settings, name)))
    monkeypatch.setenv("AGENTIC_RAG_EMBEDDER", "use-multilingual")
    monkeypatch.setenv("AGENTIC_RAG_RERANKER", "none")
    monkeypatch.setenv("AGENTIC_RAG_BRAIN", "offline")
    return settings


def cache_decision(result) -> str:
    (entry,) = [e for e in result.trace if e.node == "lookup_cache"]
    return f"{entry.decision.value} {entry.detail}".strip()


def nodes(result) -> list[str]:
    return [e.node for e in result.trace]


def test_repeated_and_paraphrased_questions_are_answered_from_the_cache(env):
    context = build_context(env)
    app = build_graph()
    first = ask(app, "BM25 和向量检索有什么区别？", context=context)
    assert cache_decision(first) == "cache_miss" and "compress" in nodes(first)
    again = ask(app, "BM25 和向量检索有什么区别", context=context)
    assert cache_decision(again) == "cache_hit exact"
    assert nodes(again) == ["contextualize", "lookup_cache", "verify"]  # no retrieval, no generation
    assert (again.answer, again.citations) == (first.answer, first.citations)
    paraphrase = ask(app, "BM25 与向量检索的区别是什么？", context=context)
    assert cache_decision(paraphrase).startswith("cache_hit semantic")
    assert paraphrase.answer == first.answer
    other_mode = ask(app, "BM25 和向量检索有什么区别？", context=context, mode="keyword")
    assert cache_decision(other_mode) == "cache_miss"
    english = ask(app, "What does error code E-4711 mean?", context=context)
    assert cache_decision(english) == "cache_miss"
    assert cache_decision(ask(app, "what does error code E-4711 mean", context=context)) == "cache_hit exact"
    assert cache_decision(ask(app, "What does error code E-4712 mean?", context=context)) == "cache_miss"
    stats = context.cache.stats()
    assert (stats["hits_exact"], stats["hits_semantic"]) == (2, 1)


def test_a_hit_inside_a_thread_keeps_the_conversation(env):
    context = build_context(env)
    with open_checkpointer(sqlite_path=env.checkpoint_db) as saver:
        app = build_graph(checkpointer=saver)
        ask(app, "What does error code E-4711 mean?", context=context, thread_id="a")
        hit = ask(app, "What does error code E-4711 mean?", context=context, thread_id="b")
        assert cache_decision(hit) == "cache_hit exact"
        messages = app.get_state({"configurable": {"thread_id": "b"}}).values["messages"]
        assert [m.type for m in messages] == ["human", "ai"] and messages[1].content == hit.answer


def test_reingesting_invalidates_and_the_setting_turns_the_cache_off(env, embedder, capsys):
    app = build_graph()
    context = build_context(env)
    ask(app, "What is HNSW?", context=context)
    assert cache_decision(ask(app, "What is HNSW?", context=context)) == "cache_hit exact"
    context.retrievers.index.close()
    index_chunks(graph_corpus()[:-1], env, embedder, index_dir=env.index_dir, progress=False)
    rebuilt = build_context(env)
    assert cache_decision(ask(app, "What is HNSW?", context=rebuilt)) == "cache_miss"
    capsys.readouterr()
    assert main(["index", "stats", "--json"]) == 0
    stats = json.loads(capsys.readouterr().out)["answer_cache"]
    assert stats == {"entries": 1, "hits_exact": 1, "hits_semantic": 0, "misses": 2, "enabled": True}
    off = build_context(env.model_copy(update={"answer_cache": False}))
    result = ask(app, "What is HNSW?", context=off)
    assert off.cache is None and "lookup_cache" not in nodes(result) and "compress" in nodes(result)
