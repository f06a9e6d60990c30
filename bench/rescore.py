"""Score saved ``per_query_<mode>.jsonl`` files again with the current metric code.

Usage:
    python bench/rescore.py DATASET RUN_DIR [--limit N]

Useful when a metric was added after a run (the baseline runs of docs/evaluation.md were scored this
way): the answers, ranked ids and traces are read back, ``retrievals`` is counted from the trace line,
and the summary table is printed. ``--limit`` must match the run's.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from evaluators.datasets import (  # noqa: E402
    has_counterfactuals,
    load_dataset,
    plant_counterfactuals,
    resolve_dataset_dir,
)
from evaluators.harness import QueryResult, summarise  # noqa: E402
from evaluators.metrics import retrievals_in_trace  # noqa: E402
from evaluators.report import markdown_table  # noqa: E402

_STEP = re.compile(r"^(\w+)(?:\((.*)\))?$")


def trace_events(line: str) -> list[dict]:
    """The trace line ``a(decision) > b > ...`` back as events with a node and a decision."""
    events = []
    for part in line.split(" | ")[0].split(" > "):
        found = _STEP.match(part.strip())
        if found:
            events.append({"node": found.group(1), "decision": found.group(2) or ""})
    return events


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dataset")
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--limit", type=int)
    parser.add_argument("--ks", default="1,5,10")
    args = parser.parse_args(argv)
    dataset = load_dataset(resolve_dataset_dir(args.dataset), limit=args.limit, require_corpus=True)
    if has_counterfactuals(dataset):
        dataset = plant_counterfactuals(dataset)
    fields = set(QueryResult.model_fields)
    summaries = []
    for path in sorted(args.run_dir.glob("per_query_*.jsonl")):
        results = []
        for line in path.read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            result = QueryResult.model_validate({k: v for k, v in record.items() if k in fields})
            if result.retrievals is None:
                result.retrievals = retrievals_in_trace(trace_events(result.trace))
            results.append(result)
        mode = path.stem.removeprefix("per_query_")
        summaries.append(summarise(mode, dataset, results, [int(k) for k in args.ks.split(",")]))
    print(f"## {dataset.name} ({args.run_dir})\n\n{markdown_table(summaries)}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
