"""Structure-aware splitting of a ``LoadedDocument`` into ``TextPiece`` s.

Why structure first: a chunk that mixes two sections, or half a table, retrieves badly and cites
badly. So the document is cut at headings into sections (each piece carries its heading path), blocks
are packed whole into chunks of at most ``chunk_size`` characters, and only a block too large for one
chunk is broken up: prose by sentences (Chinese and English punctuation), code by lines, tables by rows
with the header repeated in every part. A sentence longer than a chunk is cut hard, at a space when one
is near. Consecutive chunks of one section overlap by whole trailing sentences (at most
``chunk_overlap`` characters); optional semantic mode also cuts where neighbouring sentences' embeddings
stop being similar.

Every piece is a slice of ``doc.full_text()`` (see ``TextPiece`` for the exceptions: table parts, and
the parts of a code block cut by lines, which are fenced again), so spans are exact and pieces never
contain whitespace-only text.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
from pydantic import BaseModel, Field, model_validator

from core.cues import introduces_block
from core.text import CJK, CJK_PUNCTUATION
from ingestion.documents import Block, LoadedDocument, TextPiece

Embed = Callable[[list[str]], np.ndarray]


class SplitConfig(BaseModel):
    """Chunking parameters; sizes are in characters (a CJK character and a Latin letter count alike)."""

    chunk_size: int = Field(default=800, ge=20)
    chunk_overlap: int = Field(default=100, ge=0)
    semantic: bool = False
    semantic_threshold: float = Field(default=0.55, ge=-1, le=1)
    min_chunk_chars: int = Field(
        default=20, ge=0, description="a semantic cut never leaves a chunk shorter than this"
    )

    @model_validator(mode="after")
    def _overlap_below_size(self) -> SplitConfig:
        if self.chunk_overlap >= self.chunk_size:
            raise ValueError(
                f"chunk_overlap ({self.chunk_overlap}) must be smaller than chunk_size ({self.chunk_size})"
            )
        return self


# --------------------------------------------------------------------------------------------------
# sentences
# --------------------------------------------------------------------------------------------------

_CJK_TERMINATORS = "。！？；…"
_CLOSERS = "\"'”’」』）)]】》〉»"
_CANDIDATE_RE = re.compile(rf"\n|[{_CJK_TERMINATORS}]+|[.!?;]+")
_CJK_RE = re.compile(rf"[{CJK}{CJK_PUNCTUATION}]")
_DOTTED_ABBREVIATION_RE = re.compile(r"(?:[a-z]\.)+[a-z]")
_ABBREVIATIONS = frozenset(
    [
        "mr",
        "mrs",
        "ms",
        "dr",
        "prof",
        "sr",
        "jr",
        "st",
        "vs",
        "cf",
        "al",
        "approx",
        "dept",
        "est",
        "mt",
        "gen",
        "col",
        "capt",
        "rev",
        "ca",
        "resp",
        "incl",
    ]
)
_NUMBERED_ABBREVIATIONS = frozenset(
    ["no", "nos", "fig", "figs", "eq", "eqs", "vol", "vols", "pp", "p", "ch", "sec", "art", "ref", "refs"]
)
_NEXT_CHAR_RE = re.compile(r"\s*(\S)")
_OPENERS = "([{\"'“‘（【「『《"


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """Sentence boundaries as ``(start, end)`` offsets into ``text``, whitespace trimmed.

    Boundaries: newlines; Chinese 。！？；… anywhere; English . ! ? ; when followed by a space or the end.
    Closing quotes and brackets stay with their sentence. Not boundaries: a dot inside a token ("v2.3",
    "3.14", "example.com"), abbreviations ("e.g.", "U.S.", "Dr.", "Fig. 3"), initials ("J. Smith"),
    list numbers ("1. First") and a dot followed by a lower-case word.
    """
    spans: list[tuple[int, int]] = []
    start = 0
    length = len(text)
    for match in _CANDIDATE_RE.finditer(text):
        i = match.start()
        if i < start:
            continue
        if text[i] == "\n":
            _add_span(spans, text, start, i)
            start = match.end()
            continue
        end = match.end()
        while end < length and (text[end] in _CLOSERS or text[end] in _CJK_TERMINATORS + ".!?"):
            end += 1
        if text[i] not in _CJK_TERMINATORS and not _latin_boundary(text, start, match, end):
            continue
        _add_span(spans, text, start, end)
        start = end
    _add_span(spans, text, start, length)
    return spans


def split_sentences(text: str) -> list[str]:
    """The sentences of ``text`` (see ``sentence_spans`` for the rules)."""
    return [text[start:end] for start, end in sentence_spans(text)]


def _latin_boundary(text: str, start: int, match: re.Match[str], end: int) -> bool:
    if end < len(text) and not text[end].isspace() and not _CJK_RE.match(text[end]):
        return False  # "v2.3", "a.b", "?x=1"
    if set(match.group()) != {"."}:
        return True
    next_char = _NEXT_CHAR_RE.match(text, end)
    following = next_char.group(1) if next_char else ""
    if following.islower():
        return False  # "etc. and", "e.g. the"
    word_start = match.start()
    while word_start > start and not text[word_start - 1].isspace() and text[word_start - 1] not in _OPENERS:
        word_start -= 1
    word = text[word_start : match.start()]
    lowered = word.lower()
    if lowered in _ABBREVIATIONS or _DOTTED_ABBREVIATION_RE.fullmatch(lowered):
        return False
    if lowered in _NUMBERED_ABBREVIATIONS and following.isdigit():
        return False
    if len(word) == 1 and word.isupper():
        return False  # an initial
    return not (word.isdigit() and not text[start:word_start].strip())  # "1. First step"


def _add_span(spans: list[tuple[int, int]], text: str, start: int, end: int) -> None:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    if end > start:
        spans.append((start, end))


# --------------------------------------------------------------------------------------------------
# units: the atoms that chunks are packed from
# --------------------------------------------------------------------------------------------------

UnitKind = Literal["prose", "code", "table", "fragment"]


@dataclass
class _Unit:
    """A span of the full text that is never cut further; ``text`` is set only for table parts."""

    start: int
    end: int
    kind: UnitKind
    text: str | None = None
    cut_before: bool = False
    sentences: list[tuple[int, int]] = field(default_factory=list)

    @property
    def standalone(self) -> bool:
        return self.text is not None


@dataclass
class _Section:
    heading_path: list[str]
    units: list[_Unit] = field(default_factory=list)


def _trimmed(full: str, start: int, end: int) -> tuple[int, int] | None:
    spans: list[tuple[int, int]] = []
    _add_span(spans, full, start, end)
    return spans[0] if spans else None


def _hard_split(full: str, start: int, end: int, size: int) -> list[tuple[int, int]]:
    """Cut a span into parts of at most ``size`` characters, at a space or comma in the later half."""
    parts: list[tuple[int, int]] = []
    while end - start > size:
        window = full[start + size // 2 : start + size]
        cut = max(window.rfind(sep) for sep in (" ", "\t", "，", "、", ",", "：", ":"))
        cut = start + size // 2 + cut + 1 if cut >= 0 else start + size
        trimmed = _trimmed(full, start, cut)
        if trimmed:
            parts.append(trimmed)
        start = cut
    trimmed = _trimmed(full, start, end)
    if trimmed:
        parts.append(trimmed)
    return parts


def _prose_units(full: str, start: int, end: int, size: int, by_sentence: bool) -> list[_Unit]:
    if end - start <= size and not by_sentence:
        return [_Unit(start, end, "prose")]
    units = []
    for s_start, s_end in sentence_spans(full[start:end]):
        s_start, s_end = s_start + start, s_end + start
        if s_end - s_start <= size:
            units.append(_Unit(s_start, s_end, "prose", sentences=[(s_start, s_end)]))
        else:
            units.extend(_Unit(a, b, "fragment") for a, b in _hard_split(full, s_start, s_end, size))
    return units


def _line_spans(full: str, start: int, end: int) -> list[tuple[int, int]]:
    spans = []
    position = start
    for line in full[start:end].split("\n"):
        if line.strip():
            spans.append((position, position + len(line)))
        position += len(line) + 1
    return spans


def _code_units(full: str, start: int, end: int, size: int) -> list[_Unit]:
    """Code that fits stays whole; larger code is cut between lines (a too-long line is cut hard)."""
    if end - start <= size:
        return [_Unit(start, end, "code")]
    units: list[_Unit] = []
    group: tuple[int, int] | None = None
    for line_start, line_end in _line_spans(full, start, end):
        if group and line_end - group[0] <= size:
            group = (group[0], line_end)
            continue
        if group:
            units.append(_Unit(*group, "code"))
            group = None
        if line_end - line_start <= size:
            group = (line_start, line_end)
        else:
            units.extend(_Unit(a, b, "code") for a, b in _hard_split(full, line_start, line_end, size))
    if group:
        units.append(_Unit(*group, "code"))
    return units


_TABLE_SEPARATOR_RE = re.compile(r"^\s*\|?\s*:?-+:?\s*(?:\|\s*:?-+:?\s*)*\|?\s*$")


def _table_units(full: str, start: int, end: int, size: int) -> list[_Unit]:
    """A table that fits is one unit; a larger one is split by rows, each part led by the header."""
    if end - start <= size:
        return [_Unit(start, end, "table")]
    lines = _line_spans(full, start, end)
    header_count = 2 if len(lines) > 1 and _TABLE_SEPARATOR_RE.match(full[slice(*lines[1])]) else 1
    header = "\n".join(full[a:b] for a, b in lines[:header_count])
    room = size - len(header) - 1
    if room < size // 4:  # a header too wide to repeat: split the table like code, without repeats
        return [_Unit(u.start, u.end, "table") for u in _code_units(full, start, end, size)]
    rows: list[tuple[int, int]] = []
    for row_start, row_end in lines[header_count:]:
        rows.extend(_hard_split(full, row_start, row_end, room))
    groups: list[tuple[int, int]] = []
    for row_start, row_end in rows:
        if groups and row_end - groups[-1][0] <= room:
            groups[-1] = (groups[-1][0], row_end)
        else:
            groups.append((row_start, row_end))
    units = []
    for index, (group_start, group_end) in enumerate(groups):
        text = f"{header}\n{full[group_start:group_end]}"
        span_start = start if index == 0 and full[start:group_end] == text else group_start
        units.append(_Unit(span_start, group_end, "table", text=text))
    return units or [_Unit(start, end, "table")]


def _block_units(block: Block, start: int, full: str, config: SplitConfig) -> list[_Unit]:
    end = start + len(block.text)
    trimmed = _trimmed(full, start, end)
    if trimmed is None:
        return []
    start, end = trimmed
    if block.kind == "table":
        return _table_units(full, start, end, config.chunk_size)
    if block.kind == "code":
        return _code_units(full, start, end, config.chunk_size)
    return _prose_units(full, start, end, config.chunk_size, by_sentence=config.semantic)


def _sections(doc: LoadedDocument, full: str, config: SplitConfig) -> list[_Section]:
    sections = [_Section([])]
    stack: list[tuple[int, str]] = []
    for block, offset in zip(doc.blocks, doc.block_offsets(), strict=True):
        if block.kind == "heading":
            level = block.level or 1
            while stack and stack[-1][0] >= level:
                stack.pop()
            stack.append((level, " ".join(block.text.split())))
            sections.append(_Section([text for _, text in stack]))
            continue
        sections[-1].units.extend(_block_units(block, offset, full, config))
    return [section for section in sections if section.units]


# --------------------------------------------------------------------------------------------------
# semantic cuts
# --------------------------------------------------------------------------------------------------


def _mark_semantic_cuts(sections: list[_Section], full: str, threshold: float, embed: Embed) -> None:
    """Flag a cut before each prose sentence whose embedding is far from the previous one's."""
    chains = [[u for u in section.units if u.kind == "prose"] for section in sections]
    texts = [full[u.start : u.end] for chain in chains for u in chain]
    if len(texts) < 2:
        return
    vectors = np.asarray(embed(texts), dtype=np.float32)
    if vectors.ndim != 2 or vectors.shape[0] != len(texts):
        raise ValueError(
            f"embed returned shape {vectors.shape} for {len(texts)} sentences; expected ({len(texts)}, dim)"
        )
    row = 0
    for chain in chains:
        for offset, unit in enumerate(chain[1:], start=row + 1):
            if float(vectors[offset - 1] @ vectors[offset]) < threshold:
                unit.cut_before = True
        row += len(chain)


