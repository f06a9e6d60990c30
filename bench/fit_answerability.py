"""Fit the answerability model (providers/brain/answerability) on labelled data built from public sets.

Labels, SQuAD 2.0-style, from every set in the shared layout (``../shared/data``, plus the guide's
cross-language sets written by ``bench/crosslang_dataset.py`` and the how-to sets over technical docs
written by ``bench/docs_eval/as_dataset.py``, commands in its docstring):

- **answerable**: a question asked of its own corpus, kept only when a gold passage is among the top
  ``top_k`` after reranking (a retrieval miss says nothing about answerability);
- **unanswerable**: the same question with its gold passages removed from the candidates;
- **off-domain**: the question asked of another set's corpus (``PAIRS``: same language and
  cross-language).

An "unanswerable" row whose top chunks still contain a gold answer string (RGB keeps several copies of
a fact) is left out: its label is not certain. Held-out sets are sets whose *questions* were never
fitted on; a held-out set's corpus may serve as the off-domain corpus of a fit set (``PAIRS``).

Each row is computed under both rerankers (e5 and lexical), so the model serves either. The first
``--n`` questions with gold passages of each set are used (N=40 by default: a shared 2-core machine);
signals are cached per set, condition and reranker in ``.agentic_rag/answerability/`` (gitignored), so
a refit is instant. The model is fitted on ``--fit`` sets only (logistic regression, balanced classes,
L2); the threshold is the highest one that refuses at most ``--max-answerable-refused`` of the fit
sets' answerable rows; refusal precision and recall are then reported on the ``--held-out`` sets, which
were not fitted on. ``--write`` stores weights, threshold and provenance in answerability.json.

    AGENTIC_RAG_DATA_DIR=../shared/data nice -n 10 python bench/fit_answerability.py --write
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from scipy.optimize import minimize

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.fit_inputs import command_line  # noqa: E402
from config import load_settings  # noqa: E402
from core.names import names_to_look_up  # noqa: E402
from evaluators.datasets import load_dataset, resolve_dataset_dir  # noqa: E402
from evaluators.modes import prepare_index  # noqa: E402
from nodes.rerank import keep_second_hop_slots  # noqa: E402
from providers.brain.answerability.model import MODEL_FILE, AnswerabilityModel  # noqa: E402
from providers.brain.answerability.signals import (  # noqa: E402
    SIGNALS,
    TOP,
    extract,
    meaning_foreign,
    unmentioned_signals,
)
from providers.meaning import Meaning  # noqa: E402
from providers.offline_brain.profile import analyze, as_profile  # noqa: E402
from providers.rerankers import make_reranker  # noqa: E402
from retrievers.factory import open_retrievers  # noqa: E402

CACHE = ROOT / ".agentic_rag" / "answerability"
CROSSLANG = ROOT / "eval_out" / "crosslang"
DOCS = ROOT / "eval_out" / "docs"  # bench/docs_eval/as_dataset.py: how-to questions over technical docs
# multi-hop (HotpotQA, MuSiQue), Chinese reading comprehension (CMRC) and the guide's cross-language sets;
# the how-to sets over two projects' docs (docs_howto_pinia, docs_howto_dev) join with --fit (session 21:
# measured, not adopted: docs/evaluation.md)
FIT = ["hotpotqa_hipporag100", "musique_hipporag100", "cmrc2018_trial", "crosslang_zh2en", "crosslang_en2zh"]
HELD_OUT = ["rgb_en_fact", "rgb_zh_fact"]  # news facts, English and Chinese: never fitted on
# questions of the key set asked of the value set's corpus (off-domain), within fit / within held-out
PAIRS = {
    "hotpotqa_hipporag100": "cmrc2018_trial",  # en -> zh
    "cmrc2018_trial": "rgb_zh_fact",  # zh -> zh
    "rgb_zh_fact": "hotpotqa_hipporag100",  # zh -> en
    "crosslang_zh2en": "rgb_zh_fact",  # zh -> zh (other topic)
    "crosslang_en2zh": "hotpotqa_hipporag100",  # en -> en (other topic)
    "rgb_en_fact": "musique_hipporag100",  # en -> en
    "musique_hipporag100": "rgb_zh_fact",  # en -> zh
    "drcd_dev": "rgb_en_fact",  # zh -> en
    "docs_howto_pinia": "docs_howto_dev",  # one project's API asked of another project's docs
    "docs_howto_dev": "docs_howto_pinia",
}
RERANKERS = ("e5", "lexical")


def dataset_dir(name: str) -> Path:
    local = next((folder / name for folder in (CROSSLANG, DOCS) if (folder / name).is_dir()), None)
    return local or resolve_dataset_dir(name)


class SetRuntime:
    """One set's index, retrievers and both rerankers (opened once)."""

    def __init__(self, name: str, settings: Any, ranking: str = "hybrid") -> None:
        self.ranking = ranking
        self.dataset = load_dataset(dataset_dir(name), require_corpus=True)
        self.settings, folder = prepare_index(self.dataset, settings, None, progress=False)
        self.retrievers = open_retrievers(self.settings, folder)
        self.rerankers = {
            spec: make_reranker(
                spec,
                embedder=self.retrievers.embedder,
                cache_dir=folder / "cache",
                blend=self.settings.rerank_blend,
                window_tokens=self.settings.rerank_window_tokens,
                depth=self.settings.rerank_depth,
                e5_runtime=self.settings.e5_runtime,
            )
            for spec in RERANKERS
        }

    def ranked(self, question: str, reranker: str, drop: set[str] = frozenset()) -> list[Any]:
        """The evidence the judge reads. ``served``: as agentic mode hands it over, the first stage led
        by the entity-graph walk where its gate lets it (``retrievers/walk_gate.py``) and the reranker
        leaving walk-only passages in their slots; ``hybrid``: hybrid search and the reranker alone (the
        packaged model's rows)."""
        graph = self.retrievers.entity_graph
        first = graph if self.ranking == "served" and graph is not None and graph.available() else None
        search = first or self.retrievers.hybrid
        pool = [c for c in search.search(question, self.settings.candidate_k) if c.id not in drop]
        reranked = self.rerankers[reranker].rerank(question, pool)
        if first is not None:
            reranked = keep_second_hop_slots(pool, reranked)
        return reranked[: self.settings.top_k]

    def unmentioned(self, question: str, drop: set[str] = frozenset()) -> list[str]:
        """The question's names and identifiers this corpus (less ``drop``) never mentions, as the
        analysis step looks them up (``nodes/analyze_query.py``) from the offline analysis."""
        analysis = analyze(question)
        names = names_to_look_up(question, [*analysis.entities, *analysis.identifiers])
        return self.retrievers.keyword.unmentioned(names, without=drop)


