"""Doc-site markup cleaned out of Markdown before it is parsed, so headings, citations and answers show
what a reader of the rendered page sees.

Documentation sites write more than CommonMark: MkDocs/Material heading anchors (``## Query { #query }``,
VitePress ``{#query}``, translated VitePress pages ``## 查询 %{#query}%``), admonitions (``!!! note "Title"``, ``??? tip``, pymdownx ``/// note | Title``,
Docusaurus/VitePress ``:::tip Title`` … ``:::``), empty elements (VitePress components such as
``<VueSchoolLink … />``, badges ``<sup class="vt-badge" />``), file includes (``{* ../../docs_src/app.py hl[3] *}``,
``--8<-- "snippet.md"``), Hugo shortcodes (``{{< note >}}``, ``{{% tab %}}``) and HTML comments.
Fences and anchors go; an admonition keeps its title and its text (dedented, so it is not read as
indented code); an include becomes the file's text as a fenced block when the file exists beside the
docs (``include_roots``), and is dropped otherwise. Fenced code is left exactly as written.
"""

from __future__ import annotations

import re
from pathlib import Path

_FENCE_RE = re.compile(r"^\s*(`{3,}|~{3,})")
_ANCHOR_RE = re.compile(
    r"^(\s{0,3}#{1,6}\s.*?)\s*(%?)\{:?\s*#[^\s{}]+(?:\s+[.#][^\s{}]+|\s+[\w-]+=[^\s{}]+)*\s*\}\2\s*$"
)
_MKDOCS_ADMONITION_RE = re.compile(r'^(\s*)(?:!!!|\?\?\?\+?)\s*[\w-]+(?:\s+[\w-]+)*(?:\s+"([^"]*)")?\s*$')
_BLOCKS_OPEN_RE = re.compile(r"^(\s*)/{3,}\s*[\w-]+(?:\s*\|\s*(.*?))?\s*$")
_BLOCKS_CLOSE_RE = re.compile(r"^\s*/{3,}\s*$")
_COLON_OPEN_RE = re.compile(r"^(\s*):{3,}\s*([\w-]+)(?:\s*\{[^}]*\})?(?:\s+(.*?))?\s*$")
_COLON_CLOSE_RE = re.compile(r"^\s*:{3,}\s*$")
_INCLUDE_RE = re.compile(r"^\s*\{\*\s*(\S+)(?:\s+[^*]*)?\*\}\s*$")
_SNIPPET_RE = re.compile(r"""^\s*--8<--\s*(?:["']([^"']+)["'])?\s*$""")
_SHORTCODE_RE = re.compile(r"\{\{[<%].*?[%>]\}\}")
_COMMENT_RE = re.compile(r"<!--.*?-->", re.S)
# An empty element (``<VueSchoolLink href="…" title="…"/>``, ``<sup class="vt-badge ts" />``): site chrome
# (a lesson card, a badge) with no text of the page; a tag left open at a line's end continues below.
_EMPTY_TAG_RE = re.compile(r"\s*<[A-Za-z][\w.-]*(?:\s[^<>`]*)?/>")
_TAG_OPEN_RE = re.compile(r"^\s{0,3}<[A-Za-z][\w.-]*(?:\s[^<>`]*)?$")
_CODE_SPAN_SPLIT_RE = re.compile(r"(`[^`\n]*`)")  # a line's inline code, kept as written
MAX_TAG_LINES = 12  # a tag left open longer than this is text, not a tag
_LANGUAGE = {
    ".py": "python",
    ".js": "js",
    ".ts": "ts",
    ".vue": "vue",
    ".yaml": "yaml",
    ".yml": "yaml",
    ".json": "json",
    ".sh": "bash",
    ".toml": "toml",
    ".go": "go",
    ".html": "html",
    ".css": "css",
}
MAX_INCLUDE_BYTES = 64_000  # an included file larger than this is dropped, not inlined
INCLUDE_DEPTH = 3  # an include resolves against the page's folder and at most this many folders above


