"""Loaders: every supported format becomes structural blocks; every bad file becomes a LoaderError."""

from __future__ import annotations

import io
import random
from pathlib import Path

import pytest
from pypdf import PdfWriter

from ingestion.documents import LoadedDocument, LoaderError
from ingestion.loaders import SUPPORTED_SUFFIXES, load_document
from ingestion.sources import scan_sources

FIXTURES = Path(__file__).parent / "fixtures" / "ingest"
MAX = 5_000_000


def kinds(doc: LoadedDocument) -> list[str]:
    return [block.kind for block in doc.blocks]


def texts(doc: LoadedDocument, kind: str) -> list[str]:
    return [block.text for block in doc.blocks if block.kind == kind]


def write(tmp_path: Path, name: str, data: bytes | str, encoding: str = "utf-8") -> Path:
    path = tmp_path / name
    path.write_bytes(data if isinstance(data, bytes) else data.encode(encoding))
    return path


def reason_for(path: Path, max_bytes: int = MAX) -> str:
    with pytest.raises(LoaderError) as info:
        load_document(path, max_bytes=max_bytes)
    assert info.value.path == str(path.absolute())
    return info.value.reason


# --------------------------------------------------------------------------------------------------
# a real PDF, written by hand: one content stream per page drawing its lines with Helvetica
# --------------------------------------------------------------------------------------------------


def _pdf_string(text: str) -> str:
    return text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def make_pdf(pages: list[list[str]], title: str | None = None) -> bytes:
    objects: dict[int, bytes] = {
        1: b"<< /Type /Catalog /Pages 2 0 R >>",
        3: b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>",
    }
    page_ids = [4 + 2 * n for n in range(len(pages))]
    kids = " ".join(f"{page_id} 0 R" for page_id in page_ids)
    objects[2] = f"<< /Type /Pages /Kids [{kids}] /Count {len(pages)} >>".encode()
    for page_id, lines in zip(page_ids, pages, strict=True):
        ops = ["BT", "/F1 11 Tf", "14 TL", "72 740 Td"]
        ops += [f"({_pdf_string(line)}) Tj T*" for line in lines] + ["ET"]
        stream = "\n".join(ops).encode("latin-1")
        objects[page_id] = (
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
            b"/Resources << /Font << /F1 3 0 R >> >> /Contents %d 0 R >>" % (page_id + 1)
        )
        objects[page_id + 1] = b"<< /Length %d >>\nstream\n%s\nendstream" % (len(stream), stream)
    info_id = None
    if title:
        info_id = max(objects) + 1
        objects[info_id] = f"<< /Title ({_pdf_string(title)}) >>".encode("latin-1")
    out = bytearray(b"%PDF-1.4\n")
    offsets = {}
    for object_id in sorted(objects):
        offsets[object_id] = len(out)
        out += b"%d 0 obj\n%s\nendobj\n" % (object_id, objects[object_id])
    xref_at = len(out)
    size = max(objects) + 1
    out += b"xref\n0 %d\n0000000000 65535 f \n" % size
    out += b"".join(b"%010d 00000 n \n" % offsets[i] for i in range(1, size))
    info = f" /Info {info_id} 0 R" if info_id else ""
    out += f"trailer\n<< /Size {size} /Root 1 0 R{info} >>\nstartxref\n{xref_at}\n%%EOF\n".encode()
    return bytes(out)


PDF_PAGES = [
    [
        "Agentic retrieval keeps asking for more evidence until the",
        "evidence is sufficient or the retry budget of two attempts",
        "is spent.",
        "Hybrid search fuses BM25 and vector rankings with RRF.",
    ],
    ["Reciprocal rank fusion uses the constant k = 60."],
]


# --------------------------------------------------------------------------------------------------
# Markdown
# --------------------------------------------------------------------------------------------------