# --------------------------------------------------------------------------------------------------
# packing
# --------------------------------------------------------------------------------------------------


def _sentences_of(unit: _Unit, full: str) -> list[tuple[int, int]]:
    if not unit.sentences:
        unit.sentences = [
            (a + unit.start, b + unit.start) for a, b in sentence_spans(full[unit.start : unit.end])
        ]
    return unit.sentences


def _overlap_start(
    units: list[_Unit], chunk_start: int, chunk_end: int, next_end: int, full: str, config: SplitConfig
) -> int | None:
    """Earliest sentence start in the previous chunk's trailing prose that fits the overlap and size."""
    best = None
    for unit in reversed(units):
        if unit.kind != "prose":
            break
        for sentence_start, _ in reversed(_sentences_of(unit, full)):
            if (
                chunk_end - sentence_start > config.chunk_overlap
                or next_end - sentence_start > config.chunk_size
            ):
                return best
            if sentence_start > chunk_start:
                best = sentence_start
    return best


def _introduction_start(units: list[_Unit], block: _Unit, full: str, config: SplitConfig) -> int | None:
    """Where the sentence that introduces ``block`` starts ("Run the following command:", "配置如下："),
    when ``block`` is code or a table right after it and both fit one chunk: the block's chunk then
    repeats that sentence, so a passage never holds a command without what it is for, nor an answer a
    dangling "…like below:"."""
    if block.kind not in ("code", "table") or not units or units[-1].kind != "prose":
        return None
    sentences = _sentences_of(units[-1], full)
    if not sentences:
        return None
    start, end = sentences[-1]
    if not introduces_block(full[start:end]) or block.end - start > config.chunk_size:
        return None
    return start


