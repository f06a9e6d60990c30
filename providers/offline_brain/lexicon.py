"""The offline brain's word lists, read from per-language data files (``data/zh.json``, ``data/en.json``,
``data/any.json``) once, so logic files hold logic (the shape of bm25s' ``stopwords.py``).

Each entry names a use and lists its words with how they match: ``anywhere`` in the text or only at its
``opening``; or, where a cue needs more than words (``几[个次年天]``, ``how (?:many|much)``), its ``regex``
patterns verbatim. Chinese words match as written; English ones whole-word and case-insensitively; ``any``
(program names) as written. ``pattern(name)`` compiles one regex over every language's words.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
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
                if entry.get("match") == "opening":
                    parts.append("^" + bounded)
                else:
                    parts.append((r"\b" if language == "en" else "") + bounded)
            if not parts:
                raise KeyError(f"no word list named {use!r} in {DATA}")
            self._patterns[use] = re.compile("|".join(parts), re.IGNORECASE)
        return self._patterns[use]


@lru_cache(maxsize=1)
def lexicon() -> Lexicon:
    """The packaged lexicon, loaded once."""
    return Lexicon.load()
