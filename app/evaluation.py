"""Run an evaluation dataset through the real graph in each mode: every mode becomes a harness ``RunMode``
over the dataset's index (built or reused by ``evaluators.modes``)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from app.wiring import build_context
from config import Settings
from evaluators.answer_cost import answer_cost
from evaluators.datasets import Dataset, EvalQuery
from evaluators.harness import QueryResult, RunMode
from evaluators.metrics import retrievals_in_trace
from evaluators.modes import prepare_index
from graph.builder import build_graph
from graph.run import ask
from nodes.context import AgentContext


def make_context(settings: Settings, folder: Path) -> AgentContext:
    """The evaluation measures the pipeline, so answers never come from the answer cache."""
    return build_context(settings.model_copy(update={"answer_cache": False}), index_dir=folder)


def mode_runner(app, context: AgentContext, mode: str) -> RunMode:
    settings = context.settings

    def run(query: EvalQuery) -> QueryResult:
        result = ask(app, query.question, context=context, mode=mode)
        cited = {c.chunk_id for c in result.citations}
        cited_texts = [p.text for p in result.passages if p.chunk_id in cited]
        cost = answer_cost(
            question=result.standalone_question or result.question,
            answer=result.answer,
            insufficient=result.insufficient,
            passages=result.passages,
            support=result.support if context.brain.name != "offline" else None,
            trace=result.trace,
            in_per_million=settings.price_in_per_1m_tokens,
            out_per_million=settings.price_out_per_1m_tokens,
        )
        return QueryResult(
            query_id=query.id,
            ranked_ids=result.ranked_ids,
            answer=result.answer,
            context="\n".join(p.text for p in result.passages),
            cited_ids=[c.chunk_id for c in result.citations],
            cited_texts=cited_texts,
            insufficient=result.insufficient,
            model_calls=result.model_calls,
            retrievals=retrievals_in_trace(result.trace),
            latency_ms=result.latency_ms,
            trace=result.trace_line(),
            **cost.model_dump(),
        )

    return run


def build_modes(
    dataset: Dataset,
    settings: Settings,
    modes: list[str],
    *,
    index_dir: Path | None = None,
    progress: bool = True,
) -> tuple[dict[str, RunMode], Callable[[], None]]:
    """RunModes for the harness plus a close() for the opened index."""
    settings, folder = prepare_index(dataset, settings, index_dir, progress)
    context = make_context(settings, folder)
    app = build_graph()
    runners = {mode: mode_runner(app, context, mode) for mode in modes}
    return runners, context.retrievers.index.close
