"""Turn a file on disk into a ``LoadedDocument`` of structural blocks.

One entry point, ``load_document``, dispatches on the suffix to a parser for Markdown, plain text, HTML,
PDF, or (from ``ingestion.formats``) reST, Word, CSV/TSV, notebooks and code. Every way a file can be
unusable (too large, binary, undecodable, empty, broken or encrypted PDF, a parser bug on a strange file) ends as a ``LoaderError`` with a reason a user can act on, so a
bad file in a large folder is reported and skipped instead of stopping the whole ingestion.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import io
import logging
import re
import stat
import warnings
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path

from core.access import AccessGroupError
from core.access import groups as access_groups
from core.text import CJK, CJK_PUNCTUATION
from ingestion.documents import Block, LoadedDocument, LoaderError
from ingestion.formats import CODE_SUFFIXES, DOCUMENT_PARSERS, parse_code, parse_notebook
from ingestion.markup import clean_doc_markup
from ingestion.pdf_tables import markdown_table, table_pages
from ingestion.text_decoding import decode_text

SUPPORTED_SUFFIXES: tuple[str, ...] = (".md", ".markdown", ".txt", ".html", ".htm", ".pdf", ".jsonl")
SKIPPED_DIR_NAMES = frozenset({"__pycache__", "node_modules"})
MAX_TITLE_CHARS = 120

_CJK_CHARS = CJK + CJK_PUNCTUATION
_CJK_CHAR_RE = re.compile(rf"[{_CJK_CHARS}]")
_TERMINAL_CHARS = frozenset(".!?;:。！？；：…」』”’)]）】")
_BULLET_RE = re.compile(r"^\s*(?:[-*+•·▪●◦]|\d{1,3}[.)、]|[a-z][.)]|[（(]\d{1,3}[)）])\s+")
_PAGE_NUMBER_RE = re.compile(r"^\s*(?:page\s*)?[-–—]?\s*\d{1,4}\s*[-–—]?(?:\s*(?:/|of)\s*\d{1,4})?\s*$", re.I)


# --------------------------------------------------------------------------------------------------
# entry points
# --------------------------------------------------------------------------------------------------


def load_document(path: Path, *, max_bytes: int) -> LoadedDocument:
    """Read and parse one file; raise ``LoaderError`` (never anything else) when it cannot be used."""
    path = Path(path)
    source = str(path.absolute())
    try:
        return _load(path, source, max_bytes)
    except LoaderError as exc:
        raise LoaderError(exc.reason, source) from None
    except RecursionError:
        raise LoaderError("document nesting too deep to parse", source) from None
    except Exception as exc:  # a parser failing on a strange file must not stop a whole ingestion
        raise LoaderError(f"cannot parse file ({type(exc).__name__}: {exc})", source) from None


_FILE_KINDS: tuple[tuple[Callable[[int], bool], str], ...] = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISFIFO, "a named pipe (FIFO)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def regular_file(path: Path) -> Path:
    """The resolved path of a regular file; ``LoaderError`` for a symlink loop, FIFO, device or socket.

    Checked before anything opens the file: reading a FIFO or ``/dev/zero`` would block or never end.
    """
    try:
        resolved = Path(path).resolve(strict=True)
        mode = resolved.stat().st_mode
    except RuntimeError:  # Python < 3.13 reports a symlink loop this way
        raise LoaderError("symlink loop") from None
    except FileNotFoundError:
        raise LoaderError("file not found (or a broken symlink)") from None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise LoaderError("symlink loop") from None
        raise LoaderError(f"cannot read file ({exc.strerror or exc})") from None
    if not stat.S_ISREG(mode):
        kind = next((name for test, name in _FILE_KINDS if test(mode)), "not a regular file")
        raise LoaderError(f"{kind}, not a regular file; skipped")
    return resolved


def _load(path: Path, source: str, max_bytes: int) -> LoadedDocument:
    suffix = path.suffix.lower()
    parser = _PARSERS.get(suffix)
    if parser is None:
        supported = " ".join(SUPPORTED_SUFFIXES)
        raise LoaderError(f"unsupported file type {suffix or '(no suffix)'!r} (supported: {supported})")
    data, mtime = _read_bytes(path, max_bytes)
    title, blocks = parse_markdown(data, base=path.parent) if parser is parse_markdown else parser(data)
    access = markdown_access(data) if parser is parse_markdown else []
    blocks = [block for block in blocks if block.text.strip()]
    if not blocks:
        raise LoaderError("no text content")
    return LoadedDocument(
        source=source,
        title=title or _fallback_title(blocks, path),
        blocks=blocks,
        mtime=mtime,
        file_hash=hashlib.sha256(data).hexdigest(),
        size=len(data),
        access=access,
    )


def _read_bytes(path: Path, max_bytes: int) -> tuple[bytes, float]:
    try:
        stat = path.stat()
    except FileNotFoundError:
        raise LoaderError("file not found") from None
    except OSError as exc:
        raise LoaderError(f"cannot read file ({exc.strerror or exc})") from None
    if not path.is_file():
        raise LoaderError("not a regular file")
    if max_bytes > 0 and stat.st_size > max_bytes:
        raise LoaderError(f"file too large ({stat.st_size / 1e6:.1f} MB > limit {max_bytes / 1e6:.1f} MB)")
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise LoaderError(f"cannot read file ({exc.strerror or exc})") from None
    if not data.strip():
        raise LoaderError("empty file")
    return data, stat.st_mtime


def _fallback_title(blocks: list[Block], path: Path) -> str:
    first_line = blocks[0].text.strip().split("\n", 1)[0].strip()
    if blocks[0].kind in ("heading", "paragraph") and 0 < len(first_line) <= MAX_TITLE_CHARS:
        return first_line
    return path.stem


# --------------------------------------------------------------------------------------------------
# decoding
# --------------------------------------------------------------------------------------------------

_CHARSET_RE = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?([A-Za-z0-9_\-]+)""", re.I)


