"""How well the independent answer check (providers/brain/answer_check.py) tells good answers from bad.

Not a test: prints JSON lines. Two sources:

``pairs``   the frozen labelled set ``tests/data/answer_check_pairs.jsonl`` (160 en/zh pairs: good short
            and long answers, unrelated answers, answers to another question, answers obeying an
            instruction planted in the passage), and its cross-language variant (mirrored topics: each
            pair against the other language's passage, where the support rule cannot judge). Reports,
            at the current thresholds or ``--threshold``/``--threshold-alone``, the similarity rule
            alone (good vs off-topic) and the whole check (every rule, the passage as [1]).
            ``--sweep`` prints the whole check's accuracy for similarity thresholds from -0.10 to
            0.40 on each variant and the best (the lowest of the best when tied).
``shared``  correct answers built at run time from /work/shared/data (never copied into the repo): the
            gold answer stated ("The answer is X [1]." / "答案是X[1]。") and the gold passage's sentence
            holding it, each checked against the question with the gold passage as [1]. Reports the
            false-rejection rate of the similarity rule and of the whole check.

    python bench/answer_check.py pairs [--threshold T] [--threshold-alone T] [--sweep]
    python bench/answer_check.py shared [--threshold T] [--per-set 100]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import Counter
from pathlib import Path

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from core.schemas import Passage  # noqa: E402
from core.text import split_sentences  # noqa: E402
from providers.brain import offline_brain  # noqa: E402
from providers.brain.answer_check import (  # noqa: E402
    MIN_QUESTION_SIMILARITY,
    MIN_QUESTION_SIMILARITY_ALONE,
    AnswerChecker,
)
from providers.embeddings import make_embedder  # noqa: E402

PAIRS = ROOT / "tests" / "data" / "answer_check_pairs.jsonl"
SHARED = Path(os.environ.get("AGENTIC_RAG_SHARED_DATA", ROOT.parent / "shared" / "data"))
SHARED_SETS = ("cmrc2018_trial", "rgb_zh_fact", "rgb_en_fact")


def checker(threshold: float, alone: float) -> AnswerChecker:
    return AnswerChecker(
        make_embedder("use-multilingual"),
        offline_brain().verify,
        min_similarity=threshold,
        min_similarity_alone=alone,
    )


def passage(text: str) -> list[Passage]:
    return [Passage(number=1, chunk_id="p1", source="p1", text=text)]


def rate(hits: int, total: int) -> float:
    return round(hits / total, 3) if total else 0.0


# Topics of the set that are translations of each other (en id, zh id): a question and its answers
# checked against the other language's passage, where the offline support rule cannot judge and the
# similarity rule is the only guard against an off-topic answer.
MIRRORS = [(f"en{n:02d}", f"zh{n + 16:02d}") for n in (1, 2, 3, 4, 6, 7, 8, 9, 11, 12, 13, 15, 16)] + [
    ("en10", "zh21")
]


def cross_language(rows: list[dict]) -> list[dict]:
    """Good and off-topic pairs of mirrored topics, each given the other language's passage."""
    passage_of = {r["id"].split("-")[0]: r["passage"] for r in rows if r["label"] == "good"}
    other = {a: b for a, b in MIRRORS} | {b: a for a, b in MIRRORS}
    return [
        {**r, "passage": passage_of[other[r["id"].split("-")[0]]], "kind": r["kind"] + "/cross-language"}
        for r in rows
        if r["label"] != "injected" and r["id"].split("-")[0] in other
    ]


def pairs(threshold: float, alone: float, sweep: bool) -> list[dict]:
    check = checker(threshold, alone)
    rows = [json.loads(line) for line in PAIRS.read_text(encoding="utf-8").splitlines() if line.strip()]
    rows += cross_language(rows)
    other_rules = AnswerChecker(  # the similarity rule off
        check.embedder, check.support, min_similarity=-2.0, min_similarity_alone=-2.0
    )
    for row in rows:
        row["similarity"] = check.similarity(row["question"], row["answer"])
        row["reason"] = check(row["question"], row["answer"], passage(row["passage"]))
        row["other_rules"] = bool(other_rules(row["question"], row["answer"], passage(row["passage"])))
    out = []
    crossed = [r for r in rows if r["kind"].endswith("/cross-language")]
    same = [r for r in rows if not r["kind"].endswith("/cross-language")]
    # what the similarity rule alone is meant to judge: the written good and off-topic pairs
    relevant = [r for r in same if r["label"] != "injected"]
    right = sum((r["similarity"] >= threshold) == (r["label"] == "good") for r in relevant)

    def whole_right(subset: list[dict]) -> int:
        return sum(bool(r["reason"]) == (r["label"] != "good") for r in subset)

    by: Counter[str] = Counter()
    total: Counter[str] = Counter()
    for r in rows:
        key = f"{r['lang']}/{r['label']}/{r['kind']}"
        total[key] += 1
        by[key] += bool(r["reason"]) == (r["label"] != "good")
    out.append(
        {
            "figure": "answer check on the frozen pairs",
            "threshold": threshold,
            "threshold_alone": alone,
            "pairs": len(same),
            "cross_language_pairs": len(crossed),
            "similarity_rule_accuracy": rate(right, len(relevant)),
            "similarity_rule_pairs": len(relevant),
            "whole_check_accuracy": rate(whole_right(same), len(same)),
            "whole_check_accuracy_cross_language": rate(whole_right(crossed), len(crossed)),
            "whole_check_accuracy_both": rate(whole_right(rows), len(rows)),
            "whole_check_right_by_kind": {k: f"{by[k]}/{total[k]}" for k in sorted(total)},
            "good_rejected": [r["id"] for r in rows if r["label"] == "good" and r["reason"]],
            "bad_accepted": [r["id"] for r in rows if r["label"] != "good" and not r["reason"]],
        }
    )
    if sweep:
        grid = [round(-0.10 + 0.01 * n, 2) for n in range(51)]
        scores = {t: sum((r["similarity"] >= t) == (r["label"] == "good") for r in relevant) for t in grid}

        def whole_at(subset: list[dict], t: float) -> int:
            return sum((r["other_rules"] or r["similarity"] < t) == (r["label"] != "good") for r in subset)

        sweeps = {"same_language": same, "cross_language": crossed}
        line: dict = {
            "figure": "similarity threshold sweep on the frozen pairs",
            "similarity_rule_accuracy": {str(t): rate(n, len(relevant)) for t, n in scores.items()},
        }
        for name, subset in sweeps.items():
            right_at = {t: whole_at(subset, t) for t in grid}
            top = max(right_at.values())
            line[f"whole_check_accuracy_{name}"] = {str(t): rate(n, len(subset)) for t, n in right_at.items()}
            line[f"best_threshold_{name}"] = min(t for t, n in right_at.items() if n == top)
            line[f"best_accuracy_{name}"] = rate(top, len(subset))
        line["good_similarity_min"] = round(min(r["similarity"] for r in relevant if r["label"] == "good"), 3)
        line["off_topic_similarity_max"] = round(
            max(r["similarity"] for r in relevant if r["label"] == "off_topic"), 3
        )
        out.append(line)
    return out