_FENCE_LINE_RE = re.compile(r"(?m)^[ \t]*(`{3,}|~{3,})[^\n]*$")


def fence_lines(full: str) -> list[tuple[int, int, str]]:
    """The fence lines that open and close the document's code blocks, in order: (start, end, marks);
    an opening fence is closed by a line of the same marks, as Markdown reads it."""
    lines: list[tuple[int, int, str]] = []
    opened: str | None = None
    for match in _FENCE_LINE_RE.finditer(full):
        marks = match.group(1)
        if opened is None:
            opened = marks
        elif (
            marks[0] == opened[0]
            and len(marks) >= len(opened)
            and not full[match.end(1) : match.end()].strip()
        ):
            opened = None
        else:
            continue  # a fence-like line inside a block (a ```` block showing ``` in Markdown)
        lines.append((match.start(), match.end(), marks))
    return lines


def closed_fences(full: str, start: int, end: int, fences: list[tuple[int, int, str]]) -> str:
    """``full[start:end]`` with a code block the cut left open closed again: a chunk that starts inside
    a block opens with the block's own fence line, one that ends inside it closes it. A large block cut
    by lines is then a well-formed block in every chunk, so its code and comments are never read as
    prose sentences (the splitter's exception to "every piece is a slice", like table parts)."""
    text = full[start:end]
    before = [f for f in fences if f[1] <= start]
    inside = [f for f in fences if start < f[1] and f[0] < end]
    if len(before) % 2:  # the chunk starts inside a block
        opening = before[-1]
        text = full[opening[0] : opening[1]].strip() + "\n" + text
    if (len(before) + len(inside)) % 2:  # and/or ends inside one
        marks = (inside or before)[-1][2]
        text = text.rstrip("\n") + "\n" + marks
    return text


