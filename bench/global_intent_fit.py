"""Fit the weights of ``core.global_intent`` on the labelled set and report held-out accuracy.

Usage:
    python bench/global_intent_fit.py [--set tests/data/global_questions.jsonl]

Logistic regression (gradient descent, L2) on the even lines; accuracy and scope accuracy on the odd
lines with the fitted weights and with the weights shipped in the module.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from core import global_intent


def fit(x: np.ndarray, y: np.ndarray, l2: float = 0.1, steps: int = 4000, rate: float = 0.5):
    w = np.zeros(x.shape[1])
    b = 0.0
    for _ in range(steps):
        p = 1 / (1 + np.exp(-(x @ w + b)))
        w -= rate * ((x.T @ (p - y)) / len(y) + l2 * w / len(y))
        b -= rate * float(np.mean(p - y))
    return w, b


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", type=Path, default=Path("tests/data/global_questions.jsonl"))
    args = parser.parse_args()
    rows = [json.loads(line) for line in args.set.read_text(encoding="utf-8").splitlines() if line.strip()]
    names = list(global_intent.FEATURES)
    x = np.array([[global_intent.features(r["q"])[n] for n in names] for r in rows])
    y = np.array([1.0 if r["global"] else 0.0 for r in rows])
    train, held = np.arange(0, len(rows), 2), np.arange(1, len(rows), 2)
    w, b = fit(x[train], y[train])
    print(
        "fitted on even lines:",
        {n: round(float(v), 2) for n, v in zip(names, w, strict=True)},
        "bias",
        round(b, 2),
    )
    for label, idx in (("train (even)", train), ("held out (odd)", held)):
        fitted = ((1 / (1 + np.exp(-(x[idx] @ w + b)))) >= 0.5) == (y[idx] == 1)
        shipped = np.array([global_intent.is_global(rows[i]["q"]) == rows[i]["global"] for i in idx])
        print(
            f"{label}: accuracy fitted {fitted.mean():.3f}, shipped {shipped.mean():.3f} ({len(idx)} questions)"
        )
    scoped = [r for r in rows if r["global"]]
    right = sum(global_intent.global_scope(r["q"]) == r["scope"] for r in scoped)
    print(f"scope of the global questions: {right}/{len(scoped)}")
    for r in rows:
        if global_intent.is_global(r["q"]) != r["global"]:
            print(
                f"  wrong: {r['q']} (score {global_intent.global_score(r['q']):.2f}, labelled {r['global']})"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
