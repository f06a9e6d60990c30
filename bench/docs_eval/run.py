"""Documentation evaluation (issue 21): the frozen questions of ``questions.jsonl`` asked of real docs.

The docs are Vue's and Helm's, in English and Chinese (``manifest.json``; ``fetch_docs.py`` copies them
from git mirrors into ``eval_docs/``). This script ingests them with the real ingest pipeline into its own
index (rebuilt unless ``--reuse-index``: ingest rules change what the index holds), asks every question
once through the real graph with default settings and the offline brain, and scores each answer:

- a how-to question is **correct** when the answer is not a refusal, contains the question's ``key``
  string, and cites the question's ``page`` (or one of its ``also`` pages, equally complete answers);
  it is **refused** when the agent says the documents are insufficient; otherwise it is **wrong**;
- an unanswerable question is **refused** (right) or **wrong** (answered).

It prints answerable-correct rate, refusal rate on unanswerable, wrong-answer rate (answered but wrong,
over all questions and per kind), seconds per question, and a breakdown by language and project; it
writes one JSON per question plus ``summary.json`` to ``--out``. Like ``app.evaluation`` it measures
the pipeline, so the answer cache is off (each question is asked once, in a fresh thread).

    nice -n 10 python bench/docs_eval/run.py [--out eval_out/docs_eval/run] [--reuse-index] [--ids ID ...]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import unicodedata
from collections import defaultdict
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
QUESTIONS = HERE / "questions.jsonl"

Verdict = Literal["correct", "refused", "wrong"]


class DocQuestion(BaseModel):
    """One frozen question: a how-to with the string and page a right answer has, or an unanswerable one."""

    id: str
    kind: Literal["howto", "unanswerable"]
    lang: Literal["en", "zh"]
    project: str | None = None
    question: str = Field(min_length=1)
    key: str = ""
    page: str = ""
    also: list[str] = Field(default_factory=list)
    cross_language: bool = False
    why: str = ""

    def pages(self) -> list[str]:
        return [self.page, *self.also] if self.page else list(self.also)


class Outcome(BaseModel):
    """What the agent returned, reduced to what scoring needs (sources relative to the docs folder)."""

    answer: str = ""
    insufficient: bool = False
    error: str = ""
    cited: list[str] = Field(default_factory=list)
    retrieved: list[str] = Field(default_factory=list)


class Score(BaseModel):
    verdict: Verdict
    refused: bool
    key_present: bool = False
    page_cited: bool = False
    page_retrieved: bool = False
    reason: str = ""


def load_questions(path: Path = QUESTIONS) -> list[DocQuestion]:
    lines = path.read_text(encoding="utf-8").splitlines()
    return [DocQuestion.model_validate_json(line) for line in lines if line.strip()]


def normalised(text: str) -> str:
    """NFKC, so a full-width ``ｖ－ｍｏｄｅｌ`` or ``（`` in a Chinese answer matches the key as written."""
    return unicodedata.normalize("NFKC", text)


def is_refusal(outcome: Outcome) -> bool:
    """The agent declined: it said the evidence is insufficient, or returned no answer at all."""
    return outcome.insufficient or not outcome.answer.strip()


def names_page(source: str, page: str) -> bool:
    source = source.replace("\\", "/")
    return source == page or source.endswith("/" + page)


def score(question: DocQuestion, outcome: Outcome) -> Score:
    """The verdict on one answer (see the module docstring)."""
    refused = is_refusal(outcome)
    pages = question.pages()
    cited = any(names_page(s, p) for s in outcome.cited for p in pages)
    retrieved = any(names_page(s, p) for s in outcome.retrieved for p in pages)
    if question.kind == "unanswerable":
        return Score(
            verdict="refused" if refused else "wrong",
            refused=refused,
            reason="" if refused else "answered a question the docs do not answer",
        )
    key = normalised(question.key) in normalised(outcome.answer)
    common = {"refused": refused, "key_present": key, "page_cited": cited, "page_retrieved": retrieved}
    if refused:
        return Score(verdict="refused", reason="refused", **common)
    if key and cited:
        return Score(verdict="correct", **common)
    missing = [name for name, ok in (("key string", key), ("page citation", cited)) if not ok]
    return Score(verdict="wrong", reason="missing " + " and ".join(missing), **common)


def rate(part: int, whole: int) -> float | None:
    return round(part / whole, 3) if whole else None


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The headline figures over scored rows ({"question": DocQuestion dump, "score": Score dump, ...})."""
    howto = [r for r in rows if r["question"]["kind"] == "howto"]
    unans = [r for r in rows if r["question"]["kind"] == "unanswerable"]

    def count(group: list[dict[str, Any]], verdict: str) -> int:
        return sum(r["score"]["verdict"] == verdict for r in group)

    seconds = [r["seconds"] for r in rows if "seconds" in r]
    out: dict[str, Any] = {
        "questions": len(rows),
        "howto": len(howto),
        "unanswerable": len(unans),
        "answerable_correct": rate(count(howto, "correct"), len(howto)),
        "answerable_refused": rate(count(howto, "refused"), len(howto)),
        "answerable_wrong": rate(count(howto, "wrong"), len(howto)),
        "unanswerable_refused": rate(count(unans, "refused"), len(unans)),
        "unanswerable_wrong": rate(count(unans, "wrong"), len(unans)),
        "wrong_answer_rate": rate(count(rows, "wrong"), len(rows)),
        "howto_page_retrieved": rate(sum(r["score"]["page_retrieved"] for r in howto), len(howto)),
        "howto_key_present": rate(sum(r["score"]["key_present"] for r in howto), len(howto)),
        "seconds_per_question": round(sum(seconds) / len(seconds), 2) if seconds else None,
    }
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        q = r["question"]
        groups[f"{q['kind']}/{q['lang']}"].append(r)
        if q["kind"] == "howto":
            groups[f"howto/{q['project']}/{q['lang']}"].append(r)
            if q["cross_language"]:
                groups["howto/cross-language"].append(r)
    out["by_group"] = {
        name: {"n": len(g), **{v: count(g, v) for v in ("correct", "refused", "wrong")}}
        for name, g in sorted(groups.items())
    }
    return out


