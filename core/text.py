"""Text utilities every layer shares: the CJK character range, language detection, the jieba loader,
the sentence splitter and the citation-marker parser. One definition of each, so the tokenizer, the
brains and the nodes agree on what a Chinese character, a sentence and a ``[n]`` marker are.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Callable, Sequence
from functools import lru_cache
from types import ModuleType

import zhconv

# CJK ideographs (with extension A and compatibility forms), kana and hangul.
CJK = r"\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u3040-\u30ff\uac00-\ud7af"
CJK_RE = re.compile(rf"[{CJK}]")
# Rarer ideographs (extension B and beyond): counted by answer metrics, left out of tokenizer ranges.
CJK_EXTENSION_B = r"\U00020000-\U0002ffff"
# The ideographic space, 、。《》「」 and full-width forms: no space is needed next to them either.
CJK_PUNCTUATION = r"\u3000-\u303f\uff00-\uffef"

# ``[3]`` or ``[1, 2]`` / ``[1，2]``: the citation markers answers carry.
CITATION_RE = re.compile(r"\[(\d{1,3}(?:\s*[,，]\s*\d{1,3})*)\]")
_LEADING_CITATIONS_RE = re.compile(r"^(?:\s*\[\d{1,3}(?:\s*[,，]\s*\d{1,3})*\])+")
# a sentence ends after 。！？；!?; (with the closing quote or bracket that follows them), or after '.'
# and a space before what can start a sentence
_SENTENCE_END_RE = re.compile(
    r"(?<=[。！？；!?;])(?![”’」』）)\]\"'。！？])\s*|(?<=[。！？!?][”’」』）)\]\"'])\s*"
    r"|(?<=[.])\s+(?=[A-Z0-9\u4e00-\u9fff\"“(\[])|\n+"
)
# a '.' that ends one of these does not end the sentence: abbreviations, titles, months ("Jan. 5"),
# an initial ("Niels B. Christiansen") and dotted abbreviations ("U.S.")
_ABBREVIATIONS = re.compile(
    r"(?:\b(?:e\.g|i\.e|etc|vs|Dr|Mr|Mrs|Ms|Prof|St|Jr|Sr|Inc|Ltd|Co|Corp|Gen|Gov|Sen|Rep|Fig|No|cf|approx"
    r"|Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sept?|Oct|Nov|Dec)|(?<![\w.])(?-i:[A-Z])|\b(?:[A-Za-z]\.)+[A-Za-z])\.$",
    re.IGNORECASE,
)

_jieba_lock = threading.Lock()


def contains_cjk(text: str) -> bool:
    return bool(CJK_RE.search(text))


def detect_language(text: str) -> str:
    """'zh' when CJK characters make up a fair share of the letters, else 'en'."""
    cjk = len(CJK_RE.findall(text))
    latin = len(re.findall(r"[A-Za-z]", text))
    if cjk == 0:
        return "en"
    return "zh" if cjk * 3 >= latin * 0.5 or cjk >= 20 else "en"


@lru_cache(maxsize=1)
def jieba() -> ModuleType:
    """jieba, loaded and initialised once per process (its dictionary takes ~1.5 s to load)."""
    import jieba as module

    with _jieba_lock:
        module.setLogLevel(logging.WARNING)
        module.initialize()
    return module


@lru_cache(maxsize=50_000)
def to_simplified(text: str) -> str:
    """Traditional Chinese characters as simplified ones (歐洲 -> 欧洲); other text unchanged."""
    return zhconv.convert(text, "zh-cn") if text else text


@lru_cache(maxsize=4096)
def to_traditional(text: str) -> str:
    """Simplified Chinese characters as traditional ones (欧洲 -> 歐洲): a name looked for as written."""
    return zhconv.convert(text, "zh-hant") if text else text


# a fenced block; its closing fence may carry prose a chunk glued to it ("```如果…"), which is not the block
_FENCED_BLOCK_RE = re.compile(
    r"(?ms)^[ \t]*(`{3,}|~{3,})[^\n]*\n.*?^[ \t]*\1(?:[ \t]*(?:\[\d{1,3}\])?[ \t]*$|(?![\w-]*[ \t]*$))"
)


_INLINE_CODE_RE = re.compile(r"`[^`\n]+`")


def code_in(text: str) -> str:
    """The text's code, its fenced blocks and inline code spans, joined by spaces."""
    return " ".join(
        m.group() for pattern in (_FENCED_BLOCK_RE, _INLINE_CODE_RE) for m in pattern.finditer(text)
    )


