"""Accuracy of the offline query analyzer, and its decompositions against FanOutQA gold decompositions.

Usage:
    python bench/analyzer_accuracy.py [--labelled tests/data/analyzer_questions.jsonl]
                                      [--fanoutqa ../shared/data/fanoutqa_dev] [--show-errors]

Part 1 prints accuracy per field (query_type, recommended_strategy, complexity, sub-query count) overall
and per language, plus a confusion summary. Part 2 (skipped when the FanOutQA folder is absent) reports:
decomposed share, mean |predicted - gold| sub-question count, and token-overlap recall of gold
sub-questions (all of them, and the root ones that depend on nothing). Metrics are defined in
docs/analyzer.md.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter, defaultdict
from pathlib import Path
from statistics import mean

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from core.schemas import strip_bridge  # noqa: E402
from core.tokenize import tokenize  # noqa: E402
from providers.offline_brain.analysis import analyze_question  # noqa: E402

FIELDS = ("query_type", "recommended_strategy", "complexity")


def load_jsonl(path: Path) -> list[dict]:
    rows = []
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if line.strip():
                try:
                    rows.append(json.loads(line))
                except json.JSONDecodeError as exc:
                    raise SystemExit(f"{path}:{number}: not valid JSON ({exc.msg})") from exc
    return rows


def labelled_report(rows: list[dict], show_errors: bool) -> dict[str, dict[str, float]]:
    """Accuracy per field overall and per language; returns {scope: {field: accuracy}}."""
    hits: dict[str, dict[str, list[bool]]] = defaultdict(lambda: defaultdict(list))
    confusion: dict[str, Counter[tuple[str, str]]] = defaultdict(Counter)
    errors: list[str] = []
    for row in rows:
        analysis = analyze_question(row["question"]).model_dump()
        scopes = ("all", row["language"], row.get("split", "dev"))
        for scope in scopes:
            hits[scope]["language"].append(analysis["language"] == row["language"])
        for field in FIELDS:
            ok = analysis[field] == row[field]
            for scope in scopes:
                hits[scope][field].append(ok)
            if not ok:
                confusion[field][(row[field], analysis[field])] += 1
                errors.append(
                    f"  [{row.get('split', 'dev')}] {field}: gold={row[field]} got={analysis[field]}  {row['question']}"
                )
        if "multi_part" in row:
            ok = (len(analysis["sub_queries"]) >= 2) == row["multi_part"]
            for scope in scopes:
                hits[scope]["multi_part"].append(ok)
            if not ok:
                errors.append(
                    f"  multi_part: gold={row['multi_part']} got={analysis['sub_queries']}  {row['question']}"
                )
        elif "expected_sub_queries" in row or analysis["sub_queries"]:
            gold = row.get("expected_sub_queries", 0)
            for scope in scopes:
                hits[scope]["sub_query_count"].append(len(analysis["sub_queries"]) == gold)
    table: dict[str, dict[str, float]] = {}
    print(
        f"Labelled questions: {len(rows)} (dev: rules were written with these in view; heldout: written after)"
    )
    parts = "multi_part" if any("multi_part" in row for row in rows) else "sub_query_count"
    header = f"{'scope':<6} {'n':>4} " + " ".join(f"{f:>20}" for f in ("language", *FIELDS, parts))
    print(header)
    for scope in ("all", "en", "zh", "dev", "heldout"):
        if scope not in hits:
            continue
        table[scope] = {f: mean(v) for f, v in hits[scope].items()}
        n = len(hits[scope]["query_type"])
        cells = " ".join(f"{table[scope].get(f, float('nan')):>20.3f}" for f in ("language", *FIELDS, parts))
        print(f"{scope:<6} {n:>4} {cells}")
    print("Confusions (gold -> predicted: count):")
    for field in FIELDS:
        pairs = ", ".join(f"{g}->{p}: {c}" for (g, p), c in confusion[field].most_common())
        print(f"  {field}: {pairs or 'none'}")
    if show_errors and errors:
        print("Errors:")
        print("\n".join(errors))
    return table


def _terms(text: str) -> set[str]:
    return set(tokenize(strip_bridge(text)))


def subquestion_recall(gold: list[str], predicted: list[str]) -> float:
    """Mean over gold sub-questions of the best share of its terms found in one predicted sub-query."""
    scores = []
    for g in gold:
        terms = _terms(g)
        if not terms:
            continue
        best = max((len(terms & _terms(p)) / len(terms) for p in predicted), default=0.0)
        scores.append(best)
    return mean(scores) if scores else 0.0


def fanoutqa_report(folder: Path) -> dict[str, float] | None:
    queries_path, meta_path = folder / "queries.jsonl", folder / "queries_meta.jsonl"
    if not (queries_path.exists() and meta_path.exists()):
        print(f"FanOutQA: {folder} not found, skipped")
        return None
    questions = {row["id"]: row["question"] for row in load_jsonl(queries_path)}
    decomposed, count_err, recall_all, recall_root = [], [], [], []
    recall_all_orig, recall_root_orig = [], []
    for meta in load_jsonl(meta_path):
        question = questions.get(meta["id"])
        steps = meta.get("decomposition") or []
        if not question or not steps:
            continue
        gold = [step["question"] for step in steps]
        roots = [step["question"] for step in steps if not step.get("depends_on")]
        predicted = analyze_question(question).sub_queries
        decomposed.append(bool(predicted))
        count_err.append(abs(len(predicted) - len(gold)))
        queries = predicted or [question]
        recall_all.append(subquestion_recall(gold, queries))
        recall_root.append(subquestion_recall(roots, queries))
        recall_all_orig.append(subquestion_recall(gold, [question]))
        recall_root_orig.append(subquestion_recall(roots, [question]))
    result = {
        "questions": len(decomposed),
        "decomposed_share": mean(decomposed),
        "mean_abs_count_error": mean(count_err),
        "gold_mean_count": mean(
            len(m.get("decomposition") or []) for m in load_jsonl(meta_path) if m.get("decomposition")
        ),
        "recall_all_gold": mean(recall_all),
        "recall_all_gold_question_only": mean(recall_all_orig),
        "recall_root_gold": mean(recall_root),
        "recall_root_gold_question_only": mean(recall_root_orig),
    }
    print(f"FanOutQA dev ({folder}):")
    for key, value in result.items():
        print(f"  {key:<32} {value:.3f}" if isinstance(value, float) else f"  {key:<32} {value}")
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--labelled", type=Path, default=ROOT / "tests/data/analyzer_questions.jsonl")
    parser.add_argument("--fanoutqa", type=Path, default=ROOT.parent / "shared/data/fanoutqa_dev")
    parser.add_argument("--show-errors", action="store_true")
    args = parser.parse_args(argv)
    if not args.labelled.exists():
        parser.error(f"labelled file {args.labelled} does not exist")
    labelled_report(load_jsonl(args.labelled), args.show_errors)
    print()
    fanoutqa_report(args.fanoutqa)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
