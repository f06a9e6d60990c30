"""Bounded generation, LLM roles and citations the project attaches, against a real HTTP server speaking
the OpenAI protocol on 127.0.0.1 (tests/openai_server.py) and the real multilingual embedder.

The same behaviours against the real local model: tests/test_local_llm.py.
"""

from __future__ import annotations

import re

import pytest

from config import load_settings
from core.schemas import Passage
from core.text import parse_citations, split_sentences
from graph.builder import build_graph
from graph.run import ask, build_input, run_config
from ingestion.indexing import index_chunks
from nodes.context import AgentContext
from providers import prompts
from providers.brain import make_brain, offline_brain
from providers.brain.citing import Citer, with_marker
from retrievers.factory import build_retrievers
from retrievers.index import open_index
from tests.graph_fixtures import graph_corpus
from tests.openai_server import (
    capped,
    compact_step,
    is_compact_judge,
    openai_server,
    plausible_reply,
    reply,
    reply_json,
    step_of,
    system_text,
    user_text,
)

__all__ = ["openai_server"]  # the fixture is used by name

PASSAGES = [
    Passage(
        number=1,
        chunk_id="c1",
        source="guide/retrieval.md",
        text="Hybrid search fuses BM25 and vector results with reciprocal rank fusion (RRF), k = 60.",
    ),
    Passage(
        number=2,
        chunk_id="c2",
        source="guide/cache.md",
        text="答案缓存保存在索引目录旁边，语义缓存的相似度阈值是 0.95。",
    ),
]


@pytest.fixture
def context_for(settings, embedder):
    """``build(base_url, **settings)`` -> an LLM context over the graph corpus in a real index."""
    index_chunks(graph_corpus(), settings, embedder, index_dir=settings.index_dir, progress=False)
    opened = []

    def build(base_url: str, **overrides) -> AgentContext:
        current = settings.model_copy(
            update={
                "openai_base_url": base_url,
                "openai_api_key": "sk-test",
                "answer_cache": False,
                **overrides,
            }
        )
        index = open_index(current.index_dir)
        opened.append(index)
        retrievers = build_retrievers(index, current, embedder)
        return AgentContext(settings=current, retrievers=retrievers, brain=make_brain(current, embedder))

    yield build
    for index in opened:
        index.close()


@pytest.fixture
def citer(embedder) -> Citer:
    return Citer(offline_brain(embedder=embedder).verify)


# --------------------------------------------------------------------------------------------------
# Bounded generation


def test_every_request_carries_its_steps_max_tokens_under_both_names(context_for, openai_server):
    openai_server.responder = plausible_reply
    context = context_for(openai_server.base_url, llm_max_tokens_answer=77, llm_max_tokens_judge=55)
    ask(build_graph(), "混合检索用什么算法合并结果？", context=context)
    caps = {
        step_of(body): (body.get("max_tokens"), body.get("max_completion_tokens"))
        for body in openai_server.requests
    }
    assert caps["answer"] == (77, 77)
    assert caps["judge"] == (55, 55)
    defaults = context.settings
    assert caps["analyze"] == (defaults.llm_max_tokens_analyze,) * 2
    assert all(a is not None and a == b for a, b in caps.values())


def test_json_schemas_sent_to_the_server_bound_lists_and_strings(context_for, openai_server):
    openai_server.responder = plausible_reply
    ask(build_graph(), "What does error code E-4711 mean?", context=context_for(openai_server.base_url))
    schemas = {
        step_of(body): body["response_format"]["json_schema"]["schema"]
        for body in openai_server.requests
        if "response_format" in body
    }
    analysis = schemas["analyze"]["properties"]
    assert analysis["sub_queries"]["maxItems"] == 4 and analysis["sub_queries"]["items"]["maxLength"] == 160
    assert analysis["language"]["anyOf"][0]["enum"] == ["zh", "en"]
    judge = schemas["judge"]
    assert judge["properties"]["judgements"]["maxItems"] == 20
    assert judge["$defs"]["_Judgement"]["properties"]["reason"]["maxLength"] == 160


@pytest.mark.parametrize("language", ["zh|en", "chinese", "ZH-cn"])
def test_a_language_outside_the_allowed_values_makes_the_analysis_fall_back(openai_server, language):
    brain = make_brain(load_settings(openai_base_url=openai_server.base_url, openai_api_key="sk-test"))
    bad = {"query_type": "factual", "recommended_strategy": "hybrid", "sub_queries": [], "language": language}
    openai_server.script(reply_json(bad), reply_json(bad))
    analysis = brain.analyze("混合检索用什么算法合并结果？")
    [record] = brain.calls.drain()
    assert record.fallback and "language" in (record.error or "")
    assert analysis == offline_brain().analyze("混合检索用什么算法合并结果？")


