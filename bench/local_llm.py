"""The LLM path with a real local model: quality, latency and cost per question, per role choice.

Not a test: prints one Markdown row per configuration (docs/benchmarks.md and docs/evaluation.md quote
them). It starts ``python main.py llm serve --model MODEL`` itself on a free port, builds (or reuses) the
evaluation set's index like ``python main.py eval``, and asks the first ``--limit`` questions through the
real graph once per configuration, streaming like the session does.

Configurations are ``AGENTIC_RAG_LLM_ROLES`` values (``write``, ``write,judge``, ``all``) or
``offline`` (no model). Per configuration:

- has_gold: the answer contains an acceptable answer (evaluators.metrics.answer_has_gold);
- cited_precision: share of the answer's claim sentences whose cited passages support them, judged by
  the offline support check with the multilingual embedder (the model never judges itself);
- unsupported_accepted: answers written by the model and kept that still hold an unsupported claim;
- insufficient: share answered "cannot be determined";
- s_p50 / s_p95: seconds per question; first_token_p50: seconds to the first streamed answer token
  (questions whose answer the model streamed);
- calls/q, prompt tokens per call, completion tokens per question (tiktoken cl100k, as the trace counts);
- capped: replies the server stopped at the step's max_tokens; runaway: streamed answers cut where they
  began to loop or copy out the passages (providers/brain/runaway.py); fallbacks: steps the offline role took
  over; attached / removed: citations the project attached and sentences it removed.

    nice -n 10 python bench/local_llm.py rgb_en_fact --limit 10 --model qwen2.5-coder-0.5b --configs write all
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from app.evaluation import make_context  # noqa: E402
from cli.session import answer_token  # noqa: E402
from config import load_settings  # noqa: E402
from evaluators import metrics  # noqa: E402
from evaluators.datasets import load_dataset, resolve_dataset_dir  # noqa: E402
from evaluators.modes import prepare_index  # noqa: E402
from graph.builder import build_graph  # noqa: E402
from graph.run import build_input, question_budget_for, result_from_state, run_config  # noqa: E402
from providers.brain import offline_brain  # noqa: E402
from providers.brain.budget import question_budget  # noqa: E402
from retrievers.factory import embedder_for  # noqa: E402


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_server(model: str, threads: int) -> tuple[subprocess.Popen, str]:
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, str(ROOT / "main.py"), "llm", "serve", "--model", model, "--port", str(port)]
        + (["--threads", str(threads)] if threads else []),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base_url = f"http://127.0.0.1:{port}/v1"
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"llm serve exited with {process.returncode}")
        try:
            urllib.request.urlopen(f"{base_url}/models", timeout=2).read()
            return process, base_url
        except OSError:
            time.sleep(1)
    process.kill()
    raise SystemExit("llm serve did not start within 300 s")


def ask_streaming(app: Any, context: Any, question: str) -> tuple[Any, float | None]:
    """(AskResult, seconds to the first streamed answer token or None), the way the session asks."""
    config = run_config(context, None)
    started = time.perf_counter()
    first: float | None = None
    final: dict[str, Any] = {}
    with question_budget(question_budget_for(context)) as budget:
        for mode, payload in app.stream(
            build_input(question, None, None),
            config=config,
            context=context,
            stream_mode=["messages", "values"],
        ):
            if mode == "messages" and first is None and answer_token(payload):
                first = time.perf_counter() - started
            elif mode == "values":
                final = payload
    result = result_from_state(question, final, started, None)
    result.warnings = budget.warnings
    return result, first


def claim_precision(result: Any, verify: Any) -> tuple[float | None, bool]:
    """(share of claim sentences supported by the passages they cite, any unsupported claim)."""
    if result.insufficient or not result.answer:
        return None, False
    support = verify(result.answer, result.passages)
    claims = [s for s in support if s.cited or not s.supported]
    if not claims:
        return None, False
    good = sum(1 for s in claims if s.supported and s.cited)
    return good / len(claims), good < len(claims)


def step_costs(trace: list[Any]) -> dict[str, dict[str, float]]:
    """Model calls, tokens and seconds per graph step: where a question's model time goes."""
    steps: dict[str, dict[str, float]] = {}
    for event in trace:
        if event.model_calls:
            cost = steps.setdefault(event.node, {"calls": 0, "tokens_in": 0, "tokens_out": 0, "s": 0.0})
            cost["calls"] += event.model_calls
            cost["tokens_in"] += event.tokens_in
            cost["tokens_out"] += event.tokens_out
            cost["s"] += round(event.ms / 1000, 2)
    return steps


