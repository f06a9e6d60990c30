"""Choose the offline answer writer's parameters on named dev slices, never on the reported queries.

Usage:
    python bench/answer_params.py [--reranker lexical] [--cache eval_out/answer_params_cache.json]

Runs the agentic graph once per dev question to get the passages the writer would see (cached), then
scores the writer alone under each setting of ``CLOSE_TO_BEST`` and ``LENGTH_BUDGET``: answer_has_gold,
answer_in_context and the median answer length. Dev slices (disjoint from what docs/evaluation.md
reports, which uses the first 200 queries of CMRC/DRCD and the whole RGB sets):
CMRC 2018 trial queries 500-599, DRCD dev queries 1000-1099 (Chinese) and HotpotQA (English answers;
its retrieval figures are reported, its answers are not a target).
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from config import load_settings  # noqa: E402
from core.schemas import Passage  # noqa: E402
from evaluators.datasets import load_dataset, resolve_dataset_dir  # noqa: E402
from evaluators.metrics import answer_has_gold, answer_in_context  # noqa: E402
from evaluators.modes import prepare_index  # noqa: E402
from graph.builder import build_graph  # noqa: E402
from graph.run import ask  # noqa: E402
from nodes.context import build_context  # noqa: E402
from providers.offline_brain import answer as writer  # noqa: E402
from providers.offline_brain.meaning import Meaning  # noqa: E402

DEV = {"cmrc2018_trial": (500, 600), "drcd_dev": (1000, 1100), "hotpotqa_hipporag100": (0, 100)}


def collect(reranker: str, cache: Path) -> dict[str, list[dict]]:
    if cache.exists():
        return json.loads(cache.read_text(encoding="utf-8"))
    out: dict[str, list[dict]] = {}
    settings = load_settings(reranker=reranker, brain="offline")
    app = build_graph()
    for name, (start, end) in DEV.items():
        dataset = load_dataset(resolve_dataset_dir(name), require_corpus=True)
        context = build_context(settings, index_dir=prepare_index(dataset, settings, None, False))
        rows = []
        for query in dataset.queries[start:end]:
            result = ask(app, query.question, context=context, mode="agentic")
            rows.append(
                {
                    "question": query.question,
                    "answers": query.answers,
                    "passages": [p.model_dump() for p in result.passages],
                }
            )
        context.retrievers.index.close()
        out[name] = rows
    cache.parent.mkdir(parents=True, exist_ok=True)
    cache.write_text(json.dumps(out, ensure_ascii=False), encoding="utf-8")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reranker", default="lexical")
    parser.add_argument("--cache", type=Path, default=Path("eval_out/answer_params_cache.json"))
    args = parser.parse_args(argv)
    data = collect(args.reranker, args.cache)
    from retrievers.factory import embedder_for

    meaning = Meaning(embedder_for(load_settings()))
    print(f"{'set':<22}{'close':>6}{'zh/en budget':>14}{'has_gold':>10}{'in_ctx':>8}{'ratio':>7}{'p50':>6}")
    for close, budget in itertools.product((0.5, 0.65, 0.8), ((130, 250), (110, 230), (90, 200))):
        writer.CLOSE_TO_BEST = close
        writer.LENGTH_BUDGET = {"zh": budget[0], "en": budget[1]}
        for name, rows in data.items():
            has, ctx, lengths = [], [], []
            for row in rows:
                passages = [Passage.model_validate(p) for p in row["passages"]]
                text = writer.extractive_answer(row["question"], passages, meaning=meaning).answer
                has.append(answer_has_gold(text, row["answers"]) or 0.0)
                ctx.append(answer_in_context("\n".join(p.text for p in passages), row["answers"]) or 0.0)
                lengths.append(len(text))
            h, c = statistics.mean(has), statistics.mean(ctx)
            print(
                f"{name:<22}{close:>6}{budget!s:>14}{h:>10.3f}{c:>8.3f}{h / c if c else 0:>7.2f}"
                f"{statistics.median(lengths):>6.0f}"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
