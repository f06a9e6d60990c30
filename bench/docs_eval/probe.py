"""One docs-eval question through the real graph: the passages each step hands on, in order.

For bisecting a ranking change: run it from any checkout (``--root``) against one index and compare
what retrieval found (first stage), what the reranker kept, and which pages the answer cited.

    nice -n 19 python bench/docs_eval/probe.py --index eval_out/docs_eval/index --ids vue-en-06 helm-en-05
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def short(hit, docs: str) -> str:
    chunk = getattr(hit, "chunk", hit)
    source = str(getattr(chunk, "source", "")).replace(docs, "")
    ranks = getattr(hit, "ranks", {}) or {}
    text = " ".join(str(getattr(chunk, "text", "")).split())[:70]
    return f"{getattr(hit, 'score', 0):7.3f} {source:55.55} {','.join(sorted(ranks)):22.22} {text}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", type=Path, default=HERE.parents[1], help="the checkout to import")
    parser.add_argument("--index", type=Path, required=True)
    parser.add_argument("--ids", nargs="+", required=True)
    parser.add_argument("--top", type=int, default=8)
    parser.add_argument("--docs", default="/work/eval_docs/")
    args = parser.parse_args(argv)
    os.environ["AGENTIC_RAG_BRAIN"] = "offline"
    sys.path.insert(0, str(args.root))
    from config import load_settings
    from graph.builder import build_graph
    from graph.run import build_input

    try:
        from app.wiring import build_context
    except ImportError:  # a checkout from before the wiring moved out of nodes/
        from nodes.context import build_context

    questions = {}
    for line in (HERE / "questions.jsonl").read_text(encoding="utf-8").splitlines():
        if line.strip():
            q = json.loads(line)
            questions[q["id"]] = q
    settings = load_settings(index_dir=args.index, brain="offline").model_copy(update={"answer_cache": False})
    context = build_context(settings, index_dir=args.index)
    app = build_graph()
    for qid in args.ids:
        q = questions[qid]
        print(f"== {qid}: {q['question']}  (key {q['key']!r}, page {q['page']})")
        config = {"configurable": {"thread_id": f"probe-{qid}"}, "recursion_limit": 40}
        for update in app.stream(
            build_input(q["question"], None, None), config=config, context=context, stream_mode="updates"
        ):
            for node, delta in update.items():
                if not isinstance(delta, dict):
                    continue
                for field in ("retrieved", "reranked", "passages"):
                    if delta.get(field):
                        print(f"-- {node}.{field} ({len(delta[field])})")
                        for hit in delta[field][: args.top]:
                            print("   " + short(hit, args.docs))
                if delta.get("answer"):
                    print(f"-- {node}.answer: {' '.join(str(delta['answer']).split())[:300]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
