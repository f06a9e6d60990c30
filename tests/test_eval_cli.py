"""`python main.py eval` end to end on a tiny set in the shared layout: real index, real graph, real
report files; plus the clear refusal of a set without a corpus (FanOutQA)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent

CORPUS = [
    {"id": "en-1", "title": "Super Bowl LV", "text": "Super Bowl LV was played in Tampa, Florida in 2021."},
    {"id": "en-2", "title": "Mount Everest", "text": "Mount Everest is 8,849 metres high, the tallest peak."},
    {"id": "en-3", "title": "Python", "text": "Python was created by Guido van Rossum and released in 1991."},
    {"id": "zh-1", "title": "立法会", "text": "香港第六届立法会共有70个议席，于2016年选举产生。"},
    {"id": "zh-2", "title": "长江", "text": "长江是中国第一长河，全长约6300公里，流入东海。"},
    {"id": "zh-3", "title": "军运会", "text": "2019年第七届世界军人运动会在武汉举办。"},
]
QUERIES = [
    {
        "id": "q-en",
        "question": "Where was Super Bowl LV played?",
        "answer": "Tampa, Florida",
        "gold_ids": ["en-1"],
    },
    {"id": "q-zh", "question": "香港第六届立法会有多少个议席？", "answer": "70", "gold_ids": ["zh-1"]},
    {"id": "q-zh-2", "question": "长江全长多少公里？", "answer": "6300公里", "gold_ids": ["zh-2"]},
    {"id": "q-beyond-limit", "question": "Who created Python?", "answer": "Guido", "gold_ids": ["en-3"]},
]
META = [  # RGB-style counterfactual passages: not in the corpus, planted by the eval command
    {
        "id": "q-en",
        "fakeanswer": "Glendale, Arizona",
        "positive_wrong": ["Super Bowl LV was played in Glendale, Arizona in 2021."],
    },
    {
        "id": "q-zh",
        "fakeanswer": "170",
        "positive_wrong": ["香港第六届立法会共有170个议席，于2016年选举产生。"],
    },
]


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> None:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")


def run_eval(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "AGENTIC_RAG_BRAIN": "offline"}
    for var in (
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "AGENTIC_RAG_OPENAI_API_KEY",
        "AGENTIC_RAG_OPENAI_BASE_URL",
    ):
        env.pop(var, None)
    return subprocess.run(
        [sys.executable, str(ROOT / "main.py"), "eval", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


@pytest.mark.slow
def test_eval_writes_report_with_sane_metrics_and_plants_counterfactuals(tmp_path: Path) -> None:
    data = tmp_path / "tiny_fact"
    data.mkdir()
    write_jsonl(data / "corpus.jsonl", CORPUS)
    write_jsonl(data / "queries.jsonl", QUERIES)
    write_jsonl(data / "queries_meta.jsonl", META)
    out = tmp_path / "out"

    proc = run_eval(
        str(data),
        "--modes",
        "keyword,hybrid,agentic",
        "--limit",
        "3",
        "--reranker",
        "lexical",
        "--out",
        str(out),
        "--index",
        str(tmp_path / "index"),
        cwd=tmp_path,
    )

    assert proc.returncode == 0, proc.stderr
    for name in ("results.json", "results.md", "results.png", "per_query_keyword.jsonl"):
        assert (out / name).stat().st_size > 0, name
    report = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert report["dataset"] == "tiny_fact+counterfactual"
    assert report["dataset_info"]["n_queries"] == 3  # --limit
    assert report["dataset_info"]["n_docs"] == len(CORPUS) + 2  # both counterfactuals planted
    assert set(report["modes"]) == {"keyword", "hybrid", "agentic"}
    for mode, entry in report["modes"].items():
        metrics = entry["metrics"]
        assert entry["n_queries"] == 3 and entry["n_failed"] == 0, mode
        for name in ("recall@1", "recall@5", "mrr@10", "ndcg@10", "f1", "answer_in_context"):
            assert 0.0 <= metrics[name] <= 1.0, (mode, name)
        assert metrics["recall@5"] >= metrics["recall@1"]
        assert 0.0 <= metrics["counterfactual_above_gold@10"] <= 1.0
        assert metrics["latency_p95_ms"] >= metrics["latency_p50_ms"] > 0
    # six passages, three easy questions: keyword search ranks every gold passage in the top 5
    assert report["modes"]["keyword"]["metrics"]["recall@5"] == 1.0
    assert report["modes"]["agentic"]["metrics"]["model_calls_per_q"] >= 0
    assert "| keyword |" in (out / "results.md").read_text(encoding="utf-8")
    assert (out / "results.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_set_without_corpus_is_refused_with_a_pointer_to_the_decomposition_bench(tmp_path: Path) -> None:
    data = tmp_path / "fanout_like"
    data.mkdir()
    (data / "corpus.jsonl").write_text("", encoding="utf-8")
    write_jsonl(data / "queries.jsonl", [{"id": "f1", "question": "Who?", "answer": None, "gold_ids": []}])
    write_jsonl(data / "queries_meta.jsonl", [{"id": "f1", "decomposition": [{"question": "Who first?"}]}])

    proc = run_eval(str(data), "--out", str(tmp_path / "out"), cwd=tmp_path)

    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert "has no corpus" in proc.stderr
    assert "bench/analyzer_accuracy.py" in proc.stderr and "docs/analyzer.md" in proc.stderr
    assert not (tmp_path / "out").exists()


def test_planting_counterfactuals_into_a_set_without_them_is_refused(tmp_path: Path) -> None:
    data = tmp_path / "plain"
    data.mkdir()
    write_jsonl(data / "corpus.jsonl", CORPUS)
    write_jsonl(data / "queries.jsonl", QUERIES)

    proc = run_eval(str(data), "--plant-counterfactuals", "--out", str(tmp_path / "out"), cwd=tmp_path)

    assert proc.returncode == 2
    assert "no counterfactual passages" in proc.stderr and "Traceback" not in proc.stderr