# --------------------------------------------------------------------------------------------------
# shared text helpers
# --------------------------------------------------------------------------------------------------


def _separator(left: str, right: str) -> str:
    """What goes between two wrapped lines: nothing between CJK characters, one space otherwise."""
    if not left or not right or left.endswith("\n"):
        return ""
    return "" if _CJK_CHAR_RE.match(left[-1]) and _CJK_CHAR_RE.match(right[0]) else " "


def _join_lines(lines: list[str]) -> str:
    parts: list[str] = []
    previous = ""
    for line in lines:
        if line:
            parts.append(_separator(previous, line) + line)
            previous = line
    return "".join(parts)


def _ends_sentence(text: str) -> bool:
    return bool(text) and text[-1] in _TERMINAL_CHARS


def _collapse_whitespace(text: str) -> str:
    """Collapse runs of whitespace to one space and drop the spaces a line break left between CJK."""
    text = re.sub(r"\s+", " ", text).strip()
    return re.sub(rf"(?<=[{_CJK_CHARS}]) (?=[{_CJK_CHARS}])", "", text)


def unwrap_lines(lines: list[str]) -> list[str]:
    """Group hard-wrapped lines into paragraphs.

    A line is joined to the next unless it is much shorter than the page's usual width (a heading or a
    paragraph's last line), ends a sentence while being visibly short, or the next line starts a list item.
    Used for PDF text, where layout lines carry no paragraph marks.
    """
    lines = [line.strip() for line in lines]
    widths = sorted(len(line) for line in lines if line)
    if not widths:
        return []
    usual = widths[int(len(widths) * 0.8)] if len(widths) > 2 else widths[-1]
    paragraphs: list[list[str]] = []
    current: list[str] = []
    for line in lines:
        previous = current[-1] if current else ""
        breaks = not line or (
            bool(previous)
            and (
                _BULLET_RE.match(line) is not None
                or len(previous) < 0.6 * usual  # a heading or a paragraph's last line
                or (_ends_sentence(previous) and len(previous) < 0.85 * usual)
            )
        )
        if breaks and current:
            paragraphs.append(current)
            current = []
        if line:
            current.append(line)
    if current:
        paragraphs.append(current)
    return [_join_lines(paragraph) for paragraph in paragraphs]


def _short_title(text: str | None) -> str | None:
    if not text:
        return None
    title = _collapse_whitespace(text)
    return title[:MAX_TITLE_CHARS] if title else None


# --------------------------------------------------------------------------------------------------
# plain text
# --------------------------------------------------------------------------------------------------


