"""PDF tables: a ruled table in a PDF becomes one whole Markdown table block with its header row,
and is indexed as one table piece, like tables from Markdown and HTML."""

from __future__ import annotations

import io
from pathlib import Path

from reportlab.lib import colors
from reportlab.lib.pagesizes import A4
from reportlab.lib.styles import ParagraphStyle
from reportlab.pdfbase import pdfmetrics
from reportlab.pdfbase.cidfonts import UnicodeCIDFont
from reportlab.platypus import Paragraph, SimpleDocTemplate, Spacer, Table, TableStyle

from ingestion.loaders import load_document
from ingestion.splitter import SplitConfig, split_document

pdfmetrics.registerFont(UnicodeCIDFont("STSong-Light"))
STYLE = ParagraphStyle("body", fontName="STSong-Light", fontSize=11, leading=15)


def make_table_pdf(before: str, rows: list[list[str]], after: str) -> bytes:
    """A real PDF (reportlab): a paragraph, a ruled table, a paragraph; CJK-capable font."""
    buffer = io.BytesIO()
    doc = SimpleDocTemplate(buffer, pagesize=A4)
    table = Table(rows)
    table.setStyle(
        TableStyle(
            [
                ("FONTNAME", (0, 0), (-1, -1), "STSong-Light"),
                ("GRID", (0, 0), (-1, -1), 0.5, colors.black),
            ]
        )
    )
    doc.build([Paragraph(before, STYLE), Spacer(1, 12), table, Spacer(1, 12), Paragraph(after, STYLE)])
    return buffer.getvalue()


def test_zh_pdf_table_is_one_markdown_table_with_header(tmp_path: Path) -> None:
    rows = [["组件", "版本", "用途"], ["jieba", "0.42", "中文分词"], ["faiss", "1.9", "向量检索"]]
    path = tmp_path / "组件.pdf"
    path.write_bytes(make_table_pdf("下表列出系统依赖的组件。", rows, "以上组件均可离线运行。"))
    doc = load_document(path, max_bytes=5_000_000)
    assert [b.kind for b in doc.blocks] == ["paragraph", "table", "paragraph"]
    assert doc.blocks[0].text == "下表列出系统依赖的组件。"
    assert doc.blocks[1].text.splitlines() == [
        "| 组件 | 版本 | 用途 |",
        "| --- | --- | --- |",
        "| jieba | 0.42 | 中文分词 |",
        "| faiss | 1.9 | 向量检索 |",
    ]
    assert doc.blocks[2].text == "以上组件均可离线运行。"


def test_en_pdf_table_is_indexed_as_one_table_piece(tmp_path: Path) -> None:
    rows = [
        ["Setting", "Default", "Meaning"],
        ["top_k", "10", "passages kept"],
        ["rrf_k", "60", "fusion constant"],
    ]
    path = tmp_path / "settings.pdf"
    path.write_bytes(make_table_pdf("The retrieval settings are:", rows, "Change them with flags."))
    doc = load_document(path, max_bytes=5_000_000)
    (table,) = [b.text for b in doc.blocks if b.kind == "table"]
    assert table.splitlines()[0] == "| Setting | Default | Meaning |"
    assert "| rrf_k | 60 | fusion constant |" in table
    # the cells are no longer loose text in the paragraphs
    assert not any("fusion constant" in b.text for b in doc.blocks if b.kind == "paragraph")
    pieces = split_document(doc, SplitConfig(chunk_size=800, chunk_overlap=100))
    (piece,) = [p for p in pieces if p.kind == "table"]
    assert table in piece.text  # whole, header included, as the Markdown/HTML path keeps it


def test_pdf_without_ruled_table_keeps_pypdf_paragraphs(tmp_path: Path) -> None:
    buffer = io.BytesIO()
    SimpleDocTemplate(buffer, pagesize=A4).build(
        [Paragraph("Hybrid search fuses keyword and vector hits.", STYLE)]
    )
    path = tmp_path / "plain.pdf"
    path.write_bytes(buffer.getvalue())
    doc = load_document(path, max_bytes=5_000_000)
    assert [(b.kind, b.text) for b in doc.blocks] == [
        ("paragraph", "Hybrid search fuses keyword and vector hits.")
    ]
