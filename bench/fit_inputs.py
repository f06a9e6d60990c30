"""Freeze the offline writer's fitting inputs: what the agentic graph hands the writer, per question.

Usage:
    python bench/fit_inputs.py [--out bench/data/fit_inputs] [--reranker lexical] [--sets a,b]

The writer's combiner (providers/offline_brain/data/weights.json) is fitted on the passages the graph
retrieves for each question (bench/fit_offline_brain.py). Those passages depend on the index, the
retrievers and the reranker of the day, and the earlier fits read them from harness runs under /tmp that
no later checkout has, so their command could not be run again. This script asks the graph (offline
brain, ``--reranker``, answer cache off) once per question of every split below and stores each row
(question, gold answers, RGB's planted wrong answer, the passages with their source and heading) as
``<split>/<set>.jsonl.gz`` with a ``provenance.json`` (command, date, commit, settings); the fit then
reads only those files, so anyone can rerun it and get the same weights.

Splits (none of them is a slice a reported figure is computed on, except the held-out ones, which the fit
never reads for fitting):
- train: CMRC 2018 trial queries 500-599, DRCD dev 1000-1099 (bench/answer_params.py's dev slices),
  the even half of each RGB fact set, HotpotQA (English; its answers are not a reported target);
- held_out: the odd RGB halves, the first 200 queries of CMRC 2018 trial and DRCD dev (what
  docs/evaluation.md reports), MuSiQue (English, multi-hop), and three cross-language sets a bench script
  builds (``BUILT``): our guide's zh->en and en->zh questions, and Chinese questions over Vue's and
  Helm's English docs (issue 21).
"""

from __future__ import annotations

import argparse
import datetime as dt
import gzip
import json
import shlex
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.answer_params import DEV, HELD_OUT, Pick, collect  # noqa: E402

FIT_INPUTS = ROOT / "bench" / "data" / "fit_inputs"
# each split's sets: which queries (code) and the same in words (for the provenance file)
SLICED: dict[str, dict[str, tuple[Pick, str]]] = {
    "train": {
        "cmrc2018_trial": (DEV["cmrc2018_trial"], "queries 500-599"),
        "drcd_dev": (DEV["drcd_dev"], "queries 1000-1099"),
        "rgb_zh_fact": (DEV["rgb_zh_fact"], "even-numbered queries"),
        "rgb_en_fact": (DEV["rgb_en_fact"], "even-numbered queries"),
        "hotpotqa_hipporag100": (DEV["hotpotqa_hipporag100"], "all queries"),
    },
    "held_out": {
        "rgb_zh_fact": (HELD_OUT["rgb_zh_fact"], "odd-numbered queries"),
        "rgb_en_fact": (HELD_OUT["rgb_en_fact"], "odd-numbered queries"),
        "cmrc2018_trial": (lambda i: i < 200, "queries 0-199"),
        "drcd_dev": (lambda i: i < 200, "queries 0-199"),
        "musique_hipporag100": (lambda i: True, "all queries"),
        "crosslang_zh2en": (
            lambda i: True,
            "all queries (Chinese questions over the English guide pages, our own frozen set)",
        ),
        "crosslang_en2zh": (
            lambda i: True,
            "all queries (English questions over the Chinese guide pages, our own frozen set)",
        ),
        "docs_zh2en": (
            lambda i: True,
            "all queries (Chinese questions over Vue's and Helm's English docs, issue 21)",
        ),
    },
}
SPLITS = {split: {name: pick for name, (pick, _) in sets.items()} for split, sets in SLICED.items()}
SLICES = {split: {name: words for name, (_, words) in sets.items()} for split, sets in SLICED.items()}
# sets built by bench scripts (not in ../shared/data): where each is, and the command that builds it
BUILT = {
    "crosslang_zh2en": (Path("eval_out/crosslang/crosslang_zh2en"), "python bench/crosslang_dataset.py"),
    "crosslang_en2zh": (Path("eval_out/crosslang/crosslang_en2zh"), "python bench/crosslang_dataset.py"),
    "docs_zh2en": (
        Path("eval_out/crosslang_docs/docs_zh2en"),
        "python bench/docs_eval/fetch_docs.py && python bench/crosslang_docs.py",
    ),
}
PASSAGE_FIELDS = ("number", "chunk_id", "source", "heading", "text")


def write_rows(path: Path, rows: list[dict]) -> None:
    """One row per line, gzip with a fixed mtime, so the same rows give the same bytes."""
    path.parent.mkdir(parents=True, exist_ok=True)
    body = "".join(json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n" for row in rows)
    with path.open("wb") as raw, gzip.GzipFile(filename="", fileobj=raw, mode="wb", mtime=0) as out:
        out.write(body.encode("utf-8"))


def read_rows(path: Path) -> list[dict]:
    with gzip.open(path, "rt", encoding="utf-8") as lines:
        return [json.loads(line) for line in lines if line.strip()]


def load_inputs(folder: Path = FIT_INPUTS) -> dict[str, dict[str, list[dict]]]:
    """{split: {set: rows}} from a frozen folder; a clear error when it was never built."""
    if not (folder / "provenance.json").exists():
        raise SystemExit(f"no frozen fit inputs in {folder}: build them with python bench/fit_inputs.py")
    return {
        split.name: {
            path.name.removesuffix(".jsonl.gz"): read_rows(path) for path in sorted(split.glob("*.jsonl.gz"))
        }
        for split in sorted(folder.iterdir())
        if split.is_dir()
    }


def slim(row: dict) -> dict:
    """A writer input without what the writer never reads (scores, metadata)."""
    return {
        "question": row["question"],
        "answers": row["answers"],
        "fake": row.get("fake"),
        "passages": [{k: p.get(k, "") for k in PASSAGE_FIELDS} for p in row["passages"]],
    }


def command_line(script: str, argv: list[str] | None) -> str:
    """The command as a shell would take it back (``--free '*_question'`` stays quoted), for provenance."""
    return shlex.join(["python", script, *(argv if argv is not None else sys.argv[1:])])


def _commit() -> str:
    done = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=False)
    return done.stdout.strip() or "unknown"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=FIT_INPUTS)
    parser.add_argument("--reranker", default="lexical")
    parser.add_argument("--cache", type=Path, default=Path("eval_out/answer_dev"), help="graph-passage cache")
    parser.add_argument("--sets", help="comma-separated subset of the sets (default: all)")
    args = parser.parse_args(argv)
    wanted = set(args.sets.split(",")) if args.sets else None
    for split, picks in SPLITS.items():
        for name, pick in picks.items():
            if wanted and name not in wanted:
                continue
            where = BUILT[name][0] if name in BUILT else None
            if where is not None and not where.is_dir():
                raise SystemExit(f"{name}: no set in {where}; build it with {BUILT[name][1]}")
            rows = [slim(row) for row in collect(name, pick, args.reranker, args.cache, where)]
            write_rows(args.out / split / f"{name}.jsonl.gz", rows)
            print(f"{split}/{name}: {len(rows)} questions", flush=True)
    provenance = {
        "what": "the passages the agentic graph hands the offline writer, per question (bench/fit_inputs.py)",
        "command": command_line("bench/fit_inputs.py", argv),
        "date": dt.date.today().isoformat(),
        "commit": _commit(),
        "settings": {"brain": "offline", "reranker": args.reranker, "mode": "agentic", "answer_cache": False},
        "splits": SLICES,
        "built_sets": {
            name: {"folder": str(folder), "built_by": cmd} for name, (folder, cmd) in BUILT.items()
        },
    }
    (args.out / "provenance.json").write_text(json.dumps(provenance, ensure_ascii=False, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