def test_markdown_zh_front_matter_title_headings_table_list_and_code() -> None:
    doc = load_document(FIXTURES / "install_zh.md", max_bytes=MAX)
    assert doc.title == "安装指南（中文）"
    headings = [(b.level, b.text) for b in doc.blocks if b.kind == "heading"]
    assert headings == [(1, "安装指南"), (2, "依赖"), (3, "可选依赖"), (2, "安装步骤")]
    (table,) = texts(doc, "table")
    assert table.splitlines()[0] == "| 组件 | 版本 | 用途 |"
    assert table.splitlines()[1] == "| --- | --- | --- |"
    assert "| jieba | 0.42 | 中文分词 |" in table
    (code,) = texts(doc, "code")
    assert code.startswith("```bash") and code.endswith("```") and "pip install -e ." in code
    (items,) = texts(doc, "list")
    assert items.count("\n") == 1 and "PostgreSQL 15" in items
    assert "tags" not in doc.full_text()  # front matter is metadata, not content


def test_markdown_en_setext_headings_links_quotes_and_dropped_comments() -> None:
    doc = load_document(FIXTURES / "quickstart_en.md", max_bytes=MAX)
    assert doc.title == "Quick Start"
    assert [b.text for b in doc.blocks if b.kind == "heading"] == [
        "Quick Start",
        "Requirements",
        "Asking questions",
    ]
    full = doc.full_text()
    assert "See the configuration guide for details." in full  # link text kept, URL dropped
    assert "config.md" not in full
    assert "editor's note" not in full
    assert "version 2.3\nof" not in full and "version 2.3 of the index format" in full  # soft wrap
    assert texts(doc, "code") == ['python main.py ask "What is RRF?"']
    assert texts(doc, "list")[0].splitlines()[2] == "3. Run `python main.py`."


def test_markdown_wrapped_list_items_become_one_line_each(tmp_path: Path) -> None:
    text = "- 第一项的说明比较长，\n  换行后继续。\n- A second item that\n  wraps onto two lines\n  - nested item\n"
    doc = load_document(write(tmp_path, "list.md", text), max_bytes=MAX)
    assert texts(doc, "list") == [
        "- 第一项的说明比较长，换行后继续。\n- A second item that wraps onto two lines\n  - nested item"
    ]


@pytest.mark.parametrize(
    ("figure", "before", "after"),
    [
        (
            "![具名插槽图示](./images/named-slots.png)",
            "其意思就是将这部分模板片段传入子组件的 header 插槽中。",
            "下面我们给出完整的代码。",
        ),
        (
            "[![Diagram showing props passed through every level](./prop-drilling.png)](./big.png)",
            "With only props, we would pass the same prop across the chain:",
            "This is called props drilling.",
        ),
    ],
)
def test_a_figure_alone_on_its_line_leaves_no_alt_text_an_inline_image_keeps_it(
    tmp_path: Path, figure: str, before: str, after: str
) -> None:
    """A figure's alt text describes a picture an answer's reader cannot see: it was quoted as an answer
    sentence ("Diagram showing props being passed…") and ran into the next one ("具名插槽图示下面…")."""
    text = f"{before}\n\n{figure}\n\n{after}\n\nClick ![the gear icon](gear.png) to open settings.\n"
    doc = load_document(write(tmp_path, "figures.md", text), max_bytes=MAX)
    assert texts(doc, "paragraph") == [before, after, "Click the gear icon to open settings."]


def test_markdown_without_h1_falls_back_to_first_line_then_file_stem(tmp_path: Path) -> None:
    doc = load_document(write(tmp_path, "release-notes.md", "Short first line\n\nMore text."), max_bytes=MAX)
    assert doc.title == "Short first line"
    long_first = "x" * 300 + "\n\nbody"
    assert load_document(write(tmp_path, "notes.md", long_first), max_bytes=MAX).title == "notes"


def test_markdown_unclosed_fence_keeps_the_rest_as_code(tmp_path: Path) -> None:
    doc = load_document(write(tmp_path, "a.md", "intro\n\n```\ncode line\n# not a heading"), max_bytes=MAX)
    assert kinds(doc) == ["paragraph", "code"]
    assert "# not a heading" in doc.blocks[1].text


