"""Off-topic evidence ends the loop after one search: real index, real e5 reranker, offline judge.

A question the corpus cannot answer used to be rewritten and searched again, paying a second rerank
and judgement for the same "not found"; when the judge finds no match by terms or meaning and e5's
best cosine is far from the question, the agent now answers from its one search. Questions the
corpus answers keep their course, including a Chinese question over the English passages that answer
it, which e5 alone would call far (cross-language cosines are low) but the judge matches by meaning.
"""

from __future__ import annotations

import dataclasses

import pytest

from core.chunks import Chunk
from core.schemas import QueryAnalysis
from graph.builder import build_graph
from graph.run import ask
from nodes.context import AgentContext
from nodes.policy import E5_OFF_TOPIC, off_topic
from providers.brain import offline_brain
from providers.offline_brain.judge import evaluate as judge
from providers.rerankers import make_reranker

# An English corpus about one subject; questions about another, in English and in Chinese (the shape
# of a corpus asked about what it does not hold, e.g. bench/e2e.py's corpus A).
SPACE = [
    (
        "hubble",
        "Hubble Space Telescope",
        "The Hubble Space Telescope was launched into low Earth orbit in 1990 aboard the Space Shuttle Discovery.",
    ),
    (
        "jwst",
        "James Webb Space Telescope",
        "The James Webb Space Telescope observes in the infrared and orbits the Sun near the second Lagrange point.",
    ),
    (
        "mars",
        "Mars",
        "Mars is the fourth planet from the Sun; its red colour comes from iron oxide dust on its surface.",
    ),
    (
        "jupiter",
        "Jupiter",
        "Jupiter is the largest planet of the Solar System, a gas giant with a Great Red Spot storm.",
    ),
    ("moon", "Apollo 11", "Apollo 11 landed the first two people on the Moon in July 1969."),
    (
        "comet",
        "Halley's Comet",
        "Halley's Comet is visible from Earth every 75 to 79 years; it last appeared in 1986.",
    ),
    (
        "iss",
        "International Space Station",
        "The International Space Station has been continuously occupied since November 2000.",
    ),
    (
        "pluto",
        "Pluto",
        "Pluto was reclassified as a dwarf planet by the International Astronomical Union in 2006.",
    ),
]
UNANSWERABLE = [
    ("What is the population of the capital of Mongolia?", "cannot be determined"),
    ("蒙古国首都的人口是多少？", "根据现有资料无法确定"),
]
ANSWERABLE = ["When was the Hubble Space Telescope launched?", "哈勃太空望远镜是哪一年发射的？"]


@pytest.fixture(scope="module")
def space_context(tmp_path_factory, embedder):
    """A real local index of the English passages, with the e5 reranker and the offline brain."""
    from config import load_settings
    from ingestion.indexing import index_chunks
    from retrievers.factory import build_retrievers
    from retrievers.store import open_store

    folder = tmp_path_factory.mktemp("space")
    settings = load_settings(index_dir=folder / "index", embedder="use-multilingual", reranker="none")
    chunks = [
        Chunk(id=cid, text=text, source=f"space/{cid}.md", title=title, heading_path=[title], language="en")
        for cid, title, text in SPACE
    ]
    index_chunks(chunks, settings, embedder, index_dir=settings.index_dir, progress=False)
    index = open_store(settings)
    yield AgentContext(
        settings=settings,
        retrievers=build_retrievers(index, settings, embedder),
        brain=offline_brain(embedder=embedder),
        reranker=make_reranker("e5", cache_dir=folder / "cache"),
    )
    index.close()


def nodes_of(result) -> list[str]:
    return [event.node for event in result.trace]


def first_evidence(context: AgentContext, question: str):
    """What the first evaluation sees: the reranked top 10 and the offline judge's verdict on it."""
    hits = context.retrievers.hybrid.search(question, context.settings.candidate_k)
    chunks = context.reranker.rerank(question, hits)[: context.settings.top_k]
    return chunks, judge(question, QueryAnalysis(), chunks, [], meaning=context.brain.judge.judge.meaning)


@pytest.mark.parametrize(("question", "phrase"), UNANSWERABLE)
def test_a_question_the_corpus_cannot_answer_is_searched_once(space_context, question, phrase):
    result = ask(build_graph(), question, context=space_context)
    assert result.stop_reason == "off_topic"
    assert nodes_of(result).count("rerank") == 1 and "rewrite_query" not in nodes_of(result)
    assert result.insufficient and phrase in result.answer  # still said plainly


@pytest.mark.parametrize(("question", "_"), UNANSWERABLE)
def test_off_topic_means_no_match_by_terms_or_meaning_and_a_far_e5_score(space_context, question, _):
    chunks, evaluation = first_evidence(space_context, question)
    assert evaluation.matched is False
    assert max(c.e5_cosine for c in chunks if c.e5_cosine is not None) < E5_OFF_TOPIC
    assert off_topic(evaluation, chunks)


@pytest.mark.parametrize(("question", "phrase"), UNANSWERABLE)
def test_without_e5_scores_the_same_question_keeps_its_retry(space_context, question, phrase):
    """No reranker (or the lexical one) leaves no e5 cosine: two signals are not enough to stop."""
    result = ask(build_graph(), question, context=dataclasses.replace(space_context, reranker=None))
    assert result.stop_reason in ("no_progress", "max_retries")
    assert "rewrite_query" in nodes_of(result)


@pytest.mark.parametrize("question", ANSWERABLE)
def test_a_question_the_corpus_answers_is_never_off_topic(space_context, question):
    result = ask(build_graph(), question, context=space_context)
    assert result.stop_reason == "sufficient" and not result.insufficient
    chunks, evaluation = first_evidence(space_context, question)
    assert evaluation.matched and not off_topic(evaluation, chunks)


def test_a_chinese_question_over_english_answers_is_far_by_e5_yet_matched_by_meaning(space_context):
    """Why e5 alone must never stop the loop: across languages its cosines are low even for the answer."""
    chunks, evaluation = first_evidence(space_context, ANSWERABLE[1])
    assert chunks[0].id == "hubble"
    assert max(c.e5_cosine for c in chunks if c.e5_cosine is not None) < E5_OFF_TOPIC
    assert evaluation.matched and not off_topic(evaluation, chunks)
