"""A tokenizer for mixed Chinese/English text, shared by BM25 and the offline brain.

Text is NFKC-normalised first (full-width ``ｇｐｔ－４ｏ`` is ``gpt-4o``). CJK runs are converted to
simplified characters and go through jieba (search mode, so compounds also yield their parts); words of
every other script (Latin, Cyrillic, Greek, Arabic, Hebrew, Devanagari...) are case-folded, lose their
accents when that leaves plain ASCII (``café`` and ``cafe`` are one term, documents and queries alike)
and, when ASCII, are stemmed as English; identifiers such as ``gpt-4o``, ``BM25``, ``v2.3`` and
``ISO-9001`` stay whole (their alphabetic parts are added too, so ``gpt`` still finds ``gpt-4o``).
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

import regex
import snowballstemmer

from core.text import CJK as _CJK
from core.text import jieba as _jieba
from core.text import to_simplified

# An identifier: alphanumerics joined by - . _ / + (at least one digit or an inner separator), or a word.
# A letter of any script except the CJK ones above (those go to jieba).
_LETTER = rf"[^\P{{L}}{_CJK}]"
_TOKEN_RE = regex.compile(
    rf"(?P<cjk>[{_CJK}]+)"
    r"|(?P<ident>[A-Za-z0-9]+(?:[-_.+/][A-Za-z0-9]+)+\+*|[A-Za-z]*\d[A-Za-z0-9]*\+*)"
    rf"|(?P<word>{_LETTER}(?:{_LETTER}|\p{{M}}|')*\+*)"
)

EN_STOPWORDS = frozenset(
    [
        "a",
        "an",
        "the",
        "and",
        "or",
        "but",
        "if",
        "of",
        "to",
        "in",
        "on",
        "at",
        "by",
        "for",
        "with",
        "from",
        "as",
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "being",
        "this",
        "that",
        "these",
        "those",
        "it",
        "its",
        "into",
        "than",
        "then",
        "there",
        "their",
        "them",
        "they",
        "we",
        "you",
        "he",
        "she",
        "his",
        "her",
        "our",
        "your",
        "i",
        "me",
        "my",
        "do",
        "does",
        "did",
        "not",
        "no",
        "so",
        "such",
        "can",
        "could",
        "should",
        "would",
        "will",
        "shall",
        "may",
        "might",
        "must",
        "have",
        "has",
        "had",
        "what",
        "which",
        "who",
        "whom",
        "whose",
        "when",
        "where",
        "why",
        "how",
        "about",
        "over",
        "under",
        "between",
        "also",
        "just",
        "only",
        "very",
        "more",
        "most",
        "other",
        "some",
        "any",
        "each",
        "all",
        "both",
        "few",
        "many",
        "much",
        "own",
        "same",
        "too",
        "s",
        "t",
    ]
)
ZH_STOPWORDS = frozenset(
    [
        "的",
        "了",
        "是",
        "在",
        "和",
        "与",
        "及",
        "或",
        "也",
        "就",
        "都",
        "而",
        "着",
        "被",
        "把",
        "对",
        "从",
        "以",
        "之",
        "其",
        "这",
        "那",
        "这个",
        "那个",
        "一个",
        "个",
        "中",
        "上",
        "下",
        "为",
        "吗",
        "呢",
        "吧",
        "啊",
        "呀",
        "么",
        "什么",
        "怎么",
        "怎样",
        "如何",
        "哪些",
        "哪个",
        "为什么",
        "请问",
        "请",
        "有",
        "没有",
        "是否",
        "还是",
        "可以",
        "能",
        "会",
        "我",
        "你",
        "他",
        "她",
        "它",
        "我们",
        "你们",
        "他们",
        "之间",
        "以及",
        "并且",
        "并",
        "等",
        "等等",
        "什麼",
        "怎麼",
        "為什麼",
        "哪個",
        "這",
        "這個",
        "那個",
        "與",
        "個",
        "對",
        "為",
        "們",
        "嗎",
    ]
)

# Bump when tokens change; an index built with other tokens must be rebuilt (checked on open).
TOKENIZER_VERSION = 3


@lru_cache(maxsize=1)
def _stemmer():
    return snowballstemmer.stemmer("english")


@lru_cache(maxsize=200_000)
def _stem(word: str) -> str:
    return _stemmer().stemWord(word)


@lru_cache(maxsize=200_000)
def fold_word(word: str) -> str:
    """Case-folded, and without accents when that leaves plain ASCII (``Café`` -> ``cafe``)."""
    folded = word.casefold()
    if folded.isascii():
        return folded
    bare = "".join(ch for ch in unicodedata.normalize("NFKD", folded) if not unicodedata.combining(ch))
    return bare if bare.isascii() else unicodedata.normalize("NFC", folded)


def tokenize(text: str, *, stem: bool = True, keep_stopwords: bool = False) -> list[str]:
    """Split mixed text into BM25 terms."""
    out: list[str] = []
    for match in _TOKEN_RE.finditer(unicodedata.normalize("NFKC", text)):
        kind = match.lastgroup
        piece = match.group()
        if kind == "cjk":
            # jieba's dictionary is simplified Chinese: traditional text (馬祖地區) is segmented
            # far better after conversion, and queries and documents are converted alike.
            for word in _jieba().cut_for_search(to_simplified(piece)):
                word = word.strip()
                if word and (keep_stopwords or word not in ZH_STOPWORDS):
                    out.append(word)
        elif kind == "ident":
            ident = piece.lower()
            out.append(ident)
            parts = [p for p in re.split(r"[-_.+/]", ident) if len(p) > 1 and p.isalpha()]
            if len(parts) > 1 or (parts and parts[0] != ident):
                out.extend(_stem(p) if stem else p for p in parts if p not in EN_STOPWORDS)
        else:
            word = fold_word(piece).strip("'")
            if word.endswith("'s"):
                word = word[:-2]
            if not word or (not keep_stopwords and word in EN_STOPWORDS):
                continue
            english = word.isascii() and not word.endswith("+")
            out.append(_stem(word) if stem and english else word)
    return out


def identifiers_in(text: str) -> list[str]:
    """Exact tokens worth a keyword search: codes, versions, numbers, CamelCase or ALLCAPS names."""
    found: list[str] = []
    for match in _TOKEN_RE.finditer(text):
        piece = match.group()
        if match.lastgroup == "ident" or (
            match.lastgroup == "word" and len(piece) > 1 and (piece.isupper() or _is_camel(piece))
        ):
            found.append(piece)
    return list(dict.fromkeys(found))


def _is_camel(word: str) -> bool:
    return bool(re.fullmatch(r"[A-Z][a-z]+(?:[A-Z][a-z0-9]*)+|[a-z]+(?:[A-Z][a-z0-9]*)+", word))