# --------------------------------------------------------------------------------------------------
# plain text and encodings
# --------------------------------------------------------------------------------------------------


def test_txt_paragraphs_split_on_blank_lines_and_title_is_first_line() -> None:
    doc = load_document(FIXTURES / "notes_zh.txt", max_bytes=MAX)
    assert doc.title == "检索笔记"
    assert kinds(doc) == ["paragraph"] * 3
    assert doc.blocks[2].text.startswith("BM25 的参数 k1 为 1.2")


@pytest.mark.parametrize(
    ("encoding", "text"),
    [
        ("gb18030", "混合检索使用倒数排名融合。\n\n常数 k 取 60，适合中文语料。"),
        ("gbk", "结巴分词把“向量检索”切成两个词。"),
        ("utf-8-sig", "带 BOM 的 UTF-8 文件。\n\nA UTF-8 file with a BOM."),
        ("utf-16", "UTF-16 文件，带字节序标记。"),
        ("utf-8", "Plain UTF-8 English text."),
    ],
)
def test_txt_encodings_are_detected(tmp_path: Path, encoding: str, text: str) -> None:
    doc = load_document(write(tmp_path, "doc.txt", text, encoding), max_bytes=MAX)
    assert doc.full_text() == text
    assert doc.size == len(text.encode(encoding))


def test_file_hash_and_mtime_describe_the_raw_file(tmp_path: Path) -> None:
    import hashlib

    path = write(tmp_path, "a.txt", "hello world")
    doc = load_document(path, max_bytes=MAX)
    assert doc.file_hash == hashlib.sha256(b"hello world").hexdigest()
    assert doc.mtime == path.stat().st_mtime
    assert doc.source == str(path.absolute())


# --------------------------------------------------------------------------------------------------
# HTML
# --------------------------------------------------------------------------------------------------


def test_html_drops_script_style_nav_and_keeps_structure() -> None:
    doc = load_document(FIXTURES / "page.html", max_bytes=MAX)
    full = doc.full_text()
    assert doc.title == "检索模式说明 | Retrieval modes"
    for hidden in ("SHOULD_NOT_APPEAR", "NAVIGATION_LINK", "display: none", "tracking"):
        assert hidden not in full
    assert [(b.level, b.text) for b in doc.blocks if b.kind == "heading"] == [(1, "检索模式"), (2, "Modes")]
    assert "混合检索使用 RRF 融合，常数 k 取 60。" in full  # <b> and <br> do not break the paragraph
    assert texts(doc, "list") == ["- Fast\n- Accurate"]
    assert texts(doc, "code") == ['python main.py ask "What is RRF?"']


def test_html_table_becomes_markdown_with_header_first() -> None:
    doc = load_document(FIXTURES / "page.html", max_bytes=MAX)
    (table,) = texts(doc, "table")
    assert table.splitlines() == [
        "| Strategy | Index | Best for |",
        "| --- | --- | --- |",
        "| vector | FAISS | paraphrases |",
        "| keyword | BM25 | identifiers like gpt-4o |",
        "| hybrid | both | mixed questions |",
    ]


def test_html_table_without_th_uses_first_row_as_header_and_title_falls_back_to_h1(tmp_path: Path) -> None:
    html = (
        "<html><body><h1>参数表</h1><table><tr><td>参数</td><td>默认值</td></tr>"
        "<tr><td>k1</td><td>1.2</td></tr><tr><td>b</td><td>0.75 | 0.8</td></tr></table></body></html>"
    )
    doc = load_document(write(tmp_path, "t.htm", html), max_bytes=MAX)
    assert doc.title == "参数表"
    assert texts(doc, "table") == ["| 参数 | 默认值 |\n| --- | --- |\n| k1 | 1.2 |\n| b | 0.75 \\| 0.8 |"]


