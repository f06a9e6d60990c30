"""Whole-document and collection questions (issue 26): the summary tree written at ingest, the
question signal, and the ``global`` route through the graph, in Chinese and English."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from core.chunks import Filters
from core.global_intent import global_scope, global_score, is_global
from graph.builder import build_graph
from graph.run import ask
from retrievers.levels import DOCUMENT, SECTION, at_level

SET = Path(__file__).parent / "data" / "global_questions.jsonl"

EN_REPORT = """# Harbour Safety Report 2023

## Incidents

The harbour recorded twelve incidents in 2023, most of them minor collisions at the north quay.
Night shifts saw twice as many incidents as day shifts. Fog was a factor in four of the collisions.

Two incidents involved injuries to dock workers. Both happened during container loading at night.

## Causes

Investigators found that worn fender boards caused most of the collisions at the north quay.
Radio discipline was poor on night shifts, and pilots missed two fog warnings.

## Recommendations

The report recommends replacing all fender boards at the north quay before winter.
It also recommends a second radio operator on night shifts and automatic fog alerts for pilots.
"""
ZH_REPORT = """# 山城图书馆年度报告

## 借阅情况

本年度图书馆共借出图书十二万册，比去年增长百分之十五。少儿读物的借阅量增长最快。
周末的借阅量约为工作日的两倍。

## 存在问题

阅览室座位不足，周末经常排队。部分老旧图书破损严重，需要修补或更换。

## 主要结论

报告认为图书馆需要扩建阅览室，并增加少儿读物的采购经费。
报告还建议延长周末的开放时间，并开展图书修补志愿活动。
"""
OTHER = """# Garden Club Newsletter

## Spring planting

Members planted three hundred tulip bulbs along the river path in March.

## Summer fair

The summer fair raised money for new watering cans and a greenhouse heater.

## Autumn talks

A beekeeper from the valley spoke about keeping hives through a wet autumn.
"""


def _rows():
    return [json.loads(line) for line in SET.read_text(encoding="utf-8").splitlines() if line.strip()]


def test_the_signal_separates_whole_document_questions_on_the_held_out_half():
    held = _rows()[1::2]  # the weights were fitted on the even lines
    right = sum(is_global(r["q"]) == r["global"] for r in held)
    assert right / len(held) >= 0.9


@pytest.mark.parametrize(
    ("question", "expected", "scope"),
    [
        ("总结这份报告的主要结论", True, "document"),
        ("What are the main topics of these docs?", True, "collection"),
        ("这些文档主要讲什么", True, "collection"),
        ("Summarise the harbour safety report.", True, "document"),
        ("总结会议在哪里举行？", False, None),
        ("What does the summary_tree setting do?", False, None),
        ("How many incidents involved injuries?", False, None),
    ],
)
def test_the_signal_is_a_score_over_cues_not_one_word(question, expected, scope):
    assert is_global(question) is expected, global_score(question)
    if scope:
        assert global_scope(question) == scope


@pytest.fixture
def report_index(tmp_path, settings, embedder):
    from ingestion.pipeline import ingest_paths

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "harbour.md").write_text(EN_REPORT, encoding="utf-8")
    (docs / "library.md").write_text(ZH_REPORT, encoding="utf-8")
    (docs / "garden.md").write_text(OTHER, encoding="utf-8")
    settings = settings.model_copy(update={"chunk_size": 200, "chunk_overlap": 0, "summary_tree": True})
    ingest_paths([docs], settings, embedder, progress=False)
    return docs, settings


@pytest.fixture
def agent(report_index, embedder):
    """The offline agent's context over the report index."""
    from nodes.context import AgentContext
    from providers.brain import offline_brain
    from retrievers.factory import build_retrievers

    _, settings = report_index
    store = _store(settings)
    yield AgentContext(
        settings=settings,
        retrievers=build_retrievers(store, settings, embedder),
        brain=offline_brain(embedder=embedder),
        reranker=None,
    )
    store.close()


def _store(settings):
    from retrievers.store import open_store

    return open_store(settings)


