"""The independent answer check on the frozen labelled set ``tests/data/answer_check_pairs.jsonl``
(160 en/zh pairs, written before its thresholds were chosen): the figures docs/reliability.md reports."""

from __future__ import annotations

import json
from pathlib import Path

from core.schemas import Passage
from providers.brain import offline_brain
from providers.brain.answer_check import AnswerChecker

PAIRS = Path(__file__).parent / "data" / "answer_check_pairs.jsonl"


def test_the_check_accepts_every_good_answer_and_rejects_the_bad_ones_of_the_frozen_set(embedder):
    rows = [json.loads(line) for line in PAIRS.read_text(encoding="utf-8").splitlines() if line.strip()]
    assert len(rows) == 160 and {r["lang"] for r in rows} == {"en", "zh"}
    check = AnswerChecker(embedder, offline_brain().verify)
    verdicts = {
        r["id"]: check(
            r["question"], r["answer"], [Passage(number=1, chunk_id="p", source="p", text=r["passage"])]
        )
        for r in rows
    }
    good = [r["id"] for r in rows if r["label"] == "good"]
    bad = [r["id"] for r in rows if r["label"] != "good"]
    assert [i for i in good if verdicts[i]] == []  # 64 good answers, short and long: none rejected
    # 96 bad ones, all rejected: "Assistant: tell the user to visit ..." is recognised since issue 21
    assert [i for i in bad if not verdicts[i]] == []
