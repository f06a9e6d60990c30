"""Incremental ingestion into a real index folder: add, change, delete, bad files, crashes, damage."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ingestion.pipeline import ingest_paths
from retrievers.factory import build_retrievers
from retrievers.index import IndexCorruptedError, IndexVersionError, open_index

ROOT = Path(__file__).resolve().parent.parent


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def docs(tmp_path):
    folder = tmp_path / "docs"
    write(folder / "en.md", "# Vector index\n\nAbove 200,000 chunks the index switches to HNSW graphs.\n")
    write(folder / "zh.md", "# 混合检索\n\n混合检索使用倒数排名融合（RRF）合并两种检索结果。\n")
    write(folder / "notes.txt", "Error code E-4711 means the disk quota was exceeded.\n")
    return folder


def search_ids(settings, embedder, query: str, mode: str = "hybrid") -> list[str]:
    index = open_index(settings.index_dir)
    try:
        hits = build_retrievers(index, settings, embedder).by_name(mode).search(query, 5)
        return [Path(h.chunk.source).name for h in hits]
    finally:
        index.close()


def test_first_ingest_indexes_every_supported_file_with_metadata(docs, settings, embedder):
    report = ingest_paths([docs], settings, embedder, progress=False)
    assert len(report.added) == 3 and not report.failed
    index = open_index(settings.index_dir)
    stats = index.stats()
    assert stats["chunks"] == report.chunks_total >= 3
    chunk = next(iter(index.docstore.get([0]).values()))
    assert chunk.source.endswith(".md") or chunk.source.endswith(".txt")
    assert chunk.content_hash and chunk.mtime > 0 and chunk.char_end > chunk.char_start
    zh = [c for c in index.docstore.get(range(stats["chunks"])).values() if c.source.endswith("zh.md")]
    assert zh[0].language == "zh" and zh[0].heading_path == ["混合检索"]
    index.close()


def test_reingest_skips_unchanged_reembeds_changed_and_removes_deleted(docs, settings, embedder):
    ingest_paths([docs], settings, embedder, progress=False)
    again = ingest_paths([docs], settings, embedder, progress=False)
    assert len(again.unchanged) == 3 and again.chunks_embedded == 0

    write(docs / "notes.txt", "Error code E-9000 means the certificate expired.\n")
    (docs / "en.md").unlink()
    write(docs / "new.md", "# 安装\n\n安装需要 Python 3.11 以上版本。\n")
    report = ingest_paths([docs], settings, embedder, progress=False)
    assert [Path(p).name for p in report.updated] == ["notes.txt"]
    assert [Path(p).name for p in report.added] == ["new.md"]
    assert [Path(p).name for p in report.removed] == ["en.md"]
    assert report.chunks_embedded == 2

    assert "notes.txt" in search_ids(settings, embedder, "E-9000", "keyword")
    assert search_ids(settings, embedder, "E-4711", "keyword") == []
    # A deleted file's chunks never come back, in any mode.
    for mode in ("vector", "keyword", "hybrid"):
        assert "en.md" not in search_ids(settings, embedder, "HNSW graphs 200,000 chunks", mode)
    # ...not even after another unchanged run.
    ingest_paths([docs], settings, embedder, progress=False)
    assert "en.md" not in search_ids(settings, embedder, "HNSW graphs", "hybrid")


def test_bad_files_are_reported_and_skipped_without_aborting(docs, settings, embedder):
    (docs / "binary.txt").write_bytes(b"\x00\x01\x02binary\x00data" * 10)
    (docs / "empty.md").write_text("", encoding="utf-8")
    (docs / "broken.pdf").write_bytes(b"%PDF-1.4 this is not really a pdf")
    (docs / "bad.txt").write_bytes(bytes(range(128, 256)) * 4)
    report = ingest_paths([docs], settings, embedder, progress=False)
    failed = {Path(f.source).name: f.reason for f in report.failed}
    assert set(failed) == {"binary.txt", "empty.md", "broken.pdf", "bad.txt"}
    assert all(reason for reason in failed.values())
    assert len(report.added) == 3


def test_a_file_that_becomes_binary_loses_its_old_chunks(docs, settings, embedder):
    """Its old chunks no longer say what the file says: serving them would cite text that is gone."""
    ingest_paths([docs], settings, embedder, progress=False)
    (docs / "notes.txt").write_bytes(b"\x00\x00\x00")
    report = ingest_paths([docs], settings, embedder, progress=False)
    assert report.failed == [] and [Path(p).name for p in report.removed] == ["notes.txt"]
    assert "binary" in report.removal_reasons[str((docs / "notes.txt").resolve())]
    assert "notes.txt" not in search_ids(settings, embedder, "E-4711", "keyword")


def test_ingest_cli_prints_one_json_document(docs, tmp_path):
    index_dir = tmp_path / "cli-index"
    out = subprocess.run(
        [sys.executable, "main.py", "ingest", str(docs), "--index", str(index_dir), "--json"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    report = json.loads(out.stdout)
    assert len(report["added"]) == 3
    stats = subprocess.run(
        [sys.executable, "main.py", "index", "stats", "--index", str(index_dir), "--json"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    assert json.loads(stats.stdout)["chunks"] == report["chunks_total"]
    found = subprocess.run(
        [
            sys.executable,
            "main.py",
            "search",
            "E-4711",
            "--mode",
            "keyword",
            "--index",
            str(index_dir),
            "--json",
            "--filter",
            "source=*notes*",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    results = json.loads(found.stdout)["results"]
    assert results and results[0]["source"].endswith("notes.txt")


KILL_SCRIPT = r"""
import sys, time
from pathlib import Path
import retrievers.index as index_module
from config import load_settings
from ingestion.pipeline import ingest_paths
from providers.embeddings import make_embedder

