"""Specification of the offline query analyzer and decomposer, Chinese and English side by side."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core.schemas import fill_bridge, strip_bridge
from providers.offline_brain.analysis import analyze_question, exact_terms, extract_entities
from providers.offline_brain.decompose import decompose


@pytest.mark.parametrize(
    ("question", "query_type"),
    [
        ("HNSW 和 IVF 有什么区别？", "comparative"),
        ("What is the difference between BM25 and TF-IDF?", "comparative"),
        ("如何配置混合检索的权重？", "procedural"),
        ("How do I install the package on Windows?", "procedural"),
        ("为什么重排序能提升答案质量？", "analytical"),
        ("Why did the Roman Empire decline?", "analytical"),
        ("光合作用发生在细胞的哪个部位？", "factual"),
        ("When did the Berlin Wall fall?", "factual"),
    ],
)
def test_query_type_from_cues(question: str, query_type: str) -> None:
    assert analyze_question(question).query_type == query_type


@pytest.mark.parametrize(
    ("question", "strategy"),
    [
        ("错误码 ERR_CONNECTION_REFUSED 是什么意思？", "keyword"),
        ("What's new in Python 3.12?", "keyword"),
        ('Where is "retry budget exhausted" logged?', "keyword"),
        ("为什么天空是蓝色的？", "vector"),
        ("Explain how attention works in transformers.", "vector"),
        ("什么是向量数据库？", "hybrid"),
        ("How to set up a reverse proxy in front of the API server?", "hybrid"),
        ("唐朝和宋朝的科举制度有何异同？", "multi_hop"),
        ("Who is the spouse of the director of Inception?", "multi_hop"),
    ],
)
def test_recommended_strategy(question: str, strategy: str) -> None:
    assert analyze_question(question).recommended_strategy == strategy


def test_analysis_fields_are_filled_and_reasoning_names_cues() -> None:
    zh = analyze_question("对比 FAISS、Milvus 在召回率上的差异")
    assert zh.language == "zh" and zh.query_type == "comparative"
    assert {"FAISS", "Milvus"} <= set(zh.entities)
    assert "对比" in zh.reasoning and "multi_hop" in zh.reasoning
    en = analyze_question("What does MongoDB error E11000 mean?")
    assert en.language == "en" and "E11000" in en.identifiers and "MongoDB" in en.entities
    assert en.complexity == "simple" and en.sub_queries == []


def test_complexity_grows_with_parts() -> None:
    assert analyze_question("长城有多长？").complexity == "simple"
    assert analyze_question("BM25 与向量检索各自的优缺点是什么？").complexity == "moderate"
    three_way = analyze_question("Compare the economies of France, Germany and Italy after World War II.")
    assert three_way.complexity == "complex"


def test_entities_cover_quotes_names_and_chinese_list_items() -> None:
    assert "On the Origin of Species" in extract_entities("Who wrote On the Origin of Species?")
    assert "红楼梦" in extract_entities("《红楼梦》的作者出生在哪里？")
    assert {"Python", "Java", "Go"} <= set(extract_entities("Python、Java 和 Go 在并发模型上的比较"))
    assert "零停机部署" in exact_terms("文档里提到的“零停机部署”在哪一章？")
    assert "--reload" in exact_terms("What does the --reload flag do in uvicorn?")
    assert exact_terms("Why did the 2008 financial crisis spread to Europe?") == []  # a year is not a code


class TestDecompose:
    def test_zh_a_and_b_difference(self) -> None:
        assert decompose("HNSW 索引和 IVF 索引有什么区别？") == ["HNSW 索引的特点", "IVF 索引的特点"]

    def test_zh_comparison_keeps_aspect(self) -> None:
        assert decompose("对比 FAISS、Milvus 在召回率上的差异") == [
            "FAISS 在召回率上的表现",
            "Milvus 在召回率上的表现",
        ]
        assert decompose("唐朝和宋朝的科举制度有何异同？") == ["唐朝的科举制度", "宋朝的科举制度"]

    def test_en_versus_and_compare_in_terms_of(self) -> None:
        assert decompose("FAISS vs Annoy for approximate nearest neighbour search") == [
            "FAISS for approximate nearest neighbour search",
            "Annoy for approximate nearest neighbour search",
        ]
        assert decompose("Compare PostgreSQL and MySQL in terms of replication.") == [
            "PostgreSQL replication",
            "MySQL replication",
        ]
        assert decompose("What is the difference between BM25 and TF-IDF?") == [
            "What is BM25?",
            "What is TF-IDF?",
        ]

    def test_enumerations_keep_the_frame(self) -> None:
        assert decompose("鸦片战争的起因、经过和结果分别是什么？") == [
            "鸦片战争的起因是什么",
            "鸦片战争的经过是什么",
            "鸦片战争的结果是什么",
        ]
        assert decompose("What were the causes, key battles and consequences of the Thirty Years' War?") == [
            "What were the causes of the Thirty Years' War?",
            "What were the key battles of the Thirty Years' War?",
            "What were the consequences of the Thirty Years' War?",
        ]

    def test_conjoined_questions_resolve_pronouns(self) -> None:
        assert decompose("什么是量子纠缠，并且它为什么不能用来超光速通信？") == [
            "什么是量子纠缠",
            "量子纠缠为什么不能用来超光速通信",
        ]
        assert decompose("如何创建索引，以及如何删除过期的文档？") == ["如何创建索引", "如何删除过期的文档"]
        assert decompose("What is photosynthesis and why is it important for the carbon cycle?") == [
            "What is photosynthesis?",
            "Why is photosynthesis important for the carbon cycle?",
        ]
        assert decompose("What is the memory cost as well as the latency of HNSW?") == [
            "What is the memory cost of HNSW?",
            "What is the latency of HNSW?",
        ]

    def test_bridge_questions_give_first_hop_and_template(self) -> None:
        hops = decompose("Who is the spouse of the director of Inception?")
        assert hops == ["director of Inception", "spouse of <director of Inception>"]
        assert fill_bridge(hops[1], "Christopher Nolan") == "spouse of Christopher Nolan"
        assert strip_bridge(hops[1]) == "spouse of director of Inception"
        assert decompose("《红楼梦》的作者出生在哪里？") == [
            "《红楼梦》的作者",
            "<《红楼梦》的作者>出生在哪里",
        ]

    @pytest.mark.parametrize(
        "question",
        [
            "Who is the director of Inception?",
            "《红楼梦》的作者是谁？",
            "When did the Berlin Wall fall?",
            "长城有多长？",
        ],
    )
    def test_simple_questions_are_not_decomposed(self, question: str) -> None:
        assert decompose(question) == []


def test_empty_and_bad_input() -> None:
    assert analyze_question("   ").reasoning == "empty question"
    with pytest.raises(TypeError, match="question must be a string"):
        analyze_question(None)  # type: ignore[arg-type]
