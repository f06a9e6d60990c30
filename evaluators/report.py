"""Write an evaluation run's comparison: ``results.json``, ``results.md`` and ``results.png``.

One row per retrieval mode, one column per metric, like the comparison tables RAG articles publish.
The JSON keeps every number at full precision with the settings that produced it; the Markdown table
rounds to 3 decimals (latency to 0.1 ms); the chart shows the main quality metrics and latency.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

# Column order of the table; a metric not listed here goes last, alphabetically.
_FAMILIES = (
    "recall",
    "hit",
    "all_gold_recall",
    "precision",
    "mrr",
    "ndcg",
    "counterfactual_above_gold",
    "em",
    "f1",
    "answer_in_context",
    "answer_has_gold",
    "answer_chars_p50",
    "citation_precision",
    "insufficient_rate",
    "insufficient_rate_gold",
    "misled_rate",
    "hallucination_rate",
    "hallucination_rate_llm",
    "retrievals_per_q",
    "model_calls_per_q",
    "tokens_in_per_q",
    "tokens_out_per_q",
    "cost_per_1k_q",
    "latency_p50_ms",
    "latency_p95_ms",
)
_SECRET_KEY_RE = re.compile(r"api_key|secret|password|passwd|credential", re.IGNORECASE)
_URL_PASSWORD_RE = re.compile(r"(//[^:/@\s]+):[^@/\s]+@")


class ModeSummary(BaseModel):
    """Averaged metrics of one mode over a dataset; undefined metrics are simply absent."""

    mode: str
    metrics: dict[str, float]
    n_queries: int
    n_failed: int = Field(default=0, description="queries whose run raised; scored as empty results")


class ReportPaths(BaseModel):
    json_path: Path
    markdown_path: Path
    png_path: Path


def _metric_key(name: str) -> tuple[int, int, str]:
    family, _, k = name.partition("@")
    index = _FAMILIES.index(family) if family in _FAMILIES else len(_FAMILIES)
    return index, int(k) if k.isdigit() else 0, name


def ordered_metrics(summaries: Sequence[ModeSummary]) -> list[str]:
    """Every metric any mode reported, in table order (retrieval, answers, cost)."""
    names = {name for summary in summaries for name in summary.metrics}
    return sorted(names, key=_metric_key)


def format_value(name: str, value: float | None) -> str:
    if value is None or math.isnan(value):
        return "–"
    if name.startswith(("latency", "tokens_")):
        return f"{value:.1f}"
    return f"{value:.4f}" if name == "cost_per_1k_q" else f"{value:.3f}"


def markdown_table(summaries: Sequence[ModeSummary], metrics: Sequence[str] | None = None) -> str:
    """One GitHub Markdown table: modes as rows, metrics (all, or the ones named) as columns."""
    names = ordered_metrics(summaries) if metrics is None else list(metrics)
    header = ["mode", "n", "failed", *names]
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(["---"] + ["---:"] * (len(header) - 1)) + "|"]
    for summary in summaries:
        cells = [summary.mode, str(summary.n_queries), str(summary.n_failed)]
        cells += [format_value(name, summary.metrics.get(name)) for name in names]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def redact(value: Any) -> Any:
    """The settings snapshot without secrets: API keys and passwords (also inside URLs) are masked."""
    if isinstance(value, dict):
        return {
            key: "***" if _SECRET_KEY_RE.search(str(key)) and item else redact(item)
            for key, item in value.items()
        }
    if isinstance(value, list | tuple):
        return [redact(item) for item in value]
    if isinstance(value, str):
        return _URL_PASSWORD_RE.sub(r"\1:***@", value)
    return value


def _finite(value: float) -> float | None:
    """JSON has no NaN: an undefined number is written as null."""
    return None if math.isnan(value) or math.isinf(value) else value


def results_json(
    dataset_name: str,
    summaries: Sequence[ModeSummary],
    settings_snapshot: dict[str, Any] | None = None,
    timestamp: datetime | None = None,
    dataset_info: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The ``results.json`` payload: dataset, time, redacted settings, then every metric per mode."""
    return {
        "dataset": dataset_name,
        "timestamp": (timestamp or datetime.now(UTC)).isoformat(timespec="seconds"),
        "dataset_info": dataset_info or {},
        "settings": redact(settings_snapshot or {}),
        "modes": {
            summary.mode: {
                "n_queries": summary.n_queries,
                "n_failed": summary.n_failed,
                "metrics": {
                    name: _finite(summary.metrics[name]) for name in sorted(summary.metrics, key=_metric_key)
                },
            }
            for summary in summaries
        },
    }


