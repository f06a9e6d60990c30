"""The comparison report and the mode-agnostic harness, end to end with small real BM25 modes."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest
from matplotlib.image import imread
from rank_bm25 import BM25Okapi

from core.tokenize import tokenize
from evaluators.datasets import CorpusDoc, Dataset, EvalQuery
from evaluators.harness import (
    QueryResult,
    RunMode,
    evaluate_mode,
    per_query_path,
    run_evaluation,
    score_query,
)
from evaluators.report import (
    ModeSummary,
    compact_metrics,
    main_quality_metrics,
    markdown_table,
    ordered_metrics,
    write_report,
)

# --- report ------------------------------------------------------------------------------------------

SUMMARIES = [
    ModeSummary(
        mode="keyword",
        n_queries=100,
        metrics={
            "ndcg@10": 0.61234,
            "recall@10": 0.8,
            "recall@5": 0.71,
            "latency_p95_ms": 12.345,
            "latency_p50_ms": 3.21,
            "model_calls_per_q": 0.0,
            "mrr@10": 0.55555,
        },
    ),
    ModeSummary(
        mode="agentic",
        n_queries=100,
        n_failed=2,
        metrics={
            "recall@5": 0.9,
            "recall@10": 0.95,
            "all_gold_recall@10": 0.5,
            "ndcg@10": 0.8,
            "mrr@10": 0.7,
            "em": 0.4,
            "f1": 0.5512,
            "latency_p50_ms": 1500.0,
            "latency_p95_ms": 4200.55,
            "model_calls_per_q": 3.25,
        },
    ),
]


def test_metrics_are_ordered_retrieval_then_answers_then_cost() -> None:
    assert ordered_metrics(SUMMARIES) == [
        "recall@5",
        "recall@10",
        "all_gold_recall@10",
        "mrr@10",
        "ndcg@10",
        "em",
        "f1",
        "model_calls_per_q",
        "latency_p50_ms",
        "latency_p95_ms",
    ]


def test_markdown_table_has_modes_as_rows_and_rounds() -> None:
    lines = markdown_table(SUMMARIES).splitlines()
    assert lines[0] == (
        "| mode | n | failed | recall@5 | recall@10 | all_gold_recall@10 | mrr@10 | ndcg@10 | em | f1 "
        "| model_calls_per_q | latency_p50_ms | latency_p95_ms |"
    )
    assert (
        lines[2] == "| keyword | 100 | 0 | 0.710 | 0.800 | – | 0.556 | 0.612 | – | – | 0.000 | 3.2 | 12.3 |"
    )
    assert lines[3] == (
        "| agentic | 100 | 2 | 0.900 | 0.950 | 0.500 | 0.700 | 0.800 | 0.400 | 0.551 | 3.250 | 1500.0 | 4200.6 |"
    )


def test_main_quality_metrics_pick_recall_at_5_and_10() -> None:
    names = ["recall@1", "recall@5", "recall@10", "recall@20", "all_gold_recall@10", "hit@5", "mrr@10", "f1"]
    assert main_quality_metrics(names) == ["recall@5", "recall@10", "all_gold_recall@10", "mrr@10", "f1"]
    assert main_quality_metrics(["recall@1", "recall@3", "recall@50"]) == ["recall@1", "recall@50"]


def test_write_report_writes_json_markdown_and_png(tmp_path: Path) -> None:
    when = datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC)
    settings = {"top_k": 10, "openai_api_key": "sk-secret", "postgres_url": "postgresql://app:hunter2@db/rag"}
    paths = write_report(tmp_path / "out", "hotpotqa_hipporag100", SUMMARIES, settings, timestamp=when)

    payload = json.loads(paths.json_path.read_text(encoding="utf-8"))
    assert payload["dataset"] == "hotpotqa_hipporag100"
    assert payload["timestamp"] == "2025-01-02T03:04:05+00:00"
    assert payload["settings"] == {
        "top_k": 10,
        "openai_api_key": "***",
        "postgres_url": "postgresql://app:***@db/rag",
    }
    assert payload["modes"]["agentic"]["metrics"]["model_calls_per_q"] == 3.25
    assert payload["modes"]["agentic"]["n_failed"] == 2
    assert payload["modes"]["keyword"]["metrics"]["recall@5"] == 0.71

    markdown = paths.markdown_path.read_text(encoding="utf-8")
    assert markdown.startswith("## hotpotqa_hipporag100\n")
    assert markdown_table(SUMMARIES) in markdown

    image = imread(paths.png_path)
    assert image.shape[0] >= 600 and image.shape[1] >= 900  # a readable figure, not an empty canvas
    assert image[..., :3].std() > 0.05


def test_report_needs_at_least_one_mode(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="no mode results"):
        write_report(tmp_path, "x", [])


def test_undefined_numbers_are_null_in_json(tmp_path: Path) -> None:
    summary = ModeSummary(mode="m", n_queries=1, metrics={"recall@5": math.nan, "latency_p50_ms": 1.0})
    paths = write_report(tmp_path, "x", [summary])
    assert json.loads(paths.json_path.read_text())["modes"]["m"]["metrics"]["recall@5"] is None


# --- harness: small real modes over small corpora ----------------------------------------------------

FILLER = [
    "Glorpa is a species of moth with silver wings.",
    "The Harrowgate ferry crosses the grey estuary twice a day.",
    "Wenlow cheese is aged in limestone caves.",
    "The Dunmere orchestra performs in an open-air amphitheatre.",
    "Ketterby wool is dyed with walnut husks.",
    "Saltreach lighthouse guides ships past the reef.",
    "The Ambergate clock tower chimes at noon.",
    "Yarrowmere lake freezes every winter.",
    "Fenwick pottery uses a pale blue glaze.",
    "The Holloway tram runs along the river embankment.",
    "Brackwater marsh is home to rare herons.",
]
EN_DOCS = [
    ("e00", "Zorbic", "Zorbic is a blue mineral mined in Quellor."),
    ("e01", "Quellor", "Quellor is a mountain kingdom whose capital is Varnis."),
    ("e02", "Plimth", "Plimth is a festival founded by the poet Oradel Vance."),
    ("e03", "Oradel Vance", "Oradel Vance was born in the harbour town of Mirrowick."),
    ("e04", "Tessaly Bridge", "The Tessaly Bridge was designed by the engineer Corvin Hale."),
    ("e05", "Corvin Hale", "Corvin Hale studied at Brenmoor Academy."),
    ("e06", "Velmar Chapel", "The Velmar Chapel holds a mural by Idris Fenn."),
    ("e07", "Idris Fenn", "Idris Fenn worked in tempera on plaster."),
    ("e08", "Lantern Fresco fair", "The Lantern Fresco is a street fair held every spring."),
] + [(f"e{i + 9:02d}", text.split()[0] if i % 2 else text.split()[1], text) for i, text in enumerate(FILLER)]

EN_QUERIES = [
    # Two-hop questions: each hop's words occur only in its own passage.
    EvalQuery(
        id="q1",
        question="In which capital city is the kingdom where zorbic is mined?",
        answers=["Varnis"],
        gold_ids=["e00", "e01"],
    ),
    EvalQuery(
        id="q2",
        question="Where was the poet who founded Plimth born?",
        answers=["Mirrowick"],
        gold_ids=["e02", "e03"],
    ),
    EvalQuery(
        id="q3",
        question="Which academy did the engineer of the Tessaly Bridge study at?",
        answers=["Brenmoor Academy"],
        gold_ids=["e04", "e05"],
    ),
    # A question whose words only match a distractor: the gold passages are never retrieved.
    EvalQuery(
        id="q4", question="Who painted the Lantern Fresco?", answers=["Idris Fenn"], gold_ids=["e06", "e07"]
    ),
]

ZH_DOCS = [
    ("c0", "重庆", "重庆被称为山城，也是著名的火锅之都。"),
    ("c1", "哈尔滨", "哈尔滨每年冬天举办冰雪大世界。"),
    ("c2", "景德镇", "景德镇以瓷器闻名，被誉为瓷都。"),
    ("c3", "杭州", "杭州的西湖风景优美。"),
    ("c4", "苏州", "苏州园林是世界文化遗产。"),
    ("c5", "西安", "西安有兵马俑。"),
    ("c6", "成都", "成都以大熊猫基地闻名。"),
]
ZH_QUERIES = [
    EvalQuery(id="z1", question="哪座城市被称为山城？", answers=["重庆"], gold_ids=["c0"]),
    EvalQuery(id="z2", question="冰雪大世界在哪里举办？", answers=["哈尔滨"], gold_ids=["c1"]),
    EvalQuery(id="z3", question="哪里被誉为瓷都？", answers=["景德镇"], gold_ids=["c2"]),
    EvalQuery(id="z4", question="火星上有没有液态水？", answers=["不确定"], gold_ids=["c5"]),
]


def make_dataset(
    name: str, docs: list[tuple[str, str, str]], queries: list[EvalQuery], language: str
) -> Dataset:
    corpus = [CorpusDoc(id=i, title=title, text=text) for i, title, text in docs]
    return Dataset(name=name, corpus=corpus, queries=queries, language=language)  # type: ignore[arg-type]


def bm25_mode(dataset: Dataset, *, with_answer: bool = False, k: int = 5) -> RunMode:
    """A real keyword retriever over the corpus: passages with a positive BM25 score, best first.

    With ``with_answer`` it also answers extractively: the title of the top passage, citing it."""
    docs = dataset.corpus
    index = BM25Okapi([tokenize(f"{d.title} {d.text}") for d in docs])

    def run(query: EvalQuery) -> QueryResult:
        scores = index.get_scores(tokenize(query.question))
        order = sorted((i for i in range(len(docs)) if scores[i] > 0), key=lambda i: -scores[i])[:k]
        top = [docs[i] for i in order]
        if not with_answer:
            return QueryResult(query_id=query.id, ranked_ids=[d.id for d in top], latency_ms=0.5)
        return QueryResult(
            query_id=query.id,
            ranked_ids=[d.id for d in top],
            answer=top[0].title if top else None,
            context="\n".join(d.text for d in top[:3]),
            cited_ids=[top[0].id] if top else [],
            cited_texts=[top[0].text] if top else [],
            insufficient=not top,
            model_calls=1,
            latency_ms=2.0,
        )

    return run


def oracle_mode(dataset: Dataset) -> RunMode:
    texts = {d.id: d.text for d in dataset.corpus}

    def run(query: EvalQuery) -> QueryResult:
        return QueryResult(
            query_id=query.id,
            ranked_ids=list(query.gold_ids),
            answer=query.answers[0],
            context=" ".join(texts[g] for g in query.gold_ids),
            cited_ids=list(query.gold_ids),
            cited_texts=[texts[g] for g in query.gold_ids],
            model_calls=2,
            latency_ms=10.0,
        )

    return run


def failing_on(query_id: str, inner: RunMode) -> RunMode:
    def run(query: EvalQuery) -> QueryResult:
        if query.id == query_id:
            raise RuntimeError("index shard unavailable")
        return inner(query)

    return run


def test_bm25_mode_on_a_multi_hop_english_set() -> None:
    dataset = make_dataset("tiny_multihop_en", EN_DOCS, EN_QUERIES, "en")
    summary, results = evaluate_mode("keyword", bm25_mode(dataset), dataset, [1, 2, 5], progress=False)

    # q1-q3: both hops retrieved in the top 2 (in some order); q4 retrieves only the distractor.
    assert [sorted(r.ranked_ids) for r in results] == [
        ["e00", "e01"],
        ["e02", "e03"],
        ["e04", "e05"],
        ["e08"],
    ]
    metrics = summary.metrics
    assert metrics["recall@1"] == pytest.approx((0.5 * 3 + 0) / 4)
    assert metrics["recall@2"] == metrics["recall@5"] == pytest.approx(0.75)
    assert metrics["hit@1"] == pytest.approx(0.75)
    assert metrics["all_gold_recall@1"] == 0.0  # multi-hop set: both hops are needed
    assert metrics["all_gold_recall@2"] == pytest.approx(0.75)
    assert metrics["mrr@10"] == pytest.approx(0.75)
    assert metrics["ndcg@10"] == pytest.approx(0.75)  # perfect on q1-q3, zero on q4
    assert metrics["latency_p50_ms"] == metrics["latency_p95_ms"] == 0.5
    assert metrics["model_calls_per_q"] == 0.0
    assert "em" not in metrics  # the mode produced no answers, so no answer metrics
    assert summary.n_queries == 4 and summary.n_failed == 0


def test_bm25_mode_with_extractive_answers_on_a_chinese_set() -> None:
    dataset = make_dataset("tiny_zh", ZH_DOCS, ZH_QUERIES, "zh")
    summary, results = evaluate_mode(
        "keyword_answer", bm25_mode(dataset, with_answer=True), dataset, [1, 3], progress=False
    )

    assert [r.ranked_ids[:1] for r in results] == [["c0"], ["c1"], ["c2"], []]
    metrics = summary.metrics
    assert "all_gold_recall@1" not in metrics  # one gold passage per question: not multi-hop
    assert metrics["recall@1"] == metrics["mrr@10"] == metrics["ndcg@10"] == pytest.approx(0.75)
    assert metrics["em"] == metrics["f1"] == pytest.approx(0.75)  # three titles right, one abstention
    assert metrics["answer_in_context"] == pytest.approx(0.75)
    assert metrics["citation_precision"] == 1.0  # the abstention cites nothing and is left out
    assert metrics["insufficient_rate"] == pytest.approx(0.25)
    assert metrics["model_calls_per_q"] == 1.0


def test_answer_length_gold_in_answer_and_searches_per_question() -> None:
    """Hand-computed: answers 重庆 / 哈尔滨 / 景德镇 / None -> lengths 2, 3, 3 -> median 3; the titles are
    the gold answers of z1-z3 and z4 has no answer (0.0): 3/4. Searches 1, 1, 2, 3 -> 1.75 per question."""
    dataset = make_dataset("tiny_zh", ZH_DOCS, ZH_QUERIES, "zh")
    inner = bm25_mode(dataset, with_answer=True)
    searches = {"z1": 1, "z2": 1, "z3": 2, "z4": 3}

    def run(query: EvalQuery) -> QueryResult:
        return inner(query).model_copy(update={"retrievals": searches[query.id]})

    summary, _ = evaluate_mode("keyword_answer", run, dataset, [1, 5], progress=False)
    assert summary.metrics["answer_has_gold"] == pytest.approx(0.75)
    assert summary.metrics["answer_chars_p50"] == 3.0
    assert summary.metrics["retrievals_per_q"] == pytest.approx(1.75)
    # z1-z3 have their gold passage in the top 5 and were answered: never "insufficient" there
    assert summary.metrics["insufficient_rate_gold@5"] == 0.0


def test_run_evaluation_writes_every_file_and_survives_a_failing_mode(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dataset = make_dataset("tiny_multihop_en", EN_DOCS, EN_QUERIES, "en")
    modes: dict[str, Callable[[EvalQuery], QueryResult]] = {
        "keyword": bm25_mode(dataset),
        "oracle": oracle_mode(dataset),
        "flaky keyword": failing_on("q2", bm25_mode(dataset)),
    }
    out = tmp_path / "run"
    summaries = run_evaluation(dataset, modes, [2, 5], out, settings_snapshot={"top_k": 5}, progress=True)
    captured = capsys.readouterr()

    by_mode = {s.mode: s for s in summaries}
    assert by_mode["oracle"].metrics["recall@2"] == 1.0
    assert by_mode["oracle"].metrics["em"] == by_mode["oracle"].metrics["f1"] == 1.0
    assert by_mode["oracle"].metrics["citation_precision"] == 1.0
    assert by_mode["oracle"].metrics["answer_in_context"] == 1.0
    assert by_mode["oracle"].metrics["insufficient_rate"] == 0.0
    assert by_mode["oracle"].metrics["model_calls_per_q"] == 2.0
    flaky = by_mode["flaky keyword"]
    assert flaky.n_failed == 1 and flaky.n_queries == 4
    assert flaky.metrics["recall@5"] == pytest.approx(0.5)  # the failed query scores as an empty result

    assert {p.name for p in out.iterdir()} == {
        "results.json",
        "results.md",
        "results.png",
        "per_query_keyword.jsonl",
        "per_query_oracle.jsonl",
        "per_query_flaky_keyword.jsonl",
    }
    payload = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert list(payload["modes"]) == ["keyword", "oracle", "flaky keyword"]
    assert payload["dataset_info"]["multi_hop"] is True
    assert payload["dataset_info"]["ks"] == [2, 5]
    assert payload["settings"] == {"top_k": 5}
    assert payload["modes"]["oracle"]["metrics"]["all_gold_recall@2"] == 1.0

    lines = per_query_path(out, "flaky keyword").read_text(encoding="utf-8").splitlines()
    records = [json.loads(line) for line in lines]
    assert [r["query_id"] for r in records] == ["q1", "q2", "q3", "q4"]
    assert records[1]["error"] == "RuntimeError: index shard unavailable"
    assert records[1]["metrics"]["recall@5"] == 0.0
    assert records[0]["metrics"]["recall@5"] == 1.0 and records[0]["question"].startswith("In which capital")

    assert markdown_table(summaries, compact_metrics(summaries)) in captured.out  # the main metrics
    assert "recall@2" not in captured.out and "--wide prints them all" in captured.out
    assert "flaky keyword" in captured.err  # progress bars go to stderr
    assert imread(out / "results.png").shape[1] >= 900


def test_a_mode_answering_the_wrong_query_is_a_failure() -> None:
    dataset = make_dataset("tiny_zh", ZH_DOCS, ZH_QUERIES, "zh")

    def confused(query: EvalQuery) -> QueryResult:
        return QueryResult(query_id="z1", ranked_ids=["c0"], latency_ms=1.0)

    summary, results = evaluate_mode("confused", confused, dataset, [1], progress=False)
    assert summary.n_failed == 3
    assert results[1].error == "ValueError: mode answered query 'z1' when asked 'z2'"
    assert summary.metrics["recall@1"] == pytest.approx(0.25)


def test_ks_must_be_positive_integers() -> None:
    dataset = make_dataset("tiny_zh", ZH_DOCS, ZH_QUERIES, "zh")
    with pytest.raises(ValueError, match="positive integers"):
        evaluate_mode("m", oracle_mode(dataset), dataset, [0, 5], progress=False)
    with pytest.raises(ValueError, match="no modes"):
        run_evaluation(dataset, {}, [5], Path("unused"))


def test_planted_counterfactuals_are_scored_per_k_and_only_where_planted() -> None:
    planted = EvalQuery(
        id="zh_fact-0",
        question="香港第六届立法会选举有多少个议席？",
        answers=["70"],
        gold_ids=["true-1"],
        meta={"counterfactual_ids": ["zh_fact-0::counterfactual-0"], "fakeanswer": "170"},
    )
    result = QueryResult(
        query_id="zh_fact-0",
        ranked_ids=["other", "zh_fact-0::counterfactual-0", "true-1"],
        answer="共有170个议席",
        latency_ms=1.0,
    )
    scores = score_query(planted, result, [1, 5], multi_hop=False, answer_metrics=True)
    assert scores["counterfactual_above_gold@1"] == 0.0  # rank 1 is neither
    assert scores["counterfactual_above_gold@5"] == 1.0  # the wrong passage is read before the true one
    assert scores["misled_rate"] == 1.0
    plain = planted.model_copy(update={"meta": {}})
    assert not any(
        name.startswith("counterfactual")
        for name in score_query(plain, result, [5], multi_hop=False, answer_metrics=False)
    )
