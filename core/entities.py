"""The one offline entity extractor: names, places, organisations and titles a passage mentions.

Chinese runs go through jieba's part-of-speech tagger (through the project's one jieba loader) and keep
the words tagged as a person, place, organisation or other proper name; English text yields capitalised
phrases ("Journal of Mathematical Physics", "Jan Philip Solovej"); both yield quoted titles (《三体》,
“Hello Love”). The patterns and word lists are data (``ENTITY_PATTERNS``) so the ingest step, the entity
graph retriever and the offline brain share exactly one definition.

``entity_key`` folds a name to the form the graph links on: case, accents, a leading article and a
possessive do not matter ("The Beatles'" and "beatles" are one entity).
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from functools import lru_cache

import regex

from core.names import NameShape
from core.text import CJK_RE, to_simplified
from core.text import jieba as load_jieba

# capitalised words that are not names on their own (sentence openers, pronouns, question words, months)
_NOT_NAMES = (
    "a an the this that these those it its he she his her him they them their we our you your i "
    "in on at by for with from of to as and or but if when while after before during since until "
    "who what which where when why how whose whom is are was were be been has have had do does did "
    "there here then thus however also although though because so yet not no yes one some many "
    "most all any each every both either neither other another such new old first last "
    "january february march april may june july august september october november december "
    "monday tuesday wednesday thursday friday saturday sunday mr mrs ms dr st"
)


@dataclass(frozen=True)
class EntityPatterns:
    """What counts as an entity (data, not code: change a list, not a rule)."""

    # jieba POS flags of proper names: person, transliterated person, place, organisation, other proper noun
    zh_flags: frozenset[str] = frozenset({"nr", "nrt", "nrfg", "ns", "nt", "nz"})
    # quoted titles: 《三体》, 「...」, “...”, "..."
    titles: tuple[str, ...] = (
        r"《([^》]{1,40})》",
        r"「([^」]{1,40})」",
        r"“([^”]{2,60})”",
        r"\"([^\"]{2,60})\"",
    )
    # a capitalised word (letters of any Latin script, inner dots/hyphens/apostrophes: O'Neill, St.-Louis)
    capital_word: str = r"(?:\p{Lu}\.(?=\s+\p{Lu})|\p{Lu}[\w'’\-]*)"
    # lower-case words allowed inside a name: "Journal of Mathematical Physics", "Leonardo da Vinci"
    connectors: tuple[str, ...] = (
        "of",
        "de",
        "da",
        "del",
        "di",
        "du",
        "von",
        "van",
        "der",
        "den",
        "la",
        "le",
        "for",
        "the",
    )
    # capitalised words that are not names on their own (sentence openers, pronouns, question words, months)
    not_names: frozenset[str] = field(default_factory=lambda: frozenset(_NOT_NAMES.split()))
    min_zh_chars: int = 2
    max_words: int = 8


ENTITY_PATTERNS = EntityPatterns()
_ARTICLE_RE = re.compile(r"^(?:the|a|an)\s+", re.IGNORECASE)
_POSSESSIVE_RE = re.compile(r"['’]s?$")
_WORD_RE = re.compile(r"[\w'’.&-]+")


@lru_cache(maxsize=4)
def _compiled(patterns: EntityPatterns) -> tuple[regex.Pattern[str], list[re.Pattern[str]]]:
    shape = NameShape(
        word=patterns.capital_word,
        particles=tuple(re.escape(c) for c in patterns.connectors),
        gap=r"[ \t]+",
        after_particle=r"[ \t]+",
        particle_run=True,
        before=r"(?<![\w'’-])",
    )
    phrase = regex.compile(shape.pattern())  # regex, not re: the word is \p{Lu}
    return phrase, [re.compile(p) for p in patterns.titles]


def entity_key(name: str) -> str:
    """The form entities are linked on: NFKC, simplified Chinese, case- and accent-folded, no leading
    article or trailing possessive, single spaces."""
    text = unicodedata.normalize("NFKC", name).strip().strip(".,;:!?")
    if CJK_RE.search(text):
        return to_simplified(text).replace(" ", "")
    text = _POSSESSIVE_RE.sub("", _ARTICLE_RE.sub("", text))
    folded = unicodedata.normalize("NFKD", text.casefold())
    folded = "".join(ch for ch in folded if not unicodedata.combining(ch))
    return " ".join(_WORD_RE.findall(folded)).strip(".")


_QUALIFIER_RE = re.compile(r"\s*\([^)]*\)\s*$")


def title_entity(title: str) -> str:
    """The entity a document's title names, without its "(qualifier)": "Hello Love (song)" -> "Hello Love"."""
    return _QUALIFIER_RE.sub("", title).strip()