def split_sentences(text: str) -> list[str]:
    """Sentences of mixed zh/en text; a fenced code block is one unit, kept as written (its dots and
    newlines end no sentence).

    Splits after 。！？；!?; and after '.' before a capital, digit, CJK character, quote or bracket;
    a known abbreviation ("e.g.") does not end a sentence, nor does a semicolon inside brackets; citation markers that follow a sentence end
    stay with the sentence they close; a stray closing quote or bracket joins the sentence before it.
    """
    if "```" in text or "~~~" in text:
        out: list[str] = []
        position = 0
        for block in _FENCED_BLOCK_RE.finditer(text):
            out += _prose_sentences(text[position : block.start()])
            out.append(block.group(0).strip("\n"))
            position = block.end()
        return out + _prose_sentences(text[position:])
    return _prose_sentences(text)


_NO_SPACE_AFTER_RE = re.compile(rf"[{CJK}{CJK_PUNCTUATION}\n]$")


def join_sentences(sentences: Sequence[str]) -> str:
    """Sentences (``split_sentences``'s units, some kept, some dropped) as one text again: no space after
    a Chinese character or punctuation, one after Latin; a fenced code block on lines of its own, so the
    text still reads as that block (glued into a line, its code and comments read as sentences)."""
    out = ""
    for sentence in sentences:
        if sentence.lstrip().startswith(("```", "~~~")):
            out = f"{out.rstrip()}\n\n{sentence.strip()}\n\n".lstrip()
        else:
            out += sentence if not out or _NO_SPACE_AFTER_RE.search(out) else " " + sentence
    return out.strip()


def _prose_sentences(text: str) -> list[str]:
    sentences: list[str] = []
    for raw in _SENTENCE_END_RE.split(text):
        piece = raw.strip() if raw else ""
        lead = _LEADING_CITATIONS_RE.match(piece)
        if lead and sentences:
            sentences[-1] = f"{sentences[-1]} {lead.group(0).strip()}"
            piece = piece[lead.end() :].strip()
        if not piece:
            continue
        if sentences and (
            len(piece) <= 2 or _ABBREVIATIONS.search(sentences[-1]) or _open_bracket(sentences[-1])
        ):
            joiner = "" if len(piece) <= 2 or sentences[-1].endswith("；") else " "
            sentences[-1] = f"{sentences[-1]}{joiner}{piece}"
        else:
            sentences.append(piece)
    return sentences


def _open_bracket(sentence: str) -> bool:
    """A '；' or ';' inside brackets separates items, not sentences: 新德里（又译纽德里，印地语：…；英语：New Delhi）."""
    return sentence.endswith(("；", ";")) and sentence.count("（") + sentence.count("(") > sentence.count(
        "）"
    ) + sentence.count(")")


def parse_citations(text: str) -> list[int]:
    """Citation numbers in order of first use: ``"A [2]. B [1, 2]."`` -> ``[2, 1]``."""
    numbers: list[int] = []
    for match in CITATION_RE.finditer(text):
        numbers += [int(n) for n in re.split(r"\s*[,，]\s*", match.group(1))]
    return list(dict.fromkeys(numbers))


def replace_citations(text: str, keep: Callable[[int], bool]) -> str:
    """The text with each marker reduced to the numbers ``keep`` accepts (a marker left empty goes)."""

    def rewrite(match: re.Match[str]) -> str:
        numbers = parse_citations(match.group(0))
        kept = [n for n in numbers if keep(n)]
        return match.group(0) if kept == numbers else "".join(f"[{n}]" for n in kept)

    return CITATION_RE.sub(rewrite, text)
