"""Run retrieval modes over an evaluation set and compare them in one table.

A mode is any callable from an :class:`EvalQuery` to a :class:`QueryResult`; the harness knows nothing
about retrievers or the graph. It scores each query, averages per mode, records a query that raises as
a failure (scored as an empty result, so a crashing mode cannot look better than it is), and writes the
comparison (``results.json``/``.md``/``.png``) plus one ``per_query_<mode>.jsonl`` per mode.
"""

from __future__ import annotations

import json
import logging
import re
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field
from tqdm import tqdm

from evaluators import metrics as m
from evaluators.datasets import Dataset, EvalQuery, corpus_hash, is_multi_hop
from evaluators.report import ModeSummary, compact_metrics, markdown_table, ordered_metrics, write_report

logger = logging.getLogger(__name__)

RANK_CUTOFF = 10  # k of mrr@10 and ndcg@10
GOLD_IN_TOP = 5  # insufficient_rate_gold@5: "insufficient" although a gold passage is in the top 5


class QueryResult(BaseModel):
    """What one mode produced for one query."""

    query_id: str
    ranked_ids: list[str]
    answer: str | None = None
    context: str = ""
    cited_ids: list[str] = Field(default_factory=list)
    cited_texts: list[str] = Field(default_factory=list)
    insufficient: bool = False
    model_calls: int = 0
    retrievals: int | None = Field(default=None, description="searches run for this query (from the trace)")
    latency_ms: float
    hallucination: float | None = Field(default=None, description="unsupported share of claim sentences")
    hallucination_llm: float | None = Field(default=None, description="the same, judged by the LLM")
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float = 0.0
    trace: str = Field(default="", description="the graph's path and decisions, for failure analysis")
    error: str | None = Field(default=None, description="set by the harness when the mode raised")


RunMode = Callable[[EvalQuery], QueryResult]


def _check_ks(ks: Sequence[int]) -> list[int]:
    if not ks or any(isinstance(k, bool) or not isinstance(k, int) or k < 1 for k in ks):
        raise ValueError(f"ks must be a non-empty list of positive integers, got {list(ks)!r}")
    return sorted(set(ks))


def score_query(
    query: EvalQuery,
    result: QueryResult,
    ks: Sequence[int],
    *,
    multi_hop: bool,
    answer_metrics: bool,
) -> dict[str, float | None]:
    """Every per-query metric by name; ``None`` marks one that is undefined for this query."""
    ranked, gold = result.ranked_ids, query.gold_ids
    scores: dict[str, float | None] = {}
    for k in ks:
        scores[f"recall@{k}"] = m.recall_at_k(ranked, gold, k)
        scores[f"hit@{k}"] = m.hit_at_k(ranked, gold, k)
        if multi_hop:
            scores[f"all_gold_recall@{k}"] = m.all_gold_recall_at_k(ranked, gold, k)
    planted = query.meta.get("counterfactual_ids") or []
    if planted:
        for k in ks:
            scores[f"counterfactual_above_gold@{k}"] = m.counterfactual_above_gold_at_k(
                ranked, gold, planted, k
            )
    scores[f"mrr@{RANK_CUTOFF}"] = m.mrr_at_k(ranked, gold, RANK_CUTOFF)
    scores[f"ndcg@{RANK_CUTOFF}"] = m.ndcg_at_k(ranked, gold, RANK_CUTOFF)
    if answer_metrics:
        answer = result.answer or ""
        scores["em"] = m.exact_match(answer, query.answers)
        scores["f1"] = m.token_f1(answer, query.answers)
        scores["answer_in_context"] = m.answer_in_context(result.context, query.answers)
        scores["citation_precision"] = m.citation_precision(
            result.cited_ids, gold, result.cited_texts, query.answers
        )
        scores["answer_has_gold"] = m.answer_has_gold(answer, query.answers)
        scores["insufficient_rate"] = 1.0 if result.insufficient else 0.0
        if m.hit_at_k(ranked, gold, GOLD_IN_TOP):
            scores[f"insufficient_rate_gold@{GOLD_IN_TOP}"] = scores["insufficient_rate"]
        if query.meta.get("fakeanswer"):
            scores["misled_rate"] = m.misled(answer, query.answers, query.meta["fakeanswer"])
        scores["hallucination_rate"] = result.hallucination
        scores["hallucination_rate_llm"] = result.hallucination_llm
    return scores