class Runtimes:
    """Each set's runtime, opened once, all ranking the same way; rows cached per set and ranking."""

    def __init__(self, settings: Any, ranking: str) -> None:
        self.settings = settings
        self.ranking = ranking
        self.opened: dict[str, SetRuntime] = {}

    def get(self, name: str) -> SetRuntime:
        if name not in self.opened:
            self.opened[name] = SetRuntime(name, self.settings, self.ranking)
        return self.opened[name]

    def cache(self, name: str, n: int) -> Path:
        suffix = "" if self.ranking == "hybrid" else f"-{self.ranking}"  # "hybrid": the pre-session-18 name
        return CACHE / f"{name}-n{n}{suffix}.jsonl"


def rows_for(name: str, n: int, runtimes: Runtimes, meaning: Meaning) -> list[dict]:
    """Labelled signal rows of one set (cached per set: delete the file to recompute)."""
    path = runtimes.cache(name, n)
    if path.exists():
        return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    own, other = runtimes.get(name), runtimes.get(PAIRS[name])
    queries = [q for q in own.dataset.queries if q.gold_ids][:n]
    rows: list[dict] = []
    started = time.time()
    for number, q in enumerate(queries, 1):
        gold = set(q.gold_ids)
        for reranker in RERANKERS:
            asked = own.ranked(q.question, reranker)
            if gold & {c.id for c in asked}:
                rows.append(
                    _row(name, q, "answerable", reranker, 1, asked, meaning, own.unmentioned(q.question))
                )
            removed = own.ranked(q.question, reranker, gold)
            rows.append(
                _row(
                    name, q, "gold_removed", reranker, 0, removed, meaning, own.unmentioned(q.question, gold)
                )
            )
            elsewhere = other.ranked(q.question, reranker)
            rows.append(
                _row(name, q, "off_domain", reranker, 0, elsewhere, meaning, other.unmentioned(q.question))
            )
        if number % 10 == 0:
            print(
                f"  {name}: {number}/{len(queries)} questions, {time.time() - started:.0f} s", file=sys.stderr
            )
    CACHE.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return rows