def parse_text(data: bytes) -> tuple[str | None, list[Block]]:
    """Plain text: paragraphs are separated by blank lines; lines inside a paragraph are kept."""
    text = decode_text(data)
    blocks = []
    for paragraph in re.split(r"\n[ \t\f\v]*\n", text):
        lines = [line.rstrip() for line in paragraph.split("\n")]
        body = "\n".join(lines).strip("\n").strip()
        if body:
            blocks.append(Block(kind="paragraph", text=body))
    return None, blocks


# --------------------------------------------------------------------------------------------------
# Markdown
# --------------------------------------------------------------------------------------------------

_FRONT_MATTER_RE = re.compile(r"\A---[ \t]*\n(.*?)\n(?:---|\.\.\.)[ \t]*(?:\n|\Z)", re.S)
_FRONT_TITLE_RE = re.compile(r"^title\s*:\s*(.+?)\s*$", re.M)
_FENCE_RE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_ATX_RE = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_SETEXT_RE = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
_HR_RE = re.compile(r"^ {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$")
_TABLE_SEP_RE = re.compile(r"^\s*\|?\s*:?-{1,}:?\s*(?:\|\s*:?-{1,}:?\s*)*\|?\s*$")
_LIST_RE = re.compile(r"^ {0,3}(?:[-*+]|\d{1,9}[.)])(?:[ \t]+|$)")
_QUOTE_RE = re.compile(r"^ {0,3}> ?")
_HTML_LINE_RE = re.compile(r"^\s*</?[A-Za-z][^>]*>")
_IMAGE_RE = re.compile(r"!\[([^\]]*)\]\([^)]*\)")
_LINK_RE = re.compile(r"\[([^\]]+)\]\([^)]*\)")
# A line of images alone (a figure, perhaps linked): "![Diagram showing …](./x.png)"
_FIGURE_LINE_RE = re.compile(r"^\s*(?:\[?!\[[^\]]*\]\([^)]*\)(?:\]\([^)]*\))?\s*)+$")


def _inline_markdown(text: str) -> str:
    """Keep the visible text of links and images; their URLs are noise for retrieval."""
    return _LINK_RE.sub(r"\1", _IMAGE_RE.sub(r"\1", text))


def _front_matter(text: str) -> tuple[str | None, str]:
    match = _FRONT_MATTER_RE.match(text)
    if not match:
        return None, text
    title_match = _FRONT_TITLE_RE.search(match.group(1))
    title = title_match.group(1).strip().strip("\"'") if title_match else None
    return title or None, text[match.end() :]


_FRONT_ACCESS_RE = re.compile(r"^access\s*:[ \t]*(.*?)\s*$", re.M)
_FRONT_ITEM_RE = re.compile(r"^[ \t]+-[ \t]*(.+?)\s*$")


def markdown_access(data: bytes) -> list[str]:
    """Groups named by front matter ``access: [hr, eng]``, ``access: hr, eng`` or a YAML list below it.

    A bad group name is a ``LoaderError`` (the file is skipped and reported), never a silently public file.
    """
    match = _FRONT_MATTER_RE.match(decode_text(data))
    found = _FRONT_ACCESS_RE.search(match.group(1)) if match else None
    if not found:
        return []
    inline = found.group(1).strip().strip("[]")
    names = [inline] if inline else []
    if not inline:
        for line in match.group(1)[found.end() :].split("\n")[1:]:
            item = _FRONT_ITEM_RE.match(line)
            if not item:
                break
            names.append(item.group(1))
    try:
        return access_groups(part.strip().strip("\"'") for name in names for part in name.split(","))
    except AccessGroupError as exc:
        raise LoaderError(f"front matter: {exc}") from None


def _is_table_start(lines: list[str], i: int) -> bool:
    return (
        "|" in lines[i]
        and i + 1 < len(lines)
        and "-" in lines[i + 1]
        and _TABLE_SEP_RE.match(lines[i + 1]) is not None
    )


def parse_markdown(data: bytes, base: Path | None = None) -> tuple[str | None, list[Block]]:
    """Markdown: ATX and setext headings, fenced/indented code, pipe tables, lists, quotes, paragraphs;
    doc-site markup cleaned first (``ingestion.markup``; includes resolve beside ``base``, the page's folder)."""
    title, text = _front_matter(decode_text(data))
    text = clean_doc_markup(text, base)
    parser = _MarkdownBlocks(text.split("\n"))
    blocks = parser.parse()
    if not title:
        title = next((b.text for b in blocks if b.kind == "heading" and b.level == 1), None)
    return _short_title(title), blocks


