"""One language per answer on translated pages: the writer alone, given a fact's section in both languages.

Usage:
    python bench/one_language.py [--docs eval_docs] [--grid 1,0.5,0.2,0.1] [--show]

Dev set (issue 21, for the ``writer.gates.reader_copy`` multiplier): the Chinese questions of
``tests/data/crosslang_docs_questions.jsonl`` (Vue and Helm docs), each handed its gold English section
and the same section of the Chinese translation (``zh/`` page, same section index), English first, so
both copies of the fact are in the evidence. An answer is **one-language** when it carries no "quoted
from a … source" label (every sentence is in the question's language); **has gold** when it contains an
accepted answer (``evaluators.metrics.answer_has_gold``), counted on the questions whose accepted answer
is in both copies (``IfNotPresent``, ``defineEmits``: a Chinese answer cannot hold "weight of 0"). Prints
both per multiplier (1 = the gate off); the multiplier kept is the mildest (largest) one that reaches the best
one-language rate without lowering has-gold.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
for folder in (ROOT, ROOT / "bench"):
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))

from crosslang_dataset import sections  # noqa: E402
from crosslang_docs import QUESTIONS, gold_id  # noqa: E402

from core.schemas import Passage  # noqa: E402
from evaluators.metrics import answer_has_gold  # noqa: E402
from providers.meaning import Meaning  # noqa: E402
from providers.offline_brain.answer import extractive_answer  # noqa: E402
from providers.offline_brain.lexicon import lexicon  # noqa: E402
from providers.offline_brain.weights import BrainParams  # noqa: E402

LABELS = ("以下引自", "Quoted from")


def pairs(docs: Path) -> list[tuple[dict, list[Passage]]]:
    """(question row, [English gold section, its Chinese translation]) where the translation exists."""
    out = []
    for line in QUESTIONS.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        row = json.loads(line)
        page, index = gold_id(row, docs).rsplit("#", 1)
        zh_page = docs / page.replace("/en/", "/zh/", 1)
        if not zh_page.exists():
            continue
        en, zh = sections(docs / page), sections(zh_page)
        if len(en) != len(zh):
            continue  # the translation is structured otherwise: no section to pair with
        i = int(index)
        passages = [
            Passage(number=1, chunk_id=f"{page}#{i}", source=page, heading=en[i][0], text=en[i][1]),
            Passage(number=2, chunk_id=f"zh#{i}", source=str(zh_page), heading=zh[i][0], text=zh[i][1]),
        ]
        out.append((row, passages))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=Path, default=ROOT / "eval_docs")
    parser.add_argument("--grid", default="", help="reader_copy gate multipliers; default: the current one")
    parser.add_argument("--show", action="store_true", help="print each answer")
    args = parser.parse_args(argv)
    from config import load_settings
    from retrievers.factory import embedder_for

    meaning = Meaning(embedder_for(load_settings()))
    data = pairs(args.docs)
    base = BrainParams.load()
    values = [float(v) for v in args.grid.split(",")] if args.grid else [None]
    print(f"{len(data)} questions with both copies ({QUESTIONS.name})")
    for value in values:
        weights = base if value is None else base.with_value("writer.gates.reader_copy", value)
        one = gold = 0
        neutral = [
            (row, passages)
            for row, passages in data
            if answer_has_gold(passages[1].heading + "\n" + passages[1].text, row["answers"])
        ]
        for row, passages in data:
            answer = extractive_answer(row["question"], passages, meaning=meaning, weights=weights).answer
            single = not any(label in answer for label in LABELS)
            one += single
            if any(row is r for r, _ in neutral):
                gold += bool(
                    answer_has_gold(lexicon().tables("support")[2].lead_re.sub("", answer), row["answers"])
                )
            if args.show:
                print(f"  [{row['id']}] {'one' if single else 'MIXED'} {answer[:160]!r}")
        shown = "current" if value is None else f"reader_copy={value}"
        print(
            f"{shown:<22} one-language {one / len(data):.3f}  "
            f"has_gold {gold / max(1, len(neutral)):.3f} (n={len(neutral)}, answer in both copies)"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