def _row(
    name: str,
    q: Any,
    condition: str,
    reranker: str,
    label: int,
    chunks: list,
    meaning: Meaning,
    unmentioned: list[str],
) -> dict:
    return {
        "set": name,
        "id": q.id,
        "condition": condition,
        "reranker": reranker,
        "label": label,
        "answer_in_top": answer_in(q, chunks),
        "question": q.question,
        "unmentioned": unmentioned,
        "signals": extract(q.question, chunks, meaning, unmentioned=unmentioned),
    }


def answer_in(q: Any, chunks: list) -> bool:
    """Whether a gold answer string appears in the evidence's top chunks: with the gold passages removed
    another passage may still state it (RGB holds several copies), so the row is not unanswerable."""
    text = " ".join(c.chunk.text for c in chunks[:TOP]).lower()
    return any(a.strip() and a.strip().lower() in text for a in q.answers)


def upgraded(
    name: str, n: int, rows: list[dict], runtimes: Runtimes, field: str, value: Callable[..., Any]
) -> list[dict]:
    """Rows cached before ``field`` existed get it, ``value(runtime, q, row, drop)`` against the row's
    corpus (the other set's for an off-domain row; the gold passages dropped where the row dropped
    them), and the cache is rewritten; no signal is recomputed."""
    todo = [r for r in rows if field not in r]
    if not todo:
        return rows
    own, other = runtimes.get(name), runtimes.get(PAIRS[name])
    queries = {q.id: q for q in own.dataset.queries}
    for r in todo:
        q = queries[r["id"]]
        drop = set(q.gold_ids) if r["condition"] == "gold_removed" else set()
        r[field] = value(other if r["condition"] == "off_domain" else own, q, r, drop)
        r["question"] = q.question
    path = runtimes.cache(name, n)
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    print(f"  {name}: {field} for {len(todo)} rows", file=sys.stderr)
    return rows


def annotate(name: str, n: int, rows: list[dict], runtimes: Runtimes) -> list[dict]:
    """Rows cached before ``answer_in_top`` existed get it (ranking only)."""
    return upgraded(
        name,
        n,
        rows,
        runtimes,
        "answer_in_top",
        lambda rt, q, r, drop: answer_in(q, rt.ranked(q.question, r["reranker"], drop)),
    )


def vocabulary(name: str, n: int, rows: list[dict], runtimes: Runtimes) -> list[dict]:
    """Rows cached before the collection-vocabulary signals existed get the question's unmentioned
    names (posting lookups, no ranking); the signals are then derived from them (``backfill``)."""
    return upgraded(
        name, n, rows, runtimes, "unmentioned", lambda rt, q, r, drop: rt.unmentioned(q.question, drop)
    )


