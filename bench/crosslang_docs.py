"""Build the cross-language set from public parallel data other than the guide: Vue's and Helm's docs.

Usage:
    python bench/crosslang_docs.py [--docs eval_docs] [--out eval_out/crosslang_docs]

Writes ``docs_zh2en`` in the shared layout (``corpus.jsonl`` + ``queries.jsonl``): Chinese questions over
an index of the English pages only of both projects (``bench/docs_eval/manifest.json``; materialise them
first with ``python bench/docs_eval/fetch_docs.py``), so every gold passage is in the other language.
One corpus passage per page section, as ``bench/crosslang_dataset.py`` cuts the guide (heading anchors
``{#id}`` dropped from titles). The questions, their page, gold section (an index or a heading prefix)
and accepted answers are frozen in ``tests/data/crosslang_docs_questions.jsonl`` (issue 21; written
before the writer changes it measures). Then:

    python main.py eval eval_out/crosslang_docs/docs_zh2en --reranker e5 --modes agentic
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT / "bench") not in sys.path:
    sys.path.insert(0, str(ROOT / "bench"))

from crosslang_dataset import sections  # noqa: E402

QUESTIONS = ROOT / "tests" / "data" / "crosslang_docs_questions.jsonl"
_ANCHOR = re.compile(r"\s*\{#[^}]*\}\s*$")


def corpus(docs: Path, language: str = "en") -> list[dict]:
    out = []
    for project in ("helm", "vue"):
        folder = docs / project / language
        for page in sorted(folder.rglob("*.md")):
            name = f"{project}/{language}/{page.relative_to(folder).as_posix()}"
            for i, (heading, text) in enumerate(sections(page)):
                if text:
                    out.append({"id": f"{name}#{i}", "title": _ANCHOR.sub("", heading), "text": text})
    return out


def gold_id(row: dict, docs: Path) -> str:
    """The corpus id of the row's gold section: by index, or the section whose heading starts so."""
    want = row.get("section")
    found = sections(docs / row["page"])
    if isinstance(want, int):
        return f"{row['page']}#{want}"
    for i, (heading, text) in enumerate(found):
        if want is None and any(a.lower() in f"{heading}\n{text}".lower() for a in row["answers"]):
            return f"{row['page']}#{i}"
        if want is not None and heading.replace("`", "").lower().startswith(want.replace("`", "").lower()):
            return f"{row['page']}#{i}"
        if want is not None and want.lower() in heading.lower():
            return f"{row['page']}#{i}"
    raise SystemExit(f"{QUESTIONS}: {row['id']}: no section {want!r} in {row['page']}")


def build(docs: Path, out: Path) -> Path:
    if not (docs / "vue" / "en").is_dir():
        raise SystemExit(f"{docs}: no vue/en pages; run python bench/docs_eval/fetch_docs.py first")
    rows = [json.loads(line) for line in QUESTIONS.read_text(encoding="utf-8").splitlines() if line.strip()]
    folder = out / "docs_zh2en"
    folder.mkdir(parents=True, exist_ok=True)
    passages = corpus(docs)
    ids = {p["id"] for p in passages}
    with (folder / "corpus.jsonl").open("w", encoding="utf-8") as handle:
        for passage in passages:
            handle.write(json.dumps(passage, ensure_ascii=False) + "\n")
    with (folder / "queries.jsonl").open("w", encoding="utf-8") as handle:
        for row in rows:
            gold = gold_id(row, docs)
            if gold not in ids:
                raise SystemExit(f"{QUESTIONS}: {row['id']} names {gold}, an empty section")
            text = next(p for p in passages if p["id"] == gold)
            if not any(a.lower() in f"{text['title']}\n{text['text']}".lower() for a in row["answers"]):
                raise SystemExit(f"{QUESTIONS}: {row['id']}: no accepted answer in {gold}")
            record = {
                "id": row["id"],
                "question": row["question"],
                "gold_ids": [gold],
                "answer": row["answers"],
            }
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")
    return folder


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=Path, default=ROOT / "eval_docs", help="materialised pages")
    parser.add_argument("--out", type=Path, default=Path("eval_out/crosslang_docs"))
    args = parser.parse_args(argv)
    folder = build(args.docs, args.out)
    print(f"wrote {folder}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
