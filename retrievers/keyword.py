"""BM25 keyword retrieval with the mixed Chinese/English tokenizer."""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence

from core.chunks import Filters, ScoredChunk
from core.text import contains_cjk, to_simplified, to_traditional
from core.tokenize import tokenize
from retrievers.base import ranked
from retrievers.fusion import Ranking
from retrievers.store import Store


class KeywordRetriever:
    name = "keyword"

    def __init__(self, index: Store, tokenizer: Callable[[str], list[str]] = tokenize) -> None:
        self.index = index
        self.tokenizer = tokenizer

    def search(self, query: str, k: int, filters: Filters | None = None) -> list[ScoredChunk]:
        positions, scores = self.index.keyword_search(self.tokenizer(query), k, filters)
        return ranked(self.name, self.index.resolve(positions, scores))

    def rank(self, query: str, k: int, filters: Filters | None = None) -> Ranking:
        """Positions and BM25 scores only, for fusion before any chunk is fetched."""
        positions, scores = self.index.keyword_search(self.tokenizer(query), k, filters)
        return Ranking(positions.tolist(), scores.tolist())

    def unmentioned(
        self, names: Sequence[str], filters: Filters | None = None, without: Collection[str] = ()
    ) -> list[str]:
        """The names no chunk the caller may read mentions (one posting lookup each, by the name's
        longest term: the whole identifier, the whole Chinese word): a question naming what the
        collection never mentions ("Django" over Vue's docs) cannot be answered from it. A name one
        letter away from a word the index holds is taken for a misspelling of it ("Brittish"), not for
        something new. A Chinese name the postings lack is looked for in the text as written, in both
        scripts: jieba cuts "坂里村界於" into 坂里 / 村界于, so the posting of 坂里村 misses a passage that
        writes it. ``without``: chunk ids to treat as absent (the answerability fit removes gold
        passages)."""
        missing = []
        for name in dict.fromkeys(names):
            terms = self.tokenizer(name)
            if not terms:
                continue
            term = max(terms, key=len)
            keys = self.index.holders(term, len(without) + 1, filters)
            if without and len(keys):
                keys = [c.id for c in self.index.chunks_at(keys).values() if c.id not in without]
            if len(keys) or self._written(name, filters, without):
                continue
            near = set(self.tokenizer(" ".join(near_spellings(longest(name))))) - set(terms)
            if not self.index.known(near):
                missing.append(name)
        return missing

    def _written(self, name: str, filters: Filters | None, without: Collection[str]) -> bool:
        """Whether a readable chunk writes a Chinese ``name`` (as the question does, or in the other
        script); Latin-script names are settled by their postings."""
        if not contains_cjk(name):
            return False
        spellings = dict.fromkeys([name, to_simplified(name), to_traditional(name)])
        return self.index.mentions(spellings, filters, without)


def longest(name: str) -> str:
    """The name's longest word as written, lower-cased ("Redis Sentinel" -> "sentinel")."""
    return max(name.split(), key=len, default="").lower()


def near_spellings(word: str) -> set[str]:
    """Every lower-case Latin word one edit from ``word`` (a letter dropped, added, changed or two
    swapped: Norvig's edits1), for words of five letters or more; none for shorter words or other
    scripts, where one letter makes another word."""
    if len(word) < 5 or not word.isascii() or not word.isalpha():
        return set()
    letters = "abcdefghijklmnopqrstuvwxyz"
    splits = [(word[:i], word[i:]) for i in range(len(word) + 1)]
    dropped = {a + b[1:] for a, b in splits if b}
    swapped = {a + b[1] + b[0] + b[2:] for a, b in splits if len(b) > 1}
    changed = {a + c + b[1:] for a, b in splits if b for c in letters}
    added = {a + c + b for a, b in splits for c in letters}
    return (dropped | swapped | changed | added) - {word}