def test_ingest_writes_section_and_document_summaries_marked_with_their_level(report_index):
    _, settings = report_index
    store = _store(settings)
    try:
        chunks = list(store.iter_chunks())
        levels = {(c.source.rsplit("/", 1)[-1], c.metadata.get("level")) for c in chunks}
        for name in ("harbour.md", "library.md"):
            assert (name, SECTION) in levels and (name, DOCUMENT) in levels
        harbour = [
            c for c in chunks if c.source.endswith("harbour.md") and c.metadata.get("level") == SECTION
        ]
        assert {c.heading_path[-1] for c in harbour} == {"Incidents", "Causes", "Recommendations"}
        passages = " ".join(
            c.text for c in chunks if c.source.endswith("harbour.md") and not c.metadata.get("level")
        )
        for summary in harbour:  # extractive: every summary sentence is the document's own
            assert all(
                sentence.strip() in passages for sentence in summary.text.split(". ") if sentence.strip()
            )
    finally:
        store.close()


@pytest.mark.parametrize("question", ["What did the harbour report recommend?", "图书馆报告的主要结论是什么"])
def test_ordinary_searches_never_return_summary_chunks(report_index, question, embedder):
    from retrievers.factory import build_retrievers

    _, settings = report_index
    store = _store(settings)
    try:
        retrievers = build_retrievers(store, settings, embedder)
        for retriever in (retrievers.vector, retrievers.keyword, retrievers.hybrid):
            assert all(not h.chunk.metadata.get("level") for h in retriever.search(question, 50))
        asked = retrievers.hybrid.search(question, 50, at_level(Filters(), DOCUMENT))
        assert asked and all(h.chunk.metadata["level"] == DOCUMENT for h in asked)
    finally:
        store.close()


def test_an_unchanged_document_keeps_its_summaries_and_a_changed_one_is_resummarised(report_index, embedder):
    from ingestion.pipeline import ingest_paths

    docs, settings = report_index
    store = _store(settings)
    before_source = {c.id: c.source for c in store.iter_chunks() if c.metadata.get("level")}
    before = set(before_source)
    store.close()
    (docs / "garden.md").write_text(
        OTHER.replace("three hundred tulip bulbs", "five hundred daffodils"), encoding="utf-8"
    )
    report = ingest_paths([docs], settings, embedder, progress=False)
    assert len(report.unchanged) == 2 and len(report.updated) == 1
    store = _store(settings)
    try:
        after = {c.id: c for c in store.iter_chunks() if c.metadata.get("level")}
    finally:
        store.close()
    unchanged = {i for i in before if not before_source[i].endswith("garden.md")}
    assert unchanged <= set(after)  # the other documents' summaries are carried over as they were
    garden = [c.text for c in after.values() if c.source.endswith("garden.md")]
    assert any("daffodils" in t for t in garden) and not any("tulip" in t for t in garden)


@pytest.mark.parametrize(
    ("question", "source", "words"),
    [
        ("总结山城图书馆年度报告的主要结论", "library.md", ["扩建阅览室"]),
        ("总结这份报告的主要结论", "library.md", ["扩建阅览室"]),  # names no words of the report at all
        ("Summarise the harbour safety report.", "harbour.md", ["fender boards"]),
    ],
)
def test_a_whole_document_question_takes_the_global_route_and_cites_its_summaries(
    agent, question, source, words
):
    result = ask(build_graph(), question, context=agent, mode="agentic")
    nodes = [e.node for e in result.trace]
    assert "retrieve_global" in nodes and "rewrite_query" not in nodes, result.trace_line()
    judged = next(e for e in result.trace if e.node == "evaluate")
    assert judged.detail == "summaries found"  # the summaries are the evidence, not the judge's word match
    assert result.citations and all(c.source.endswith(source) for c in result.citations)
    assert all(word in result.answer for word in words), result.answer
    assert not result.insufficient
    # the same question in a fixed passage mode stays on passages
    hybrid = ask(build_graph(), question, context=agent, mode="hybrid")
    assert "retrieve_global" not in [e.node for e in hybrid.trace]


def test_a_collection_question_gets_one_summary_per_document(agent):
    for question in ("What are the main topics of these docs?", "这些文档主要讲什么"):
        result = ask(build_graph(), question, context=agent, mode="agentic")
        assert "retrieve_global" in [e.node for e in result.trace], result.trace_line()
        cited = {c.source.rsplit("/", 1)[-1] for c in result.citations}
        assert cited == {"harbour.md", "library.md", "garden.md"}, result.answer


def test_summaries_are_the_evidence_and_passages_alone_are_left_to_the_judge():
    from core.chunks import Chunk, ScoredChunk
    from nodes.retrieve_global import summaries_evaluation

    def hit(cid: str, level: str | None) -> ScoredChunk:
        meta = {"level": level} if level else {}
        return ScoredChunk(chunk=Chunk(id=cid, text="t", source="s.md", metadata=meta), score=1.0)

    verdict = summaries_evaluation([hit("d", DOCUMENT), hit("s", SECTION), hit("p", None)])
    assert verdict is not None and verdict.is_sufficient and verdict.relevant_ids() == ["d", "s"]
    assert summaries_evaluation([hit("p", None)]) is None


