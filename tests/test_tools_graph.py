"""Tool calls through the whole graph (offline brain): the answer shows the computation, cites the
passages its operands came from, and the trace names the tool."""

from __future__ import annotations

import pytest

from core.chunks import Chunk
from graph.builder import build_graph
from graph.run import ask
from ingestion.indexing import index_chunks
from nodes.context import AgentContext
from providers.brain import offline_brain
from retrievers.factory import build_retrievers
from retrievers.index import open_index

DOCS = [
    (
        "harvard-en",
        "Harvard University",
        "Harvard University was founded in 1636 in Cambridge, Massachusetts.",
    ),
    ("yale-en", "Yale University", "Yale University was established in 1701 in New Haven, Connecticut."),
    ("harvard-zh", "哈佛大学", "哈佛大学创建于1636年，是美国历史最悠久的高等学府。"),
    ("yale-zh", "耶鲁大学", "耶鲁大学成立于1701年，位于康涅狄格州纽黑文。"),
    ("nile-zh", "尼罗河", "尼罗河全长约6650公里，是世界上最长的河流之一。"),
    ("lanterns", "Lanterns", "Paper lanterns are made from bamboo frames and rice paper."),
]


@pytest.fixture
def context(settings, embedder):
    chunks = [
        Chunk(
            id=cid,
            text=text,
            source=f"{cid}.md",
            title=title,
            heading_path=[title],
            language="zh" if cid.endswith("zh") else "en",
        )
        for cid, title, text in DOCS
    ]
    index_chunks(chunks, settings, embedder, index_dir=settings.index_dir, progress=False)
    index = open_index(settings.index_dir)
    yield AgentContext(
        settings=settings, retrievers=build_retrievers(index, settings, embedder), brain=offline_brain()
    )
    index.close()


def generate_decision(result) -> str:
    (entry,) = [e for e in result.trace if e.node == "generate"]
    return f"{entry.decision.value} {entry.detail}".strip()


@pytest.mark.parametrize(
    ("question", "shown", "cited"),
    [
        (
            "How many years after the founding of Harvard was Yale founded?",
            "1701 - 1636 = 65 years",
            {"harvard-en", "yale-en"},
        ),
        ("哈佛大学和耶鲁大学的建校时间相差多少年？", "1701年 - 1636年 = 65 年", {"harvard-zh", "yale-zh"}),
    ],
)
def test_years_between_two_founding_dates(context, question, shown, cited):
    result = ask(build_graph(), question, context=context, mode="hybrid")
    assert shown in result.answer
    assert {c.chunk_id for c in result.citations} == cited
    assert "date_diff: " in generate_decision(result)
    assert all(s.supported for s in result.support)


def test_unit_conversion_in_the_agentic_mode(context):
    result = ask(build_graph(), "尼罗河长多少英里？", context=context)
    assert "计算：6650 公里 = 4132.12 英里[1]" in result.answer
    assert [c.chunk_id for c in result.citations] == ["nile-zh"]
    assert "unit_convert" in generate_decision(result)


def test_questions_without_computation_keep_the_extractive_answer(context):
    result = ask(build_graph(), "When was Yale University established?", context=context, mode="hybrid")
    assert "1701" in result.answer and "Computed" not in result.answer
    assert generate_decision(result) == "answered"
