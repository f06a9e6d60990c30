"""Fit the offline writer's sentence combiner (providers/offline_brain/data/weights.json) on training
slices, and print its figures on held-out ones.

Usage:
    python bench/fit_offline_brain.py --inputs bench/data/fit_inputs [--check-inputs bench/data/fit_inputs_e5] \
        [--free PATTERNS] [--features FILE] [--write]
    python bench/fit_offline_brain.py --train-run rgb_zh_fact=DIR --train-run rgb_en_fact=DIR \
        [--held-out-run cmrc2018_trial=DIR ...] [--cache eval_out/answer_dev] [--write]

Labelled choices come from the training sets themselves: for every question, each sentence the writer
would consider (``answer.candidates``, on the question at all) is labelled by whether it holds a gold
answer (``evaluators.metrics.answer_has_gold``). The model is the writer's own form (``weights.Combiner``):
an additive score over the named features times multiplicative gates; it is fitted as a choice model
(the likelihood that a sentence holding the answer is chosen, P(i) ∝ score_i ** sharpness, per question),
starting from and L2-pulled toward the current weights (``--l2``), with ``coverage`` held at its current
weight (the scale is free: only ratios of scores matter). With ``--inputs`` the training and held-out
rows are the frozen files of bench/fit_inputs.py (its docstring names the slices), so the command in the
weights file's provenance reproduces the fit on any checkout; ``--check-inputs`` adds frozen inputs the
fit never reads for fitting but whose every set must not get worse (the same questions with the e5
reranker's passages, ``bench/data/fit_inputs_e5``). Without ``--inputs`` (the earlier fits): CMRC 2018
trial 500-599 and DRCD dev 1000-1099 from ``bench/answer_params.py``'s graph-passage cache and the even
half of each RGB set from harness runs; held out: the odd RGB halves and ``--held-out-run`` runs.
Figures: share of questions whose best-scored sentence holds a gold answer (top-1, among questions with
one), and the whole writer's answer_has_gold / answer_in_context, current weights vs fitted.
``--write`` stores the fitted weights with their provenance (sets, date, command, figures).
"""

from __future__ import annotations

import argparse
import datetime as dt
import fnmatch
import json
import statistics
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import numpy as np
from scipy.optimize import minimize

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.answer_params import DEV, HELD_OUT, LABELLED, from_run, labelled, score  # noqa: E402
from bench.fit_inputs import command_line, load_inputs  # noqa: E402
from config import load_settings  # noqa: E402
from core.schemas import Passage  # noqa: E402
from core.text import detect_language  # noqa: E402
from evaluators.metrics import answer_has_gold  # noqa: E402
from providers.meaning import Meaning  # noqa: E402
from providers.offline_brain.answer import candidates  # noqa: E402
from providers.offline_brain.weights import WEIGHTS_FILE, BrainParams, Combiner  # noqa: E402

ANCHOR = "coverage"  # held fixed: the combiner's scale


def choices(rows: list[dict], meaning: Meaning, weights: BrainParams) -> list[tuple[list[dict], list[bool]]]:
    """Per question: the features of each candidate sentence and whether it holds a gold answer, in
    itself or in the code block it introduces (the answer shows that block: ``answer.candidates``)."""
    out = []
    for row in rows:
        passages = [Passage.model_validate(p) for p in row["passages"]]
        found = [c for c in candidates(row["question"], passages, meaning, weights) if c.score > 0]
        labels = [bool(answer_has_gold(f"{c.sentence}\n{c.block}", row["answers"])) for c in found]
        out.append(([c.features for c in found], labels))
    return out


class Design:
    """Each training question as matrices: the additive term values and the gate values of its
    candidate sentences, and which of them hold a gold answer."""

    def __init__(self, combiner: Combiner, questions: list[tuple[list[dict], list[bool]]]) -> None:
        self.terms, self.gates = list(combiner.terms), list(combiner.gates)
        self.questions = []
        # each training set weighs the same in the loss, however many questions it has
        size = Counter(item[2] if len(item) > 2 else "" for item in questions)
        for feats, labels, *name in questions:
            if not any(labels) or all(labels):
                continue  # nothing to choose between
            t = np.array([[_term(f, term) for term in self.terms] for f in feats])
            g = np.array([[f.get(name, 0.0) for name in self.gates] for f in feats]).reshape(len(feats), -1)
            share = 1.0 / size[name[0] if name else ""]
            self.questions.append((t, g, np.array(labels), share))

    def loss(self, w: np.ndarray, u: np.ndarray, beta: float) -> float:
        """Mean over questions of -log P(a sentence holding the answer is chosen), P(i) ∝ score_i ** beta
        (a Luce choice over the writer's own scores: only their ratios matter, as in the writer)."""
        total, mass = 0.0, 0.0
        for t, g, y, share in self.questions:
            z = beta * (np.log(np.maximum(t @ w, 1e-9)) + g @ u)
            total += share * float(np.logaddexp.reduce(z) - np.logaddexp.reduce(z[y]))
            mass += share
        return total / mass if mass else 0.0