def test_a_restricted_documents_summaries_are_restricted_like_it(tmp_path, settings, embedder):
    """A summary is readable by exactly whom its document is: front matter ``access:`` reaches the
    summary chunks, so the global route never shows a restricted report to others (受限文档的摘要同样受限)."""
    from ingestion.pipeline import ingest_paths

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "harbour.md").write_text("---\naccess: [hr]\n---\n" + EN_REPORT, encoding="utf-8")
    (docs / "garden.md").write_text(OTHER, encoding="utf-8")
    settings = settings.model_copy(update={"chunk_size": 200, "chunk_overlap": 0, "summary_tree": True})
    ingest_paths([docs], settings, embedder, progress=False)
    store = _store(settings)
    try:
        summaries = [c for c in store.iter_chunks() if c.metadata.get("level")]
        harbour = [c for c in summaries if c.source.endswith("harbour.md")]
        assert harbour and all(c.metadata.get("access") == ["hr"] for c in harbour)
        assert all(not c.metadata.get("access") for c in summaries if c.source.endswith("garden.md"))
    finally:
        store.close()


def test_passages_are_embedded_in_the_same_batches_whether_the_tree_is_on(report_index, embedder):
    """A batch is padded to its longest text, so a summary in a passage's batch would move the
    passage's vector and flip near-ties of ordinary searches; summaries get batches of their own."""
    from ingestion.pipeline import embed_passages_first

    _, settings = report_index
    store = _store(settings)
    try:
        chunks = list(store.iter_chunks())
    finally:
        store.close()
    batches: list[list[str]] = []

    class Recording:  # the real embedder, with the batches it is given written down
        dim = embedder.dim

        def embed_documents(self, texts):
            batches.append(list(texts))
            return embedder.embed_documents(texts)

    passages = [c for c in chunks if not c.metadata.get("level")]
    assert len(passages) < len(chunks)
    with_tree = embed_passages_first(Recording(), chunks, 4, False)
    seen_with_tree = list(batches)
    batches.clear()
    alone = embed_passages_first(Recording(), passages, 4, False)
    assert seen_with_tree[: len(batches)] == batches  # the passages' batches first, exactly as without
    positions = [i for i, c in enumerate(chunks) if not c.metadata.get("level")]
    assert np.allclose(with_tree[positions], alone)


def test_bm25_statistics_are_the_passages_whatever_else_is_weighted():
    """Summary chunks are weighted with the passages' statistics (document count, frequencies, mean
    length), so a passage scores the same whether summaries sit beside it."""
    from retrievers.bm25 import BM25Index

    passages = [["harbour", "crane", "incident"], ["港口", "起重机", "事故", "事故"], ["garden", "rose"]]
    summaries = [["harbour", "incident", "incident", "crane", "summary"], ["港口", "事故", "总结"]]
    alone = BM25Index.build(passages)
    mixed = BM25Index.build(passages + summaries, counted=[True] * 3 + [False] * 2)
    for query in (["harbour", "incident"], ["事故"], ["rose", "summary"]):
        assert np.allclose(mixed.scores(query)[:3], alone.scores(query))
    assert mixed.scores(["summary"])[3] > 0  # a summary is still found by its own words


def test_turning_the_tree_on_moves_no_passages_keyword_score(report_index, embedder, tmp_path):
    from ingestion.pipeline import ingest_paths
    from retrievers.factory import build_retrievers

    docs, settings = report_index
    plain = settings.model_copy(update={"summary_tree": False, "index_dir": tmp_path / "plain"})
    ingest_paths([docs], plain, embedder, progress=False)
    ranked = {}
    for label, chosen in (("tree", settings), ("plain", plain)):
        store = _store(chosen)
        try:
            keyword = build_retrievers(store, chosen, embedder).keyword
            ranked[label] = [
                [(h.chunk.id, round(h.score, 5)) for h in keyword.search(q, 20)]
                for q in (
                    "What did the harbour report recommend?",
                    "图书馆报告的主要结论是什么",
                    "garden roses",
                )
            ]
        finally:
            store.close()
    assert ranked["tree"] == ranked["plain"] and any(ranked["plain"])
