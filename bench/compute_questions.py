"""The frozen computation set (tests/data/compute_questions.jsonl): does the offline writer compute what
each question asks over the values its passages state? Prints one line per miss and the share solved.

    python bench/compute_questions.py
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from core.schemas import Passage
from providers.brain.write import OfflineWriter

SET = Path(__file__).resolve().parents[1] / "tests" / "data" / "compute_questions.jsonl"


def solved(expected: float, values: list[float]) -> bool:
    return any(math.isclose(v, expected, rel_tol=1e-3, abs_tol=1e-6) for v in values)


def main() -> None:
    items = [json.loads(line) for line in SET.read_text(encoding="utf-8").splitlines() if line.strip()]
    writer = OfflineWriter()
    hits = {"zh": [0, 0], "en": [0, 0]}
    for item in items:
        passages = [
            Passage(number=n, chunk_id=f"p{n}", source="set", text=text)
            for n, text in enumerate(item["passages"], start=1)
        ]
        draft = writer(item["question"], passages)
        values = [float(call["value"]) for call in draft.tool_calls]
        ok = solved(float(item["expected"]), values)
        hits[item["lang"]][0] += ok
        hits[item["lang"]][1] += 1
        if not ok:
            print(f"MISS {item['id']} {item['kind']}: {item['question']} -> {draft.answer[:120]!r}")
    total = sum(h[0] for h in hits.values()), sum(h[1] for h in hits.values())
    print(
        f"solved {total[0]}/{total[1]} = {total[0] / total[1]:.3f}"
        f" (en {hits['en'][0]}/{hits['en'][1]}, zh {hits['zh'][0]}/{hits['zh'][1]})"
    )


if __name__ == "__main__":
    main()
