"""The offline brain's tool use: computations over values found in the passages, shown and cited, and
checked again by the support checker. Hand-written zh/en cases."""

from __future__ import annotations

import pytest

from core.schemas import Passage
from providers.offline_brain.compute import computation_intent, computed_answer, plan_computation
from providers.offline_brain.support import check_answer_support


def P(number: int, text: str) -> Passage:
    return Passage(number=number, chunk_id=f"c{number}", source=f"s{number}.md", text=text)


UNIVERSITIES_ZH = [
    P(1, "哈佛大学创建于1636年，是美国最古老的高等学府。"),
    P(2, "耶鲁大学成立于1701年，位于康涅狄格州纽黑文。"),
    P(3, "普林斯顿大学的校园以哥特式建筑闻名。"),
]
UNIVERSITIES_EN = [
    P(1, "Harvard University was founded in 1636 in Cambridge, Massachusetts."),
    P(2, "Princeton's campus is known for its Gothic buildings."),
    P(3, "Yale University was established in 1701 in New Haven."),
]


@pytest.mark.parametrize(
    ("question", "intent"),
    [
        ("哈佛大学和耶鲁大学的建校时间相差多少年？", "years"),
        ("How many years after Harvard was Yale founded?", "years"),
        ("爱因斯坦发表狭义相对论时几岁？", "years"),
        ("从2019年3月5日到2019年3月15日相隔多少天？", "days"),
        ("尼罗河长多少英里？", "convert"),
        ("How many miles long is the Nile?", "convert"),
        ("What is (1200 - 950) / 950 * 100?", "arithmetic"),
        ("哈佛大学创建于哪一年？", None),
        ("Who founded Yale University?", None),
    ],
)
def test_intent_of_the_question(question: str, intent: str | None) -> None:
    assert computation_intent(question) == intent


def test_years_between_two_events_zh() -> None:
    question = "哈佛大学和耶鲁大学的建校时间相差多少年？"
    computation = plan_computation(question, UNIVERSITIES_ZH)
    assert computation is not None and computation.result.value == 65
    assert computation.cited == [1, 2]
    answer = computed_answer(question, computation).answer
    assert answer == (
        "根据资料：哈佛大学创建于1636年，是美国最古老的高等学府[1]。耶鲁大学成立于1701年，位于康涅狄格州纽黑文[2]。"
        "计算：1701年 - 1636年 = 65 年[1][2]。"
    )
    assert all(s.supported for s in check_answer_support(answer, UNIVERSITIES_ZH))


def test_years_between_two_events_en_cites_the_operand_passages() -> None:
    question = "How many years after the founding of Harvard was Yale founded?"
    computation = plan_computation(question, UNIVERSITIES_EN)
    assert computation is not None and computation.result.shown == "1701 - 1636 = 65 years"
    answer = computed_answer(question, computation).answer
    assert answer.endswith("Computed: 1701 - 1636 = 65 years[1][3].")
    assert all(s.supported for s in check_answer_support(answer, UNIVERSITIES_EN))


def test_age_at_an_event_uses_the_birth_date() -> None:
    passages = [
        P(1, "Einstein published special relativity in 1905."),
        P(2, "Albert Einstein was born on 14 March 1879 in Ulm."),
    ]
    computation = plan_computation("How old was Einstein when he published special relativity?", passages)
    assert computation is not None and computation.result.value == 26
    zh = [P(1, "鲁迅生于1881年9月25日。"), P(2, "1918年，鲁迅发表了《狂人日记》。")]
    computation = plan_computation("鲁迅发表《狂人日记》时多少岁？", zh)
    assert computation is not None and computation.result.value == 37


def test_days_between_dates_named_in_the_question() -> None:
    computation = plan_computation("从2019年3月5日到2019年3月15日相隔多少天？", [])
    assert computation is not None and computation.result.value == 10
    assert computed_answer("从2019年3月5日到2019年3月15日相隔多少天？", computation).answer == (
        "计算：2019年3月15日 - 2019年3月5日 = 10 天。"
    )


def test_unit_conversion_of_a_quantity_in_the_passages() -> None:
    zh = [P(1, "长江全长约6300公里。"), P(2, "尼罗河全长约6650公里，注入地中海。")]
    computation = plan_computation("尼罗河长多少英里？", zh)
    assert computation is not None and computation.operands[0].passage == 2
    assert computation.result.shown == "6650 公里 = 4132.12 英里"
    en = [P(1, "The Nile is about 6,650 km long and flows into the Mediterranean.")]
    answer = computed_answer(
        "How many miles long is the Nile?", plan_computation("How many miles long is the Nile?", en)
    )
    assert answer.answer.endswith("Computed: 6650 km = 4132.12 miles[1].")
    assert all(s.supported for s in check_answer_support(answer.answer, en))
    # already in the unit asked for: nothing to compute, the extractive answer quotes it
    assert plan_computation("How many km long is the Nile?", en) is None


def test_no_computation_without_operands_for_both_events() -> None:
    only_harvard = [UNIVERSITIES_EN[0], UNIVERSITIES_EN[1]]
    assert plan_computation("How many years after Harvard was Yale founded?", only_harvard) is None
    assert plan_computation("哈佛大学和耶鲁大学的建校时间相差多少年？", UNIVERSITIES_ZH[2:]) is None


def test_support_checker_rejects_a_wrong_or_unsourced_computation() -> None:
    wrong = check_answer_support("计算：1701年 - 1636年 = 66 年[1][2]。", UNIVERSITIES_ZH)
    unsourced = check_answer_support("Computed: 1702 - 1636 = 66 years[1][3].", UNIVERSITIES_EN)
    assert not wrong[0].supported and not unsourced[0].supported
    assert check_answer_support("Computed: (1200 - 950) / 950 * 100 = 26.3158.", [])[0].supported


@pytest.mark.parametrize(
    "question",
    [
        "What is the role of signaling in gene expression?",  # "in g..." is no unit
        "Which proteins are active in G1 phase?",
        "What happened between 1945-1949 in the region?",  # a range, not a subtraction
        "1/3 的居民住在哪里？",  # a fraction, not a division to do
    ],
)
def test_ranges_fractions_and_words_are_not_computations(question: str) -> None:
    assert computation_intent(question) is None


def test_arithmetic_needs_a_request_to_compute() -> None:
    assert computation_intent("计算 (12 + 8) × 3 等于多少？") == "arithmetic"
    assert plan_computation("计算 (12 + 8) × 3 等于多少？", []).result.value == 60


def test_a_stated_age_or_quantity_in_the_asked_unit_is_quoted_not_computed() -> None:
    zh = [P(1, "张三生于1961年10月15日。"), P(2, "张三12岁开始学画，1992年4月1日出版第一本漫画。")]
    assert plan_computation("张三多少岁开始学画？", zh) is None
    en = [P(1, "The Quillon Bridge is 2 km long; its towers stand 1 m apart from the road.")]
    assert plan_computation("How many km long is the Quillon Bridge?", en) is None