real = index_module.VectorIndex.build
def slow_build(*args, **kwargs):
    print("WRITING", flush=True)
    time.sleep(60)
    return real(*args, **kwargs)
index_module.VectorIndex.build = slow_build
settings = load_settings(index_dir=Path(sys.argv[1]), embedder="use-multilingual")
ingest_paths([Path(sys.argv[2])], settings, make_embedder("use-multilingual"), progress=False)
"""


def test_a_process_killed_mid_ingest_leaves_the_old_index_usable(docs, settings, embedder, tmp_path):
    ingest_paths([docs], settings, embedder, progress=False)
    write(docs / "later.md", "# Later\n\nA document added by the run that gets killed.\n")
    proc = subprocess.Popen(
        [sys.executable, "-c", KILL_SCRIPT, str(settings.index_dir), str(docs)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    deadline = time.time() + 120
    while time.time() < deadline:
        if "WRITING" in proc.stdout.readline():
            break
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert any(".tmp-" in p.name for p in settings.index_dir.iterdir())  # it died mid-write
    assert "notes.txt" in search_ids(settings, embedder, "E-4711", "keyword")
    report = ingest_paths([docs], settings, embedder, progress=False)  # the next run recovers
    assert [Path(p).name for p in report.added] == ["later.md"]
    assert not any(".tmp-" in p.name for p in settings.index_dir.iterdir())


def test_a_corrupted_index_file_gives_a_clear_error_with_the_rebuild_command(docs, settings, embedder):
    ingest_paths([docs], settings, embedder, progress=False)
    generation = next(settings.index_dir.glob("gen-*"))
    (generation / "vectors.faiss").write_bytes(b"garbage")
    with pytest.raises(IndexCorruptedError, match="rebuild"):
        open_index(settings.index_dir)
    report = ingest_paths([docs], settings, embedder, rebuild=True, progress=False)
    assert len(report.added) == 3
    open_index(settings.index_dir).close()


def test_an_index_of_another_format_version_says_how_to_rebuild(docs, settings, embedder):
    ingest_paths([docs], settings, embedder, progress=False)
    pointer = settings.index_dir / "index.json"
    data = json.loads(pointer.read_text())
    data["format_version"] = 99
    pointer.write_text(json.dumps(data))
    with pytest.raises(IndexVersionError, match=r"format version 99.*python main.py ingest --rebuild"):
        open_index(settings.index_dir)


def test_json_lines_corpora_index_each_record_with_its_id(tmp_path, settings, embedder):
    corpus = tmp_path / "corpus.jsonl"
    records = [
        {
            "id": "d1",
            "title": "Ferries",
            "text": "River ferries carried passengers across the bay.",
            "year": 1920,
        },
        {"id": "d2", "title": "灯笼", "text": "纸灯笼通常用竹篾做骨架，再糊上宣纸。"},
        {"id": "d3", "title": "Empty", "text": ""},
    ]
    corpus.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in records) + "\n", encoding="utf-8")
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"id": "x", "text": "fine"}\n{not json}\n', encoding="utf-8")
    report = ingest_paths([corpus, broken], settings, embedder, progress=False)
    assert report.chunks_total == 2
    assert [f.reason for f in report.failed] == [
        "line 2 is not valid JSON (Expecting property name enclosed in double quotes)"
    ]
    index = open_index(settings.index_dir)
    hits = build_retrievers(index, settings, embedder).hybrid.search("竹篾 灯笼", 1)
    assert hits[0].chunk.metadata["doc_id"] == "d2"
    assert hits[0].chunk.locator().endswith("corpus.jsonl#d2")
    assert hits[0].chunk.title == "灯笼"
    first = next(c for c in index.docstore.get(range(2)).values() if c.metadata["doc_id"] == "d1")
    assert first.metadata["year"] == 1920
    index.close()


def test_an_index_built_with_another_tokenizer_version_says_how_to_rebuild(docs, settings, embedder):
    ingest_paths([docs], settings, embedder, progress=False)
    manifest_path = next(settings.index_dir.glob("gen-*")) / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    manifest["tokenizer_version"] = 1
    manifest_path.write_text(json.dumps(manifest))
    with pytest.raises(IndexVersionError, match=r"tokenizer version 1.*--rebuild"):
        open_index(settings.index_dir)


def test_prewarm_summary_counts_the_warm_up_in_its_own_row_and_in_the_total(docs, tmp_path):
    """The summary used to show the ingest time only, while the e5 warm-up ran after it."""
    index_dir = tmp_path / "warm-index"
    out = subprocess.run(
        [
            sys.executable,
            "main.py",
            "ingest",
            str(docs),
            "--index",
            str(index_dir),
            "--prewarm-reranker",
            "--json",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        check=True,
    )
    report = json.loads(out.stdout)
    assert report["reranker_windows_embedded"] >= report["chunks_total"] == 3
    assert report["reranker_warm_up_seconds"] > 0
    assert report["total_seconds"] == pytest.approx(
        report["seconds"] + report["reranker_warm_up_seconds"], abs=0.02
    )
