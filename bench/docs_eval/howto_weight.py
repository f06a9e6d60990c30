"""Choose the offline writer's ``names_code`` weight (issue 21) on the how-to dev set, never the evaluation.

Asks every dev question once through the real graph (offline brain, the dev pages' own index) to get
the passages the writer sees, then re-runs only the writer over those passages for each weight and
counts, per weight, the questions whose answer contains the key string and those whose best-ranked
sentence does (a finer signal than the end-to-end verdict). Prints one row per weight.

    nice -n 10 python bench/docs_eval/howto_weight.py --index /tmp/dev/index [--weights 0 0.15 0.3 0.6 1.0]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]


def main() -> int:
    sys.path.insert(0, str(ROOT))
    sys.path.insert(0, str(HERE))
    from run import load_questions

    from app.evaluation import make_context
    from config import load_settings
    from graph import ask, build_graph
    from providers.meaning import Meaning
    from providers.offline_brain.answer import _ranked, candidates, extractive_answer
    from providers.offline_brain.weights import params

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--questions", type=Path, default=HERE / "dev" / "questions.jsonl")
    parser.add_argument("--index", type=Path, required=True, help="an index of the dev pages (run.py --docs)")
    parser.add_argument("--weights", type=float, nargs="+", default=[0.0, 0.15, 0.3, 0.6, 1.0])
    args = parser.parse_args()
    questions = [q for q in load_questions(args.questions) if q.kind == "howto"]
    settings = load_settings(index_dir=args.index, brain="offline")
    context = make_context(settings, args.index)
    app = build_graph()
    meaning = Meaning(context.retrievers.embedder)
    seen = [(q, ask(app, q.question, context=context).passages) for q in questions]
    print(f"{'names_code':>10}  answer has key  top sentence has key  (of {len(seen)})")
    for weight in args.weights:
        brain = params().with_value("writer.terms.names_code", weight)
        in_answer = in_top = 0
        for question, passages in seen:
            key = question.key.casefold()
            answer = extractive_answer(question.question, passages, meaning=meaning, weights=brain).answer
            top = next(iter(_ranked(candidates(question.question, passages, meaning, brain))), None)
            in_answer += key in answer.casefold()
            in_top += bool(top and key in top.sentence.casefold())
        print(f"{weight:>10}  {in_answer:>14}  {in_top:>20}")
    context.retrievers.index.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
