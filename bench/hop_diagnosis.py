"""Where the agent's second hop wins or loses all-gold recall, question by question.

Usage:
    python bench/hop_diagnosis.py DATASET HYBRID_RUN AGENTIC_RUN [--limit N] [--show]

``HYBRID_RUN`` and ``AGENTIC_RUN`` are ``python main.py eval`` output folders (their
``per_query_hybrid.jsonl`` / ``per_query_agentic.jsonl``); ``DATASET`` is the folder or the name under
``../shared/data`` holding ``corpus.jsonl``. For every question whose hybrid top 10 lacks a gold
passage it reports which hop ran (none, the evidence hop, the nested-relation hop, parts), whether
the evidence hop went to the missing gold document (its title among the trace's targets) and where
the gold ended in the agent's ranking; questions hybrid had and the agent lost are counted too.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from collections import Counter
from pathlib import Path

_EVIDENCE_HOP = re.compile(r"evaluate\(one hop further: (.*?)(?:, not retrieved yet\)|\) >)")


def load(path: Path) -> dict[str, dict]:
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return {row["query_id"]: row for row in rows}


def dataset_folder(name: str) -> Path:
    path = Path(name)
    if path.is_dir():
        return path
    return Path(os.environ.get("AGENTIC_RAG_DATA_DIR", "../shared/data")) / name


def route(trace: str, missing_titles: list[str]) -> str:
    """Which hop the agent took for one question, from its trace line."""
    hop = _EVIDENCE_HOP.search(trace)
    if hop:
        reached = all(title in hop.group(1) for title in missing_titles)
        return "evidence hop to the missing gold" if reached else "evidence hop elsewhere"
    if "bridge hops (nested" in trace and " 0 bridge hops" not in trace:
        return "nested-relation hop"
    if "-> multi_hop (" in trace:
        return "parts, no hop"
    return "no hop"


def diagnose(
    corpus: dict[str, dict], hybrid: dict[str, dict], agentic: dict[str, dict], limit: int, show: bool
):
    counts: Counter[str] = Counter()
    for qid in list(hybrid)[:limit]:
        gold = hybrid[qid]["gold_ids"]
        before, after = hybrid[qid]["ranked_ids"], agentic[qid]["ranked_ids"]
        had = all(g in before[:10] for g in gold)
        has = all(g in after[:10] for g in gold)
        if had:
            counts["hybrid had all gold, agentic lost one"] += not has
            continue
        missing = [g for g in gold if g not in before[:10]]
        kind = route(agentic[qid]["trace"], [corpus[g]["title"] for g in missing])
        counts[f"{kind}: {'fixed' if has else 'still missing'}"] += 1
        if show:
            ended = [after.index(g) + 1 if g in after else None for g in missing]
            print(
                f"{'FIXED' if has else 'MISS '} {kind:32} gold ended at {ended}  {hybrid[qid]['question'][:80]}"
            )
    return counts


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dataset")
    parser.add_argument("hybrid_run", type=Path)
    parser.add_argument("agentic_run", type=Path)
    parser.add_argument("--limit", type=int, default=10**9)
    parser.add_argument("--show", action="store_true", help="one line per question hybrid missed")
    args = parser.parse_args()
    corpus_file = dataset_folder(args.dataset) / "corpus.jsonl"
    if not corpus_file.is_file():
        print(f"error: {corpus_file} not found; pass the dataset folder or set AGENTIC_RAG_DATA_DIR")
        return 2
    corpus = {row["id"]: row for row in map(json.loads, corpus_file.read_text(encoding="utf-8").splitlines())}
    hybrid = load(args.hybrid_run / "per_query_hybrid.jsonl")
    agentic = load(args.agentic_run / "per_query_agentic.jsonl")
    counts = diagnose(corpus, hybrid, agentic, args.limit, args.show)
    for key, value in sorted(counts.items()):
        print(f"{value:4d}  {key}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