def pct(values: list[float], p: int) -> float | None:
    return metrics.percentile(values, p) if values else None


def run_config_rows(args: argparse.Namespace, base_url: str | None, roles: str) -> dict[str, Any]:
    overrides: dict[str, Any] = {"answer_cache": False}
    if roles != "offline":
        overrides.update(openai_base_url=base_url, llm_model=args.model, llm_roles=roles, brain="llm")
    else:
        overrides.update(brain="offline")
    if args.context_tokens is not None:
        overrides["llm_context_tokens"] = args.context_tokens
    overrides["llm_compact"] = args.compact
    # model_copy: load_settings reads llm_model only under its environment names
    settings = load_settings().model_copy(update=overrides)
    dataset = load_dataset(resolve_dataset_dir(args.dataset), limit=args.limit)
    settings, folder = prepare_index(dataset, settings, None, progress=False)
    context = make_context(settings, folder)
    embedder = embedder_for(settings)
    verify = offline_brain(embedder=embedder).verify
    app = build_graph()
    rows: list[dict[str, Any]] = []
    for query in dataset.queries:
        result, first = ask_streaming(app, context, query.question)
        precision, unsupported = claim_precision(result, verify)
        generate = [e for e in result.trace if e.node == "generate"]
        by_model = bool(generate) and not generate[0].fallback_reason and roles != "offline"
        calls = sum(e.model_calls for e in result.trace)
        rows.append(
            {
                "id": query.id,
                "seconds": result.latency_ms / 1000,
                "first_token_s": first,
                "has_gold": metrics.answer_has_gold(result.answer, query.answers),
                "precision": precision,
                "unsupported_accepted": by_model and unsupported,
                "by_model": by_model,
                "insufficient": result.insufficient,
                "calls": calls,
                "tokens_in": sum(e.tokens_in for e in result.trace),
                "tokens_out": sum(e.tokens_out for e in result.trace),
                "capped": sum(e.counts.get("capped", 0) for e in result.trace),
                "runaway": sum(e.counts.get("runaway", 0) for e in result.trace),
                "fallbacks": sum(1 for e in result.trace if e.fallback_reason),
                "fallback_reasons": [
                    f"{e.node}: {e.fallback_reason}" for e in result.trace if e.fallback_reason
                ],
                "per_step": step_costs(result.trace),
                "attached": sum(e.counts.get("citations_attached", 0) for e in result.trace),
                "removed": sum(e.counts.get("sentences_removed", 0) for e in result.trace),
                "answer": result.answer,
            }
        )
    context.retrievers.index.close()
    return summarise(rows, roles)


