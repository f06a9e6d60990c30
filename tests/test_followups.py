"""Follow-up questions become standalone questions that carry the previous turn's topic (offline)."""

from __future__ import annotations

import pytest

from providers.brain import offline_brain


@pytest.mark.parametrize(
    ("previous", "follow_up", "must_contain"),
    [
        ("HNSW 索引在百万级数据上有性能问题吗？", "那个性能问题怎么解决的", ["HNSW", "性能问题"]),
        ("HNSW 索引的性能问题严重吗？", "那个性能问题怎么解决的", ["HNSW 索引的性能问题"]),
        ("BM25 是什么？", "它支持中文吗？", ["BM25", "中文"]),
        ("How does hybrid search work?", "and what about its latency?", ["hybrid search", "latency"]),
        (
            "How long is the return window for physical products?",
            "Does that also apply to digital downloads?",
            ["return window", "digital downloads"],
        ),
    ],
)
def test_follow_ups_carry_the_previous_topic(previous, follow_up, must_contain):
    turns = [("user", previous), ("assistant", "An answer [1].")]
    standalone = offline_brain().contextualise(follow_up, turns)
    for part in must_contain:
        assert part in standalone


@pytest.mark.parametrize("question", ["What is reciprocal rank fusion?", "倒数排名融合是什么？"])
def test_self_contained_questions_are_left_alone(question):
    turns = [("user", "How does BM25 work?"), ("assistant", "It ranks by term statistics [1].")]
    assert offline_brain().contextualise(question, turns) == question