def test_a_structured_reply_stopped_at_its_cap_is_not_used_nor_asked_again(openai_server):
    brain = make_brain(load_settings(openai_base_url=openai_server.base_url, openai_api_key="sk-test"))
    openai_server.script(capped('{"query_type": "factual", "sub_queries": ["混合检索", "混合检索'))
    analysis = brain.analyze("混合检索用什么算法合并结果？")
    [record] = brain.calls.drain()
    assert record.capped == 1 and record.fallback and "stopped at max_tokens=200" in (record.error or "")
    assert len(openai_server.requests) == 1
    assert analysis == offline_brain().analyze("混合检索用什么算法合并结果？")


def test_a_streamed_answer_stopped_at_its_cap_is_replaced_by_the_offline_answer(context_for, openai_server):
    def cut(body):
        if step_of(body) != "answer":
            return plausible_reply(body)
        return capped(plausible_reply(body).text.replace(" [1]", "") + " and then")

    openai_server.responder = cut
    context = context_for(openai_server.base_url, llm_roles="write")
    result = ask(build_graph(), "What does error code E-4711 mean?", context=context)
    [generate] = [e for e in result.trace if e.node == "generate"]
    assert "answer reply stopped at max_tokens=400" in generate.fallback_reason
    assert generate.counts.get("capped") == 1
    offline = context_for(openai_server.base_url, brain="offline")
    assert result.answer == ask(build_graph(), "What does error code E-4711 mean?", context=offline).answer


def test_an_answer_that_starts_copying_out_its_passages_is_cut_there_and_kept(context_for, openai_server):
    def echo(body):
        if step_of(body) != "answer":
            return plausible_reply(body)
        entries = re.findall(r"^\[\d+\] .*$", user_text(body), re.M)  # the context, as the prompt lists it
        return reply(plausible_reply(body).text + ".\n\n" + "\n\n".join(entries * 5))

    openai_server.responder = echo
    context = context_for(openai_server.base_url, llm_roles="write")
    result = ask(build_graph(), "What does error code E-4711 mean?", context=context)
    [generate] = [e for e in result.trace if e.node == "generate"]
    assert not generate.fallback_reason and generate.counts.get("runaway") == 1
    assert "E-4711" in result.answer and "\n\n[" not in result.answer and "›" not in result.answer


@pytest.mark.parametrize("question", ["What does error code E-4711 mean?", "混合检索是如何合并结果的？"])
def test_an_answer_that_repeats_itself_keeps_one_copy_and_the_stream_is_closed(
    context_for, openai_server, question
):
    def loop(body):
        if step_of(body) != "answer":
            return plausible_reply(body)
        return reply((plausible_reply(body).text + ". ") * 300)  # far past the character cap

    openai_server.responder = loop
    context = context_for(openai_server.base_url, llm_roles="write")
    result = ask(build_graph(), question, context=context)
    [generate] = [e for e in result.trace if e.node == "generate"]
    assert not generate.fallback_reason and generate.counts.get("runaway") == 1
    sentence = re.sub(r"\s*\[\d+\]", "", split_sentences(result.answer)[0]).strip(" .。")
    assert len(sentence) > 10 and result.answer.count(sentence) == 1
    assert "answer cut at" not in result.answer  # stopped at the loop, long before the character cap


def test_an_answer_that_only_copies_out_its_passages_is_replaced_by_the_offline_answer(
    context_for, openai_server
):
    def echo(body):
        if step_of(body) != "answer":
            return plausible_reply(body)
        return reply("\n\n".join(re.findall(r"^\[\d+\] .*$", user_text(body), re.M)))

    openai_server.responder = echo
    context = context_for(openai_server.base_url, llm_roles="write")
    result = ask(build_graph(), "What does error code E-4711 mean?", context=context)
    [generate] = [e for e in result.trace if e.node == "generate"]
    assert "answer reply copied out the passages before answering" in generate.fallback_reason
    offline = context_for(openai_server.base_url, brain="offline")
    assert result.answer == ask(build_graph(), "What does error code E-4711 mean?", context=offline).answer


# --------------------------------------------------------------------------------------------------
# Roles


