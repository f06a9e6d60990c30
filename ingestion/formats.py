"""Parsers for the formats beyond Markdown, text, HTML and PDF: reStructuredText, Word (.docx), CSV/TSV,
Jupyter notebooks and source code. ``ingestion.loaders`` registers them in its one suffix table.

Each parser turns raw bytes into ``(title, blocks)`` like the built-in ones, so splitting, citations and
error handling work the same way: headings become the heading path, tables stay Markdown tables (the
splitter repeats their header row in every part), code stays whole or is cut between lines.
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Callable, Iterable
from typing import Any

from ingestion.documents import Block, LoaderError
from ingestion.text_decoding import decode_text

Parser = Callable[[bytes], tuple[str | None, list[Block]]]

CODE_SUFFIXES = (
    ".py", ".pyi", ".js", ".mjs", ".cjs", ".ts", ".tsx", ".jsx", ".java", ".kt", ".scala", ".go", ".rs",
    ".c", ".h", ".cc", ".cpp", ".cxx", ".hpp", ".cs", ".swift", ".rb", ".php", ".lua", ".r", ".jl",
    ".sh", ".bash", ".zsh", ".ps1", ".sql", ".yaml", ".yml", ".toml", ".ini", ".cfg",
)  # fmt: skip


def _text(data: bytes) -> str:
    return decode_text(data)


def _cell(value: Any) -> str:
    return " ".join(str(value).split()).replace("|", "\\|")


def markdown_table(rows: Iterable[Iterable[Any]]) -> str:
    """Rows (the first is the header) as a Markdown table; ragged rows are padded."""
    cells = [[_cell(value) for value in row] for row in rows]
    cells = [row for row in cells if any(row)]
    if not cells:
        return ""
    width = max(len(row) for row in cells)
    padded = [row + [""] * (width - len(row)) for row in cells]
    lines = ["| " + " | ".join(padded[0]) + " |", "|" + "|".join([" --- "] * width) + "|"]
    return "\n".join(lines + ["| " + " | ".join(row) + " |" for row in padded[1:]])


# --- CSV / TSV -------------------------------------------------------------------------------------------


def _csv_rows(data: bytes, delimiter: str | None) -> list[list[str]]:
    text = _text(data)
    if delimiter is None:
        try:
            delimiter = csv.Sniffer().sniff(text[:8192], delimiters=",;\t|").delimiter
        except csv.Error:
            delimiter = ","
    try:
        return [
            row for row in csv.reader(io.StringIO(text), delimiter=delimiter) if any(c.strip() for c in row)
        ]
    except csv.Error as exc:
        raise LoaderError(f"malformed CSV ({exc})") from None


def _table_parser(delimiter: str | None) -> Parser:
    def parse(data: bytes) -> tuple[str | None, list[Block]]:
        """One table; the splitter cuts it into groups of rows, each led by the header row."""
        rows = _csv_rows(data, delimiter)
        if len(rows) < 2:
            raise LoaderError("no data rows under the header")
        return None, [Block(kind="table", text=markdown_table(rows))]

    return parse


# --- reStructuredText ------------------------------------------------------------------------------------

# Sphinx roles (:ref:`text <target>`, :func:`name`) are unknown to plain docutils: keep their text.
_ROLE_RE = re.compile(r":[A-Za-z][\w.+:-]*:`([^`<]*?)\s*(?:<[^`>]*>)?`")


def parse_rst(data: bytes) -> tuple[str | None, list[Block]]:
    """Sections become headings (level by nesting); paragraphs, lists, literal blocks and tables keep
    their kind. Directives docutils does not know (Sphinx's toctree, ...) are dropped quietly."""
    from docutils import nodes
    from docutils.core import publish_doctree

    source = _ROLE_RE.sub(lambda m: m.group(1) or "", _text(data))
    overrides = {
        "report_level": 5,
        "halt_level": 5,
        "doctitle_xform": False,
        "file_insertion_enabled": False,
        "raw_enabled": False,
        "warning_stream": io.StringIO(),
    }
    tree = publish_doctree(source, settings_overrides=overrides)
    blocks: list[Block] = []

    def flat(node: Any) -> str:
        return " ".join(node.astext().split())

    def walk(node: Any, depth: int) -> None:
        for child in node.children:
            if isinstance(child, nodes.section):
                title = next((c for c in child.children if isinstance(c, nodes.title)), None)
                if title is not None:
                    blocks.append(Block(kind="heading", text=flat(title), level=min(depth + 1, 6)))
                walk(child, depth + 1)
            elif isinstance(child, nodes.title):
                continue  # the section's own title, already a heading
            elif isinstance(child, nodes.paragraph):
                blocks.append(Block(kind="paragraph", text=child.astext().strip()))
            elif isinstance(child, nodes.literal_block | nodes.doctest_block):
                blocks.append(Block(kind="code", text=child.astext().strip("\n")))
            elif isinstance(child, nodes.bullet_list | nodes.enumerated_list):
                items = [f"- {flat(item)}" for item in child.children if isinstance(item, nodes.list_item)]
                blocks.append(Block(kind="list", text="\n".join(items)))
            elif isinstance(child, nodes.table):
                rows = [[flat(entry) for entry in row.children] for row in child.findall(nodes.row)]
                blocks.append(Block(kind="table", text=markdown_table(rows)))
            elif isinstance(child, nodes.definition_list | nodes.field_list):
                items = [
                    f"{flat(item.children[0])}: {' '.join(flat(c) for c in item.children[1:])}"
                    for item in child.children
                ]
                blocks.append(Block(kind="list", text="\n".join(items)))
            elif isinstance(
                child,
                nodes.system_message
                | nodes.comment
                | nodes.target
                | nodes.substitution_definition
                | nodes.raw
                | nodes.image
                | nodes.transition,
            ):
                continue
            elif isinstance(child, nodes.Element) and child.children:
                walk(child, depth)  # admonitions, block quotes, containers: their content
            elif child.astext().strip():
                blocks.append(Block(kind="paragraph", text=child.astext().strip()))

    walk(tree, 0)
    title = next((b.text for b in blocks if b.kind == "heading"), None)
    return title, blocks


# --- Word ------------------------------------------------------------------------------------------------


def parse_docx(data: bytes) -> tuple[str | None, list[Block]]:
    """Paragraphs and tables in document order; "Heading N"/"Title" styles become headings."""
    import docx
    from docx.table import Table

    try:
        document = docx.Document(io.BytesIO(data))
    except Exception as exc:  # zip or XML damage: python-docx raises several kinds
        raise LoaderError(f"not a readable .docx file ({type(exc).__name__})") from None
    blocks: list[Block] = []
    items: list[str] = []

    def flush_list() -> None:
        if items:
            blocks.append(Block(kind="list", text="\n".join(items)))
            items.clear()

    for part in document.iter_inner_content():
        if isinstance(part, Table):
            flush_list()
            rows = [[cell.text for cell in row.cells] for row in part.rows]
            table = markdown_table(rows)
            if table:
                blocks.append(Block(kind="table", text=table))
            continue
        text = part.text.strip()
        if not text:
            continue
        style = (part.style.name if part.style is not None else "") or ""
        heading = re.fullmatch(r"Heading (\d)", style)
        if style.startswith("List"):
            items.append(f"- {text}")
            continue
        flush_list()
        if style == "Title" or heading:
            level = int(heading.group(1)) if heading else 1
            blocks.append(Block(kind="heading", text=" ".join(text.split()), level=min(max(level, 1), 6)))
        else:
            blocks.append(Block(kind="paragraph", text=text))
    flush_list()
    title = (document.core_properties.title or "").strip() or next(
        (b.text for b in blocks if b.kind == "heading"), None
    )
    return title, blocks


# --- Jupyter notebooks -----------------------------------------------------------------------------------


def parse_notebook(data: bytes, *, parse_markdown: Parser) -> tuple[str | None, list[Block]]:
    """Markdown cells parsed as Markdown (their headings structure the notebook), code cells as code;
    outputs are left out (they are results, often images or long logs, not documentation). The Markdown
    parser is passed in by ``ingestion.loaders``, which holds it and registers every parser."""
    try:
        notebook = json.loads(_text(data))
        cells = notebook["cells"]
    except (ValueError, KeyError, TypeError):
        raise LoaderError("not a Jupyter notebook (expected JSON with a 'cells' list)") from None
    title: str | None = None
    blocks: list[Block] = []
    for cell in cells if isinstance(cells, list) else []:
        if not isinstance(cell, dict):
            continue
        source = cell.get("source", "")
        text = "".join(source) if isinstance(source, list) else str(source)
        if not text.strip():
            continue
        if cell.get("cell_type") == "markdown":
            cell_title, cell_blocks = parse_markdown(text.encode("utf-8"))
            title = title or cell_title
            blocks.extend(cell_blocks)
        elif cell.get("cell_type") == "code":
            blocks.append(Block(kind="code", text=text.strip("\n")))
    if title is None:
        title = next((b.text for b in blocks if b.kind == "heading"), None)
    return title, blocks


# --- source code -----------------------------------------------------------------------------------------


def parse_code(data: bytes) -> tuple[str | None, list[Block]]:
    """The file as one code block: the splitter cuts large files between lines. The title is the file name
    (the loader's fallback for a document that starts with code: the name without its suffix), so a
    search for the file name finds it."""
    return None, [Block(kind="code", text=_text(data).strip("\n"))]


# ``ingestion.loaders`` registers these, the notebook parser (with its Markdown parser) and ``parse_code``
# for every ``CODE_SUFFIXES`` in its one suffix table.
DOCUMENT_PARSERS: dict[str, Parser] = {
    ".rst": parse_rst,
    ".docx": parse_docx,
    ".csv": _table_parser(None),
    ".tsv": _table_parser("\t"),
}