def backfill(rows: list[dict]) -> list[dict]:
    """Signals derived from cached ones (a signal added after the rows were cached)."""
    for r in rows:
        sig = r["signals"]
        sig.setdefault("meaning_foreign", meaning_foreign(sig["meaning_best"], sig["same_language"]))
        if "question" in r:  # the best passage's language from same_language (two languages: en, zh)
            profile = as_profile(r["question"])
            other = "zh" if profile.language == "en" else "en"
            passages = profile.language if sig["same_language"] else other
            sig.update(unmentioned_signals(r["unmentioned"], profile, passages))
    return rows


def labelled(rows: list[dict]) -> list[dict]:
    """The rows whose label is certain: an "unanswerable" row whose evidence still states a gold answer
    (a copy of the removed passage, or the same fact in another set's corpus) is left out."""
    return [r for r in rows if r["label"] == 1 or not r.get("answer_in_top")]


def matrix(rows: list[dict]) -> tuple[np.ndarray, np.ndarray]:
    x = np.array([[r["signals"][s] for s in SIGNALS] for r in rows], dtype=float)
    return x, np.array([r["label"] for r in rows], dtype=float)


def fit_logistic(
    x: np.ndarray, y: np.ndarray, l2: float, sample_weight: np.ndarray | None = None
) -> tuple[float, np.ndarray]:
    """Balanced-class logistic regression (L2 on the weights, not the intercept); each row's weight is
    multiplied by ``sample_weight`` where given (the classes are balanced on those weights)."""
    w = np.ones(len(y)) if sample_weight is None else np.asarray(sample_weight, dtype=float)
    pos = np.sum(w * y) / np.sum(w)
    weight = w * np.where(y == 1, 0.5 / pos, 0.5 / (1 - pos)) / np.mean(w)

    def loss(theta: np.ndarray) -> tuple[float, np.ndarray]:
        z = theta[0] + x @ theta[1:]
        p = 1 / (1 + np.exp(-z))
        eps = 1e-12
        value = -np.sum(weight * (y * np.log(p + eps) + (1 - y) * np.log(1 - p + eps))) / len(y)
        value += l2 * np.sum(theta[1:] ** 2)
        grad_z = weight * (p - y) / len(y)
        grad = np.concatenate([[grad_z.sum()], x.T @ grad_z + 2 * l2 * theta[1:]])
        return value, grad

    result = minimize(loss, np.zeros(x.shape[1] + 1), jac=True, method="L-BFGS-B")
    return float(result.x[0]), result.x[1:]


def refusal_figures(p: np.ndarray, y: np.ndarray, threshold: float) -> dict[str, float]:
    """Refusal precision/recall (refusal = p below threshold; positive class = unanswerable)."""
    refused = p < threshold
    unanswerable = y == 0
    tp = int(np.sum(refused & unanswerable))
    precision = tp / max(1, int(refused.sum()))
    recall = tp / max(1, int(unanswerable.sum()))
    answerable_refused = float(np.mean(refused[y == 1])) if (y == 1).any() else 0.0
    return {
        "refusal_precision": round(precision, 3),
        "refusal_recall": round(recall, 3),
        "answerable_refused": round(answerable_refused, 3),
        "rows": len(y),
    }


