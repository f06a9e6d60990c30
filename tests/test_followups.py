"""Follow-up questions become standalone questions that carry the previous turn's topic (offline)."""

from __future__ import annotations

import pytest

from core.chunks import Chunk, ScoredChunk
from providers.offline_brain.contextualize import (
    contextualize_question,
    needs_clarification,
    the_one_document,
)
from tests.graph_fixtures import make_context

__all__ = ["make_context"]  # the fixture is used by name

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
    standalone = offline_brain().contextualize(follow_up, turns)
    for part in must_contain:
        assert part in standalone


@pytest.mark.parametrize("question", ["What is reciprocal rank fusion?", "倒数排名融合是什么？"])
def test_self_contained_questions_are_left_alone(question):
    turns = [("user", "How does BM25 work?"), ("assistant", "It ranks by term statistics [1].")]
    assert offline_brain().contextualize(question, turns) == question


# ---- resolved, not prefixed (issue 8) ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("history", "follow_up", "standalone"),
    [
        (
            [("user", "混合检索是怎么合并结果的？"), ("assistant", "用 RRF[1]。")],
            "那它的常数是多少？",
            "混合检索的常数是多少？",
        ),
        (
            [("user", "What is BM25?"), ("assistant", "A ranking function [1].")],
            "Does it work for Chinese text?",
            "Does BM25 work for Chinese text?",
        ),
        (
            [("user", "《红楼梦》的作者是谁？"), ("assistant", "曹雪芹[1]。")],
            "他出生在哪一年？",
            "曹雪芹出生在哪一年？",
        ),
        (
            [("user", "Who painted the Mona Lisa?"), ("assistant", "Leonardo da Vinci [1].")],
            "Where was he born?",
            "Where was Leonardo da Vinci born?",
        ),
        (
            [("user", "What is hybrid search?"), ("assistant", "Fusion of two searches [1].")],
            "它怎么合并两路结果？",
            "hybrid search 怎么合并两路结果？",
        ),
        (
            [("user", "长城有多长？"), ("assistant", "两万多公里[1]。")],
            "When was it built?",
            "When was 长城 built?",
        ),
    ],
)
def test_the_referring_word_is_replaced_and_the_sentence_kept(history, follow_up, standalone):
    assert contextualize_question(follow_up, history) == standalone


@pytest.mark.parametrize(
    "question",
    ["那个性能问题怎么解决的？", "它的默认值是多少？", "How do I fix that?", "What did she discover?"],
)
def test_a_fresh_thread_with_nothing_to_refer_to_asks_which_thing_is_meant(question):
    assert needs_clarification(question, [])
    assert not needs_clarification(
        question, [("user", "HNSW 索引的性能问题严重吗？"), ("assistant", "较严重[1]。")]
    )


@pytest.mark.parametrize(
    "question",
    [
        "倒数排名融合是什么？",
        "What is reciprocal rank fusion?",
        "那个让检索变慢的东西叫什么？",
        "答案说证据不足该怎么办？",  # 该 as "should"
        "荷屬蓋亞那是哪一國給蘇利南這地區的名稱？",  # the question names what 這 points at
        "Anthrax spores are very difficult to dispose once they are dispersed.",
    ],
)
def test_a_self_contained_question_needs_no_clarification(question):
    assert not needs_clarification(question, [])


@pytest.mark.parametrize(
    "question",
    [
        "鲁迅和他的弟弟关系如何？",  # 他 after the person it means
        "法国在其殖民时期占领了哪些地方？",  # 其 after the country
        "How did the town get its name?",
        "Did Marie and her sister study physics?",
    ],
)
def test_a_pronoun_after_its_antecedent_in_the_question_needs_no_clarification(question):
    assert not needs_clarification(question, [])


@pytest.mark.parametrize(
    "question",
    ["卡尔·那西尔何时即位？", "让-那瓦·杜邦是谁？", "Who directed It Follows?"],
)
def test_a_referring_word_inside_a_name_is_not_a_reference(question):
    assert not needs_clarification(question, [])


@pytest.mark.parametrize(
    "question",
    [
        "它的默认值是多少？",
        "那个性能问题怎么解决的？",
        "What is its default value?",
        "Does it support Chinese?",
    ],
)
def test_a_demonstrative_or_a_leading_pronoun_still_asks_back(question):
    assert needs_clarification(question, [])


def passage(doc: str, text: str) -> ScoredChunk:
    return ScoredChunk(
        chunk=Chunk(id=f"{doc}-{len(text)}", text=text, source=f"{doc}.md", title=doc), score=1.0
    )