def summarise(rows: list[dict[str, Any]], roles: str) -> dict[str, Any]:
    def mean(key: str) -> float | None:
        values = [float(r[key]) for r in rows if r[key] is not None]
        return statistics.fmean(values) if values else None

    seconds = [r["seconds"] for r in rows]
    firsts = [r["first_token_s"] for r in rows if r["first_token_s"] is not None]
    calls = sum(r["calls"] for r in rows)
    return {
        "roles": roles,
        "n": len(rows),
        "has_gold": mean("has_gold"),
        "cited_precision": mean("precision"),
        "unsupported_accepted": sum(1 for r in rows if r["unsupported_accepted"]),
        "model_answers": sum(1 for r in rows if r["by_model"]),
        "insufficient": mean("insufficient"),
        "s_p50": pct(seconds, 50),
        "s_p95": pct(seconds, 95),
        "first_token_p50": pct(firsts, 50),
        "calls_per_q": calls / len(rows),
        "prompt_tokens_per_call": sum(r["tokens_in"] for r in rows) / calls if calls else 0.0,
        "completion_tokens_per_q": sum(r["tokens_out"] for r in rows) / len(rows),
        "capped": sum(r["capped"] for r in rows),
        "runaway": sum(r["runaway"] for r in rows),
        "fallbacks": sum(r["fallbacks"] for r in rows),
        "attached": sum(r["attached"] for r in rows),
        "removed": sum(r["removed"] for r in rows),
        "per_step_per_q": per_step_means(rows),
        "rows": rows,
    }


def per_step_means(rows: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Each graph step's calls, prompt/completion tokens and seconds, averaged over all questions."""
    totals: dict[str, dict[str, float]] = {}
    for row in rows:
        for step, cost in row["per_step"].items():
            total = totals.setdefault(step, dict.fromkeys(cost, 0.0))
            for key, value in cost.items():
                total[key] += value
    return {step: {k: round(v / len(rows), 2) for k, v in cost.items()} for step, cost in totals.items()}


COLUMNS = [
    "roles",
    "n",
    "has_gold",
    "cited_precision",
    "unsupported_accepted",
    "model_answers",
    "insufficient",
    "s_p50",
    "s_p95",
    "first_token_p50",
    "calls_per_q",
    "prompt_tokens_per_call",
    "completion_tokens_per_q",
    "capped",
    "runaway",
    "fallbacks",
    "attached",
    "removed",
]


def shown(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.2f}" if abs(value) < 100 else f"{value:.0f}"
    return str(value)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dataset")
    parser.add_argument("--limit", type=int, default=10)
    parser.add_argument("--model", default="qwen2.5-coder-0.5b")
    parser.add_argument("--configs", nargs="+", default=["write", "all"])
    parser.add_argument("--threads", type=int, default=0, help="server threads (default: all cores)")
    parser.add_argument(
        "--context-tokens", type=int, default=None, help="AGENTIC_RAG_LLM_CONTEXT_TOKENS for the writer"
    )
    parser.add_argument(
        "--compact", choices=["auto", "on", "off"], default="auto", help="AGENTIC_RAG_LLM_COMPACT"
    )
    parser.add_argument("--out", type=Path, default=None, help="write every row as JSON here")
    args = parser.parse_args()
    server, base_url = (None, None)
    if any(c != "offline" for c in args.configs):
        server, base_url = start_server(args.model, args.threads)
    summaries: list[dict[str, Any]] = []
    try:
        for roles in args.configs:
            summaries.append(run_config_rows(args, base_url, roles))
            if args.out:  # after each configuration: a long run cut short keeps what it measured
                args.out.write_text(json.dumps(summaries, ensure_ascii=False, indent=1, default=str))
    finally:
        if server is not None:
            server.terminate()
            try:
                server.wait(timeout=30)
            except subprocess.TimeoutExpired:  # busy finishing a reply: llama.cpp reads no signal meanwhile
                server.kill()
                server.wait()
    budget = f", writer context {args.context_tokens or 'default'} tokens, compact {args.compact}"
    print(f"\n{args.dataset}, first {args.limit} questions, model {args.model}{budget}\n")
    print("| " + " | ".join(COLUMNS) + " |")
    print("|" + "---|" * len(COLUMNS))
    for summary in summaries:
        print("| " + " | ".join(shown(summary[c]) for c in COLUMNS) + " |")
    for summary in summaries:
        steps = "; ".join(
            f"{step} {c['calls']:.1f} calls {c['tokens_in']:.0f}/{c['tokens_out']:.0f} tok {c['s']:.1f} s"
            for step, c in summary["per_step_per_q"].items()
        )
        print(f"\nper question, {summary['roles']}: {steps or 'no model call'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