def choose_threshold(p: np.ndarray, y: np.ndarray, max_answerable_refused: float) -> float:
    """The highest threshold refusing at most that share of answerable rows (answers are kept first)."""
    answerable = np.sort(p[y == 1])
    k = int(np.floor(max_answerable_refused * len(answerable)))
    return float(np.clip(answerable[k] if k < len(answerable) else 0.5, 0.01, 0.99))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=40, help="questions per set")
    parser.add_argument("--fit", nargs="+", default=FIT)
    parser.add_argument("--held-out", nargs="+", default=HELD_OUT)
    parser.add_argument("--l2", type=float, default=0.001)
    parser.add_argument("--max-answerable-refused", type=float, default=0.10)
    parser.add_argument(
        "--ranking",
        choices=("served", "hybrid"),
        default="hybrid",
        help="the evidence rows are computed on: hybrid and the reranker (default; the packaged model) "
        "or as agentic mode serves it (the gated walk and the reranker's kept slots; docs/evaluation.md "
        "session 18: measured, not adopted)",
    )
    parser.add_argument(
        "--write", action="store_true", help="write providers/brain/answerability/answerability.json"
    )
    args = parser.parse_args(argv)
    runtimes = Runtimes(load_settings(brain="offline"), args.ranking)
    meaning: Meaning | None = None
    by_set: dict[str, list[dict]] = {}
    for name in args.fit + args.held_out:
        if meaning is None:
            meaning = Meaning(runtimes.get(name).retrievers.embedder)
        rows = annotate(name, args.n, rows_for(name, args.n, runtimes, meaning), runtimes)
        rows = vocabulary(name, args.n, rows, runtimes)
        by_set[name] = labelled(backfill(rows))
    fit_rows = [r for s in args.fit for r in by_set[s]]
    x, y = matrix(fit_rows)
    intercept, w = fit_logistic(x, y, args.l2)
    p_fit = 1 / (1 + np.exp(-(intercept + x @ w)))
    threshold = round(choose_threshold(p_fit, y, args.max_answerable_refused), 4)
    figures: dict[str, Any] = {"fit": refusal_figures(p_fit, y, threshold)}
    for name in args.held_out:
        xs, ys = matrix(by_set[name])
        ps = 1 / (1 + np.exp(-(intercept + xs @ w)))
        figures[name] = refusal_figures(ps, ys, threshold)
        conditions = np.array([r["condition"] for r in by_set[name]])
        figures[name]["refused_by_condition"] = {
            str(c): round(float(np.mean(ps[conditions == c] < threshold)), 3) for c in sorted(set(conditions))
        }
        for reranker in RERANKERS:
            keep = np.array([r["reranker"] == reranker for r in by_set[name]])
            figures[f"{name} ({reranker})"] = refusal_figures(ps[keep], ys[keep], threshold)
    hx = [r for s in args.held_out for r in by_set[s]]
    xh, yh = matrix(hx)
    figures["held_out_all"] = refusal_figures(1 / (1 + np.exp(-(intercept + xh @ w))), yh, threshold)
    model = AnswerabilityModel(
        intercept=round(intercept, 4),
        weights={s: round(float(v), 4) for s, v in zip(SIGNALS, w, strict=True)},
        threshold=threshold,
        provenance={
            "fitted_on": args.fit,
            "held_out": args.held_out,
            "off_domain_pairs": {k: v for k, v in PAIRS.items() if k in by_set},
            "questions_per_set": args.n,
            "rerankers": list(RERANKERS),
            "ranking": args.ranking,
            "date": dt.date.today().isoformat(),
            "command": "AGENTIC_RAG_DATA_DIR=../shared/data "
            + command_line("bench/fit_answerability.py", argv),
            "threshold_rule": f"highest threshold refusing <= {args.max_answerable_refused} of the fit sets' "
            "answerable rows (chosen on the fit sets)",
            "l2": args.l2,
            "figures": figures,
        },
    )
    print(
        json.dumps({"weights": model.weights, "intercept": model.intercept, "threshold": threshold}, indent=1)
    )
    print("| set | rows | refusal precision | refusal recall | answerable refused |")
    print("|---|---:|---:|---:|---:|")
    for key, f in figures.items():
        if "refused_by_condition" in f:
            print(f"<!-- {key}: refused by condition {f['refused_by_condition']} -->")
        print(
            f"| {key} | {f['rows']} | {f['refusal_precision']} | {f['refusal_recall']} | {f['answerable_refused']} |"
        )
    if args.write:
        model.save(MODEL_FILE)
        print(f"wrote {MODEL_FILE}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
