"""parse_model_json: what weak and local models really send, and where recovery must stop."""

from __future__ import annotations

import pytest

from core.schemas import QueryAnalysis, RetrievalEvaluation
from providers.json_repair import loads_tolerant, parse_model_json


def test_plain_json_is_parsed_as_is() -> None:
    text = '{"query_type": "comparative", "sub_queries": ["BM25 原理", "RRF 原理"], "language": "zh"}'
    result = parse_model_json(text, QueryAnalysis)
    assert result.query_type == "comparative"
    assert result.sub_queries == ["BM25 原理", "RRF 原理"]


@pytest.mark.parametrize(
    "reply",
    [
        'Here is the analysis:\n```json\n{"query_type": "procedural", "language": "en"}\n```\nLet me know!',
        '好的，分析结果如下：\n```\n{"query_type": "procedural", "language": "zh"}\n```\n希望有帮助。',
        'Sure. {"query_type": "procedural"} That is all.',
        '<think>The user wants {steps}, so procedural.</think>\n{"query_type": "procedural"}',
    ],
    ids=["fenced-en", "fenced-zh", "inline-prose", "think-block"],
)
def test_fences_prose_and_reasoning_blocks_are_skipped(reply: str) -> None:
    assert parse_model_json(reply, QueryAnalysis).query_type == "procedural"


def test_python_style_literals_single_quotes_and_trailing_commas() -> None:
    reply = "{'is_sufficient': True, 'missing_info': ['发布日期',], 'reasoning': None, 'judgements': [],}"
    result = parse_model_json(reply, RetrievalEvaluation)
    assert result.is_sufficient is True
    assert result.missing_info == ["发布日期"]
    assert result.reasoning == ""  # None for a field with a default means "not given"


def test_quotes_inside_strings_survive_conversion() -> None:
    reply = """{'reasoning': 'the "k" constant isn\\'t stated', 'entities': ["O'Brien"]}"""
    result = parse_model_json(reply, QueryAnalysis)
    assert result.reasoning == 'the "k" constant isn\'t stated'
    assert result.entities == ["O'Brien"]


def test_unquoted_keys_are_quoted() -> None:
    result = parse_model_json('{query_type: "analytical", identifiers: ["v2.3", "ISO-9001"]}', QueryAnalysis)
    assert result.query_type == "analytical"
    assert result.identifiers == ["v2.3", "ISO-9001"]


@pytest.mark.parametrize(
    ("reply", "sub_queries"),
    [
        (
            '{"query_type": "comparative", "sub_queries": ["什么是 BM25", "什么是 RRF"',
            ["什么是 BM25", "什么是 RRF"],
        ),
        ('{"query_type": "comparative", "sub_queries": ["a", "b"], "reasoning": "compares tw', ["a", "b"]),
        ('{"query_type": "comparative", "sub_queries": ["a"], "reasoning":', ["a"]),
        ('{"query_type": "comparative", "sub_queries": ["a", "b"], "entit', ["a", "b"]),
    ],
    ids=["mid-list", "mid-string", "after-colon", "mid-key"],
)
def test_replies_cut_off_by_the_token_limit_are_closed(reply: str, sub_queries: list[str]) -> None:
    result = parse_model_json(reply, QueryAnalysis)
    assert result.query_type == "comparative"
    assert result.sub_queries == sub_queries


def test_nested_models_and_numbers_with_exponents() -> None:
    reply = '{"judgements": [{"chunk_id": "c1", "relevance": 9e-1, "reason": "直接回答"},], "is_sufficient": true}'
    result = parse_model_json(reply, RetrievalEvaluation)
    assert result.judgements[0].relevance == pytest.approx(0.9)
    assert result.judgements[0].reason == "直接回答"


def test_common_wrappings_are_unwrapped() -> None:
    assert parse_model_json('[{"query_type": "factual"}]', QueryAnalysis).query_type == "factual"
    wrapped = '{"name": "QueryAnalysis", "arguments": {"query_type": "analytical"}}'
    assert parse_model_json(wrapped, QueryAnalysis).query_type == "analytical"


def test_enum_values_are_normalised_once() -> None:
    result = parse_model_json(
        '{"query_type": " Comparative", "recommended_strategy": "Multi-Hop"}', QueryAnalysis
    )
    assert (result.query_type, result.recommended_strategy) == ("comparative", "multi_hop")


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        ("", "empty"),
        ("I am sorry, I cannot help with that.", "no JSON object"),
        ("抱歉，我无法回答这个问题。", "no JSON object"),
        ('{"foo": 1, "bar": [2]}', "none of the expected fields"),
        ('{"query_type": "banana"}', "query_type"),
        ("{{{{[[[[", "QueryAnalysis"),
    ],
    ids=["empty", "prose-en", "prose-zh", "wrong-fields", "bad-enum", "brackets"],
)
def test_hopeless_replies_raise_a_clear_value_error(reply: str, reason: str) -> None:
    with pytest.raises(ValueError, match="cannot parse QueryAnalysis") as info:
        parse_model_json(reply, QueryAnalysis)
    assert reason in str(info.value)


def test_loads_tolerant_returns_plain_values() -> None:
    assert loads_tolerant("[1, 2, 3,]") == [1, 2, 3]
    assert loads_tolerant('{"a": {"b": [1, {"c": None}') == {"a": {"b": [1, {"c": None}]}}