def relative_source(source: str, docs: Path) -> str:
    try:
        return Path(source).resolve().relative_to(docs.resolve()).as_posix()
    except ValueError:
        return source


def ingest(docs: Path, settings, *, rebuild: bool) -> dict[str, Any]:
    from ingestion.pipeline import ingest_paths
    from retrievers.factory import embedder_for

    report = ingest_paths(
        [docs], settings, embedder_for(settings), rebuild=rebuild, progress=False, exclude=["SOURCES.md"]
    )
    return {
        "files": report.files_seen,
        "failed": [f.model_dump() for f in report.failed],
        "chunks": report.chunks_total,
        "seconds": report.seconds,
    }


def brain_settings(args: argparse.Namespace) -> dict[str, Any]:
    """The offline brain, or the LLM at ``--llm-url`` playing ``--llm-roles`` (the rest offline)."""
    if not args.llm_url:
        return {"brain": "offline"}
    return {
        "brain": "llm",
        "openai_base_url": args.llm_url,
        "llm_model": args.llm_model,
        "llm_roles": args.llm_roles,
        "answer_cache": False,
    }


def run(args: argparse.Namespace) -> dict[str, Any]:
    brain = brain_settings(args)
    os.environ["AGENTIC_RAG_BRAIN"] = brain["brain"]
    sys.path.insert(0, str(ROOT))
    from app.evaluation import make_context
    from config import load_settings
    from graph.builder import build_graph
    from graph.run import ask

    sys.path.insert(0, str(HERE))
    from fetch_docs import materialise

    docs: Path = args.docs
    if not (docs / "SOURCES.md").exists():
        print(f"materialising the pages into {docs}", file=sys.stderr)
        materialise(args.mirrors, docs)
    questions = load_questions(args.questions)
    if args.ids:
        questions = [q for q in questions if q.id in set(args.ids)]
    # the index is built the same either way; model_copy: load_settings reads llm_model by env name only
    settings = load_settings(index_dir=args.index, brain="offline").model_copy(update=brain)
    ingest_report = None
    if not args.reuse_index:
        print(f"ingesting {docs} into {args.index}", file=sys.stderr)
        ingest_report = ingest(docs, settings, rebuild=True)
        print(
            f"  {ingest_report['files']} files, {ingest_report['chunks']} chunks, "
            f"{ingest_report['seconds']} s",
            file=sys.stderr,
        )
    context = make_context(settings, Path(args.index))
    app = build_graph()
    args.out.mkdir(parents=True, exist_ok=True)
    rows: list[dict[str, Any]] = []
    inputs: list[dict[str, Any]] = []
    for n, q in enumerate(questions, 1):
        started = time.perf_counter()
        result = ask(app, q.question, context=context)
        seconds = round(time.perf_counter() - started, 2)
        outcome = Outcome(
            answer=result.answer,
            insufficient=result.insufficient,
            error=result.error,
            cited=[relative_source(c.source, docs) for c in result.citations],
            retrieved=list(dict.fromkeys(relative_source(p.source, docs) for p in result.passages)),
        )
        verdict = score(q, outcome)
        row = {
            "question": q.model_dump(),
            "score": verdict.model_dump(),
            "outcome": outcome.model_dump(),
            "citations": [
                {"number": c.number, "source": relative_source(c.source, docs), "heading": c.heading}
                for c in result.citations
            ],
            "stop_reason": result.stop_reason,
            "mode": result.mode,
            "trace": result.trace_line(),
            "seconds": seconds,
        }
        rows.append(row)
        if q.kind == "howto":  # the writer's input, labelled by the key string (bench/fit_offline_brain.py)
            passages = [p.model_dump() for p in result.passages]
            inputs.append({"question": q.question, "answers": [q.key], "fake": None, "passages": passages})
        (args.out / f"{q.id}.json").write_text(
            json.dumps(row, ensure_ascii=False, indent=1), encoding="utf-8"
        )
        print(
            f"[{n}/{len(questions)}] {q.id} {verdict.verdict:7} {seconds:5.1f}s {verdict.reason}",
            file=sys.stderr,
        )
    context.retrievers.index.close()
    if args.writer_inputs:
        from bench.fit_inputs import slim, write_rows

        write_rows(args.writer_inputs, [slim(row) for row in inputs])
        print(f"{len(inputs)} writer inputs in {args.writer_inputs}", file=sys.stderr)
    summary = summarise(rows)
    summary["ingest"] = ingest_report
    summary["settings"] = {
        "brain": brain["brain"],
        "llm": {k: brain[k] for k in ("openai_base_url", "llm_model", "llm_roles") if k in brain},
        "embedder": settings.embedder,
        "reranker": settings.reranker,
    }
    (args.out / "summary.json").write_text(
        json.dumps(summary, ensure_ascii=False, indent=1), encoding="utf-8"
    )
    return summary


