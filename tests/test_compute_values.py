"""Computations over values the passages state (differences, sums, ratios, percentages, averages and
stated ranges), in Chinese and English; each shown computation recomputes and cites its operands.
Cases differ from the frozen measuring set tests/data/compute_questions.jsonl."""

from __future__ import annotations

import pytest

from core.schemas import Passage
from providers.brain.write import OfflineWriter
from providers.offline_brain.compute import computation_intent
from providers.offline_brain.support import check_answer_support


def passages(*texts: str) -> list[Passage]:
    return [Passage(number=n, chunk_id=f"p{n}", source="t", text=t) for n, t in enumerate(texts, start=1)]


def computed(question: str, *texts: str):
    draft = OfflineWriter()(question, passages(*texts))
    return draft, [call["value"] for call in draft.tool_calls]


@pytest.mark.parametrize(
    ("question", "texts", "expected"),
    [
        (
            "How many years did Ruth Okoro chair the board?",
            ["Ruth Okoro chaired the board from 2004 to 2011."],
            7,
        ),
        ("刘洋担任市长多少年？", ["刘洋于1998年至2006年担任市长。"], 8),
        ("这次会议持续了多少天？", ["会议从2024年5月3日持续到2024年5月10日。"], 7),
        (
            "How much longer is the Nile than the Amazon?",
            ["The Nile is 6650 km long.", "The Amazon is 6400 km long."],
            250,
        ),
        ("乙队比甲队少多少分？", ["甲队得了98分。", "乙队得了85分。"], 13),
        (
            "How many goals did the club score in total?",
            ["The club scored 21 goals at home and 17 goals away."],
            38,
        ),
        ("两个工厂一共生产了多少辆汽车？", ["东厂生产了3200辆汽车。", "西厂生产了2800辆汽车。"], 6000),
        (
            "How many times larger is Canada than Peru?",
            ["Canada covers 9.98 million km2.", "Peru covers 1.28 million km2."],
            7.796875,
        ),
        ("C市的人口是D市的几倍？", ["C市人口为900万。", "D市人口为300万。"], 3),
        ("What percentage of the applicants were admitted?", ["Of 400 applicants, 60 were admitted."], 15),
        ("及格的学生占百分之几？", ["全班40名学生中有30名及格。"], 75),
        (
            "What was the average attendance of the three concerts?",
            ["The three concerts drew 1,200, 1,500 and 1,800 people."],
            1500,
        ),
        (
            "四个季度的平均利润是多少？",
            ["第一季度利润为20万元，第二季度为30万元，第三季度为25万元，第四季度为45万元。"],
            30,
        ),
    ],
)
def test_the_computation_the_question_asks_for(question, texts, expected):
    draft, values = computed(question, *texts)
    assert values and values[0] == pytest.approx(expected, rel=1e-6)
    shown = [
        s
        for s in check_answer_support(draft.answer, passages(*texts))
        if "Computed:" in s.sentence or "计算：" in s.sentence
    ]
    assert shown and all(s.supported for s in shown), draft.answer  # recomputes from the cited values


@pytest.mark.parametrize(
    ("question", "texts"),
    [
        # the passage states the asked value itself: quoted, not recomputed
        (
            "What is the average depth of the lake?",
            ["The lake has an average depth of 45 m, and 120 m at most."],
        ),
        ("该省森林覆盖率占多少百分比？", ["该省森林面积为12万平方公里，森林覆盖率为62%。"]),
        # counting events is not a ratio; years are never operands
        ("How many times was Ada Lin elected mayor?", ["Ada Lin was elected mayor in 1992 and in 1996."]),
        # a which-question names a thing; a per-item question lists values
        ("哪个城市的年平均降雨量比北京多100毫米？", ["上海年平均降雨量为1200毫米，北京为600毫米。"]),
        (
            "What is the average salary for each of the two teams?",
            ["Team A earns 50,000 and team B earns 60,000."],
        ),
        # an average the question does not count the parts of is a stated one; 年轻人 is not a duration
        ("多伦多冬季的平均降雪有多少厘米？", ["多伦多冬季各月降雪为23、31和35厘米。"]),
        (
            "What is the average snowfall in Toronto?",
            ["Toronto gets 23, 31 and 35 cm of snow in its winter months."],
        ),
        ("有多少年轻人参加了1968年的游行？", ["约2000名青年在1968年11月参加了游行。"]),
    ],
)
def test_no_computation_where_none_is_asked(question, texts):
    _, values = computed(question, *texts)
    assert values == []


def test_computation_intents_read_the_question_only():
    assert computation_intent("How much taller is A than B?") == "difference"
    assert computation_intent("一共有多少人？") == "sum"
    assert computation_intent("王芳在公司工作了几年？") == "span"  # from a range one sentence states
    assert computation_intent("他上几年级？") is None
    # "mean" the verb asks for no average; "the mean of" does (计算平均值 likewise)
    assert computation_intent("What does error code E-4711 mean?") is None
    assert computation_intent("What is the mean of the three scores?") == "average"
    assert computation_intent("三次成绩的平均值是多少？") == "average"


@pytest.mark.parametrize(
    ("question", "texts", "expected"),
    [
        (
            "张伟担任校长多少年？",
            ["该校校长办公室于1952年至1960年扩建。", "张伟于2008年至2015年担任该校校长。"],
            7,
        ),
        (
            "How many years did Ruth Okoro chair the board?",
            ["The board met from 1990 to 2001.", "Ruth Okoro chaired the board from 2004 to 2011."],
            7,
        ),
    ],
)
def test_a_stated_range_is_read_from_the_sentence_that_best_matches(question, texts, expected):
    """Two sentences state a range; the one sharing more of the question's terms holds the answer."""
    _draft, values = computed(question, *texts)
    assert values == [expected]
