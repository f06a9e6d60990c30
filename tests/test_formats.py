"""More formats (.rst, .docx, .csv/.tsv, .ipynb, source code), --include/--exclude, and ingestion that
says what it did not read. Files are real (python-docx writes the Word file); searches use a real index."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import docx
import pytest

from config import load_settings
from ingestion.documents import LoaderError
from ingestion.loaders import load_document
from ingestion.pipeline import ingest_paths
from ingestion.sources import matches, scan_sources
from retrievers.factory import open_retrievers

ROOT = Path(__file__).resolve().parent.parent
MAX = 10_000_000

RST = """\
Deployment guide
================

Deploy the service with :ref:`the helm chart <helm>` and check :func:`health_check`.

.. toctree::

   install
   upgrade

Rollback
--------

A rollback restores the previous release within five minutes.

.. code-block:: bash

   helm rollback agentic-rag 3

.. note::

   Rollbacks keep the database untouched.

+----------+---------+
| Setting  | Default |
+==========+=========+
| replicas | 3       |
+----------+---------+

回滚说明
--------

回滚会在五分钟内恢复上一个版本。
"""


def write_docx(path: Path) -> None:
    document = docx.Document()
    document.core_properties.title = "季度报告 Quarterly report"
    document.add_heading("Revenue", level=1)
    document.add_paragraph("Revenue grew by twelve percent in the third quarter.")
    document.add_paragraph("Cloud sales", style="List Bullet")
    document.add_paragraph("Support contracts", style="List Bullet")
    table = document.add_table(rows=2, cols=2)
    for row, values in zip(table.rows, [("地区", "收入"), ("华东", "120 万")], strict=True):
        for cell, value in zip(row.cells, values, strict=True):
            cell.text = value
    document.add_heading("成本", level=2)
    document.add_paragraph("第三季度成本下降了百分之五。")
    document.save(str(path))


NOTEBOOK = {
    "cells": [
        {
            "cell_type": "markdown",
            "source": ["# Training notebook\n", "\n", "We fine-tune the ranker here.\n"],
        },
        {"cell_type": "code", "source": ["model = train_ranker(epochs=3)\n", "model.save('ranker.bin')"]},
        {"cell_type": "markdown", "source": "## 评估\n\n在验证集上评估排序模型。"},
        {"cell_type": "code", "source": "evaluate(model)", "outputs": [{"text": "accuracy 0.91"}]},
    ],
    "metadata": {},
    "nbformat": 4,
    "nbformat_minor": 5,
}

CODE = '''"""Retry helpers."""


def backoff_delay(attempt: int) -> float:
    """Seconds to wait before retry number ``attempt``: doubles each time, capped at 30."""
    return min(30.0, 0.5 * 2**attempt)
'''


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("formats")
    (folder / "deploy.rst").write_text(RST, encoding="utf-8")
    write_docx(folder / "report.docx")
    rows = ["city,country,population"] + [f"city{n},country{n % 7},{1000 + n}" for n in range(300)]
    rows.append("上海,中国,24870000")
    (folder / "cities.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    (folder / "prices.tsv").write_text("item\tprice\nwidget\t4.50\n螺丝\t0.20\n", encoding="utf-8")
    (folder / "train.ipynb").write_text(json.dumps(NOTEBOOK), encoding="utf-8")
    (folder / "src").mkdir()
    (folder / "src" / "retry.py").write_text(CODE, encoding="utf-8")
    (folder / "build").mkdir()
    (folder / "build" / "generated.md").write_text("# Generated\n\nGenerated file.\n", encoding="utf-8")
    (folder / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(64))
    (folder / "notes.pages").write_bytes(b"PK\x03\x04")
    return folder


# --- loaders -------------------------------------------------------------------------------------------


def test_rst_sections_become_headings_and_sphinx_markup_keeps_its_text(corpus):
    doc = load_document(corpus / "deploy.rst", max_bytes=MAX)
    assert doc.title == "Deployment guide"
    headings = [(b.level, b.text) for b in doc.blocks if b.kind == "heading"]
    assert headings == [(1, "Deployment guide"), (2, "Rollback"), (2, "回滚说明")]
    text = doc.full_text()
    assert "Deploy the service with the helm chart and check health_check." in text
    assert "toctree" not in text and ":ref:" not in text
    assert any(b.kind == "code" and "helm rollback agentic-rag 3" in b.text for b in doc.blocks)
    assert "Rollbacks keep the database untouched." in text
    assert any(b.kind == "table" and b.text.startswith("| Setting | Default |") for b in doc.blocks)
    assert "回滚会在五分钟内恢复上一个版本。" in text


def test_docx_keeps_headings_lists_and_tables_in_order(corpus):
    doc = load_document(corpus / "report.docx", max_bytes=MAX)
    assert doc.title == "季度报告 Quarterly report"
    kinds = [(b.kind, b.text.splitlines()[0]) for b in doc.blocks]
    assert kinds == [
        ("heading", "Revenue"),
        ("paragraph", "Revenue grew by twelve percent in the third quarter."),
        ("list", "- Cloud sales"),
        ("table", "| 地区 | 收入 |"),
        ("heading", "成本"),
        ("paragraph", "第三季度成本下降了百分之五。"),
    ]


def test_csv_chunks_are_groups_of_rows_each_with_the_header(corpus, embedder):
    from ingestion.pipeline import load_chunks
    from ingestion.splitter import SplitConfig

    _, chunks = load_chunks(
        corpus / "cities.csv", MAX, SplitConfig(chunk_size=800, chunk_overlap=100), None, "x"
    )
    assert len(chunks) > 5
    for chunk in chunks:
        lines = chunk.text.splitlines()
        assert lines[0] == "| city | country | population |" and lines[1].startswith("| --- ")
        assert len(chunk.text) <= 800
    assert "| 上海 | 中国 | 24870000 |" in chunks[-1].text
    tsv = load_document(corpus / "prices.tsv", max_bytes=MAX)
    assert tsv.blocks[0].text.splitlines()[-1] == "| 螺丝 | 0.20 |"


def test_notebook_markdown_and_code_cells_without_outputs(corpus):
    doc = load_document(corpus / "train.ipynb", max_bytes=MAX)
    assert doc.title == "Training notebook"
    assert [b.kind for b in doc.blocks] == ["heading", "paragraph", "code", "heading", "paragraph", "code"]
    assert "model.save('ranker.bin')" in doc.blocks[2].text
    assert "accuracy 0.91" not in doc.full_text()


def test_source_code_is_text_titled_by_its_file(corpus):
    doc = load_document(corpus / "src" / "retry.py", max_bytes=MAX)
    assert doc.title == "retry"
    assert doc.blocks[0].kind == "code" and "def backoff_delay" in doc.blocks[0].text


@pytest.mark.parametrize(
    ("name", "data"),
    [
        ("broken.docx", b"PK\x03\x04 not a zip"),
        ("broken.ipynb", b'{"no": "cells"}'),
        ("one_row.csv", b"a,b\n"),
    ],
)
def test_broken_files_fail_with_a_reason(tmp_path, name, data):
    (tmp_path / name).write_bytes(data)
    with pytest.raises(LoaderError) as caught:
        load_document(tmp_path / name, max_bytes=MAX)
    assert caught.value.reason and "Traceback" not in caught.value.reason


# --- choosing files ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("relative", "patterns", "expected"),
    [
        ("a/b.md", ["*.md"], True),
        ("build/x/y.md", ["build"], True),
        ("src/build.py", ["build"], False),
        ("docs/en/a.md", ["docs/**"], True),
        ("docs/en/a.md", ["**/*.md"], True),
        ("a.md", ["**/*.md"], True),
        ("a.txt", ["*.md"], False),
    ],
)
def test_glob_matching(relative, patterns, expected):
    assert matches(relative, patterns) is expected


def test_scan_counts_unsupported_and_applies_globs(corpus):
    scan = scan_sources([corpus], exclude=["build"])
    assert {p.name for p in scan.unsupported} == {"logo.png", "notes.pages"}
    assert [p.name for p in scan.excluded] == ["generated.md"]
    only_code = scan_sources([corpus], include=["src/*"])
    assert [p.name for p in only_code.files] == ["retry.py"]


# --- end to end --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def ingested(corpus, embedder, tmp_path_factory):
    folder = tmp_path_factory.mktemp("index")
    settings = load_settings(index_dir=folder, reranker="none")
    report = ingest_paths([corpus], settings, embedder, index_dir=folder, progress=False, exclude=["build"])
    return settings, report


def test_ingest_reports_what_it_did_not_read(ingested, corpus):
    _, report = ingested
    assert sorted(Path(p).name for p in report.unsupported) == ["logo.png", "notes.pages"]
    assert report.excluded == 1
    assert len(report.added) == 6 and not report.failed


@pytest.mark.parametrize(
    ("query", "source"),
    [
        ("rollback previous release", "deploy.rst"),
        ("回滚 恢复 上一个版本", "deploy.rst"),
        ("revenue grew third quarter", "report.docx"),
        ("华东 收入", "report.docx"),
        ("上海 人口", "cities.csv"),
        ("螺丝 price", "prices.tsv"),
        ("fine-tune the ranker", "train.ipynb"),
        ("backoff_delay", "retry.py"),
    ],
)
def test_every_format_is_searchable(ingested, query, source):
    settings, _ = ingested
    retrievers = open_retrievers(settings)
    hits = retrievers.hybrid.search(query, 3, None)
    assert any(hit.chunk.source.endswith(source) for hit in hits), [h.chunk.source for h in hits]


def test_excluded_files_already_indexed_are_kept(corpus, embedder, tmp_path):
    settings = load_settings(index_dir=tmp_path / "index", reranker="none")
    first = ingest_paths([corpus / "build"], settings, embedder, progress=False)
    assert len(first.added) == 1
    again = ingest_paths([corpus / "build"], settings, embedder, progress=False, exclude=["*.md"])
    assert again.removed == [] and again.chunks_total == first.chunks_total


def test_cli_summary_counts_unsupported_and_lists_them_with_verbose(corpus, tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTIC_RAG_")}
    env["PYTHONPATH"] = str(ROOT)
    base = [sys.executable, str(ROOT / "main.py"), "ingest", str(corpus), "--index", str(tmp_path / "i")]
    quiet = subprocess.run(
        [*base, "--include", "*.rst", "--include", "*.png"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert quiet.returncode == 0, quiet.stderr
    assert (
        "unsupported (not read)" in quiet.stdout
        and "1 unsupported files not read; -v lists them" in quiet.stdout
    )
    loud = subprocess.run(
        [*base, "--exclude", "*.png", "-v"], env=env, capture_output=True, text=True, timeout=300
    )
    assert f"unsupported {corpus / 'notes.pages'}" in loud.stdout
    assert "logo.png" not in loud.stdout


def test_a_folder_with_nothing_readable_says_so(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "slides.key").write_bytes(b"PK")
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTIC_RAG_")}
    env["PYTHONPATH"] = str(ROOT)
    out = subprocess.run(
        [sys.executable, str(ROOT / "main.py"), "ingest", str(docs), "--index", str(tmp_path / "i")],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert "the index is empty: nothing readable was found" in out.stderr
    for command in (["ask", "什么是 HNSW？"], ["search", "HNSW"], ["session"]):
        asked = subprocess.run(
            [sys.executable, str(ROOT / "main.py"), *command, "--index", str(tmp_path / "i")],
            env=env,
            input="what is HNSW?\n",
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert asked.returncode == 2
        assert asked.stderr.startswith("error: the index is empty: run ingest")