def test_html_declared_gbk_charset_is_honoured(tmp_path: Path) -> None:
    html = '<html><head><meta charset="gbk"><title>中文页面</title></head><body><p>你好，世界。</p></body></html>'
    doc = load_document(write(tmp_path, "zh.html", html, "gbk"), max_bytes=MAX)
    assert doc.title == "中文页面"
    assert doc.full_text() == "你好，世界。"


def test_html_with_only_scripts_has_no_text_content(tmp_path: Path) -> None:
    path = write(tmp_path, "empty.html", "<html><script>alert(1)</script><style>p{}</style></html>")
    assert reason_for(path) == "no text content"


# --------------------------------------------------------------------------------------------------
# PDF
# --------------------------------------------------------------------------------------------------


def test_pdf_text_is_extracted_and_wrapped_lines_are_joined(tmp_path: Path) -> None:
    path = write(tmp_path, "paper.pdf", make_pdf(PDF_PAGES, title="Agentic RAG notes"))
    doc = load_document(path, max_bytes=MAX)
    assert doc.title == "Agentic RAG notes"
    assert kinds(doc) == ["paragraph"] * 3
    assert doc.blocks[0].text == (
        "Agentic retrieval keeps asking for more evidence until the evidence is sufficient or the "
        "retry budget of two attempts is spent."
    )
    assert doc.blocks[2].text == "Reciprocal rank fusion uses the constant k = 60."


def test_pdf_title_falls_back_to_first_line(tmp_path: Path) -> None:
    doc = load_document(
        write(
            tmp_path,
            "x.pdf",
            make_pdf([["Release notes", "Version 2.3 adds the HNSW index for large corpora."]]),
        ),
        max_bytes=MAX,
    )
    assert doc.title == "Release notes"


def test_pdf_without_text_is_reported_as_scanned(tmp_path: Path) -> None:
    path = write(tmp_path, "scan.pdf", make_pdf([[], []]))
    assert reason_for(path) == "no extractable text (scanned PDF?)"


def test_broken_pdf_is_a_loader_error(tmp_path: Path) -> None:
    truncated = make_pdf(PDF_PAGES)[:150]
    assert reason_for(write(tmp_path, "cut.pdf", truncated)).startswith("broken PDF")
    assert reason_for(write(tmp_path, "fake.pdf", b"this is not a pdf at all")).startswith("broken PDF")


def test_encrypted_pdf_needs_a_password(tmp_path: Path) -> None:
    writer = PdfWriter(clone_from=io.BytesIO(make_pdf(PDF_PAGES)))
    writer.encrypt("secret", algorithm="AES-128")
    buffer = io.BytesIO()
    writer.write(buffer)
    reason = reason_for(write(tmp_path, "locked.pdf", buffer.getvalue()))
    assert reason.startswith("encrypted PDF")


# --------------------------------------------------------------------------------------------------
# bad files: one clear reason each
# --------------------------------------------------------------------------------------------------