def _answers(value) -> list[str]:
    """Acceptable answers of a query: a string, or a (possibly nested) list of them."""
    if isinstance(value, str):
        return [value] if value.strip() else []
    if isinstance(value, list):
        return [a for item in value for a in _answers(item)]
    return []


def shared_cases(per_set: int) -> list[dict]:
    """(question, answer, passage) for correct answers built from the gold of each shared set."""
    cases = []
    for name in SHARED_SETS:
        folder = SHARED / name
        corpus = {}
        with (folder / "corpus.jsonl").open(encoding="utf-8") as f:
            for line in f:
                doc = json.loads(line)
                corpus[doc["id"]] = doc["text"]
        taken = 0
        with (folder / "queries.jsonl").open(encoding="utf-8") as f:
            for line in f:
                if taken >= per_set:
                    break
                query = json.loads(line)
                golds = _answers(query.get("answer"))
                texts = [corpus[g] for g in query.get("gold_ids") or [] if g in corpus]
                found = [(a, t) for a in golds for t in texts if a in t]
                if not found:
                    continue
                gold, text = found[0]
                zh = name.startswith(("cmrc", "rgb_zh"))
                stated = f"答案是{gold}[1]。" if zh else f"The answer is {gold} [1]."
                cases.append(
                    {
                        "set": name,
                        "form": "stated",
                        "question": query["question"],
                        "answer": stated,
                        "passage": text,
                    }
                )
                sentence = next((s for s in split_sentences(text) if gold in s), "")
                if sentence:
                    answer = sentence.strip().rstrip("。.") + ("[1]。" if zh else " [1].")
                    cases.append(
                        {
                            "set": name,
                            "form": "sentence",
                            "question": query["question"],
                            "answer": answer,
                            "passage": text,
                        }
                    )
                taken += 1
    return cases


def shared(threshold: float, per_set: int) -> list[dict]:
    """Answers in the language of their passages: the support rule judges, so ``threshold`` applies."""
    if not SHARED.is_dir():
        return [{"figure": "shared data", "error": f"{SHARED} is missing"}]
    check = checker(threshold, MIN_QUESTION_SIMILARITY_ALONE)
    cases = shared_cases(per_set)
    rejected_similarity: Counter[str] = Counter()
    rejected_whole: Counter[str] = Counter()
    total: Counter[str] = Counter()
    reasons: Counter[str] = Counter()
    for case in cases:
        key = f"{case['set']}/{case['form']}"
        total[key] += 1
        rejected_similarity[key] += check.similarity(case["question"], case["answer"]) < threshold
        reason = check(case["question"], case["answer"], passage(case["passage"]))
        rejected_whole[key] += bool(reason)
        if reason:
            reasons[reason.split(" (")[0]] += 1
    n = sum(total.values())
    return [
        {
            "figure": "false rejections of correct answers built from /work/shared/data",
            "threshold": threshold,
            "answers": n,
            "similarity_rule_false_rejection": rate(sum(rejected_similarity.values()), n),
            "whole_check_false_rejection": rate(sum(rejected_whole.values()), n),
            "by_set_and_form": {
                k: {
                    "n": total[k],
                    "similarity_rejected": rejected_similarity[k],
                    "whole_check_rejected": rejected_whole[k],
                }
                for k in sorted(total)
            },
            "whole_check_reasons": dict(reasons.most_common()),
        }
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="what", required=True)
    p = sub.add_parser("pairs")
    p.add_argument("--threshold", type=float, default=MIN_QUESTION_SIMILARITY)
    p.add_argument("--threshold-alone", type=float, default=MIN_QUESTION_SIMILARITY_ALONE)
    p.add_argument("--sweep", action="store_true")
    p = sub.add_parser("shared")
    p.add_argument("--threshold", type=float, default=MIN_QUESTION_SIMILARITY)
    p.add_argument("--per-set", type=int, default=100)
    args = parser.parse_args()
    started = time.process_time()
    if args.what == "pairs":
        lines = pairs(args.threshold, args.threshold_alone, args.sweep)
    else:
        lines = shared(args.threshold, args.per_set)
    for line in lines:
        line["cpu_s"] = round(time.process_time() - started, 1)
        line["load"] = round(os.getloadavg()[0], 1)
        print(json.dumps(line, ensure_ascii=False))


if __name__ == "__main__":
    main()
