"""Run a dataset through the real graph in each mode: builds (or reuses) the dataset's index,
then turns every mode into a harness ``RunMode``."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path

from config import Settings
from evaluators.answer_cost import answer_cost
from evaluators.datasets import Dataset, EvalQuery, corpus_hash
from evaluators.harness import QueryResult, RunMode
from graph.builder import build_graph
from graph.context import AgentContext, build_context
from graph.run import ask
from ingestion.indexing import index_chunks
from retrievers.factory import embedder_for
from retrievers.index import IndexError_, index_exists, open_index
from retrievers.tokenize import detect_language
from retrievers.types import Chunk

# Bump when what gets indexed changes (e.g. what text is embedded), so cached eval indexes rebuild.
INDEX_RECIPE = 3
INDEX_SETTINGS = ("embedder", "bm25_k1", "bm25_b", "bm25_title_boost", "hnsw_threshold", "hnsw_m")


def index_key(dataset: Dataset, settings: Settings) -> str:
    """Same corpus and same index-shaping settings -> same index folder, reused across runs."""
    shaping = {name: getattr(settings, name) for name in INDEX_SETTINGS}
    raw = corpus_hash(dataset) + json.dumps(shaping, sort_keys=True, default=str) + f"/{INDEX_RECIPE}"
    return hashlib.sha256(raw.encode()).hexdigest()[:12]


def corpus_chunks(dataset: Dataset) -> list[Chunk]:
    """One chunk per corpus passage, keyed by the dataset's own ids so gold ids match."""
    return [
        Chunk(
            id=doc.id,
            text=doc.text,
            source=f"{dataset.name}/{doc.id}",
            title=doc.title,
            heading_path=[doc.title] if doc.title else [],
            chunk_index=0,
            char_end=len(doc.text),
            language=detect_language(doc.title + " " + doc.text),
        )
        for doc in dataset.corpus
    ]


def prepare_index(dataset: Dataset, settings: Settings, index_dir: Path | None, progress: bool) -> Path:
    folder = index_dir or Path(".agentic_rag/eval") / f"{dataset.name}-{index_key(dataset, settings)}"
    if index_exists(folder):
        try:
            open_index(folder).close()
            return folder
        except IndexError_:
            pass  # damaged or old: rebuild below
    index_chunks(
        corpus_chunks(dataset),
        settings,
        embedder_for(settings),
        index_dir=folder,
        progress=progress,
        extra={"dataset": dataset.name, "corpus_hash": corpus_hash(dataset)},
    )
    return folder


def make_context(settings: Settings, folder: Path) -> AgentContext:
    """The evaluation measures the pipeline, so answers never come from the answer cache."""
    return build_context(settings.model_copy(update={"answer_cache": False}), index_dir=folder)


def mode_runner(app, context: AgentContext, mode: str) -> RunMode:
    settings = context.settings

    def run(query: EvalQuery) -> QueryResult:
        result = ask(app, query.question, context=context, mode=mode)
        cited = {c["chunk_id"] for c in result.citations}
        cited_texts = [p["text"] for p in result.passages if p["chunk_id"] in cited]
        cost = answer_cost(
            result,
            llm_judged=context.brain.name != "offline",
            in_per_million=settings.price_in_per_1m_tokens,
            out_per_million=settings.price_out_per_1m_tokens,
        )
        return QueryResult(
            query_id=query.id,
            ranked_ids=result.ranked_ids,
            answer=result.answer,
            context="\n".join(p["text"] for p in result.passages),
            cited_ids=[c["chunk_id"] for c in result.citations],
            cited_texts=cited_texts,
            insufficient=result.insufficient,
            model_calls=result.model_calls,
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
    folder = prepare_index(dataset, settings, index_dir, progress)
    context = make_context(settings, folder)
    app = build_graph()
    runners = {mode: mode_runner(app, context, mode) for mode in modes}
    return runners, context.retrievers.index.close