class _MarkdownBlocks:
    """A small line-based block parser; inline markup other than links is left as written."""

    def __init__(self, lines: list[str]) -> None:
        self.lines = lines
        self.i = 0
        self.blocks: list[Block] = []
        self.paragraph: list[str] = []

    def parse(self) -> list[Block]:
        steps: list[Callable[[str], bool]] = [
            self._blank,
            self._fence,
            self._atx_heading,
            self._setext_heading,
            self._rule,
            self._table,
            self._list,
            self._quote,
            self._html_comment,
            self._indented_code,
        ]
        while self.i < len(self.lines):
            line = self.lines[self.i]
            if not any(step(line) for step in steps):
                self.paragraph.append(line)
                self.i += 1
        self._flush_paragraph()
        return self.blocks

    # each step consumes lines and returns True when it recognised the current line
    def _blank(self, line: str) -> bool:
        if line.strip():
            return False
        self._flush_paragraph()
        self.i += 1
        return True

    def _fence(self, line: str) -> bool:
        match = _FENCE_RE.match(line)
        if not match:
            return False
        self._flush_paragraph()
        fence = match.group(1)
        closing = re.compile(rf"^ {{0,3}}{re.escape(fence[0])}{{{len(fence)},}}[ \t]*$")
        start = self.i
        self.i += 1
        while self.i < len(self.lines) and not closing.match(self.lines[self.i]):
            self.i += 1
        end = min(self.i, len(self.lines) - 1)
        self.i = end + 1
        body = "\n".join(self.lines[start : end + 1]).strip("\n")
        self._add("code", body)
        return True

    def _atx_heading(self, line: str) -> bool:
        match = _ATX_RE.match(line)
        if not match:
            return False
        self._flush_paragraph()
        self._add("heading", _inline_markdown(match.group(2) or ""), level=len(match.group(1)))
        self.i += 1
        return True

    def _setext_heading(self, line: str) -> bool:
        match = _SETEXT_RE.match(line)
        if not match or not self.paragraph:
            return False
        text = _inline_markdown(_collapse_whitespace(" ".join(self.paragraph)))
        self.paragraph = []
        self._add("heading", text, level=1 if match.group(1)[0] == "=" else 2)
        self.i += 1
        return True

    def _rule(self, line: str) -> bool:
        if not _HR_RE.match(line):
            return False
        self._flush_paragraph()
        self.i += 1
        return True

    def _table(self, line: str) -> bool:
        if not _is_table_start(self.lines, self.i):
            return False
        self._flush_paragraph()
        rows = []
        while self.i < len(self.lines) and self.lines[self.i].strip() and "|" in self.lines[self.i]:
            rows.append(_inline_markdown(self.lines[self.i].strip()))
            self.i += 1
        self._add("table", "\n".join(rows))
        return True

    def _list(self, line: str) -> bool:
        if not _LIST_RE.match(line):
            return False
        self._flush_paragraph()
        items = [line.rstrip()]
        self.i += 1
        while self.i < len(self.lines):
            current = self.lines[self.i]
            if current.strip():
                if _ATX_RE.match(current) or _FENCE_RE.match(current) or _HR_RE.match(current):
                    break
                items.append(current.rstrip())
                self.i += 1
                continue
            following = self.lines[self.i + 1] if self.i + 1 < len(self.lines) else ""
            if following.strip() and (_LIST_RE.match(following) or following.startswith(("  ", "\t"))):
                self.i += 1  # a blank line inside a loose list
                continue
            break
        self._add("list", _inline_markdown(_join_list_items(items)))
        return True

    def _quote(self, line: str) -> bool:
        if not _QUOTE_RE.match(line):
            return False
        self._flush_paragraph()
        quoted = []
        while self.i < len(self.lines) and self.lines[self.i].strip():
            quoted.append(_QUOTE_RE.sub("", self.lines[self.i], count=1))
            self.i += 1
        self._add("paragraph", _inline_markdown(_unwrap_soft(quoted)))
        return True

    def _html_comment(self, line: str) -> bool:
        if not line.lstrip().startswith("<!--"):
            return False
        self._flush_paragraph()
        while self.i < len(self.lines) and "-->" not in self.lines[self.i]:
            self.i += 1
        self.i += 1
        return True

    def _indented_code(self, line: str) -> bool:
        if self.paragraph or not line.startswith(("    ", "\t")):
            return False
        start = self.i
        while self.i < len(self.lines) and (
            self.lines[self.i].startswith(("    ", "\t")) or not self.lines[self.i].strip()
        ):
            self.i += 1
        self._add("code", "\n".join(self.lines[start : self.i]).strip("\n"))
        return True

    def _flush_paragraph(self) -> None:
        # A figure's alt text describes a picture the reader of an answer cannot see ("Diagram showing
        # props being passed…" was quoted as an answer sentence; "具名插槽图示" ran into the next one).
        lines = [line for line in self.paragraph if not _FIGURE_LINE_RE.match(line)]
        lines = [line for line in lines if not _HTML_LINE_RE.match(line) or _strip_tags(line)]
        lines = [_strip_tags(line) if _HTML_LINE_RE.match(line) else line for line in lines]
        self.paragraph = []
        if lines:
            self._add("paragraph", _inline_markdown(_unwrap_soft(lines)))

    def _add(self, kind: str, text: str, level: int = 0) -> None:
        text = text.strip()
        if text:
            self.blocks.append(Block(kind=kind, text=text, level=level))  # type: ignore[arg-type]


