"""What the offline writer reads as a fact, third round of issue 8 item 3 (zh and en side by side).

News snippets carry page dates, clock times, headlines and possessives around the fact asked for;
each of these used to be read as a fact of the asked kind and then outvote the real one. The writer
gets the real multilingual embedder the index uses (``embedder`` fixture).
"""

from __future__ import annotations

import pytest

from core.schemas import Passage
from providers.brain import offline_brain
from providers.offline_brain.facts import facts, wanted


@pytest.fixture(scope="module")
def brain(embedder):
    return offline_brain(embedder=embedder)


def snippets(texts: list[str]) -> list[Passage]:
    return [
        Passage(number=n, chunk_id=f"c{n}", source=f"news/{n}", heading="", text=text)
        for n, text in enumerate(texts, start=1)
    ]


def answer(brain, question: str, texts: list[str]) -> str:
    from providers.offline_brain.answer import extractive_answer

    return extractive_answer(question, snippets(texts), meaning=brain.write.meaning).answer


# ---- numbers: a part of a date or a time is not an amount ----------------------------------------


@pytest.mark.parametrize(
    ("sentence", "question", "expected"),
    [
        # a page date and a clock time state no amount; the stock move does
        (
            "Kestrel Q3 2029 Earnings Call Oct 23, 2029, 6:30 p.m. ET (KST 4.20%).",
            "What was Kestrel's revenue?",
            {"4.20%"},
        ),
        (
            "23, 2029 (NEWSWIRE) -- Kestrel posted revenue of $6.3 billion.",
            "What was Kestrel's revenue?",
            {"6.3billion"},
        ),
        # "2028年10月" is a date: neither 1 nor 202 are read off it (the digit run is not cut)
        ("2028年10月的报告下调了2029年和2030年的增长预测。", "2029年经济增长了多少？", set()),
        ("预计2029年增长6.2%，高于2028年11月14日的预测。", "2029年经济增长了多少？", {"6.2%"}),
    ],
)
def test_parts_of_dates_and_clock_times_are_not_amounts(sentence, question, expected):
    assert set(facts(sentence, "number", question)) == expected


# ---- names: what a capital letter or a tagger marks is not always a name ---------------------------


@pytest.mark.parametrize(
    ("sentence", "question", "expected"),
    [
        # a sentence's first word is capitalised whatever it is
        ("View maps and results of the 2030 Norland election.", "Who won the 2030 Norland election?", set()),
        ("Results of the vote in each state, with Mara Kell ahead.", "Who won the vote?", {"mara kell"}),
        # the possessor and a ranking glued to the name are not part of it; a weekday is no name
        ("Slovenia's Mara Kell took the yellow jersey.", "Who won the Tour of Norland?", {"mara kell"}),
        (
            "World No1 Ada Barton beat Lena Marsh on Saturday.",
            "Who won the Lakeside Open?",
            {"ada barton", "lena marsh"},
        ),
        # a Chinese name holding a word of the question spells out the question's subject
        ("他指出，澳门特别行政区第九任行政长官选举依法进行。", "澳门第九任行政长官？", set()),
        ("现年52岁的贺立群当选澳门特区第九任行政长官。", "澳门第九任行政长官？", {"贺立群"}),
    ],
)
def test_names_leave_out_first_words_possessors_and_the_questions_subject(sentence, question, expected):
    assert set(facts(sentence, "name", question)) == expected


@pytest.mark.parametrize(
    ("question", "kinds"),
    [
        ("西川第三任市长？", {"name"}),
        ("马洛银行2033年行长", {"name"}),
        ("Marlow Bank chief executive 2033", {"name"}),
        ("year-end No 1 in women's tennis in 2031", {"name"}),
        # a role with another cue asks for that: when, not who
        ("西川第三任市长何时就职？", {"date"}),
        ("When did the new coach of the Harbor Hawks start?", {"date"}),
    ],
)
def test_a_question_naming_a_role_and_nothing_else_asks_who_holds_it(question, kinds):
    assert wanted(question) == kinds


# ---- the writer ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("question", "texts", "truth"),
    [
        (
            "Who won the 2031 Tour of Norland?",
            [
                "Ivo Brant (Team Vela) sprinted to victory in the final stage of the 2031 Tour of Norland.",
                "Slovenia's Mara Kell (Team Orca) took the yellow jersey as overall winner of the 2031 Tour of Norland.",
                "After 21 stages, Mara Kell stood atop the podium as the 2031 Tour of Norland champion.",
            ],
            "Mara Kell",
        ),
        (
            "澳门第九任行政长官？",
            [
                "他指出，澳门特别行政区第九任行政长官选举依法进行，符合澳门特别行政区基本法的规定。",
                "一、2044年澳门特别行政区第九任行政长官的选举，不实行由普选产生的办法。",
                "现年52岁的贺立群获得412张选票，当选澳门特区第九任行政长官。",
            ],
            "贺立群",
        ),
    ],
)
def test_the_answer_names_who_the_evidence_says_not_the_topic(brain, question, texts, truth):
    assert truth in answer(brain, question, texts)


