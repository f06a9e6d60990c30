"""Off-topic evidence ends the loop after one search: real index, real e5 reranker, offline judge.

A question the corpus cannot answer used to be rewritten and searched again, paying a second rerank
and judgement for the same "not found"; when the judge finds no match by terms or meaning and e5's
best cosine is far from the question, the agent now answers from its one search. Questions the
corpus answers, and questions whose evidence is close by any one signal, keep their retries.
"""

from __future__ import annotations

import dataclasses

import pytest

from core.schemas import QueryAnalysis
from graph.builder import build_graph
from graph.run import ask
from nodes.policy import E5_OFF_TOPIC, off_topic
from providers.offline_brain.judge import evaluate as judge
from providers.rerankers import make_reranker
from tests.graph_fixtures import make_context

__all__ = ["make_context"]  # the fixture is used by name

UNANSWERABLE = [
    ("What is the population of the capital of Mongolia?", "cannot be determined"),
    ("蒙古国首都的人口是多少？", "根据现有资料无法确定"),
]
ANSWERABLE = ["What does error code E-4711 mean?", "错误码 E-4712 是什么意思？"]


@pytest.fixture(scope="module")
def e5_cache(tmp_path_factory):
    return tmp_path_factory.mktemp("e5cache")


def with_e5(context, cache_dir):
    return dataclasses.replace(context, reranker=make_reranker("e5", cache_dir=cache_dir))


def nodes_of(result) -> list[str]:
    return [event.node for event in result.trace]


@pytest.mark.parametrize(("question", "phrase"), UNANSWERABLE)
def test_a_question_the_corpus_cannot_answer_is_searched_once(make_context, e5_cache, question, phrase):
    result = ask(build_graph(), question, context=with_e5(make_context(), e5_cache))
    assert result.stop_reason == "off_topic"
    assert nodes_of(result).count("rerank") == 1 and "rewrite_query" not in nodes_of(result)
    assert result.insufficient and phrase in result.answer  # still said plainly


@pytest.mark.parametrize(("question", "phrase"), UNANSWERABLE)
def test_without_e5_scores_the_same_question_keeps_its_retry(make_context, question, phrase):
    """The lexical reranker (or none) leaves no e5 cosine: the rule has only two signals, so it stays off."""
    result = ask(build_graph(), question, context=make_context())
    assert result.stop_reason in ("no_progress", "max_retries")
    assert "rewrite_query" in nodes_of(result)


@pytest.mark.parametrize("question", ANSWERABLE)
def test_a_question_the_corpus_answers_is_never_off_topic(make_context, e5_cache, question):
    context = with_e5(make_context(), e5_cache)
    result = ask(build_graph(), question, context=context)
    assert result.stop_reason == "sufficient" and not result.insufficient
    hits = context.retrievers.hybrid.search(question, 30)
    reranked = context.reranker.rerank(question, hits)[:10]
    assert max(c.scores["e5_cosine"] for c in reranked) >= E5_OFF_TOPIC
    evaluation = judge(question, result.analysis, reranked, [], meaning=context.brain.judge.meaning)
    assert evaluation.matched and not off_topic(evaluation, reranked)


@pytest.mark.parametrize(("question", "_"), UNANSWERABLE)
def test_the_judge_reports_no_match_for_evidence_about_something_else(make_context, question, _):
    context = make_context()
    hits = context.retrievers.hybrid.search(question, 10)
    assert judge(question, QueryAnalysis(), hits, [], meaning=context.brain.judge.meaning).matched is False