_NESTED_ITEM_RE = re.compile(r"^\s*(?:[-*+]|\d{1,9}[.)])(?:[ \t]+|$)")


def _join_list_items(lines: list[str]) -> str:
    """One line per list item: wrapped continuation lines join their item; fenced code stays as is."""
    items: list[list[str]] = []
    in_fence = False
    for line in lines:
        fence = _FENCE_RE.match(line.strip())
        if in_fence or fence or not items or _NESTED_ITEM_RE.match(line):
            items.append([line.rstrip()])
        else:
            items[-1].append(line.strip())
        if fence:
            in_fence = not in_fence
    return "\n".join(_join_lines(item) if len(item) > 1 else item[0] for item in items)


def _strip_tags(line: str) -> str:
    return re.sub(r"<[^>]+>", "", line).strip()


def _unwrap_soft(lines: list[str]) -> str:
    """Markdown soft line breaks are spaces; a trailing double space or backslash is a hard break."""
    pieces = []
    for line in lines:
        piece = line.strip().rstrip("\\").rstrip()
        pieces.append(piece + "\n" if line.endswith(("  ", "\\")) else piece)
    return _join_lines(pieces).strip()


# --------------------------------------------------------------------------------------------------
# HTML
# --------------------------------------------------------------------------------------------------

_DROPPED_TAGS = ("script", "style", "nav", "noscript", "template", "svg", "iframe", "head")
# bs4's html.parser builder slows down quadratically with many unclosed void tags (<br>, <img>);
# written self-closing they cost nothing.
_VOID_TAG_RE = re.compile(
    r"<(br|img|hr|meta|link|input|wbr|area|base|col|embed|source|track|param)\b([^<>]*?)\s*/?>", re.I
)
_HEADING_TAGS = {f"h{n}": n for n in range(1, 7)}
_INLINE_TAGS = frozenset(
    [
        "a",
        "abbr",
        "b",
        "bdi",
        "bdo",
        "cite",
        "code",
        "data",
        "dfn",
        "em",
        "font",
        "i",
        "kbd",
        "mark",
        "q",
        "s",
        "samp",
        "small",
        "span",
        "strong",
        "sub",
        "sup",
        "time",
        "u",
        "var",
        "wbr",
        "label",
        "img",
        "br",
        "del",
        "ins",
    ]
)


def parse_html(data: bytes) -> tuple[str | None, list[Block]]:
    """HTML via BeautifulSoup's stdlib parser: headings, paragraphs, lists, code, and tables as Markdown."""
    from bs4 import BeautifulSoup

    declared = _CHARSET_RE.search(data[:4096])
    text = decode_text(data, declared=declared.group(1).decode("ascii") if declared else None)
    soup = BeautifulSoup(_VOID_TAG_RE.sub(r"<\1\2/>", text), "html.parser")
    title_tag = soup.find("title")
    title = _short_title(title_tag.get_text()) if title_tag else None
    for tag in soup.find_all(_DROPPED_TAGS):
        tag.decompose()
    walker = _HtmlBlocks()
    walker.walk(soup.find("body") or soup)
    walker.flush()
    if not title:
        title = next((b.text for b in walker.blocks if b.kind == "heading" and b.level == 1), None)
    return _short_title(title), walker.blocks