def main_quality_metrics(names: Sequence[str]) -> list[str]:
    """The few quality metrics worth a bar each: Recall@5/@10 (or the smallest and largest k run),
    all-gold recall at the largest of those k, MRR@10, nDCG@10, the counterfactual-above-gold rate at
    that k (RGB sets with planted passages) and the answer metrics."""
    present = set(names)
    recall_ks = sorted(int(n.split("@")[1]) for n in present if n.startswith("recall@"))
    chosen = [k for k in recall_ks if k in (5, 10)] or sorted(
        {recall_ks[0], recall_ks[-1]} if recall_ks else []
    )
    wanted = [f"recall@{k}" for k in chosen]
    if chosen:
        wanted.append(f"all_gold_recall@{chosen[-1]}")
    wanted += [
        "mrr@10",
        "ndcg@10",
        f"counterfactual_above_gold@{chosen[-1]}" if chosen else "",
        "em",
        "f1",
        "answer_in_context",
        "answer_has_gold",
        "citation_precision",
        "hallucination_rate",
    ]
    return [name for name in wanted if name in present]


LOWER_IS_BETTER = ("hallucination_rate", "counterfactual_above_gold")
# Shown in the terminal's compact table beside the main quality metrics (``eval --wide``: every one).
COMPACT_EXTRAS = ("latency_p50_ms", "cost_per_1k_q")


def compact_metrics(summaries: Sequence[ModeSummary]) -> list[str]:
    """The columns a terminal can show: the main quality metrics, median latency and cost."""
    names = ordered_metrics(summaries)
    return main_quality_metrics(names) + [name for name in COMPACT_EXTRAS if name in names]


def direction_label(name: str) -> str:
    """The metric's name with the way it improves: ``recall@5 ↑``, ``hallucination_rate ↓``."""
    return f"{name} {'↓' if name.startswith(LOWER_IS_BETTER) else '↑'}"


def _ms_label(value: float) -> str:
    if math.isnan(value):
        return ""
    return f"{value:.1f}" if value < 10 else f"{value:.0f}"


def cost_label(summary: ModeSummary) -> str:
    """The mode's name with its tokens in/out per question and cost per 1,000 questions, when measured."""
    metrics = summary.metrics
    if "tokens_in_per_q" not in metrics:
        return summary.mode
    return (
        f"{summary.mode}\n{metrics['tokens_in_per_q']:.0f} in / {metrics.get('tokens_out_per_q', 0):.0f} out tok"
        f"\n${metrics.get('cost_per_1k_q', 0):.2f} / 1k q"
    )


