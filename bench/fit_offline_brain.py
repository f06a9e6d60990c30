"""Fit the offline writer's sentence combiner (providers/offline_brain/data/weights.json) on training
slices, and print its figures on held-out ones.

Usage:
    python bench/fit_offline_brain.py --train-run rgb_zh_fact=DIR --train-run rgb_en_fact=DIR \
        [--held-out-run cmrc2018_trial=DIR ...] [--cache eval_out/answer_dev] [--write]

Labelled choices come from the training sets themselves: for every question, each sentence the writer
would consider (``answer.candidates``, on the question at all) is labelled by whether it holds a gold
answer (``evaluators.metrics.answer_has_gold``). The model is the writer's own form (``weights.Combiner``):
an additive score over the named features times multiplicative gates; it is fitted by pairwise ranking
(the logistic loss of log score(holding) − log score(not holding) over every such pair of one question),
starting from and L2-pulled toward the current weights (``--l2``), with ``coverage`` held at its current
weight (the scale is free: only ratios of scores matter). Training slices: CMRC 2018 trial 500-599 and
DRCD dev 1000-1099 (``bench/answer_params.py``'s graph-passage cache) and the even half of each RGB set
(from harness runs); held out: the odd RGB halves and the harness runs given with ``--held-out-run``.
Figures: share of questions whose best-scored sentence holds a gold answer (top-1, among questions with
one), and the whole writer's answer_has_gold / answer_in_context, current weights vs fitted.
``--write`` stores the fitted weights with their provenance (sets, date, command, figures).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import statistics
import sys
from pathlib import Path

import numpy as np
from scipy.optimize import minimize

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.answer_params import DEV, HELD_OUT, from_run, score  # noqa: E402
from config import load_settings  # noqa: E402
from core.schemas import Passage  # noqa: E402
from evaluators.metrics import answer_has_gold  # noqa: E402
from providers.offline_brain.answer import candidates  # noqa: E402
from providers.offline_brain.meaning import Meaning  # noqa: E402
from providers.offline_brain.weights import WEIGHTS_FILE, BrainParams, Combiner  # noqa: E402

ANCHOR = "coverage"  # held fixed: the combiner's scale
MAX_NEGATIVES = 30  # per question, the best-scored sentences without the answer (hard negatives)


def choices(rows: list[dict], meaning: Meaning, weights: BrainParams) -> list[tuple[list[dict], list[bool]]]:
    """Per question: the features of each candidate sentence and whether it holds a gold answer."""
    out = []
    for row in rows:
        passages = [Passage.model_validate(p) for p in row["passages"]]
        found = [c for c in candidates(row["question"], passages, meaning, weights) if c.score > 0]
        labels = [bool(answer_has_gold(c.sentence, row["answers"])) for c in found]
        out.append(([c.features for c in found], labels))
    return out


class Design:
    """The pairs as matrices: additive term values and gate values of each side of each pair."""

    def __init__(self, combiner: Combiner, questions: list[tuple[list[dict], list[bool]]]) -> None:
        self.terms, self.gates = list(combiner.terms), list(combiner.gates)
        pos_t, neg_t, pos_g, neg_g = [], [], [], []
        for feats, labels in questions:
            if not any(labels) or all(labels):
                continue
            scores = [combiner.score(f) for f in feats]
            negatives = sorted((i for i, y in enumerate(labels) if not y), key=lambda i: -scores[i])
            for p in (i for i, y in enumerate(labels) if y):
                for n in negatives[:MAX_NEGATIVES]:
                    pos_t.append(self._term_values(feats[p]))
                    neg_t.append(self._term_values(feats[n]))
                    pos_g.append([feats[p].get(g, 0.0) for g in self.gates])
                    neg_g.append([feats[n].get(g, 0.0) for g in self.gates])
        self.pos_t, self.neg_t = np.array(pos_t), np.array(neg_t)
        self.pos_g, self.neg_g = (
            np.array(pos_g).reshape(len(pos_g), -1),
            np.array(neg_g).reshape(len(neg_g), -1),
        )

    def _term_values(self, features: dict[str, float]) -> list[float]:
        return [float(np.prod([features.get(n, 0.0) for n in term.split("*")])) for term in self.terms]

    def loss(self, w: np.ndarray, u: np.ndarray) -> float:
        pos = np.log(np.maximum(self.pos_t @ w, 1e-6)) + self.pos_g @ u
        neg = np.log(np.maximum(self.neg_t @ w, 1e-6)) + self.neg_g @ u
        return float(np.mean(np.logaddexp(0.0, -(pos - neg))))


def fit(combiner: Combiner, questions: list, l2: float) -> tuple[Combiner, dict]:
    design = Design(combiner, questions)
    w0 = np.array([combiner.terms[t] for t in design.terms])
    u0 = np.log(np.array([combiner.gates[g] for g in design.gates]))
    anchor = design.terms.index(ANCHOR)
    free = [i for i in range(len(w0)) if i != anchor]

    def unpack(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        w = w0.copy()
        w[free] = x[: len(free)]
        return w, x[len(free) :]

    def objective(x: np.ndarray) -> float:
        w, u = unpack(x)
        return design.loss(w, u) + l2 * float(np.sum((x - x0) ** 2))

    x0 = np.concatenate([w0[free], u0])
    bounds = [(None, None)] * len(free) + [(None, 0.0)] * len(u0)  # a gate only ever scales down
    result = minimize(objective, x0, method="L-BFGS-B", bounds=bounds)
    w, u = unpack(result.x)
    fitted = Combiner(
        terms={t: round(float(v), 4) for t, v in zip(design.terms, w, strict=True)},
        gates={g: round(float(np.exp(v)), 4) for g, v in zip(design.gates, u, strict=True)},
    )
    stats = {
        "pairs": len(design.pos_t),
        "loss_before": round(design.loss(w0, u0), 4),
        "loss_after": round(design.loss(w, u), 4),
    }
    return fitted, stats


def top1(combiner: Combiner, questions: list) -> float:
    """Share of questions (with a sentence holding the answer) whose best-scored sentence holds it."""
    hits = []
    for feats, labels in questions:
        if any(labels):
            scores = [combiner.score(f) for f in feats]
            hits.append(labels[max(range(len(scores)), key=lambda i: (scores[i], -i))])
    return statistics.mean(hits) if hits else 0.0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--train-run", action="append", default=[], metavar="SET=DIR")
    parser.add_argument("--held-out-run", action="append", default=[], metavar="SET=DIR")
    parser.add_argument("--cache", type=Path, default=Path("eval_out/answer_dev"))
    parser.add_argument("--reranker", default="lexical")
    parser.add_argument("--l2", type=float, default=0.01, help="pull toward the current weights")
    parser.add_argument("--write", action="store_true", help=f"store the fitted weights in {WEIGHTS_FILE}")
    args = parser.parse_args(argv)
    current = BrainParams.load()
    train: dict[str, list[dict]] = {}
    held: dict[str, list[dict]] = {}
    for name in ("cmrc2018_trial", "drcd_dev"):
        cache = args.cache / f"{name}-{args.reranker}.json"
        if cache.exists():
            train[f"{name} (dev slice)"] = list(json.loads(cache.read_text(encoding="utf-8")).values())
    for item in args.train_run:
        name, folder = item.split("=", 1)
        train[f"{name} (even half)"] = from_run(name, Path(folder), DEV[name])
        held[f"{name} (odd half)"] = from_run(name, Path(folder), HELD_OUT[name])
    for item in args.held_out_run:
        name, folder = item.split("=", 1)
        held[f"{name} (harness run)"] = from_run(name, Path(folder), lambda i: True)
    if not train:
        parser.error("no training rows: give --train-run or build the dev cache with bench/answer_params.py")
    from retrievers.factory import embedder_for

    meaning = Meaning(embedder_for(load_settings()))
    train_q = [q for rows in train.values() for q in choices(rows, meaning, current)]
    fitted, stats = fit(current.writer, train_q, args.l2)
    new = current.model_copy(update={"writer": fitted})
    print(f"pairs {stats['pairs']}, pairwise loss {stats['loss_before']} -> {stats['loss_after']}")
    print(f"{'set':<34}{'top1 cur':>9}{'top1 fit':>9}{'ratio cur':>10}{'ratio fit':>10}")
    figures: dict[str, dict[str, float]] = {}
    for split, sets in (("train", train), ("held-out", held)):
        for name, rows in sets.items():
            q = choices(rows, meaning, current)
            a, b = top1(current.writer, q), top1(fitted, q)
            ratio_a, ratio_b = score(rows, meaning, weights=current)[2], score(rows, meaning, weights=new)[2]
            figures[f"{split}: {name}"] = {
                "top1_before": round(a, 3),
                "top1_after": round(b, 3),
                "has_gold_per_in_ctx_before": round(ratio_a, 3),
                "has_gold_per_in_ctx_after": round(ratio_b, 3),
            }
            print(f"{split + ': ' + name:<34}{a:>9.3f}{b:>9.3f}{ratio_a:>10.3f}{ratio_b:>10.3f}")
    print(json.dumps(fitted.to_dict(), ensure_ascii=False))
    if args.write:
        provenance = {
            "method": "pairwise logistic ranking of sentences holding a gold answer over those that do not, "
            f"log-linear in the gates, L2 {args.l2} toward the previous weights, '{ANCHOR}' held fixed",
            "training_sets": sorted(train),
            "held_out_sets": sorted(held),
            "date": dt.date.today().isoformat(),
            "command": "python bench/fit_offline_brain.py " + " ".join(argv or sys.argv[1:]),
            **stats,
            "figures": figures,
        }
        BrainParams.from_dict(
            new.to_dict() | {"writer": fitted.to_dict() | {"provenance": provenance}}
        ).save()
        print(f"wrote {WEIGHTS_FILE}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
