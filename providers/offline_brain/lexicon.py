"""The offline brain's word lists, read from per-language data files (``data/zh.json``, ``data/en.json``,
``data/any.json``) once, so logic files hold logic (the shape of bm25s' ``stopwords.py``).

Each entry names a use and lists its words with how they match: ``anywhere`` in the text or only at its
``opening``; or, where a cue needs more than words (``几[个次年天]``, ``how (?:many|much)``), its ``regex``
patterns verbatim. Chinese words match as written; English ones whole-word and case-insensitively; ``any``
(program names) as written. ``pattern(name)`` compiles one regex over every language's words. The rules' own tables are data too,
named ``<module>.<table>`` and read as ``_ZH, _EN, _ANY = lexicon().tables(module)``: a word list
(``words``), one regex kept verbatim with its flags (``regex``), a list of them (``regexes``), named ones
(``regex_table``), a fragment patterns are built from (``fragment``) or a mapping (``table``).
"""

from __future__ import annotations

import json
import re
from functools import lru_cache, reduce
from pathlib import Path

DATA = Path(__file__).resolve().parent / "data"
LANGUAGES = ("zh", "en", "any")


class Lexicon:
    """Word lists by use and language, with their regexes compiled once."""

    def __init__(self, entries: dict[str, dict[str, dict]]) -> None:
        self.entries = entries  # language -> use -> {"match": ..., "words": [...]}
        self._patterns: dict[str, re.Pattern[str]] = {}

    @classmethod
    def load(cls, folder: Path = DATA) -> Lexicon:
        entries = {}
        for language in LANGUAGES:
            path = folder / f"{language}.json"
            raw = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
            entries[language] = {k: v for k, v in raw.items() if not k.startswith("_")}
        return cls(entries)

    def words(self, use: str, language: str) -> list[str]:
        """The words of ``use`` in ``language`` (empty when that language has none)."""
        return list(self.entries.get(language, {}).get(use, {}).get("words", []))

    def alternation(self, use: str, language: str) -> str:
        """``a|b|c`` over the escaped words, longest first (so a longer phrase wins at one position)."""
        return "|".join(re.escape(w) for w in sorted(self.words(use, language), key=lambda w: (-len(w), w)))

    def entry(self, use: str, language: str) -> dict:
        """The raw entry ``use`` of ``language`` (a KeyError naming the file when it is missing)."""
        try:
            return self.entries[language][use]
        except KeyError:
            raise KeyError(f"no entry {use!r} in {DATA / (language + '.json')}") from None

    def shared(self, use: str) -> dict:
        """Entry ``use`` of whichever language holds it (a piece other entries are built from)."""
        holder = next((language for language in LANGUAGES if use in self.entries.get(language, {})), "any")
        return self.entry(use, holder)

    def regex(self, entry: dict, **given: str) -> re.Pattern[str]:
        """A stored regex (``{"regex": ..., "flags": ["IGNORECASE"]}``); ``"fill": {"month": "facts.month"}``
        puts other entries (a fragment, or words joined by ``|``) where it says ``%(month)s``; a piece the
        code computes (the known units) is passed by name and listed as ``"given"``."""
        pattern = entry["regex"]
        if "fill" in entry:
            pieces = {name: self.shared(use) for name, use in entry["fill"].items() if name not in given}
            pattern %= {k: e.get("fragment") or "|".join(e["words"]) for k, e in pieces.items()} | given
        return re.compile(
            pattern, reduce(lambda acc, flag: acc | getattr(re, flag), entry.get("flags", []), 0)
        )

    def decoded(self, use: str, language: str):
        """Entry ``use`` by its shape: a compiled regex, a tuple of them (``regexes``), an ordered dict of
        them (``regex_table``), a ``fragment`` string, a mapping (``table``), or the ``words``: a frozenset
        when the entry says ``"set": true``, else a tuple in their stored order."""
        entry = self.entry(use, language)
        if "regex" in entry:
            return self.regex(entry)
        if "regexes" in entry:
            return tuple(self.regex(item) for item in entry["regexes"])
        if "regex_table" in entry:
            return {name: self.regex(item) for name, item in entry["regex_table"].items()}
        if "fragment" in entry or "table" in entry:
            return entry.get("fragment") or dict(entry["table"])
        return (frozenset if entry.get("set") else tuple)(entry["words"])

    def tables(self, module: str) -> tuple[Tables, Tables, Tables]:
        """``module``'s tables in zh, en and any (``_ZH, _EN, _ANY = lexicon().tables("decompose")``)."""
        return Tables(self, module, "zh"), Tables(self, module, "en"), Tables(self, module, "any")

    def pattern(self, use: str) -> re.Pattern[str]:
        """One case-insensitive regex matching any language's words for ``use``."""
        if use not in self._patterns:
            parts = []
            for language in LANGUAGES:
                entry = self.entries.get(language, {}).get(use)
                if not entry:
                    continue
                if entry.get("match") == "regex":  # patterns kept verbatim, each its own alternative
                    parts.extend(f"(?:{pattern})" for pattern in entry["patterns"])
                    continue
                body = self.alternation(use, language)
                bounded = rf"(?:{body})\b" if language == "en" else f"(?:{body})"
                opening = "^" if entry.get("match") == "opening" else r"\b" if language == "en" else ""
                parts.append(opening + bounded)
            if not parts:
                raise KeyError(f"no word list named {use!r} in {DATA}")
            self._patterns[use] = re.compile("|".join(parts), re.IGNORECASE)
        return self._patterns[use]


class Tables:
    """One module's tables in one language, by name: ``tables.lead`` is entry ``<module>.lead``, decoded
    once (``Lexicon.decoded``)."""

    def __init__(self, lexicon: Lexicon, module: str, language: str) -> None:
        self._lexicon, self._module, self._language = lexicon, module, language

    def __getattr__(self, name: str):
        if name.startswith("_"):
            raise AttributeError(name)
        value = self._lexicon.decoded(f"{self._module}.{name}", self._language)
        setattr(self, name, value)  # decoded once
        return value


@lru_cache(maxsize=1)
def lexicon() -> Lexicon:
    """The packaged lexicon, loaded once."""
    return Lexicon.load()