def plot_results(path: Path, dataset_name: str, summaries: Sequence[ModeSummary]) -> Path:
    """Grouped bars (one group per quality metric, one bar per mode) beside a latency panel."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    metrics = main_quality_metrics(ordered_metrics(summaries))
    modes = [s.mode for s in summaries]
    colors = [f"C{i % 10}" for i in range(len(modes))]
    width = min(16.0, max(9.0, 0.3 * len(metrics) * max(len(modes), 2) + 2.0))
    fig = Figure(figsize=(width, 9.0), layout="constrained")
    FigureCanvasAgg(fig)
    ax_q, ax_l = fig.subplots(2, 1, height_ratios=[3, 2])

    bar_w = 0.8 / max(len(modes), 1)
    for i, summary in enumerate(summaries):
        xs = [j + (i - (len(modes) - 1) / 2) * bar_w for j in range(len(metrics))]
        values = [summary.metrics.get(name, math.nan) for name in metrics]
        bars = ax_q.bar(xs, values, bar_w, label=summary.mode, color=colors[i])
        if len(metrics) * len(modes) <= 40:
            ax_q.bar_label(bars, fmt="%.2f", fontsize=7, padding=1, rotation=90)
    ax_q.set_xticks(range(len(metrics)), [direction_label(name) for name in metrics], rotation=20, ha="right")
    ax_q.set_ylim(0, 1.25)
    ax_q.set_ylabel("score (↑ higher is better, ↓ lower is better)")
    ax_q.set_title("Quality")
    ax_q.grid(axis="y", alpha=0.3)
    if not metrics:
        ax_q.text(0.5, 0.5, "no quality metric", ha="center", va="center", transform=ax_q.transAxes)
    ax_q.legend(title="mode", fontsize=9, loc="upper left", ncols=min(len(modes), 6))

    p50 = [s.metrics.get("latency_p50_ms", math.nan) for s in summaries]
    p95 = [s.metrics.get("latency_p95_ms", math.nan) for s in summaries]
    xs = range(len(modes))
    bars50 = ax_l.bar([x - 0.2 for x in xs], p50, 0.4, label="p50", color=colors, alpha=0.55)
    bars95 = ax_l.bar([x + 0.2 for x in xs], p95, 0.4, label="p95", color=colors)
    ax_l.bar_label(bars50, labels=[_ms_label(v) for v in p50], fontsize=8, padding=1)
    ax_l.bar_label(bars95, labels=[_ms_label(v) for v in p95], fontsize=8, padding=1)
    positive = [v for v in p50 + p95 if v > 0 and not math.isnan(v)]
    if positive and max(positive) / min(positive) > 50:
        ax_l.set_yscale("log")
        ax_l.set_ylabel("ms per query (log scale)")
    else:
        ax_l.set_ylabel("ms per query")
    # long or many mode names ("hybrid_rerank (lexical)") would overlap when set horizontally
    crowded = sum(len(mode) for mode in modes) > 70
    ax_l.set_xticks(
        list(xs),
        [cost_label(s) for s in summaries],
        rotation=20 if crowded else 0,
        ha="right" if crowded else "center",
    )
    ax_l.set_title("Latency (light: p50, dark: p95) and cost per question")
    ax_l.grid(axis="y", alpha=0.3)

    n = max((s.n_queries for s in summaries), default=0)
    fig.suptitle(f"{dataset_name}: retrieval modes compared ({n} queries)", fontsize=13)
    fig.savefig(path, dpi=120)
    return path


def write_report(
    out_dir: Path,
    dataset_name: str,
    summaries: Sequence[ModeSummary],
    settings_snapshot: dict[str, Any] | None = None,
    *,
    timestamp: datetime | None = None,
    dataset_info: dict[str, Any] | None = None,
) -> ReportPaths:
    """Write ``results.json``, ``results.md`` and ``results.png`` into ``out_dir`` (created if needed)."""
    if not summaries:
        raise ValueError("no mode results to report")
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = ReportPaths(
        json_path=out_dir / "results.json",
        markdown_path=out_dir / "results.md",
        png_path=out_dir / "results.png",
    )
    payload = results_json(dataset_name, summaries, settings_snapshot, timestamp, dataset_info)
    paths.json_path.write_text(
        json.dumps(payload, ensure_ascii=False, indent=2, default=str) + "\n", encoding="utf-8"
    )
    paths.markdown_path.write_text(
        f"## {dataset_name}\n\n{markdown_table(summaries)}\n\nRun at {payload['timestamp']}.\n",
        encoding="utf-8",
    )
    plot_results(paths.png_path, dataset_name, summaries)
    return paths
