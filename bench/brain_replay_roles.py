"""Replay the offline roles ``brain_replay.py`` does not call, on the same frozen inputs: the compute
planners (``OfflineWriter`` on tests/data/compute_questions.jsonl, ``plan_computation`` on every replay
input), compression, the support check, the rewriter, ``pointed_to``, ``the_one_document`` and the
follow-up readings of each question. No embedder (the lexical paths; ``brain_replay.py`` covers meaning).

Usage (from a worktree root, ``AGENTIC_RAG_DATA_DIR`` naming the shared sets):
    python bench/brain_replay_roles.py OUT.json [--runs DIR] [--cache DIR]
    python bench/brain_replay_roles.py --compare BEFORE.json AFTER.json
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path.cwd()  # the worktree whose code is replayed (run from its root)
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def dump(out: Path, runs: Path, cache: Path) -> int:
    from bench import brain_replay as replay
    from core.schemas import Passage
    from providers.brain.write import OfflineWriter
    from providers.offline_brain.analysis import analyze_question
    from providers.offline_brain.compute import computation_intent, plan_computation
    from providers.offline_brain.contextualize import (
        has_referring_word,
        names_its_own_context,
        the_one_document,
    )
    from providers.offline_brain.extractive import compress_passages
    from providers.offline_brain.judge import evaluate, pointed_to
    from providers.offline_brain.rewrite import candidate_rewrites, rewrite_query
    from providers.offline_brain.support import check_answer_support

    result: dict[str, object] = {}
    writer = OfflineWriter()
    frozen = ROOT / "tests" / "data" / "compute_questions.jsonl"
    for line in frozen.read_text(encoding="utf-8").splitlines():
        if line.strip():
            item = json.loads(line)
            texts = enumerate(item["passages"], start=1)
            passages = [Passage(number=n, chunk_id=f"p{n}", source="set", text=t) for n, t in texts]
            draft = writer(item["question"], passages)
            result[f"compute/{item['id']}"] = [draft.answer, draft.tool_calls]
    for name, rows in replay._rows(runs, cache).items():
        for i, row in enumerate(rows):
            question = row["question"]
            passages = [Passage.model_validate(p) for p in row["passages"]]
            chunks = replay._chunks(row["passages"])
            verdict = evaluate(question, analyze_question(question), chunks, [])
            rewrites = candidate_rewrites(question, verdict)
            planned = plan_computation(question, passages)
            claim = f"{passages[0].text[:200]} [1]" if passages else ""
            result[f"{name}/{i}"] = [
                computation_intent(question),
                planned.model_dump(mode="json") if planned else None,
                [p.model_dump(mode="json") for p in compress_passages(question, passages, 300)],
                rewrites,
                rewrite_query(question, verdict, rewrites[:2]),
                [s.model_dump(mode="json") for s in check_answer_support(claim, passages)],
                pointed_to(question, chunks[:3]),
                the_one_document(question, chunks),
                names_its_own_context(question),
                has_referring_word(question),
            ]
    out.write_text(json.dumps(result, ensure_ascii=False, sort_keys=True, default=str), encoding="utf-8")
    return len(result)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("paths", type=Path, nargs="+")
    parser.add_argument("--compare", action="store_true")
    parser.add_argument("--runs", type=Path, default=Path("/tmp/brain20_base/eval_out"))
    parser.add_argument("--cache", type=Path, default=Path("/tmp/brain20_base/eval_out/answer_dev"))
    args = parser.parse_args(argv)
    if not args.compare:
        print(f"{dump(args.paths[0], args.runs, args.cache)} inputs replayed")
        return 0
    before, after = (json.loads(p.read_text(encoding="utf-8")) for p in args.paths[:2])
    differ = [key for key in sorted(set(before) | set(after)) if before.get(key) != after.get(key)]
    print(
        f"{len(differ)} of {len(set(before) | set(after))} differ" + "".join(f"\n  {k}" for k in differ[:5])
    )
    return 1 if differ else 0


if __name__ == "__main__":
    raise SystemExit(main())
