"""Accuracy of the offline follow-up resolver on the frozen set ``tests/data/followups.jsonl``.

Usage:
    python bench/followup_accuracy.py [--set tests/data/followups.jsonl] [--show-errors]

A ``resolve`` turn is right when the standalone question names the referent (one of the accepted
forms), no longer contains the referring word (它, that, they...) and keeps the follow-up's own words
(``keep``), and none of the words a fragment of another turn would bring (``forbid``: "How do I enable
CORS" is not a noun phrase). A ``no_antecedent`` turn (a fresh thread) is right when the agent asks which thing is meant
instead of searching. A ``standalone`` turn is right when it is left exactly as asked.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from providers.offline_brain.contextualize import contextualize_question  # noqa: E402

try:  # the clarification check exists from issue 8 on; before it, fresh-thread turns always fail
    from providers.offline_brain.contextualize import needs_clarification
except ImportError:  # pragma: no cover - baseline code

    def needs_clarification(question: str, history: list[tuple[str, str]]) -> bool:
        return False


DEFAULT_SET = ROOT / "tests" / "data" / "followups.jsonl"


def _has_word(text: str, word: str) -> bool:
    if re.search(r"[\u4e00-\u9fff]", word):
        return word in text
    return (
        re.search(rf"(?<![A-Za-z0-9_-]){re.escape(word)}(?![A-Za-z0-9_-])", text, re.IGNORECASE) is not None
    )


def judge(row: dict) -> tuple[bool, str]:
    """Whether the resolver handled one turn right, and what it produced."""
    history = [(role, text) for role, text in row["history"]]
    question = row["question"]
    if row["kind"] == "no_antecedent":
        asked = needs_clarification(question, history)
        return asked, "asks which thing is meant" if asked else contextualize_question(question, history)
    if needs_clarification(question, history):
        return False, "asks which thing is meant"
    out = contextualize_question(question, history) if history else question
    if row["kind"] == "standalone":
        return out == question, out
    named = any(_has_word(out, form) for form in row["referent"])
    gone = not row["pronoun"] or not _has_word(out, row["pronoun"])
    kept = all(_has_word(out, word) for word in row["keep"])
    whole = not any(_has_word(out, word) for word in row.get("forbid", []))
    return named and gone and kept and whole, out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", type=Path, default=DEFAULT_SET)
    parser.add_argument("--show-errors", action="store_true")
    args = parser.parse_args(argv)
    rows = [json.loads(line) for line in args.set.read_text(encoding="utf-8").splitlines() if line.strip()]
    hits: dict[str, list[bool]] = defaultdict(list)
    errors = []
    for row in rows:
        ok, out = judge(row)
        for scope in ("all", row["lang"], row["kind"]):
            hits[scope].append(ok)
        if not ok:
            errors.append(f"  [{row['id']}] {row['question']!r} -> {out!r} (expected {row['expected']!r})")
    print(f"Follow-up turns: {len(rows)} ({args.set})")
    for scope, values in hits.items():
        print(f"  {scope:<14} n={len(values):>3}  accuracy {sum(values) / len(values):.3f}")
    if args.show_errors and errors:
        print("Errors:")
        print("\n".join(errors))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
