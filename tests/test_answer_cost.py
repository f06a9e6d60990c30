"""Hallucination rate, tokens and cost per question: the figures the evaluation adds beside quality."""

from __future__ import annotations

import pytest

from core.schemas import Passage, SentenceSupport
from core.trace import Decision, TraceEvent
from evaluators.answer_cost import answer_cost, offline_hallucination, price, token_counts
from evaluators.datasets import CorpusDoc, Dataset, EvalQuery
from evaluators.harness import QueryResult, summarise
from evaluators.report import format_value, markdown_table
from providers.tokens import count_tokens

ZH = [
    Passage(
        number=1, chunk_id="h#0", source="harvard.md", text="哈佛大学创建于1636年，位于马萨诸塞州剑桥市。"
    )
]
EN = [
    Passage(
        number=1,
        chunk_id="b#0",
        source="bm25.md",
        text="BM25 ranks documents by term frequency and inverse document frequency.",
    )
]


def test_supported_sentences_are_not_hallucinations() -> None:
    assert offline_hallucination("哈佛大学创建于1636年[1]。", ZH) == 0.0
    assert offline_hallucination("BM25 ranks documents by term frequency [1].", EN) == 0.0


def test_unsupported_or_uncited_claims_count_against_the_answer() -> None:
    zh = "哈佛大学创建于1636年[1]。该校的校训是追求真理与自由[1]。"  # the second sentence is not in the passage
    assert offline_hallucination(zh, ZH) == pytest.approx(0.5)
    en = "BM25 ranks documents by term frequency [1]. It was invented at Google in 2010."  # uncited claim
    assert offline_hallucination(en, EN) == pytest.approx(0.5)


def test_no_claim_means_undefined() -> None:
    assert offline_hallucination("根据现有资料无法确定。", ZH, insufficient=True) is None
    assert offline_hallucination("", EN) is None


def test_tokens_offline_count_one_answer_call_and_recorded_calls_win() -> None:
    answer = "BM25 ranks documents by term frequency [1]."
    offline_trace = [TraceEvent(node="generate", decision=Decision.ANSWERED)]
    tokens_in, tokens_out = token_counts("What is BM25?", EN, answer, offline_trace)
    assert tokens_in == count_tokens("What is BM25?\n\n[1] " + EN[0].text)
    assert tokens_out == count_tokens(answer)
    recorded = [
        TraceEvent(
            node="analyze_query", decision=Decision.ROUTED, model_calls=1, tokens_in=120, tokens_out=30
        )
    ]
    assert token_counts("What is BM25?", EN, answer, recorded) == (120, 30)
    assert price(1_000_000, 500_000, in_per_million=0.15, out_per_million=0.6) == pytest.approx(0.45)


def test_answer_cost_of_a_run_and_its_averages_in_the_report() -> None:
    run = {
        "question": "哈佛大学哪一年创建？",
        "answer": "哈佛大学创建于1636年[1]。该校的校训是追求真理与自由[1]。",
        "insufficient": False,
        "passages": ZH,
        "trace": [],
    }
    offline = answer_cost(**run, support=None)
    assert offline.hallucination == pytest.approx(0.5) and offline.hallucination_llm is None
    assert offline.cost_usd == 0.0  # no prices set: free, as offline runs are
    llm_verdicts = [SentenceSupport(sentence="x", cited=[1], supported=True, score=1.0)]
    judged = answer_cost(**run, support=llm_verdicts, in_per_million=1.0, out_per_million=2.0)
    assert judged.hallucination_llm == 0.0  # the second judge saw one supported sentence
    assert judged.cost_usd == pytest.approx((judged.tokens_in + 2 * judged.tokens_out) / 1e6)

    dataset = Dataset(
        name="tiny",
        language="zh",
        corpus=[CorpusDoc(id="h#0", title="哈佛", text=ZH[0].text)],
        queries=[EvalQuery(id="q1", question=run["question"], gold_ids=["h#0"], answers=["1636年"])],
    )
    result = QueryResult(
        query_id="q1", ranked_ids=["h#0"], answer=run["answer"], latency_ms=1.0, **judged.model_dump()
    )
    summary = summarise("agentic", dataset, [result], [5])
    metrics = summary.metrics
    assert metrics["hallucination_rate"] == pytest.approx(0.5)
    assert metrics["hallucination_rate_llm"] == 0.0
    assert metrics["tokens_in_per_q"] == judged.tokens_in
    assert metrics["cost_per_1k_q"] == pytest.approx(1000 * judged.cost_usd)
    table = markdown_table([summary])
    assert "hallucination_rate" in table and "tokens_in_per_q" in table and "cost_per_1k_q" in table
    assert format_value("cost_per_1k_q", 0.04512) == "0.0451"


def test_report_files_carry_the_cost_figures(tmp_path) -> None:
    from evaluators.report import ModeSummary, cost_label, write_report

    summary = ModeSummary(
        mode="agentic",
        n_queries=2,
        metrics={
            "f1": 0.5,
            "hallucination_rate": 0.25,
            "tokens_in_per_q": 812.0,
            "tokens_out_per_q": 95.5,
            "cost_per_1k_q": 0.18,
            "latency_p50_ms": 200.0,
            "latency_p95_ms": 300.0,
        },
    )
    assert cost_label(summary) == "agentic\n812 in / 96 out tok\n$0.18 / 1k q"
    paths = write_report(tmp_path, "tiny", [summary])
    table = paths.markdown_path.read_text(encoding="utf-8")
    assert "hallucination_rate" in table and "tokens_in_per_q" in table and "0.1800" in table
    assert paths.png_path.stat().st_size > 0