def _pack(section: _Section, full: str, config: SplitConfig) -> list[TextPiece]:
    pieces: list[TextPiece] = []
    fences = fence_lines(full)
    current: list[_Unit] = []
    chunk_start = 0

    def emit() -> None:
        if not current:
            return
        chunk_end = current[-1].end
        text = closed_fences(full, chunk_start, chunk_end, fences)
        if text.strip():
            kind = "table" if any(u.kind == "table" for u in current) else "text"
            pieces.append(
                TextPiece(
                    text=text,
                    heading_path=section.heading_path,
                    char_start=chunk_start,
                    char_end=chunk_end,
                    kind=kind,
                )
            )

    for unit in section.units:
        if unit.standalone:
            emit()
            current = []
            assert unit.text is not None
            pieces.append(
                TextPiece(
                    text=unit.text,
                    heading_path=section.heading_path,
                    char_start=unit.start,
                    char_end=unit.end,
                    kind="table",
                )
            )
            continue
        if not current:
            current, chunk_start = [unit], unit.start
            continue
        semantic_cut = unit.cut_before and current[-1].end - chunk_start >= config.min_chunk_chars
        if not semantic_cut and unit.end - chunk_start <= config.chunk_size:
            current.append(unit)
            continue
        emit()
        overlap = None
        if not semantic_cut and config.chunk_overlap > 0:
            overlap = _overlap_start(current, chunk_start, current[-1].end, unit.end, full, config)
        intro = _introduction_start(current, unit, full, config)
        if intro is not None and (overlap is None or intro < overlap):
            overlap = intro
        current, chunk_start = [unit], unit.start if overlap is None else overlap
    emit()
    return pieces


def split_document(doc: LoadedDocument, config: SplitConfig, embed: Embed | None = None) -> list[TextPiece]:
    """Split a document into pieces that respect its headings, tables and code blocks.

    ``embed`` (texts -> L2-normalised rows) enables semantic cuts when ``config.semantic`` is true.
    """
    full = doc.full_text()
    sections = _sections(doc, full, config)
    if not sections:  # only headings: keep them rather than lose the document
        sections = [_Section([], _prose_units(full, 0, len(full), config.chunk_size, by_sentence=False))]
    if config.semantic and embed is not None:
        _mark_semantic_cuts(sections, full, config.semantic_threshold, embed)
    return [piece for section in sections for piece in _pack(section, full, config)]