@pytest.mark.parametrize(
    ("question", "hits", "expected"),
    [
        (
            "它的启动口令是什么？",
            [passage("星港号", "星港号的启动口令是“破晓”。"), passage("港口", "港口每天清晨启动吊机。")],
            "星港号",
        ),
        (
            "它的启动口令是什么？",
            [
                passage("星港号", "星港号的启动口令是“破晓”。"),
                passage("月港号", "月港号的启动口令是“黄昏”。"),
            ],
            "",
        ),
        ("它的启动口令是什么？", [passage("港口", "港口每天清晨启动吊机。")], ""),
        (
            "What is its launch password?",
            [
                passage("Star Harbour", "The launch password of the Star Harbour is dawn."),
                passage("Port", "The port launches ferries."),
            ],
            "Star Harbour",
        ),
        (
            "What is its launch password?",
            [
                passage("Star Harbour", "The launch password of the Star Harbour is dawn."),
                passage("Moon Harbour", "The Moon Harbour's launch password is dusk."),
            ],
            "",
        ),
    ],
    ids=["zh-one", "zh-two", "zh-none", "en-one", "en-two"],
)
def test_the_corpus_settles_an_unnamed_reference_only_when_one_document_fits(question, hits, expected):
    """Two passages of one document count once; two documents that fit leave the question open."""
    assert the_one_document(question, hits) == expected


def test_a_fresh_thread_question_only_one_document_fits_is_searched(make_context):
    """The graph corpus speaks of a 取景地 / of paving in one document each: search instead of asking."""
    from graph.builder import build_graph
    from graph.run import ask

    for question, doc in (
        ("它是什么电影的主要取景地？", "白鹭书院"),
        ("When was it paved?", "Quillon Street"),
    ):
        result = ask(build_graph(), question, context=make_context())
        assert result.trace[0].decision.value == "standalone" and doc in result.trace[0].detail
        assert [e for e in result.trace if e.node.startswith("retrieve_")]
        assert "您指的是哪一个" not in result.answer and "Which one do you mean" not in result.answer


def test_the_graph_asks_back_instead_of_answering(make_context):
    from graph.builder import build_graph
    from graph.run import ask

    for question, phrase in (
        ("那个性能问题怎么解决的？", "您指的是哪一个"),
        ("How do I fix that?", "Which one do you mean"),
    ):
        result = ask(build_graph(), question, context=make_context())
        assert phrase in result.answer and result.insufficient and not result.citations
        assert not [e for e in result.trace if e.node.startswith("retrieve_")]  # nothing was searched


# ---- issue 21: whole noun phrases, and no resolving a pronoun whose sentence names its antecedent ----


@pytest.mark.parametrize(
    ("history", "follow_up", "standalone"),
    [
        (
            [("user", "How do I enable CORS?"), ("assistant", "Add CORSMiddleware [1].")],
            "What are its default allowed methods?",
            "What are CORS's default allowed methods?",
        ),
        (
            [("user", "怎么开启 CORS？"), ("assistant", "添加 CORSMiddleware[1]。")],
            "它默认允许哪些方法？",
            "CORS 默认允许哪些方法？",
        ),
        (
            [("user", "How do I configure the semantic answer cache?"), ("assistant", "Set it [1].")],
            "How do I turn it off?",
            "How do I turn the semantic answer cache off?",
        ),
        (
            [("user", "语义缓存的阈值怎么配置？"), ("assistant", "设置 AGENTIC_RAG_CACHE_THRESHOLD[1]。")],
            "怎么把它关掉？",
            "怎么把语义缓存关掉？",
        ),
        (
            [("user", "Where are conversation checkpoints stored?"), ("assistant", "In SQLite [1].")],
            "How large do they get?",
            "How large do the conversation checkpoints get?",
        ),
        (
            [("user", "混合检索默认怎么合并结果？"), ("assistant", "倒数排名融合[1]。")],
            "它的常数是多少？",
            "混合检索的常数是多少？",
        ),
        (
            [
                ("user", "How does the Milvus store handle deletions?"),
                ("assistant", "Marked, compacted [1]."),
            ],
            "How often does it compact segments?",
            "How often does Milvus store compact segments?",
        ),
        (
            [("user", "Milvus 存储怎么处理删除？"), ("assistant", "标记后压缩[1]。")],
            "它多久压缩一次段？",
            "Milvus 存储多久压缩一次段？",
        ),
    ],
)
def test_the_referent_is_a_whole_noun_phrase_not_a_fragment(history, follow_up, standalone):
    assert contextualize_question(follow_up, history) == standalone


@pytest.mark.parametrize(
    ("history", "follow_up"),
    [
        (
            [("user", "混合检索默认怎么合并结果？"), ("assistant", "倒数排名融合[1]。")],
            "What should I do when the index is damaged, and how do I rebuild it with a different chunk size?",
        ),
        (
            [("user", "How do I rebuild the index?"), ("assistant", "Run ingest --rebuild [1].")],
            "索引损坏的时候怎么办，怎么用不同的分块大小重建它？",
        ),
        (
            [("user", "What does the reranker do?"), ("assistant", "It reorders candidates [1].")],
            "Does the reranker need a GPU, or can it run on a CPU?",
        ),
        (
            [("user", "混合检索默认用什么方法合并结果？"), ("assistant", "倒数排名融合[1]。")],
            "重排序器需要 GPU 吗，还是它能在 CPU 上运行？",
        ),
    ],
)
def test_a_pronoun_whose_sentence_names_its_antecedent_is_left_alone(history, follow_up):
    assert contextualize_question(follow_up, history) == follow_up