def test_a_title_inside_the_question_is_not_a_part_to_answer_alone(brain):
    """The title "The Last of Them Part III" reads as a bridge hop to the question splitter; asked for a date, the
    writer does not answer the title alone (with a sentence that has no date). Chinese questions do not
    split this way (the splitter's bridge hops name a role there: "《玻璃果园》导演"), so the rule has
    no Chinese case."""
    text = answer(
        brain,
        "What is the release date of The Last of Them Part III?",
        [
            "The Last of Them Part III features both Rook and Vela, so we would expect the return of the "
            "original voice cast, the composer Ada Reyes and most of the studio's longtime writers ...",
            "Following some delays, The Last of Them Part III was released on May 8, 2029, for consoles.",
            "The Last of Them Part III (PS6)",
        ],
    )
    assert "May 8, 2029" in text
    assert "PS6" not in text and "Rook and Vela" not in text  # lines that only name the title: not answers


@pytest.mark.parametrize(
    ("question", "texts", "worded"),
    [
        # the same date with the year (the day) the best sentence leaves out
        (
            "天舟九号发射时间？",
            [
                "11月24日4时30分，天舟九号在文昌发射场发射升空，天舟九号发射时间创下同类任务最早纪录，这是我国"
                "航天发射的又一里程碑，来自全国各地的数千名游客在海边观看了这次发射，现场响起了热烈的掌声和欢呼声。",
                "天舟九号于2031年11月24日凌晨发射升空，随后完成交会对接。",
            ],
            "2031年11月24日",
        ),
        (
            "When was the Kestrel X5 phone launched?",
            [
                "The Kestrel X5 phone was launched in April 2029 at a press event in Oslo, where the maker "
                "showed the Kestrel X5 phone's camera, screen and battery to hundreds of reporters and fans "
                "from across Europe and Asia.",
                "The Kestrel X5 was launched on April 14, 2029, at $699.",
            ],
            "April 14, 2029",
        ),
        # the same date as the reader's language writes it, not a data sheet's ISO form
        (
            "星河X5手机什么时候上市？",
            [
                "《星河X5手机》上市时间：2029-04-14（中国大陆） 基本信息：星河X5手机是星河公司的第五代旗舰手机，"
                "由星河研究院设计，星河X5手机什么时候上市一直备受关注，此前多家媒体报道称该机将配备全新的影像系统"
                "和更大容量的电池，并支持卫星通信功能。",
                "据悉，星河X5将于2029年4月14日在全国上市，售价3999元。",
            ],
            "2029年4月14日",
        ),
        (
            "When did the Kestrel X5 phone go on sale?",
            [
                "Kestrel X5 phone on sale date: 2029-04-14 (US), maker: Kestrel Mobile, price: $699, colours: "
                "three, sizes: two, storage: 128 GB or 256 GB, and the Kestrel X5 Pro followed a week later in "
                "shops across Europe and Asia.",
                "The Kestrel X5 went on sale on April 14, 2029, in the US.",
            ],
            "April 14, 2029",
        ),
    ],
)
def test_the_date_is_quoted_where_the_evidence_words_it_fully_for_the_reader(brain, question, texts, worded):
    assert worded in answer(brain, question, texts)


# ---- where near copies disagree on the asked fact, that slot is the answer ------------------------


@pytest.mark.parametrize(
    "question, texts, versions",
    [
        (
            "Who won the 2031 Velmar presidential election?",
            [
                "The 2031 Velmar presidential election was the ninth presidential election held under the"
                " Electoral Code, on Sunday, May 4, 2031, and the winner was announced by the Central"
                " Election Commission.",
                "View maps and live results of the 2031 Velmar presidential election. For more information ..."
                " Anna Kovac is sworn in as the tenth President of Velmar after the vote.",
                "View maps and live results of the 2031 Velmar presidential election. For more information ..."
                " Peter Hale is sworn in as the tenth President of Velmar after the vote.",
                "The 2031 Velmar elections were held on Sunday, May 4, 2031, with a turnout of 61 percent.",
            ],
            ("Anna Kovac", "Peter Hale"),
        ),
        (
            "2031年维尔马总统选举谁获胜？",
            [
                "2031年维尔马总统选举是维尔马第九次总统选举，于2031年5月4日星期日举行。",
                "查看2031年维尔马总统选举的实时结果。更多信息…… 安娜·科瓦奇赢得选举，成为维尔马第十任总统。",
                "查看2031年维尔马总统选举的实时结果。更多信息…… 彼得·黑尔赢得选举，成为维尔马第十任总统。",
                "2031年维尔马大选于2031年5月4日举行，投票率为61%。",
            ],
            ("安娜·科瓦奇", "彼得·黑尔"),
        ),
    ],
)
def test_a_fact_near_copies_disagree_on_leads_the_answer_and_both_versions_are_given(
    brain, question, texts, versions
):
    """A background sentence on the event settles nothing; the copies that disagree on who won are
    what the question asks about, so the answer opens with one version and names the other."""
    text = answer(brain, question, texts)
    first = text.split("[", 1)[0]
    assert any(v in first for v in versions), text
    assert all(v in text for v in versions), text
    assert "Another source says" in text or "另有资料作" in text