def test_with_the_write_role_only_the_answer_is_asked_of_the_model(context_for, openai_server):
    openai_server.responder = plausible_reply
    context = context_for(openai_server.base_url, llm_roles="write")
    result = ask(build_graph(), "What does error code E-4711 mean?", context=context)
    assert {step_of(body) for body in openai_server.requests} == {"answer"}
    assert result.model_calls == 1
    assert context.brain.name.endswith("(write)")


def test_by_default_a_packaged_small_model_only_writes_and_any_other_model_plays_every_role(
    context_for, openai_server
):
    openai_server.responder = plausible_reply
    small = context_for(openai_server.base_url, llm_model="qwen2.5-coder-0.5b")
    ask(build_graph(), "What does error code E-4711 mean?", context=small)
    assert {step_of(body) for body in openai_server.requests} == {"answer"}
    large = context_for(openai_server.base_url, llm_model="gpt-4o-mini")
    assert "(" not in large.brain.name  # every role
    assert load_settings(llm_roles=" Auto ").llm_roles == "auto"


@pytest.mark.parametrize(
    ("model", "compact", "expected"),
    [
        ("qwen2.5-coder-0.5b", "auto", True),
        ("gpt-4o-mini", "auto", False),
        ("gpt-4o-mini", "on", True),
        ("qwen2.5-coder-1.5b", "off", False),
    ],
)
def test_a_packaged_small_model_gets_the_compact_analysis_and_judge_prompts_unless_told(
    context_for, openai_server, model, compact, expected
):
    openai_server.responder = plausible_reply
    context = context_for(openai_server.base_url, llm_model=model, llm_roles="all", llm_compact=compact)
    ask(build_graph(), "混合检索用什么算法合并结果？", context=context)
    steps = {step_of(body) for body in openai_server.requests}
    compact = {compact_step(body) for body in openai_server.requests} - {None}
    assert {"analyze", "judge", "answer", "check_support"} <= steps
    assert compact == ({"analyze", "judge", "check_support"} if expected else set())
    if expected:  # one system prompt for every request: each repeats the previous one's first tokens
        assert {system_text(body).strip() for body in openai_server.requests} == {prompts.ANSWER_SYSTEM}
        assert "compress" not in steps and "compress" not in context.brain.name


@pytest.mark.parametrize("question", ["混合检索用什么算法合并结果？", "What does error code E-4711 mean?"])
def test_after_a_compact_judge_the_writers_request_repeats_the_judges_prompt(
    context_for, openai_server, question
):
    """Issue 22: the writer reads the passages the judge was shown, in the same order, so a llama.cpp
    server reads only the writer's last line."""
    openai_server.responder = plausible_reply
    context = context_for(openai_server.base_url, llm_model="qwen2.5-coder-1.5b", llm_roles="all")
    ask(build_graph(), question, context=context)
    [judged] = [body for body in openai_server.requests if is_compact_judge(body)]
    [written] = [body for body in openai_server.requests if step_of(body) == "answer"]
    assert user_text(judged).startswith(user_text(written) + "\n\n")
    assert user_text(written).count("\n[") >= 2  # several passages


@pytest.mark.parametrize("question", ["混合检索用什么算法合并结果？", "What does error code E-4711 mean?"])
def test_the_support_check_repeats_the_writers_passages_and_the_reader_sees_the_first_citation_as_1(
    context_for, openai_server, question
):
    """Issue 22: the answer is checked as the writer numbered it (the writer's passages, in its order,
    so a llama.cpp server reads only the task and the sentences); the reader's [1] comes after."""

    def cite_the_last_passage(body):
        if step_of(body) == "answer":
            *_, (number, text) = re.findall(r"^\[(\d+)\] [^:]*: (.{1,80})", user_text(body), re.M)
            return reply(f"{text.strip()} [{number}]")
        return plausible_reply(body)

    openai_server.responder = cite_the_last_passage
    context = context_for(openai_server.base_url, llm_model="qwen2.5-coder-1.5b", llm_roles="all")
    updates = build_graph().stream(
        build_input(question, None, None),
        config=run_config(context, None),
        context=context,
        stream_mode="updates",
    )
    by_node = {node: update for step in updates for node, update in step.items()}
    [written] = [body for body in openai_server.requests if step_of(body) == "answer"]
    [checked] = [body for body in openai_server.requests if step_of(body) == "check_support"]
    shown = user_text(written).split("</context>")[0]
    assert user_text(checked).startswith(shown + "</context>\n\n")
    assert len(re.findall(r"^\[(\d+)\] ", shown, re.M)) >= 2  # a later passage was cited
    # what a client streams (the generate step's answer) and the checked result both read [1] first
    generated, checked_support = by_node["generate"], by_node["verify"]["support"]
    assert parse_citations(generated["answer"]) == [1] and [s.cited for s in checked_support] == [[1]]
    assert generated["citations"][0].chunk_id == generated["passages"][0].chunk_id