def _term(features: dict[str, float], term: str) -> float:
    return float(np.prod([features.get(name, 0.0) for name in term.split("*")]))


def fit(
    combiner: Combiner, questions: list, l2: float, free: Callable[[str], bool] | None = None
) -> tuple[Combiner, dict]:
    """The combiner's weights maximising the likelihood of choosing a sentence that holds the answer,
    L2-pulled toward ``combiner``'s own; ``coverage`` stays fixed (the scale), and so does every term or
    gate ``free`` says no to (by default every other one is fitted)."""
    design = Design(combiner, questions)
    free = free or (lambda name: True)
    w0 = np.array([combiner.terms[t] for t in design.terms])
    u0 = np.log(np.array([combiner.gates[g] for g in design.gates]))
    fw = [i for i, name in enumerate(design.terms) if name != ANCHOR and free(name)]
    fu = [i for i, name in enumerate(design.gates) if free(name)]
    x0 = np.concatenate([w0[fw], u0[fu], [np.log(5.0)]])  # the last: log beta, the choice's sharpness

    def unpack(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
        w, u = w0.copy(), u0.copy()
        w[fw] = x[: len(fw)]
        u[fu] = x[len(fw) : len(fw) + len(fu)]
        return w, u, float(np.exp(x[-1]))

    def objective(x: np.ndarray) -> float:
        w, u, beta = unpack(x)
        return design.loss(w, u, beta) + l2 * float(np.sum((x[:-1] - x0[:-1]) ** 2))

    bounds = [(None, None)] * len(fw) + [(None, 0.0)] * len(fu) + [(np.log(0.5), np.log(50.0))]
    result = minimize(objective, x0, method="L-BFGS-B", bounds=bounds)
    w, u, beta = unpack(result.x)
    fitted = Combiner(
        # what was fitted, to 4 digits; what was held stays exactly as it was
        terms={
            t: round(float(v), 4) if i in fw else combiner.terms[t]
            for i, (t, v) in enumerate(zip(design.terms, w, strict=True))
        },
        gates={
            g: round(float(np.exp(v)), 4) if i in fu else combiner.gates[g]
            for i, (g, v) in enumerate(zip(design.gates, u, strict=True))
        },
    )
    stats = {
        "questions": len(design.questions),
        "loss_before": round(design.loss(w0, u0, beta), 4),
        "loss_after": round(design.loss(w, u, beta), 4),
        "sharpness": round(beta, 3),
    }
    return fitted, stats


def choose_l2(
    combiner: Combiner, questions: list, grid: list[float], free: Callable[[str], bool] | None = None
) -> tuple[float, dict[float, float]]:
    """The L2 strength by a split of the training questions alone (fit on even, top-1 on odd)."""
    even, odd = questions[0::2], questions[1::2]
    figures = {l2: top1(fit(combiner, even, l2, free)[0], odd) for l2 in grid}
    best = max(grid, key=lambda l2: (round(figures[l2], 4), l2))  # ties: the stronger pull
    return best, figures


def choose_l2_by_set(
    combiner: Combiner, questions: list, grid: list[float], free: Callable[[str], bool] | None = None
) -> tuple[float, dict[float, float]]:
    """The L2 strength by leaving one training set out at a time (fit on the others, top-1 on it), the
    mean over sets: the held-out sets are other collections, so the pull is chosen for a set the fit has
    not seen rather than for another half of the same ones."""
    names = sorted({item[2] for item in questions})
    figures = {}
    for l2 in grid:
        per_set = [
            top1(
                fit(combiner, [q for q in questions if q[2] != name], l2, free)[0],
                [q for q in questions if q[2] == name],
            )
            for name in names
        ]
        figures[l2] = statistics.mean(per_set)
    best = max(grid, key=lambda l2: (round(figures[l2], 4), l2))  # ties: the stronger pull
    return best, figures


def top1(combiner: Combiner, questions: list) -> float:
    """Share of questions (with a sentence holding the answer) whose best-scored sentence holds it."""
    hits = []
    for feats, labels, *_ in questions:
        if any(labels):
            scores = [combiner.score(f) for f in feats]
            hits.append(labels[max(range(len(scores)), key=lambda i: (scores[i], -i))])
    return statistics.mean(hits) if hits else 0.0


# a term gated by one of these features changes only that language's questions, so it is adopted or
# kept per language, on that language's sets alone
LANGUAGE_FEATURES = {"zh": "chinese_question", "en": "english_question"}


def set_language(rows: list[dict]) -> str:
    """The language most of a set's questions are in (its questions' own script)."""
    return Counter(detect_language(row["question"]) for row in rows).most_common(1)[0][0]


def language_of(term: str) -> str | None:
    """The language a term is gated to (``meaning*chinese_question`` -> zh), None for a shared term."""
    parts = term.split("*")
    return next((lang for lang, feature in LANGUAGE_FEATURES.items() if feature in parts), None)


def changed_by(term: str, adopted: set[str]) -> bool:
    return "all" in adopted or language_of(term) in adopted


def adoption(
    current: Combiner, fitted: Combiner, figures: dict[str, dict], languages: dict[str, str], tolerance: float
) -> tuple[set[str], dict[str, dict[str, float]]]:
    """What of the fit is adopted: ``{"all"}`` when no set's answer figure falls by more than
    ``tolerance`` (issue 20: behaviour may not get worse anywhere); when only language-gated terms
    changed, each language's terms on that language's sets alone (they cannot change another's
    answers); else nothing. Returns (adopted, {what was not adopted: {set: fall}})."""

    def falls(names: list[str]) -> dict[str, float]:
        out = {}
        for name in names:
            f = figures[name]
            drop = f["has_gold_per_in_ctx_after"] - f["has_gold_per_in_ctx_before"]
            if drop < -tolerance:
                out[name] = round(drop, 3)
        return out

    moved = {k for k in current.terms if fitted.terms.get(k) != current.terms[k]}
    moved |= {k for k in current.gates if fitted.gates.get(k) != current.gates[k]}
    if any(language_of(k) is None for k in moved):
        bad = falls(list(figures))
        return (set(), {"all": bad}) if bad else ({"all"}, {})
    adopted, worse = set(), {}
    for lang in sorted({language_of(k) for k in moved}):
        bad = falls([name for name in figures if languages[name.split(": ", 1)[1]] == lang])
        if bad:
            worse[lang] = bad
        else:
            adopted.add(lang)
    return adopted, worse


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--inputs",
        type=Path,
        help="frozen writer inputs (bench/fit_inputs.py: train/ and held_out/); "
        "without it, the dev cache and the runs below",
    )
    parser.add_argument(
        "--check-inputs",
        type=Path,
        action="append",
        default=[],
        metavar="DIR",
        help="more frozen inputs (e.g. another reranker's passages: bench/fit_inputs.py --reranker e5): "
        "every set in them is scored and must not get worse, none is fitted on",
    )
    parser.add_argument("--train-run", action="append", default=[], metavar="SET=DIR")
    parser.add_argument("--held-out-run", action="append", default=[], metavar="SET=DIR")
    parser.add_argument("--cache", type=Path, default=Path("eval_out/answer_dev"))
    parser.add_argument("--reranker", default="lexical")
    parser.add_argument(
        "--l2",
        default="0.01,0.1,1,10",
        help="pull toward the current weights: one value, or a grid (see --l2-by)",
    )
    parser.add_argument(
        "--l2-by",
        choices=("sets", "split"),
        default="sets",
        help="choose the L2 grid value by leaving one training set out (sets) or by an even/odd split",
    )
    parser.add_argument(
        "--features", type=Path, help="cache of the candidates' features (reused when present)"
    )
    parser.add_argument(
        "--free",
        help="comma-separated name patterns (fnmatch) of the terms and gates to fit; the rest stay as they are",
    )
    parser.add_argument("--tolerance", type=float, default=0.01, help="largest fall a set may show")
    parser.add_argument("--write", action="store_true", help=f"store the fitted weights in {WEIGHTS_FILE}")
    args = parser.parse_args(argv)
    current = BrainParams.load()
    train: dict[str, list[dict]] = {}
    held: dict[str, list[dict]] = {}
    if args.inputs:
        frozen = load_inputs(args.inputs)
        train |= {f"{name} (train)": rows for name, rows in frozen.get("train", {}).items()}
        held |= {f"{name} (held out)": rows for name, rows in frozen.get("held_out", {}).items()}
        # our own frozen writer sets: never fitted on, checked like the held-out ones
        held |= {f"{name} (own set)": labelled(name) for name in LABELLED}
    for folder in args.check_inputs:
        reranker = json.loads((folder / "provenance.json").read_text(encoding="utf-8"))["settings"][
            "reranker"
        ]
        for split, sets in load_inputs(folder).items():
            held |= {f"{name} ({split}, {reranker})": rows for name, rows in sets.items()}
    for name in ("cmrc2018_trial", "drcd_dev"):
        cache = args.cache / f"{name}-{args.reranker}.json"
        if not args.inputs and cache.exists():
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
    cached = (
        json.loads(args.features.read_text(encoding="utf-8"))
        if args.features and args.features.exists()
        else {}
    )
    for name, rows in {**train, **held}.items():
        if name not in cached:
            cached[name] = choices(rows, meaning, current)
    if args.features:
        args.features.write_text(json.dumps(cached), encoding="utf-8")
    train_q = [(feats, labels, name) for name in train for feats, labels in cached[name]]
    grid = [float(v) for v in args.l2.split(",")]
    chooser = choose_l2_by_set if args.l2_by == "sets" and len(train) > 1 else choose_l2
    patterns = args.free.split(",") if args.free else ["*"]
    free = lambda name: any(fnmatch.fnmatchcase(name, pattern) for pattern in patterns)  # noqa: E731
    l2, by_l2 = chooser(current.writer, train_q, grid, free) if len(grid) > 1 else (grid[0], {})
    fitted, stats = fit(current.writer, train_q, l2, free)
    stats |= {"l2": l2, "l2_chosen_by": chooser.__name__, "l2_split_top1": by_l2}
    new = current.model_copy(update={"writer": fitted})
    print(f"L2 {l2} (training split top-1 by L2: {by_l2}); {stats}")
    print(
        f"{'set':<42}{'top1 cur':>9}{'top1 fit':>9}{'ratio cur':>10}{'ratio fit':>10}"
        f"{'p50':>7}{'p50 fit':>7}{'misled':>8}{'mis fit':>8}"
    )
    figures: dict[str, dict[str, float]] = {}
    for split, sets in (("train", train), ("held-out", held)):
        for name, rows in sets.items():
            q = cached[name]
            a, b = top1(current.writer, q), top1(fitted, q)
            before, after = score(rows, meaning, weights=current), score(rows, meaning, weights=new)
            ratio_a, ratio_b = before[2], after[2]
            figures[f"{split}: {name}"] = {
                "top1_before": round(a, 3),
                "top1_after": round(b, 3),
                "has_gold_per_in_ctx_before": round(ratio_a, 3),
                "has_gold_per_in_ctx_after": round(ratio_b, 3),
                "answer_chars_p50_before": before[3],
                "answer_chars_p50_after": after[3],
                "misled_before": round(before[4], 3),
                "misled_after": round(after[4], 3),
            }
            print(
                f"{split + ': ' + name:<42}{a:>9.3f}{b:>9.3f}{ratio_a:>10.3f}{ratio_b:>10.3f}"
                f"{before[3]:>7.0f}{after[3]:>7.0f}{before[4]:>8.3f}{after[4]:>8.3f}"
            )
    print(json.dumps(fitted.to_dict(), ensure_ascii=False))
    languages = {name: set_language(rows) for name, rows in {**train, **held}.items()}
    adopted, worse = adoption(current.writer, fitted, figures, languages, args.tolerance)
    # the whole fit, or the current weights with the adopted languages' terms (gates are shared)
    chosen = (
        fitted
        if "all" in adopted
        else current.writer.model_copy(
            update={
                "terms": {
                    k: fitted.terms[k] if changed_by(k, adopted) else v
                    for k, v in current.writer.terms.items()
                }
            }
        )
    )
    for name, why in worse.items():
        print(f"not adopted for {name}: falls by more than {args.tolerance} on {why}")
    print(f"adopted: {sorted(adopted) or 'nothing'}")
    if args.write:
        provenance = {
            "method": "Luce choice (P ∝ score ** sharpness) of a sentence holding a gold answer among each "
            "question's candidates, maximum likelihood, "
            f"log-linear in the gates, L2 {l2} toward the previous weights, '{ANCHOR}' held fixed"
            + (f", only {args.free} fitted" if args.free else ""),
            "training_sets": sorted(train),
            "held_out_sets": sorted(held),
            "date": dt.date.today().isoformat(),
            "command": command_line("bench/fit_offline_brain.py", argv),
            **stats,
            "figures": figures,
            "adopted": sorted(adopted),
            "not_adopted": worse,
            "fitted_weights": fitted.to_dict() | {"provenance": {}},
        }
        # per-term notes stay; an earlier fit's record is replaced; how the shared terms were set is
        # kept as "base_terms" beside this fit's own "method"
        stale = ("last_fit", "fit", "fitted_weights")
        notes = {k: v for k, v in current.writer.provenance.items() if k not in stale}
        if "method" in notes:
            notes["base_terms"] = notes.pop("method")
        writer = chosen.to_dict() | {"provenance": notes | {"fit": provenance}}
        BrainParams.from_dict(current.to_dict() | {"writer": writer}).save()
        print(f"wrote {WEIGHTS_FILE}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