def test_binary_file_with_nul_bytes_is_rejected(tmp_path: Path) -> None:
    assert (
        reason_for(write(tmp_path, "image.txt", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"))
        == "binary file (NUL bytes)"
    )


def test_control_characters_mark_a_binary_file(tmp_path: Path) -> None:
    assert reason_for(write(tmp_path, "ctl.md", bytes(range(1, 9)) * 20 + b"text")).startswith("binary file")


def test_empty_and_whitespace_files_are_empty(tmp_path: Path) -> None:
    assert reason_for(write(tmp_path, "empty.txt", b"")) == "empty file"
    assert reason_for(write(tmp_path, "blank.md", b" \n\n\t \n")) == "empty file"
    assert reason_for(write(tmp_path, "bom.txt", b"\xef\xbb\xbf\n")) == "empty file"


def test_undecodable_text_is_rejected(tmp_path: Path) -> None:
    path = write(tmp_path, "noise.txt", bytes(range(0x80, 0x100)))
    assert reason_for(path) == "not valid UTF-8 text and no known encoding fits; save the file as UTF-8"


def test_too_large_file_names_sizes(tmp_path: Path) -> None:
    path = write(tmp_path, "big.txt", "word " * 50_000)
    assert reason_for(path, max_bytes=100_000) == "file too large (0.2 MB > limit 0.1 MB)"


def test_unsupported_missing_and_directory_paths(tmp_path: Path) -> None:
    assert reason_for(write(tmp_path, "report.pages", b"PK\x03\x04")).startswith(
        "unsupported file type '.pages'"
    )
    assert reason_for(tmp_path / "missing.md") == "file not found"
    (tmp_path / "folder.md").mkdir()
    assert reason_for(tmp_path / "folder.md") == "not a regular file"


@pytest.mark.parametrize("suffix", SUPPORTED_SUFFIXES)
def test_random_bytes_never_escape_as_another_exception(tmp_path: Path, suffix: str) -> None:
    rng = random.Random(7)
    for n in range(12):
        data = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 400)))
        if n % 3 == 0 and suffix == ".pdf":
            data = b"%PDF-1.4\n" + data
        path = write(tmp_path, f"r{n}{suffix}", data)
        try:
            doc = load_document(path, max_bytes=MAX)
        except LoaderError as exc:
            assert exc.reason
        else:
            assert doc.blocks and all(block.text.strip() for block in doc.blocks)


# --------------------------------------------------------------------------------------------------
# finding files
# --------------------------------------------------------------------------------------------------


def test_scan_sources_walks_sorted_skips_hidden_and_counts_unsupported(tmp_path: Path) -> None:
    for name in [
        "b.md",
        "a.txt",
        "sub/c.html",
        "sub/d.pdf",
        "sub/e.pages",
        ".git/f.md",
        ".venv/g.txt",
        ".h.md",
    ]:
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("x")
    explicit = tmp_path / "sub" / "e.pages"
    scan = scan_sources([tmp_path, explicit, tmp_path / "b.md"])
    relative = [str(p.relative_to(tmp_path)) for p in scan.files]
    assert relative == ["a.txt", "b.md", "sub/c.html", "sub/d.pdf", "sub/e.pages"]
    assert scan.unsupported == [tmp_path / "sub" / "e.pages"]


def test_every_fixture_loads() -> None:
    docs = [load_document(path, max_bytes=MAX) for path in scan_sources([FIXTURES]).files]
    assert len(docs) == 4
    assert all(doc.blocks and doc.title for doc in docs)


def test_bundled_guide_loads_in_both_languages() -> None:
    guide = Path(__file__).parent.parent / "docs" / "guide"
    for language in ("en", "zh"):
        docs = [load_document(path, max_bytes=MAX) for path in scan_sources([guide / language]).files]
        assert len(docs) >= 5
        assert any(block.kind == "table" for doc in docs for block in doc.blocks)


@pytest.mark.parametrize(
    ("encoding", "text"),
    [
        # GBK Chinese doc text the character-set detector rejected or read as Shift-JIS / Big5
        ("gbk", "后置渲染器可以与 `install`、`upgrade` 和 `template` 命令一起使用。"),
        (
            "gbk",
            "# 渲染选项 {#options-rendering}\n\n- **类型**`string`\n\n通过 `template` 选项提供的模板将会在运行时即时编译。",
        ),
        (
            "gbk",
            "| 注解值 | 描述 |\n| --- | --- |\n| `before-hook-creation` | 新钩子启动前删除之前的资源（默认） |",
        ),
        # legacy text that is not Chinese stays what it is
        ("euc_kr", "대한민국의 수도는 서울입니다. 오늘 날씨가 좋습니다."),
        ("big5", "繁體中文的文件，歐洲的歷史與文化。"),
        ("cp1252", "Grüße aus München, schön."),
    ],
)
def test_gbk_chinese_docs_decode_as_chinese_and_other_legacy_text_does_not(encoding: str, text: str) -> None:
    from ingestion.loaders import decode_text

    assert decode_text(text.encode(encoding)) == text