class _HtmlBlocks:
    """Walks the DOM in document order; loose inline text between blocks becomes a paragraph."""

    def __init__(self) -> None:
        self.blocks: list[Block] = []
        self.inline: list[str] = []

    def walk(self, node) -> None:  # type: ignore[no-untyped-def]
        from bs4 import NavigableString, Tag
        from bs4.element import PreformattedString

        for child in node.children:
            if isinstance(child, NavigableString):
                if not isinstance(child, PreformattedString):  # comments, doctype, CDATA
                    self.inline.append(str(child))
                continue
            if not isinstance(child, Tag):
                continue
            name = child.name.lower()
            if name in _INLINE_TAGS and not child.find(_block_like):
                self.inline.append("\n" if name == "br" else _text_of(child))
                continue
            self.flush()
            if name in _HEADING_TAGS:
                self._add("heading", _collapse_whitespace(_text_of(child)), _HEADING_TAGS[name])
            elif name in ("p", "blockquote", "address"):
                self._add("paragraph", _collapse_whitespace(_text_of(child)))
            elif name == "pre":
                self._add("code", _text_of(child).strip("\n"))
            elif name in ("ul", "ol") and child.find("li", recursive=False):
                self._add("list", _html_list(child, ordered=name == "ol"))
            elif name == "table":
                caption = child.find("caption")
                if caption is not None:
                    self._add("paragraph", _collapse_whitespace(caption.get_text()))
                self._add("table", html_table_to_markdown(child))
            else:
                self.walk(child)
                self.flush()

    def flush(self) -> None:
        text = _collapse_whitespace("".join(self.inline))
        self.inline = []
        self._add("paragraph", text)

    def _add(self, kind: str, text: str, level: int = 0) -> None:
        text = text.strip()
        if text:
            self.blocks.append(Block(kind=kind, text=text, level=level))  # type: ignore[arg-type]


def _text_of(node) -> str:  # type: ignore[no-untyped-def]
    """Visible text of an element with ``<br>`` as a line break (comments and CDATA left out)."""
    from bs4 import NavigableString
    from bs4.element import PreformattedString

    parts = []
    for item in node.descendants:
        if isinstance(item, NavigableString):
            if not isinstance(item, PreformattedString):
                parts.append(str(item))
        elif item.name == "br":
            parts.append("\n")
    return "".join(parts)


def _block_like(tag) -> bool:  # type: ignore[no-untyped-def]
    return tag.name not in _INLINE_TAGS


def _html_list(node, *, ordered: bool) -> str:  # type: ignore[no-untyped-def]
    lines = []
    for number, item in enumerate(node.find_all("li", recursive=False), start=1):
        text = _collapse_whitespace(item.get_text(" "))
        if text:
            lines.append(f"{number}. {text}" if ordered else f"- {text}")
    return "\n".join(lines)


def html_table_to_markdown(table) -> str:  # type: ignore[no-untyped-def]
    """Render an HTML table as a Markdown table whose first row is the header (thead/th row or first row)."""
    rows = [tr for tr in table.find_all("tr") if tr.find_parent("table") is table]
    cells = [[_table_cell(cell) for cell in tr.find_all(("th", "td"), recursive=False)] for tr in rows]
    pairs = [(tr, row) for tr, row in zip(rows, cells, strict=True) if any(row)]
    if not pairs:
        return ""
    header_index = 0
    for index, (tr, _row) in enumerate(pairs):
        in_head = tr.find_parent("thead") is not None
        all_th = all(cell.name == "th" for cell in tr.find_all(("th", "td"), recursive=False))
        if in_head or all_th:
            header_index = index
            break
    ordered = [pairs[header_index][1]] + [row for i, (_tr, row) in enumerate(pairs) if i != header_index]
    return markdown_table(ordered)


def _table_cell(cell) -> str:  # type: ignore[no-untyped-def]
    return _collapse_whitespace(cell.get_text(" ")).replace("|", "\\|")


# --------------------------------------------------------------------------------------------------
# PDF
# --------------------------------------------------------------------------------------------------


