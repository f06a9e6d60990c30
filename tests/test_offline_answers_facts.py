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