def test_the_writer_of_a_packaged_small_model_reads_a_smaller_context(context_for, openai_server):
    openai_server.responder = plausible_reply
    small = context_for(openai_server.base_url, llm_model="qwen2.5-coder-0.5b", llm_roles="write")
    large = context_for(openai_server.base_url, llm_model="gpt-4o-mini", llm_roles="write")
    assert small.brain.context_budget == 800 and large.brain.context_budget is None
    result = ask(build_graph(), "混合检索用什么算法合并结果？", context=small)
    [compress] = [e for e in result.trace if e.node == "compress"]
    assert "(budget 800)" in compress.detail


# --------------------------------------------------------------------------------------------------
# Citations the project attaches


def test_an_uncited_sentence_gets_the_passage_that_supports_it(citer):
    answer = "Hybrid search fuses BM25 and vector results with RRF. 语义缓存的相似度阈值是 0.95。"
    cited = citer(answer, PASSAGES)
    assert [parse_citations(s) for s in split_sentences(cited.text)] == [[1], [2]]
    assert cited.attached == 2 and cited.removed == ()


def test_an_invalid_or_wrong_marker_is_replaced_by_the_supporting_passage(citer):
    cited = citer("语义缓存的相似度阈值是 0.95 [7]。Hybrid search uses RRF with k = 60 [2].", PASSAGES)
    assert [parse_citations(s) for s in split_sentences(cited.text)] == [[2], [1]]


def test_an_unsupported_claim_is_removed_and_a_wrong_number_is_caught(citer):
    answer = "Hybrid search fuses BM25 and vector results with RRF [1]. RRF uses k = 80. The moon is made of cheese."
    cited = citer(answer, PASSAGES)
    assert cited.text == "Hybrid search fuses BM25 and vector results with RRF [1]."
    assert len(cited.removed) == 2


def test_an_answer_nothing_supports_is_rejected(citer):
    assert citer("The moon is made of cheese. Paris is the capital of France.", PASSAGES).text == ""


def test_markers_go_before_the_final_punctuation():
    assert with_marker("缓存阈值是 0.95 [3]。", 2) == "缓存阈值是 0.95 [2]。"
    assert with_marker("RRF merges rankings", 1) == "RRF merges rankings [1]"


def test_the_writer_keeps_a_good_uncited_answer_and_the_graph_shows_the_attached_citation(
    context_for, openai_server
):
    def uncited(body):
        if step_of(body) != "answer":
            return plausible_reply(body)
        cited = plausible_reply(body).text
        return reply(cited.replace(" [1]", "").strip() + " Also, the moon is made of cheese.")

    openai_server.responder = uncited
    context = context_for(openai_server.base_url, llm_roles="write")
    result = ask(build_graph(), "What does error code E-4711 mean?", context=context)
    [generate] = [e for e in result.trace if e.node == "generate"]
    assert not generate.fallback_reason
    assert generate.counts.get("citations_attached") == 1 and generate.counts.get("sentences_removed") == 1
    assert "cheese" not in result.answer
    assert result.citations and all(1 <= c.number <= len(result.passages) for c in result.citations)


def test_the_writer_falls_back_when_no_sentence_is_supported(context_for, openai_server):
    def unsupported(body):
        return reply("The moon is made of cheese.") if step_of(body) == "answer" else plausible_reply(body)

    openai_server.responder = unsupported
    context = context_for(openai_server.base_url, llm_roles="write")
    result = ask(build_graph(), "What does error code E-4711 mean?", context=context)
    [generate] = [e for e in result.trace if e.node == "generate"]
    assert "no sentence is supported by a passage" in generate.fallback_reason
    assert "cheese" not in result.answer


def test_meaning_is_what_lets_a_chinese_sentence_cite_an_english_passage(embedder):
    with_meaning = Citer(offline_brain(embedder=embedder).verify)
    words_only = Citer(offline_brain().verify)
    answer = "混合检索用倒数排名融合（RRF）合并 BM25 和向量检索的结果。"
    assert parse_citations(with_meaning(answer, PASSAGES[:1]).text) == [1]
    assert words_only(answer, PASSAGES[:1]).text == ""
