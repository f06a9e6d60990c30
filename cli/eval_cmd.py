"""`python main.py eval DATASET [--modes ...] [--k 1,5,10] [--limit N] [--out DIR] [--reranker R]
[--plant-counterfactuals | --no-plant-counterfactuals] [--plant-order mixed|appended]`

RGB *_fact sets get their counterfactual passages planted into the corpus by default (they ship in
``queries_meta.jsonl``, not in the corpus), so the report can say how often wrong evidence outranks the
true passage. They are mixed into the corpus at places fixed by a hash of their ids (``--plant-order
appended`` reproduces the old layout, where index order alone decided exact BM25 ties). A set without a corpus (FanOutQA) is refused with a pointer to the decomposition bench."""

from __future__ import annotations

import argparse
import contextlib
import sys
from pathlib import Path

from cli.common import add_common, print_json, settings_from
from nodes.policy import MODES


def _ints(text: str) -> list[int]:
    try:
        values = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}") from None
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError("k values must be positive integers")
    return values


def _modes(text: str) -> list[str]:
    modes = [m.strip() for m in text.split(",") if m.strip()]
    unknown = [m for m in modes if m not in MODES]
    if unknown:
        raise argparse.ArgumentTypeError(f"unknown mode(s) {unknown}; choose from {', '.join(MODES)}")
    return modes


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("eval", help="evaluate retrieval and answers on a dataset folder")
    p.add_argument("dataset", help="folder with corpus.jsonl + queries.jsonl, or a name under ../shared/data")
    p.add_argument(
        "--modes",
        type=_modes,
        default=list(MODES),
        help=f"comma-separated retrieval modes to compare (default: all: {','.join(MODES)})",
    )
    p.add_argument(
        "--k", type=_ints, default=[1, 5, 10], dest="ks", help="cut-offs for recall@k etc. (default 1,5,10)"
    )
    p.add_argument("--limit", type=int, help="evaluate only the first N queries")
    p.add_argument("--out", type=Path, help="output folder (default eval_out/<dataset>)")
    p.add_argument("--reranker", help="none | e5 | lexical | cross-encoder:DIR")
    p.add_argument(
        "--plant-counterfactuals",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="add each query's counterfactual passages (meta 'positive_wrong', RGB *_fact) to the corpus; "
        "default: yes when the set has them",
    )
    p.add_argument(
        "--plant-order",
        choices=["mixed", "appended"],
        default="mixed",
        help="where planted passages go: mixed into the corpus by a hash of their ids (default) or "
        "appended after it (the old layout: exact BM25 ties then go to the true passage by position)",
    )
    p.add_argument(
        "--wide",
        action="store_true",
        help="print every metric (default: the main ones; results.md and results.json hold all)",
    )
    add_common(p)
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from app.evaluation import build_modes
    from evaluators.datasets import (
        has_counterfactuals,
        load_dataset,
        plant_counterfactuals,
        resolve_dataset_dir,
    )
    from evaluators.harness import run_evaluation

    settings = settings_from(args, reranker=args.reranker)
    dataset = load_dataset(resolve_dataset_dir(args.dataset), limit=args.limit, require_corpus=True)
    plant = args.plant_counterfactuals
    if plant is None:
        plant = has_counterfactuals(dataset)
    if plant:
        if not has_counterfactuals(dataset):
            raise ValueError(
                f"{dataset.name} has no counterfactual passages (meta 'positive_wrong') to plant"
            )
        dataset = plant_counterfactuals(dataset, order=args.plant_order)
    out = args.out or Path("eval_out") / dataset.name
    runners, close = build_modes(
        dataset,
        settings,
        args.modes,
        index_dir=Path(args.index_dir) if args.index_dir else None,
        progress=not args.json,
    )
    # With --json the table goes to stderr so stdout holds one JSON document.
    table_stream = sys.stderr if args.json else sys.stdout
    try:
        with contextlib.redirect_stdout(table_stream):
            summaries = run_evaluation(
                dataset,
                runners,
                args.ks,
                out,
                settings_snapshot=settings.model_dump(mode="json"),
                progress=True,
                wide=args.wide,
            )
    finally:
        close()
    if args.json:
        print_json({s.mode: s.metrics for s in summaries})
    return 0
