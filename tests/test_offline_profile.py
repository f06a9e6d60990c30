"""Parse once: the offline analysis carries the question's profile, and the judge and writer read it from
there instead of parsing the question again (issue 20, item 1)."""

from __future__ import annotations

import pytest

from core.chunks import Chunk, ScoredChunk
from core.schemas import Passage, QueryAnalysis, QuestionProfile
from memory.checkpointer import _serializer
from nodes.state import CHECKPOINT_TYPES
from providers.brain.judge import OfflineJudge
from providers.brain.write import OfflineWriter
from providers.offline_brain import profile as profiles
from providers.offline_brain.decompose import decompose
from providers.offline_brain.profile import analyze  # what the offline analyzer role returns

CASES = [
    ("香港第六届立法会选举有多少个议席？", "香港第六届立法会选举共有70个议席。"),
    (
        "How many seats were contested in the 2016 Legislative Council election?",
        "The 2016 election contested 70 seats.",
    ),
]


def chunk(text: str) -> ScoredChunk:
    return ScoredChunk(chunk=Chunk(id="c1", text=text, source="news.md"), score=1.0, ranks={"bm25": 1})


@pytest.mark.parametrize(("question", "evidence"), CASES)
def test_the_analysis_carries_the_profile_built_from_its_own_parse(question, evidence):
    analysis = analyze(question)
    assert isinstance(analysis.profile, QuestionProfile)
    assert analysis.profile.text == question
    assert analysis.profile.parts == analysis.sub_queries
    assert "number" in analysis.profile.kinds


@pytest.mark.parametrize(
    "question",
    [
        "Redis 和 Memcached 的区别是什么？",
        "What were the causes, key battles and consequences of the Crimean War?",
    ],
)
def test_the_profiles_parts_are_the_analysis_sub_queries(question):
    analysis = analyze(question)
    assert analysis.sub_queries and analysis.profile.parts == analysis.sub_queries == decompose(question)


@pytest.mark.parametrize(("question", "evidence"), CASES)
def test_judge_and_writer_read_the_analysis_not_the_text(question, evidence, monkeypatch):
    analysis = analyze(question)

    def no_second_parse(text: str) -> QuestionProfile:
        raise AssertionError(f"parsed again: {text}")

    monkeypatch.setattr(profiles, "profile", no_second_parse)
    verdict = OfflineJudge()(question, analysis, [chunk(evidence)], [])
    assert verdict.is_sufficient
    draft = OfflineWriter()(
        question, [Passage(number=1, chunk_id="c1", source="news.md", text=evidence)], analysis
    )
    assert "70" in draft.answer and "[1]" in draft.answer
    with pytest.raises(AssertionError, match="parsed again"):  # without the analysis the text is parsed
        OfflineWriter()(question, [Passage(number=1, chunk_id="c1", source="news.md", text=evidence)])


def test_a_profile_of_another_question_is_not_used():
    """The judge is also asked about rewritten queries: the analysis's profile is of the question only."""
    analysis = analyze("Redis 的默认端口是多少？")
    assert (
        profiles.profile_for("Memcached 的默认端口是多少？", analysis).text == "Memcached 的默认端口是多少？"
    )
    assert profiles.profile_for("Redis 的默认端口是多少？", analysis) is analysis.profile
    assert (
        profiles.profile_for("Redis 的默认端口是多少？", QueryAnalysis()).text == "Redis 的默认端口是多少？"
    )


def test_the_profile_survives_a_checkpoint():
    analysis = analyze("什么是青石协议？")
    serde = _serializer(CHECKPOINT_TYPES)
    loaded = serde.loads_typed(serde.dumps_typed(analysis))
    assert loaded == analysis and loaded.profile.defined_term == "青石协议"


@pytest.mark.parametrize(
    ("question", "terms", "not_terms"),
    [
        ("草地網球是哪一種運動的祖先？", {"草地", "网球", "运动", "祖先"}, {"哪", "一种"}),
        ("哪种数据库支持向量检索？", {"数据库", "支持", "向量", "检索"}, {"哪", "哪种"}),
        ("Which sport is lawn tennis the ancestor of?", {"sport", "lawn", "tenni", "ancestor"}, {"which"}),
    ],
)
def test_the_question_word_is_no_key_term(question, terms, not_terms):
    """ "哪一種" is tokenised as 哪 + 一种: a passage never states them as content, so they must not
    weigh in coverage (three DRCD answers were refused for it)."""
    found = set(analyze(question).profile.terms)
    assert terms <= found and not (not_terms & found), found
