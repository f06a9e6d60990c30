"""Build the cross-language set from public parallel data other than the guide: Vue's and Helm's docs.

Usage:
    python bench/crosslang_docs.py [--docs eval_docs] [--out eval_out/crosslang_docs]

Writes ``docs_zh2en`` in the shared layout (``corpus.jsonl`` + ``queries.jsonl``): Chinese questions over
an index of the English pages only of both projects (``bench/docs_eval/manifest.json``; materialise them
first with ``python bench/docs_eval/fetch_docs.py``), so every gold passage is in the other language.
The passages are the chunks the real ingest makes of each page (``ingestion.loaders`` +
``ingestion.splitter`` with default settings: code blocks, lists and paragraphs as the pipeline cuts
them), so the writer sees what it sees in use; ``--sections`` writes one passage per ``##`` section
instead (raw Markdown, as ``bench/crosslang_dataset.py`` cuts the guide). The questions, their page, gold
section (an index or a heading prefix) and accepted answers are frozen in
``tests/data/crosslang_docs_questions.jsonl`` (issue 21; written before the writer changes it measures);
a question's gold passages are the chunks of its gold section that hold an accepted answer. Then:

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


def chunk_corpus(
    docs: Path, language: str = "en"
) -> tuple[list[dict], dict[str, list[tuple[str, list[str]]]]]:
    """The ingest pipeline's chunks of every page, and per page its chunks as (id, heading path)."""
    from ingestion.loaders import load_document
    from ingestion.splitter import SplitConfig, split_document

    out, by_page = [], {}
    for project in ("helm", "vue"):
        folder = docs / project / language
        for page in sorted(folder.rglob("*.md")):
            name = f"{project}/{language}/{page.relative_to(folder).as_posix()}"
            pieces = split_document(load_document(page, max_bytes=1 << 24), SplitConfig())
            for i, piece in enumerate(pieces):
                path = piece.heading_path
                title = _ANCHOR.sub("", path[-1] if path else "")
                out.append({"id": f"{name}@{i}", "title": title, "text": piece.text})
                by_page.setdefault(name, []).append((f"{name}@{i}", [_ANCHOR.sub("", h) for h in path]))
    return out, by_page


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


def build(docs: Path, out: Path, by_section: bool = False) -> Path:
    if not (docs / "vue" / "en").is_dir():
        raise SystemExit(f"{docs}: no vue/en pages; run python bench/docs_eval/fetch_docs.py first")
    rows = [json.loads(line) for line in QUESTIONS.read_text(encoding="utf-8").splitlines() if line.strip()]
    folder = out / "docs_zh2en"
    folder.mkdir(parents=True, exist_ok=True)
    if by_section:
        passages, by_page = corpus(docs), {}
    else:
        passages, by_page = chunk_corpus(docs)
    ids = {p["id"] for p in passages}
    texts = {p["id"]: f"{p['title']}\n{p['text']}".lower() for p in passages}
    with (folder / "corpus.jsonl").open("w", encoding="utf-8") as handle:
        for passage in passages:
            handle.write(json.dumps(passage, ensure_ascii=False) + "\n")
    with (folder / "queries.jsonl").open("w", encoding="utf-8") as handle:
        for row in rows:
            golds = _golds(row, docs, by_page, texts) if by_page else [gold_id(row, docs)]
            for gold in golds:
                if gold not in ids:
                    raise SystemExit(f"{QUESTIONS}: {row['id']} names {gold}, an empty section")
                if not any(a.lower() in texts[gold] for a in row["answers"]):
                    raise SystemExit(f"{QUESTIONS}: {row['id']}: no accepted answer in {gold}")
            record = {
                "id": row["id"],
                "question": row["question"],
                "gold_ids": golds,
                "answer": row["answers"],
            }
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")
    return folder


def _golds(row: dict, docs: Path, by_page: dict, texts: dict[str, str]) -> list[str]:
    """The chunks of the row's gold section (by its ``##`` heading) that hold an accepted answer."""
    page, index = gold_id(row, docs).rsplit("#", 1)
    heading = _ANCHOR.sub("", sections(docs / page)[int(index)][0])
    held = [cid for cid, _ in by_page[page] if any(a.lower() in texts[cid] for a in row["answers"])]
    found = [cid for cid, path in by_page[page] if (heading in path or not heading) and cid in held]
    if not found:
        raise SystemExit(
            f"{QUESTIONS}: {row['id']}: no chunk of section {heading!r} holds an accepted answer"
        )
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=Path, default=ROOT / "eval_docs", help="materialised pages")
    parser.add_argument("--out", type=Path, default=Path("eval_out/crosslang_docs"))
    parser.add_argument("--sections", action="store_true", help="one raw passage per ## section")
    args = parser.parse_args(argv)
    folder = build(args.docs, args.out, by_section=args.sections)
    print(f"wrote {folder}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