def print_summary(summary: dict[str, Any]) -> None:
    lines = [
        f"questions: {summary['questions']} ({summary['howto']} how-to, {summary['unanswerable']} unanswerable)",
        f"answerable-correct rate:      {summary['answerable_correct']}",
        f"  how-to refused / wrong:     {summary['answerable_refused']} / {summary['answerable_wrong']}",
        f"  how-to page retrieved:      {summary['howto_page_retrieved']}",
        f"  how-to key string present:  {summary['howto_key_present']}",
        f"refusal rate on unanswerable: {summary['unanswerable_refused']}",
        f"wrong-answer rate (all):      {summary['wrong_answer_rate']}",
        f"seconds per question:         {summary['seconds_per_question']}",
        "",
        f"{'group':28} {'n':>3} {'correct':>8} {'refused':>8} {'wrong':>6}",
    ]
    for name, g in summary["by_group"].items():
        lines.append(f"{name:28} {g['n']:>3} {g['correct']:>8} {g['refused']:>8} {g['wrong']:>6}")
    print("\n".join(lines))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=Path, default=ROOT / "eval_docs", help="materialised pages")
    parser.add_argument(
        "--mirrors", type=Path, default=Path("/work/.mirror"), help="git mirrors (fetch_docs)"
    )
    parser.add_argument("--questions", type=Path, default=QUESTIONS)
    parser.add_argument("--index", type=Path, default=ROOT / "eval_out/docs_eval/index")
    parser.add_argument("--out", type=Path, default=ROOT / "eval_out/docs_eval/run")
    parser.add_argument("--reuse-index", action="store_true", help="ask the existing index, do not re-ingest")
    parser.add_argument("--ids", nargs="*", help="only these question ids")
    parser.add_argument(
        "--writer-inputs",
        type=Path,
        help="also write each how-to question's writer input (question, key as the answer, the passages "
        "the graph handed the writer) as a fit-input file (.jsonl.gz) for bench/fit_offline_brain.py",
    )
    parser.add_argument("--llm-url", help="an OpenAI-compatible server (e.g. `python main.py llm serve`)")
    parser.add_argument("--llm-model", default="qwen2.5-coder-1.5b", help="the model name it serves")
    parser.add_argument("--llm-roles", default="write", help="AGENTIC_RAG_LLM_ROLES: write, write,judge, all")
    args = parser.parse_args(argv)
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    print_summary(run(args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
