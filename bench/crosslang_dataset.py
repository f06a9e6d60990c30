"""Build the cross-language dev sets from the parallel guide pages (docs/guide/en, docs/guide/zh).

Usage:
    python bench/crosslang_dataset.py [--out eval_out/crosslang]

Writes two dataset folders in the shared layout (``corpus.jsonl`` + ``queries.jsonl``):
``crosslang_zh2en`` (Chinese questions, an index of the English pages only) and ``crosslang_en2zh``
(English questions, the Chinese pages only), so every gold passage is in the other language. One corpus
passage per page section (text under a ``##`` heading; the text before the first one is section 0). The
questions and their gold sections are frozen in ``tests/data/crosslang_questions.jsonl``. Then:

    python main.py eval eval_out/crosslang/crosslang_zh2en --modes hybrid_rerank,agentic
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
QUESTIONS = ROOT / "tests" / "data" / "crosslang_questions.jsonl"
GUIDE = ROOT / "docs" / "guide"


def sections(page: Path) -> list[tuple[str, str]]:
    """(heading, text) per section of a Markdown page; section 0 is the page title and its intro."""
    out: list[tuple[str, str]] = []
    heading, lines = "", []
    for line in page.read_text(encoding="utf-8").splitlines():
        if line.startswith("## ") or (line.startswith("# ") and not out and not lines):
            if lines or heading:
                out.append((heading, "\n".join(lines).strip()))
            heading, lines = re.sub(r"^#+\s*", "", line), []
        else:
            lines.append(line)
    out.append((heading, "\n".join(lines).strip()))
    return out


def corpus(language: str) -> list[dict]:
    docs = []
    for page in sorted((GUIDE / language).glob("*.md")):
        for i, (heading, text) in enumerate(sections(page)):
            if text:
                docs.append({"id": f"{language}/{page.stem}#{i}", "title": heading, "text": text})
    return docs


def build(out: Path) -> list[Path]:
    rows = [json.loads(line) for line in QUESTIONS.read_text(encoding="utf-8").splitlines() if line.strip()]
    folders = []
    for question_lang, passage_lang in (("zh", "en"), ("en", "zh")):
        folder = out / f"crosslang_{question_lang}2{passage_lang}"
        folder.mkdir(parents=True, exist_ok=True)
        docs = corpus(passage_lang)
        ids = {d["id"] for d in docs}
        with (folder / "corpus.jsonl").open("w", encoding="utf-8") as handle:
            for doc in docs:
                handle.write(json.dumps(doc, ensure_ascii=False) + "\n")
        with (folder / "queries.jsonl").open("w", encoding="utf-8") as handle:
            for row in rows:
                if row["language"] != question_lang:
                    continue
                gold = f"{passage_lang}/{row['gold']}"
                if gold not in ids:
                    raise SystemExit(f"{QUESTIONS}: {row['id']} names {gold}, which is not a section")
                record = {"id": row["id"], "question": row["question"], "gold_ids": [gold]}
                record["answer"] = row["answers"]
                handle.write(json.dumps(record, ensure_ascii=False) + "\n")
        folders.append(folder)
    return folders


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("eval_out/crosslang"))
    args = parser.parse_args(argv)
    for folder in build(args.out):
        print(folder)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
