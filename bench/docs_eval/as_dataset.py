"""A documentation question set in the shared evaluation layout (``corpus.jsonl``, ``queries.jsonl``), so
the answerability fit (``bench/fit_answerability.py``) learns from technical documentation too, not only
from Wikipedia-style passages: how answerable a how-to question over API docs looks, and how a question
over another project's docs looks (``defineStore`` asked of this project's docs).

The corpus is the docs folder's Markdown pages cut the way ingestion cuts them (the project's loader,
markup cleaning and splitter, default sizes): one corpus passage per chunk, id ``<page>#<n>``, titled by
its heading path. A question's gold passages are the chunks of its page (and of the pages in ``also``)
that hold its key string (the API or command that answers it); the answers are the key string.

    python bench/docs_eval/as_dataset.py --docs /work/train_docs \
        --questions bench/docs_eval/train/questions.jsonl --out eval_out/docs/docs_howto_pinia
    python bench/docs_eval/as_dataset.py --docs bench/docs_eval/dev/pages \
        --questions bench/docs_eval/dev/questions.jsonl --out eval_out/docs/docs_howto_dev
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from ingestion.loaders import load_document  # noqa: E402
from ingestion.splitter import SplitConfig, split_document  # noqa: E402

MAX_BYTES = 5_000_000


def corpus(docs: Path) -> list[dict]:
    """Every Markdown page of ``docs`` as the chunks ingestion would index."""
    rows = []
    for path in sorted(docs.rglob("*.md")):
        page = path.relative_to(docs).as_posix()
        if page == "SOURCES.md":
            continue
        document = load_document(path, max_bytes=MAX_BYTES)
        for n, piece in enumerate(split_document(document, SplitConfig())):
            title = " > ".join(piece.heading_path) or document.title
            rows.append({"id": f"{page}#{n}", "title": title, "text": piece.text})
    return rows


def gold_ids(question: dict, passages: list[dict]) -> list[str]:
    """The chunks of the question's pages that hold its key string (case as written)."""
    pages = {question["page"], *question.get("also", [])}
    return [p["id"] for p in passages if p["id"].split("#")[0] in pages and question["key"] in p["text"]]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=Path, required=True)
    parser.add_argument("--questions", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    passages = corpus(args.docs)
    questions = [json.loads(line) for line in args.questions.read_text(encoding="utf-8").splitlines() if line]
    args.out.mkdir(parents=True, exist_ok=True)
    with (args.out / "corpus.jsonl").open("w", encoding="utf-8") as out:
        for row in passages:
            out.write(json.dumps(row, ensure_ascii=False) + "\n")
    kept = 0
    with (args.out / "queries.jsonl").open("w", encoding="utf-8") as out:
        for q in questions:
            gold = gold_ids(q, passages)
            kept += bool(gold)
            row = {"id": q["id"], "question": q["question"], "answer": [q["key"]], "gold_ids": gold}
            out.write(json.dumps(row, ensure_ascii=False) + "\n")
    print(f"{len(passages)} passages, {len(questions)} questions ({kept} with gold passages) in {args.out}")


if __name__ == "__main__":
    main()
