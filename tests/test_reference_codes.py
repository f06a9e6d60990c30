"""A harmless reference code appended to a question ("… [case 0.1]", "(ticket 5-26)", "（工单 5-26）") names
the asker's ticket, not the topic: the answer is the same as without it; and the semantic answer cache
never serves one question's answer to another that differs in a number, a name or a reference code
(issue 21), Chinese and English side by side."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.cues import without_reference_code
from memory.answer_cache import AnswerCache, signature
from tests.corpus import index_of_files

DOCS = {
    "handbook_en.md": "# Initech handbook\n\nThe holiday allowance at Initech is 25 days per year.\n\n"
    "Initech was founded by Jane Doe in 1998.\n\nThe office in Austin opens at 8 am.\n",
    "handbook_zh.md": "# Initech 员工手册\n\nInitech 的年假为每年 25 天。\n\nInitech 由李娜于 1998 年创立。\n\n"
    "北京办公室早上九点开门。\n",
}


@pytest.mark.parametrize(
    ("asked", "meant"),
    [
        ("When was the brewery commissioned? [case 0.1]", "When was the brewery commissioned?"),
        ("How many holiday days are there? (ticket 5-26)", "How many holiday days are there?"),
        ("年假有多少天？（工单 5-26）", "年假有多少天？"),
        ("年假有多少天？【编号 A-17】", "年假有多少天？"),
        ("What changed in release 3.2?", "What changed in release 3.2?"),  # a version is the topic
        ("What does error (E-4711) mean?", "What does error (E-4711) mean?"),  # not at the end, no label
    ],
)
def test_a_trailing_reference_code_is_not_part_of_the_question(asked, meant):
    assert without_reference_code(asked) == meant


@pytest.fixture(scope="module")
def agent(tmp_path_factory, embedder):
    from app import build_context, build_graph
    from config import load_settings

    folder = index_of_files(tmp_path_factory, embedder, DOCS)
    context = build_context(load_settings(index_dir=folder, answer_cache=False, reranker="lexical"))
    return build_graph(checkpointer=None), context


@pytest.mark.parametrize(
    ("question", "suffix", "fact"),
    [
        ("What is the holiday allowance at Initech?", " [case 0.1]", "25"),
        ("Who founded Initech?", " (ticket 5-26)", "Jane Doe"),
        ("Initech 的年假是多少天？", "（工单 5-26）", "25"),
        ("Initech 是谁创立的？", " [case 0.1]", "李娜"),
    ],
)
def test_an_appended_reference_code_does_not_change_the_answer(agent, question, suffix, fact):
    from graph import ask

    app, context = agent
    plain = ask(app, question, context=context)
    coded = ask(app, question + suffix, context=context)
    assert fact in plain.answer and coded.answer == plain.answer


def open_cache(tmp_path: Path) -> AnswerCache:
    # a low threshold on purpose: only the signature may keep these near-duplicates apart
    return AnswerCache(tmp_path / "answers.sqlite", generation="g1", semantic_threshold=0.6)


@pytest.mark.parametrize(
    ("stored", "paraphrase", "other"),
    [
        ("Who founded Initech?", "Who was the founder of Initech?", "Who founded Initrode?"),
        ("北京办公室几点开门？", "北京办公室什么时候开门？", "上海办公室几点开门？"),
        (
            "How many holiday days does Initech give?",
            "How many days of holiday does Initech give?",
            "How many holiday days does Initech give? (ticket 5-26)",
        ),
        ("Initech 的年假是多少天？", "Initech 年假有多少天？", "Initech 的年假是多少天？[case 0.1]"),
        (
            "What does error E-4711 mean?",
            "What is the meaning of error E-4711?",
            "What does error E-4712 mean?",
        ),
    ],
)
def test_the_semantic_cache_serves_paraphrases_never_other_numbers_names_or_codes(
    tmp_path, embedder, stored, paraphrase, other
):
    cache = open_cache(tmp_path)
    cache.store(stored, "agentic", None, {"answer": stored}, embedder.embed_query(stored))
    hit = cache.lookup(paraphrase, "agentic", None, embedder.embed_query(paraphrase))
    assert hit is not None and hit.payload == {"answer": stored}
    assert signature(other) != signature(stored)
    assert cache.lookup(other, "agentic", None, embedder.embed_query(other)) is None


@pytest.mark.parametrize(
    ("question", "coded"),
    [
        (
            "What is the holiday allowance at Initech?",
            "What is the holiday allowance at Initech? (ticket 5-26)",
        ),
        ("Initech 的年假是多少天？", "Initech 的年假是多少天？（工单 5-26）"),
    ],
)
def test_the_cache_keys_on_the_question_as_asked_reference_code_included(agent, question, coded):
    from app import ask, build_context
    from config import load_settings

    app, offline = agent
    cached = build_context(load_settings(index_dir=offline.settings.index_dir, reranker="lexical"))
    first = ask(app, question, context=cached)
    again = ask(app, question, context=cached)
    other = ask(app, coded, context=cached)
    assert again.stop_reason == "cached" and other.stop_reason != "cached"
    assert other.answer == first.answer  # answered afresh, to the same effect