def summarise(
    mode_name: str, dataset: Dataset, results: Sequence[QueryResult], ks: Sequence[int]
) -> ModeSummary:
    """Average the per-query metrics (undefined ones left out) and add latency and model-call cost."""
    ks = _check_ks(ks)
    queries = {query.id: query for query in dataset.queries}
    unknown = [r.query_id for r in results if r.query_id not in queries]
    if unknown:
        raise ValueError(f"results for queries not in {dataset.name!r}: {unknown[:5]}")
    multi_hop = is_multi_hop(dataset)
    answer_metrics = dataset.has_answers and any(r.answer is not None for r in results if r.error is None)
    per_query = [
        score_query(queries[r.query_id], r, ks, multi_hop=multi_hop, answer_metrics=answer_metrics)
        for r in results
    ]
    averaged: dict[str, float] = {}
    for name in dict.fromkeys(name for scores in per_query for name in scores):
        value = m.mean_defined(scores.get(name) for scores in per_query)
        if value is not None:
            averaged[name] = value
    latencies = [r.latency_ms for r in results]
    for p in (50, 95):
        value = m.percentile(latencies, p)
        if value is not None:
            averaged[f"latency_p{p}_ms"] = value
    calls = m.mean_defined(float(r.model_calls) for r in results)
    if calls is not None:
        averaged["model_calls_per_q"] = calls
    if answer_metrics:
        lengths = [len(r.answer) for r in results if r.answer is not None and r.error is None]
        p50 = m.percentile(lengths, 50)
        if p50 is not None:
            averaged["answer_chars_p50"] = p50
    searches = m.mean_defined(float(r.retrievals) for r in results if r.retrievals is not None)
    if searches is not None:
        averaged["retrievals_per_q"] = searches
    if results:
        averaged["tokens_in_per_q"] = sum(r.tokens_in for r in results) / len(results)
        averaged["tokens_out_per_q"] = sum(r.tokens_out for r in results) / len(results)
        averaged["cost_per_1k_q"] = 1000 * sum(r.cost_usd for r in results) / len(results)
    return ModeSummary(
        mode=mode_name,
        metrics=averaged,
        n_queries=len(results),
        n_failed=sum(r.error is not None for r in results),
    )


def _run_one(run: RunMode, query: EvalQuery) -> QueryResult:
    """Call the mode; an exception or a malformed result becomes a failed, empty result."""
    start = time.perf_counter()
    try:
        result = run(query)
        if not isinstance(result, QueryResult):
            result = QueryResult.model_validate(result)
        if result.query_id != query.id:
            raise ValueError(f"mode answered query {result.query_id!r} when asked {query.id!r}")
        return result
    except Exception as exc:  # any failure of the mode is recorded, never fatal to the run
        elapsed = (time.perf_counter() - start) * 1000
        return QueryResult(
            query_id=query.id, ranked_ids=[], latency_ms=elapsed, error=f"{type(exc).__name__}: {exc}"
        )


def evaluate_mode(
    mode_name: str,
    run: RunMode,
    dataset: Dataset,
    ks: list[int],
    *,
    progress: bool = True,
) -> tuple[ModeSummary, list[QueryResult]]:
    """Run one mode over every query of the dataset and average its metrics."""
    ks = _check_ks(ks)
    if not dataset.queries:
        raise ValueError(f"dataset {dataset.name!r} has no queries")
    results: list[QueryResult] = []
    for query in tqdm(dataset.queries, desc=mode_name, unit="q", file=sys.stderr, disable=not progress):
        result = _run_one(run, query)
        if result.error is not None:
            logger.warning("mode %s failed on query %s: %s", mode_name, query.id, result.error)
        results.append(result)
    summary = summarise(mode_name, dataset, results, ks)
    if summary.n_failed:
        logger.warning("mode %s: %d of %d queries failed", mode_name, summary.n_failed, summary.n_queries)
    return summary, results


def per_query_path(out_dir: Path, mode_name: str) -> Path:
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", mode_name).strip("._") or "mode"
    return out_dir / f"per_query_{safe}.jsonl"


def write_per_query(path: Path, dataset: Dataset, results: Sequence[QueryResult], ks: Sequence[int]) -> Path:
    """One JSON line per query: the question and gold data beside what the mode returned and its scores."""
    queries = {query.id: query for query in dataset.queries}
    multi_hop = is_multi_hop(dataset)
    answer_metrics = dataset.has_answers and any(r.answer is not None for r in results if r.error is None)
    with path.open("w", encoding="utf-8") as handle:
        for result in results:
            query = queries[result.query_id]
            record: dict[str, Any] = {
                "question": query.question,
                "gold_ids": query.gold_ids,
                "answers": query.answers,
                **result.model_dump(),
                "metrics": score_query(query, result, ks, multi_hop=multi_hop, answer_metrics=answer_metrics),
            }
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")
    return path


def run_evaluation(
    dataset: Dataset,
    modes: dict[str, RunMode],
    ks: list[int],
    out_dir: Path,
    *,
    settings_snapshot: dict[str, Any] | None = None,
    progress: bool = True,
    wide: bool = False,
) -> list[ModeSummary]:
    """Evaluate every mode, write the report files and per-query results, print the Markdown table: the
    main metrics (every one with ``wide``; the report files always hold every one)."""
    if not modes:
        raise ValueError("no modes to evaluate")
    ks = _check_ks(ks)
    out_dir.mkdir(parents=True, exist_ok=True)
    summaries: list[ModeSummary] = []
    for mode_name, run in modes.items():
        summary, results = evaluate_mode(mode_name, run, dataset, ks, progress=progress)
        write_per_query(per_query_path(out_dir, mode_name), dataset, results, ks)
        summaries.append(summary)
    dataset_info = {
        "language": dataset.language,
        "n_docs": len(dataset.corpus),
        "n_queries": len(dataset.queries),
        "corpus_hash": corpus_hash(dataset),
        "multi_hop": is_multi_hop(dataset),
        "ks": ks,
    }
    write_report(out_dir, dataset.name, summaries, settings_snapshot, dataset_info=dataset_info)
    shown = None if wide else compact_metrics(summaries)
    print(f"\n## {dataset.name}\n\n{markdown_table(summaries, shown)}\n")
    hidden = len(ordered_metrics(summaries)) - len(shown or [])
    if shown is not None and hidden > 0:
        print(f"({hidden} more metrics in {out_dir / 'results.md'}; --wide prints them all)\n")
    return summaries
