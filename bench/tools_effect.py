"""Effect of the offline tool use on the dev sets: which questions ask for a computation, and how the
answers score with the computation (the writer's tool route) vs the plain extractive answer over the
same passages. Not a test: prints Markdown for docs/evaluation.md.

    python bench/tools_effect.py --sets drcd_dev,cmrc2018_trial,hotpotqa_hipporag100,musique_hipporag100
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from app.evaluation import make_context
from config import load_settings
from evaluators import metrics as m
from evaluators.datasets import load_dataset, resolve_dataset_dir
from evaluators.modes import prepare_index
from graph.builder import build_graph
from graph.run import ask
from providers.offline_brain.answer import extractive_answer
from providers.offline_brain.compute import computation_intent


def measure(name: str, mode: str) -> list[str]:
    dataset = load_dataset(resolve_dataset_dir(name), require_corpus=True)
    asked = [q for q in dataset.queries if computation_intent(q.question)]
    lines = [f"### {name}: {len(asked)} of {len(dataset.queries)} questions ask for a computation", ""]
    if not asked:
        return [*lines, ""]
    settings = load_settings(reranker="lexical", brain="offline")
    settings, folder = prepare_index(dataset, settings, None, progress=False)
    context = make_context(settings, folder)
    app = build_graph()
    lines += ["| question | gold | tool | tool answer F1 | extractive F1 |", "|---|---|---|---:|---:|"]
    tool_f1, plain_f1 = [], []
    for query in asked:
        result = ask(app, query.question, context=context, mode=mode)
        generate = next(e for e in result.trace if e.node == "generate")
        writer = context.brain.write  # the offline writer: the same extractive answer, without its tool route
        plain = (
            extractive_answer(
                result.standalone_question or query.question,
                result.passages,
                threshold=writer.threshold,
                meaning=writer.meaning,
            ).answer
            if generate.detail
            else result.answer
        )
        f1_tool, f1_plain = m.token_f1(result.answer, query.answers), m.token_f1(plain, query.answers)
        tool_f1.append(f1_tool or 0.0)
        plain_f1.append(f1_plain or 0.0)
        shown = generate.detail or "(none: extractive)"
        lines.append(
            f"| {query.question[:60]} | {'; '.join(query.answers)[:30]} | {shown[:60]} | {f1_tool or 0:.3f} | {f1_plain or 0:.3f} |"
        )
    context.retrievers.index.close()
    lines.append(
        f"| **mean** | | {sum(1 for e in tool_f1 if e is not None)} asked | {sum(tool_f1) / len(tool_f1):.3f} | {sum(plain_f1) / len(plain_f1):.3f} |"
    )
    return [*lines, ""]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--sets",
        default="drcd_dev,cmrc2018_trial,hotpotqa_hipporag100,musique_hipporag100,rgb_en_fact,rgb_zh_fact",
    )
    parser.add_argument("--mode", default="agentic")
    args = parser.parse_args()
    for name in args.sets.split(","):
        print("\n".join(measure(name.strip(), args.mode)), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