@contextlib.contextmanager
def _quiet_pypdf() -> Iterator[None]:
    """pypdf logs a warning for every oddity of a damaged file; the LoaderError is what users need."""
    logger = logging.getLogger("pypdf")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        logger.setLevel(level)


def parse_pdf(data: bytes) -> tuple[str | None, list[Block]]:
    """PDF via pypdf: page text regrouped into paragraphs, ruled tables (pdfplumber) kept whole as Markdown;
    encrypted, broken or image-only -> LoaderError."""
    pages, meta_title = _pdf_pages(data)
    tables = table_pages(data)
    blocks: list[Block] = []
    for number, page_text in enumerate(pages):
        for kind, text in tables.get(number, [("text", page_text)]):
            if kind == "table":
                blocks.append(Block(kind="table", text=text))
                continue
            lines = _drop_page_numbers(text.replace("\r", "\n").split("\n"))
            paragraphs = unwrap_lines(lines)
            previous = blocks[-1] if blocks else None
            if (
                previous is not None
                and previous.kind == "paragraph"
                and paragraphs
                and not _ends_sentence(previous.text)
                and (paragraphs[0][:1].islower() or _CJK_CHAR_RE.match(paragraphs[0]))
            ):  # a paragraph running over a page break
                previous.text = _join_lines([previous.text, paragraphs.pop(0)])
            blocks += [Block(kind="paragraph", text=p) for p in paragraphs if p.strip()]
    if not blocks:
        raise LoaderError("no extractable text (scanned PDF?)")
    return _short_title(meta_title), blocks


def _pdf_pages(data: bytes) -> tuple[list[str], str | None]:
    from pypdf import PdfReader

    with _quiet_pypdf():
        try:
            reader = PdfReader(io.BytesIO(data), strict=False)
            if reader.is_encrypted:
                try:
                    unlocked = reader.decrypt("")
                except Exception as exc:
                    raise LoaderError(f"encrypted PDF (cannot decrypt: {exc})") from None
                if not unlocked:
                    raise LoaderError("encrypted PDF (password required)")
            pages = [_page_text(page) for page in reader.pages]
            title = _pdf_meta_title(reader)
        except LoaderError:
            raise
        except Exception as exc:
            raise LoaderError(f"broken PDF: {exc or type(exc).__name__}") from None
    return pages, title


def _page_text(page) -> str:  # type: ignore[no-untyped-def]
    try:
        return page.extract_text() or ""
    except Exception:  # one damaged page should not cost the rest of the document
        return ""


def _pdf_meta_title(reader) -> str | None:  # type: ignore[no-untyped-def]
    try:
        title = reader.metadata.title if reader.metadata else None
    except Exception:
        return None
    if not isinstance(title, str):
        return None
    title = title.strip()
    if not title or title.lower() in {"untitled", "title"} or title.lower().endswith((".doc", ".docx")):
        return None
    return title


def _drop_page_numbers(lines: list[str]) -> list[str]:
    stripped = [line for line in lines if line.strip()]
    if stripped and _PAGE_NUMBER_RE.match(stripped[-1]):
        last = max(i for i, line in enumerate(lines) if line.strip())
        lines = lines[:last]
    if stripped and _PAGE_NUMBER_RE.match(stripped[0]):
        first = min(i for i, line in enumerate(lines) if line.strip())
        lines = lines[first + 1 :]
    return lines


# Every parser by suffix, in one table; the formats beyond these six live in ``ingestion.formats``.
_PARSERS: dict[str, Callable[[bytes], tuple[str | None, list[Block]]]] = {
    ".md": parse_markdown,
    ".markdown": parse_markdown,
    ".txt": parse_text,
    ".html": parse_html,
    ".htm": parse_html,
    ".pdf": parse_pdf,
    **DOCUMENT_PARSERS,
    ".ipynb": partial(parse_notebook, parse_markdown=parse_markdown),
    **dict.fromkeys(CODE_SUFFIXES, parse_code),
}
SUPPORTED_SUFFIXES = SUPPORTED_SUFFIXES + tuple(
    suffix for suffix in _PARSERS if suffix not in SUPPORTED_SUFFIXES
)


def supported_suffixes() -> tuple[str, ...]:
    """Every suffix ingestion reads (JSON Lines included)."""
    return SUPPORTED_SUFFIXES