def extract_entities(text: str, patterns: EntityPatterns = ENTITY_PATTERNS) -> list[str]:
    """Entity names in ``text`` in order of first mention, one per key (surface form of the first)."""
    found: dict[str, str] = {}

    def add(surface: str) -> None:
        surface = surface.strip()
        key = entity_key(surface)
        if key and key not in patterns.not_names and key not in found and len(key) >= 2:
            found[key] = surface

    phrase_re, title_res = _compiled(patterns)
    for title_re in title_res:
        for match in title_re.finditer(text):
            add(match.group(1))
    for match in phrase_re.finditer(text):
        for name in _trim_phrase(match.group(0), text, match.start(), patterns):
            add(name)
    if CJK_RE.search(text):
        for word in _zh_names(text, patterns):
            add(word)
    return list(found.values())


def _trim_phrase(phrase: str, text: str, start: int, patterns: EntityPatterns) -> list[str]:
    """A capitalised run without its non-name words at the edges ("In Paris" -> "Paris"). A single word
    that opens a sentence ("Founded in 1930, ...") is no name by its capital alone: it counts only when
    the text also capitalises it where no sentence starts."""
    words = phrase.split()
    opens = _opens_sentence(text, start)
    while words and (
        words[0].lower().strip(".") in patterns.not_names or words[0].lower() in patterns.connectors
    ):
        words.pop(0)
        opens = False
    while words and (
        words[-1].lower() in patterns.connectors or words[-1].lower().strip(".") in patterns.not_names
    ):
        words.pop()
    if not words or len(words) > patterns.max_words:
        return []
    if len(words) == 1 and opens and not _capitalised_inside(text, words[0]):
        return []
    return [" ".join(words)]


def _opens_sentence(text: str, start: int) -> bool:
    before = text[:start].rstrip()
    return not before or before[-1] in ".!?。！？\n\"'“(（:："


def _capitalised_inside(text: str, word: str) -> bool:
    return any(
        not _opens_sentence(text, m.start()) for m in re.finditer(rf"(?<![\w'’-]){re.escape(word)}\b", text)
    )


def _zh_names(text: str, patterns: EntityPatterns) -> list[str]:
    load_jieba()  # the one loader initialises the dictionary the tagger shares
    import jieba.posseg

    names = []
    for run in re.findall(r"[\u3400-\u9fff\uf900-\ufaff·]+", text):
        for pair in jieba.posseg.cut(run):
            if pair.flag in patterns.zh_flags and len(pair.word) >= patterns.min_zh_chars:
                names.append(pair.word)
    return names


def mentioned_keys(
    text: str, vocabulary: set[str] | dict[str, object], *, nested: bool = False, max_words: int = 8
) -> list[str]:
    """Keys of ``vocabulary`` entities that ``text`` names, found by n-gram lookup rather than by the
    extractor (so a passage saying "Copenhagen" links to the entity another passage's extractor found).

    Latin text: word n-grams; a one-word name counts only when written with a capital (the common word
    "time" does not name the magazine "Time", nor "the company" the entity "Company"); without
    ``nested`` the longest name wins ("West Virginia" does not also name "Virginia"). Chinese: character n-grams of each run, all of them.
    """
    found: dict[str, None] = {}
    words = _WORD_RE.findall(unicodedata.normalize("NFKC", text))
    start = 0
    while start < len(words):
        step = 1
        for size in range(min(max_words, len(words) - start), 0, -1):
            key = entity_key(" ".join(words[start : start + size]))
            if " " not in key and not CJK_RE.search(key) and not words[start + size - 1][:1].isupper():
                continue  # one word ("a border" folds to "border") is a name only when capitalised
            if key in vocabulary and key not in ENTITY_PATTERNS.not_names:
                found[key] = None
                if not nested:
                    step = size
                    break
        start += step
    for run in re.findall(r"[\u3400-\u9fff\uf900-\ufaff]+", to_simplified(text)):
        for size in range(min(12, len(run)), 1, -1):
            for i in range(len(run) - size + 1):
                if run[i : i + size] in vocabulary:
                    found[run[i : i + size]] = None
    return list(found)