def clean_doc_markup(text: str, base: Path | None = None) -> str:
    """``text`` with doc-site markup removed or resolved (see the module docstring); ``base`` is the
    page's folder (None: includes are dropped)."""
    out: list[str] = []
    fence: str | None = None
    dedent: list[int] = []  # indentation each open MkDocs admonition body strips
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        if dedent and line.strip():
            indent = len(line) - len(line.lstrip(" "))
            while dedent and indent < dedent[-1]:
                dedent.pop()  # the admonition body ended
            if dedent:
                line = line[dedent[-1] :]
        fenced = _FENCE_RE.match(line)
        if fence is not None:
            out.append(line)
            if fenced and fenced.group(1)[0] == fence[0] and len(fenced.group(1)) >= len(fence):
                fence = None
            continue
        if fenced:
            fence = fenced.group(1)
            out.append(line)
            continue
        if "<!--" in line:  # a comment, possibly over several lines, outside code
            while "-->" not in line[line.index("<!--") :] and i < len(lines):
                line += "\n" + lines[i]
                i += 1
            line = _COMMENT_RE.sub("", line).split("<!--")[0]
        if match := _MKDOCS_ADMONITION_RE.match(line):
            out.extend(["", match.group(2), ""] if match.group(2) else [""])
            dedent.append(len(match.group(1)) + 4)
            continue
        if _BLOCKS_CLOSE_RE.match(line) or _COLON_CLOSE_RE.match(line):
            out.append("")
            continue
        if match := (_BLOCKS_OPEN_RE.match(line) or _COLON_OPEN_RE.match(line)):
            title = (match.group(3) if match.re is _COLON_OPEN_RE else match.group(2)) or ""
            out.extend(["", title.strip(), ""] if title.strip() else [""])
            continue
        if match := _INCLUDE_RE.match(line):
            out.extend(_included(match.group(1), base))
            continue
        if match := _SNIPPET_RE.match(line):
            paths = [match.group(1)] if match.group(1) else []
            if not paths:  # block form: one path a line until the closing --8<--
                while i < len(lines) and not _SNIPPET_RE.match(lines[i]):
                    paths.append(lines[i].strip().strip("\"'"))
                    i += 1
                i += 1
            for path in filter(None, paths):
                out.extend(_included(path, base))
            continue
        if _TAG_OPEN_RE.match(line):  # <MasteringPiniaLink / href="…" / />
            end = next((j for j in range(i, min(i + MAX_TAG_LINES, len(lines))) if ">" in lines[j]), None)
            if end is not None and _EMPTY_TAG_RE.fullmatch(" ".join([line, *lines[i : end + 1]]).rstrip()):
                i = end + 1
                continue
        line = _ANCHOR_RE.sub(r"\1", line)
        line = _SHORTCODE_RE.sub("", line)
        line = "".join(
            piece if piece.startswith("`") else _EMPTY_TAG_RE.sub("", piece)
            for piece in _CODE_SPAN_SPLIT_RE.split(line)
        )
        if line.strip() or not _SHORTCODE_RE.search(lines[i - 1]):
            out.append(line)
    return "\n".join(out)


def include_roots(base: Path) -> list[Path]:
    """Where an include may resolve: the page's folder and up to ``INCLUDE_DEPTH`` folders above it."""
    return [base, *list(base.parents)[:INCLUDE_DEPTH]]


def _included(reference: str, base: Path | None) -> list[str]:
    """The referenced file as a fenced block (blank-line separated), or nothing when it is not found
    inside the allowed roots, is not a small regular text file, or is absolute."""
    reference = reference.split(":")[0] if re.search(r":\d", reference) else reference  # file.py:3:9
    if base is None or not reference or Path(reference).is_absolute():
        return [""]
    base = base.resolve()
    top = include_roots(base)[-1]
    for root in include_roots(base):
        candidate = (root / reference).resolve()
        if not candidate.is_relative_to(top) or not candidate.is_file():
            continue
        if candidate.stat().st_size > MAX_INCLUDE_BYTES:
            return [""]
        try:
            body = candidate.read_text(encoding="utf-8").strip("\n")
        except (OSError, UnicodeDecodeError):
            return [""]
        if candidate.suffix in {".md", ".markdown", ".txt"}:
            return ["", clean_doc_markup(body, candidate.parent), ""]
        fence = "````" if "```" in body else "```"
        return ["", f"{fence}{_LANGUAGE.get(candidate.suffix, '')}", body, fence, ""]
    return [""]
