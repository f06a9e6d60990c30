"""Replay the offline brain on frozen inputs and compare two replays: does a refactor change behaviour?

Usage (``AGENTIC_RAG_DATA_DIR`` naming the folder of the shared sets, e.g. /work/shared/data):
    python bench/brain_replay.py dump OUT.json [--runs DIR] [--cache DIR]   # run from a worktree root
    python bench/brain_replay.py compare BEFORE.json AFTER.json [--show 5]

``dump`` runs every offline role on inputs that do not depend on the code under test, and writes what
each produced:
- the writer (``extractive_answer``) and the judge (``evaluate``) on saved passages, once given the
  question's text and once given the analysis the graph hands them (``*_via_analysis``: the analysis
  carries the question's profile, read instead of the text; a baseline without it reads the text): a harness run's
  contexts (``--runs DIR``: ``base_<set>_lexical/per_query_agentic.jsonl`` for RGB zh/en, CMRC, DRCD),
  the dev-slice cache of ``bench/answer_params.py`` (``--cache DIR``) and the frozen labelled sets
  (``tests/data/news_*.jsonl``, ``answer_*.jsonl``);
- the analysis (``analyze_question``: type, complexity, entities, sub-queries, strategy) and the kinds
  of fact asked for, on every one of those questions plus the frozen question sets of ``tests/data``;
- follow-up resolution (``contextualize_question``, ``needs_clarification``) on ``tests/data/followups.jsonl``.

Run it once in a worktree of the baseline (e.g. main) and once in the changed one; ``compare`` prints
how many outputs differ per part and shows the first few. Same passages, so a difference is the code's.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path.cwd()  # the worktree whose code is replayed (run from its root)
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

RUNS = {
    "rgb_zh_fact": "base_rgb_zh_fact_lexical",
    "rgb_en_fact": "base_rgb_en_fact_lexical",
    "cmrc2018_trial": "base_cmrc2018_trial_lexical",
    "drcd_dev": "base_drcd_dev_lexical",
}
QUESTION_SETS = (
    "analyzer_questions",
    "analyzer_questions_fresh",
    "crosslang_questions",
    "global_questions",
    "compute_questions",
)


def _rows(runs: Path, cache: Path) -> dict[str, list[dict]]:
    from bench import answer_params as ap

    data: dict[str, list[dict]] = {}
    for name, folder in RUNS.items():
        if (runs / folder / "per_query_agentic.jsonl").exists():
            data[name] = ap.from_run(name, runs / folder, lambda i: True)
    for name in ap.LABELLED:
        data[name] = ap.labelled(name)
    for name in ("cmrc2018_trial", "drcd_dev"):
        path = cache / f"{name}-lexical.json"
        if path.exists():
            data[name + "_dev"] = list(json.loads(path.read_text(encoding="utf-8")).values())
    return data


def _chunks(passages: list[dict]) -> list:
    from core.chunks import Chunk, ScoredChunk

    return [
        ScoredChunk(
            chunk=Chunk(id=p["chunk_id"], text=p["text"], source=p.get("source") or "doc"),
            score=1.0 / (1 + i),
            ranks={"bm25": i + 1},
        )
        for i, p in enumerate(passages)
    ]


def _questions(path: Path) -> list[str]:
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            out.append(row.get("question") or row.get("query") or row.get("text") or "")
    return [q for q in out if q]


def dump(out: Path, runs: Path, cache: Path) -> dict[str, int]:
    from config import load_settings
    from core.schemas import Passage
    from providers.meaning import Meaning
    from providers.offline_brain import answer as writer
    from providers.offline_brain import judge
    from providers.offline_brain.analysis import analyze_question
    from providers.offline_brain.contextualize import contextualize_question, needs_clarification
    from providers.offline_brain.facts import defined_term, wanted
    from retrievers.factory import embedder_for

    try:  # the analysis carrying the question's profile (issue 20); before it, the roles read the text
        from providers.offline_brain.profile import analyze, profile_for
    except ImportError:  # pragma: no cover - baseline code

        def analyze(question: str):
            return analyze_question(question)

        def profile_for(question: str, analysis: object) -> str:
            return question

    meaning = Meaning(embedder_for(load_settings()))
    parts = ("writer", "writer_via_analysis", "judge", "judge_via_analysis", "analysis", "followups")
    result: dict[str, dict[str, object]] = {part: {} for part in parts}
    questions: list[str] = []
    for name, rows in _rows(runs, cache).items():
        for i, row in enumerate(rows):
            key, question = f"{name}/{i}", row["question"]
            questions.append(question)
            passages = [Passage.model_validate(p) for p in row["passages"]]
            result["writer"][key] = writer.extractive_answer(question, passages, meaning=meaning).answer
            chunks = _chunks(row["passages"])
            verdict = judge.evaluate(question, analyze_question(question), chunks, [], meaning=meaning)
            result["judge"][key] = verdict.model_dump(mode="json")
            analysis = analyze(question)  # what the graph's judge and writer receive
            read = profile_for(question, analysis)
            result["writer_via_analysis"][key] = writer.extractive_answer(
                read, passages, meaning=meaning
            ).answer
            verdict = judge.evaluate(question, analysis, chunks, [], meaning=meaning)
            result["judge_via_analysis"][key] = verdict.model_dump(mode="json")
    for name in QUESTION_SETS:
        path = ROOT / "tests" / "data" / f"{name}.jsonl"
        if path.exists():
            questions.extend(_questions(path))
    for question in dict.fromkeys(questions):
        reading = analyze_question(question).model_dump(mode="json", exclude={"profile"})
        reading["kinds"], reading["defined"] = sorted(wanted(question)), defined_term(question)
        result["analysis"][question] = reading
    followups = ROOT / "tests" / "data" / "followups.jsonl"
    for i, line in enumerate(followups.read_text(encoding="utf-8").splitlines()):
        if line.strip():
            row = json.loads(line)
            history = [(role, text) for role, text in row["history"]]
            result["followups"][str(i)] = [
                contextualize_question(row["question"], history) if history else row["question"],
                needs_clarification(row["question"], history),
            ]
    out.write_text(json.dumps(result, ensure_ascii=False, indent=0, sort_keys=True), encoding="utf-8")
    return {part: len(items) for part, items in result.items()}


def compare(before: dict, after: dict, show: int = 5) -> int:
    """Print per part how many outputs differ; returns the total."""
    total = 0
    for part in sorted(set(before) | set(after)):
        old, new = before.get(part, {}), after.get(part, {})
        keys = sorted(set(old) | set(new))
        differ = [k for k in keys if old.get(k) != new.get(k)]
        total += len(differ)
        print(f"{part}: {len(differ)} of {len(keys)} differ")
        for key in differ[:show]:
            print(f"  {key}\n    before: {json.dumps(old.get(key), ensure_ascii=False)[:400]}")
            print(f"    after:  {json.dumps(new.get(key), ensure_ascii=False)[:400]}")
    return total


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    d = sub.add_parser("dump")
    d.add_argument("out", type=Path)
    d.add_argument("--runs", type=Path, default=Path("/tmp/brain20_base/eval_out"))
    d.add_argument("--cache", type=Path, default=Path("/tmp/brain20_base/eval_out/answer_dev"))
    c = sub.add_parser("compare")
    c.add_argument("before", type=Path)
    c.add_argument("after", type=Path)
    c.add_argument("--show", type=int, default=5)
    args = parser.parse_args(argv)
    if args.command == "dump":
        print(dump(args.out, args.runs, args.cache))
        return 0
    load = lambda p: json.loads(p.read_text(encoding="utf-8"))  # noqa: E731
    return 1 if compare(load(args.before), load(args.after), args.show) else 0


if __name__ == "__main__":
    raise SystemExit(main())