# ---- a sentence that refers back comes with the sentence it refers to ------------------------------


@pytest.mark.parametrize(
    "sentence, refers",
    [
        ("因此，大桥于2020年封闭维修。", True),
        ("在此背景下，各方决定重新谈判。", True),
        ("这些规则后来成为章程的基础。", True),
        ("他曾担任县长。", True),
        ("大桥于2020年封闭维修。", False),
        ("As a result, the bridge was closed for repairs in 2020.", True),
        ("Against this background, the brokers wrote their own rules.", True),
        ("He served as mayor of Greenhill.", True),
        ("The bridge was closed for repairs in 2020.", False),
        ("Thesis defences are held in May.", False),
    ],
)
def test_what_counts_as_a_sentence_that_refers_back(sentence, refers):
    from providers.offline_brain.answer import refers_back

    assert refers_back(sentence) is refers


@pytest.mark.parametrize(
    "question, texts, reason, follower",
    [
        (
            "为什么大桥在2020年封闭？",
            [
                "2019年的检查发现大桥的主缆严重锈蚀。因此，大桥于2020年封闭维修。维修工程预计耗资两亿元。",
                "大桥全长一千二百米，连接南北两岸。",
            ],
            "主缆严重锈蚀",
            "因此",
        ),
        (
            "Why was the bridge closed in 2020?",
            [
                "A 2019 inspection found severe rust on the bridge's main cables. As a result, the bridge was"
                " closed for repairs in 2020. The work is expected to cost 200 million dollars.",
                "The bridge is 1,200 metres long and links the two banks.",
            ],
            "severe rust",
            "As a result",
        ),
    ],
)
def test_an_answer_that_opens_with_so_brings_the_sentence_it_follows_from(
    brain, question, texts, reason, follower
):
    text = answer(brain, question, texts)
    assert reason in text and follower in text, text
    assert text.index(reason) < text.index(follower), text  # in the passage's order, as the reader needs it


# ---- "什么是X / What is X": the sentence that says what X is ---------------------------------------


@pytest.mark.parametrize(
    "question, term",
    [
        ("什么是梅岭协定？", "梅岭协定"),
        ("梅岭协定是什么？", "梅岭协定"),
        ("灯会是什么节日？", "灯会"),
        ("What is the Maple Ridge Pact?", "Maple Ridge Pact"),
        ("What does double booking mean?", "double booking"),
        ("梅岭协定是哪一年签订的？", None),
        ("Who signed the Maple Ridge Pact?", None),
    ],
)
def test_a_definition_question_names_the_term_it_asks_about(question, term):
    from providers.offline_brain.facts import defined_term

    assert defined_term(question) == term


@pytest.mark.parametrize(
    "sentence, term, says_what",
    [
        ("梅岭协定（Maple Ridge Pact），是两镇于1820年订立的边界协议。", "梅岭协定", True),
        ("三角关系，亦称三角恋，是指三个人之间的情感纠葛。", "三角关系", True),
        ("梅岭协定的签订结束了两镇的争端。", "梅岭协定", False),
        (
            "The Maple Ridge Pact is a border agreement the two towns signed in 1820.",
            "Maple Ridge Pact",
            True,
        ),
        ("The Maple Ridge Pact ended the dispute between the towns.", "Maple Ridge Pact", False),
        ("The Maple Ridge Pact is seen as the start of self-rule.", "Maple Ridge Pact", False),
    ],
)
def test_the_defining_sentence_opens_with_the_term_and_a_copula(sentence, term, says_what):
    from providers.offline_brain.facts import defines

    assert defines(sentence, term) is says_what


@pytest.mark.parametrize(
    "question, texts, definition",
    [
        (
            "什么是九节兰？",
            [
                "九节兰的花期在三月，九节兰的根可以入药，当地人常在春季采摘九节兰。",
                "九节兰是生长在北部林地的一种多年生草本植物，高约四十厘米。",
            ],
            "生长在北部林地的一种多年生草本植物",
        ),
        (
            "What is the Maple Ridge Pact?",
            [
                "The Maple Ridge Pact ended the dispute between the towns; the Maple Ridge Pact is seen as the"
                " start of self-rule, and the Maple Ridge Pact original is kept in the county archive.",
                "The Maple Ridge Pact is a border agreement the two towns signed in 1820, with twelve articles.",
            ],
            "a border agreement the two towns signed in 1820",
        ),
    ],
)
def test_what_is_x_is_answered_by_the_sentence_that_says_what_x_is(brain, question, texts, definition):
    assert definition in answer(brain, question, texts)
