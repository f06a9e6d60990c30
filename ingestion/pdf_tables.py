"""Tables in PDFs, found with pdfplumber and kept whole as Markdown tables with their header row.

pypdf reads a page's text in drawing order, which turns a table into loose cell text. For pages where
pdfplumber finds ruled tables, the page is instead read as parts in reading order: the text above,
beside and below each table (with the table's characters removed) and the table itself as Markdown,
exactly like the Markdown and HTML paths produce. Tables without ruling lines are not detected and stay
text. Any pdfplumber failure leaves the page to pypdf: tables are an improvement, never a new way to fail.
"""

from __future__ import annotations

import io
import logging
import re
from collections.abc import Iterator
from typing import Literal

from core.text import CJK, CJK_PUNCTUATION

PartKind = Literal["text", "table"]
Part = tuple[PartKind, str]

_CJK = CJK + CJK_PUNCTUATION


def markdown_table(rows: list[list[str]]) -> str:
    """Rows (first one the header) as a Markdown table; short rows are padded, empty rows dropped."""
    rows = [row for row in rows if any(cell.strip() for cell in row)]
    if not rows:
        return ""
    width = max(len(row) for row in rows)
    padded = [row + [""] * (width - len(row)) for row in rows]
    lines = ["| " + " | ".join(padded[0]) + " |", "|" + "|".join([" --- "] * width) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in padded[1:]]
    return "\n".join(lines)


def cell_text(raw: str | None) -> str:
    """One table cell on one line: wrapped lines joined (no space between CJK), pipes escaped."""
    text = re.sub(r"\s+", " ", raw or "").strip()
    text = re.sub(rf"(?<=[{_CJK}]) (?=[{_CJK}])", "", text)
    return text.replace("|", "\\|")


def _is_table(rows: list[list[str]]) -> bool:
    """At least a header and one row, two columns wide: a ruled box around a paragraph is not a table."""
    filled = [row for row in rows if any(row)]
    return len(filled) >= 2 and max(len(row) for row in filled) >= 2


def _outside(bboxes: list[tuple[float, float, float, float]]):  # type: ignore[no-untyped-def]
    def keep(obj: dict) -> bool:
        if obj.get("object_type") != "char":
            return True
        x = (obj["x0"] + obj["x1"]) / 2
        y = (obj["top"] + obj["bottom"]) / 2
        return not any(x0 <= x <= x1 and top <= y <= bottom for x0, top, x1, bottom in bboxes)

    return keep


def _page_parts(page) -> list[Part] | None:  # type: ignore[no-untyped-def]
    """The page in reading order, or None when it holds no table (the caller keeps pypdf's text)."""
    found = []
    for table in page.find_tables():
        rows = [[cell_text(cell) for cell in row] for row in table.extract()]
        if _is_table(rows):
            found.append((table.bbox, markdown_table(rows)))
    if not found:
        return None
    found.sort(key=lambda item: item[0][1])
    rest = page.filter(_outside([bbox for bbox, _ in found]))
    parts: list[Part] = []
    top = 0.0
    for (_x0, table_top, _x1, table_bottom), markdown in found:
        parts += _text_between(rest, top, table_top)
        parts.append(("table", markdown))
        top = max(top, table_bottom)
    parts += _text_between(rest, top, float(page.height))
    return parts


def _text_between(page, top: float, bottom: float) -> list[Part]:  # type: ignore[no-untyped-def]
    if bottom - top < 1:
        return []
    text = page.crop((0, top, float(page.width), bottom), strict=False).extract_text() or ""
    return [("text", text)] if text.strip() else []


def table_pages(data: bytes) -> dict[int, list[Part]]:
    """Page number (0-based) -> parts, for the pages of ``data`` that hold at least one table."""
    try:
        return dict(_scan(data))
    except Exception:  # pdfplumber failing on an odd file: pypdf's text is still there
        return {}


def _scan(data: bytes) -> Iterator[tuple[int, list[Part]]]:
    import pdfplumber

    logging.getLogger("pdfminer").setLevel(logging.ERROR)
    with pdfplumber.open(io.BytesIO(data)) as pdf:
        for number, page in enumerate(pdf.pages):
            parts = _page_parts(page)
            if parts is not None:
                yield number, parts
