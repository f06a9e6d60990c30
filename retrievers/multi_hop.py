"""Multi-hop retrieval: search each sub-query, fuse, and optionally hop once more via bridge entities.

The second hop matters for questions whose second passage shares no words with the question: it is
reachable only through a title or name that the first passage mentions.
"""

from __future__ import annotations

import re
import unicodedata

from core.chunks import Filters, ScoredChunk
from core.names import NameShape, find_titles, name_matches
from core.tokenize import fold_word
from retrievers.base import Retriever
from retrievers.fusion import reciprocal_rank_fusion

# the next hop's entity: a capitalised name (one word or more) or a 《title》 / 「…」 / “…”, up to 30 characters
_NAME_SHAPE = NameShape(
    word=r"[A-Z][\w'’.-]*", particles=("of", "de", "the", "von", "van", "and"), after_particle=r"\s*"
)
_WORD_RE = re.compile(r"[\w'’.-]+")
_CJK_RE = re.compile(r"[\u3400-\u9fff]")
_ARTICLE_RE = re.compile(r"^(?:The|A|An)\s+")
_POSSESSIVE_RE = re.compile(r"['’]s$")


class MultiHopRetriever:
    name = "multi_hop"

    def __init__(
        self,
        base: Retriever,
        *,
        titles: TitleLinker | None = None,
        rrf_k: int = 60,
        second_hop: bool = True,
        bridge_docs: int = 3,
        max_bridges: int = 4,
    ) -> None:
        self.base = base
        self.titles = titles
        self.rrf_k = rrf_k
        self.second_hop = second_hop
        self.bridge_docs = bridge_docs
        self.max_bridges = max_bridges

    def search(
        self,
        query: str,
        k: int,
        filters: Filters | None = None,
        sub_queries: list[str] | None = None,
    ) -> list[ScoredChunk]:
        queries = list(dict.fromkeys([q for q in (sub_queries or []) if q.strip()])) or [query]
        if query not in queries:
            queries.append(query)
        first = {q: self.base.search(q, k, filters) for q in queries}
        second = (
            {b: self.search_bridge(b, query, k, filters) for b in self.bridges(query, first)}
            if self.second_hop
            else {}
        )
        return fuse_hops(first, second, rrf_k=self.rrf_k)[:k]

    def search_bridge(self, bridge: str, query: str, k: int, filters: Filters | None) -> list[ScoredChunk]:
        """The passages of a linked document (by title), or a search for an unlinked name."""
        if self.titles is not None and self.titles.knows(bridge):
            scoped = (filters or Filters()).model_copy(deep=True)
            scoped.equals["title"] = self.titles.canonical(bridge)
            return self.base.search(query, k, scoped)
        return self.base.search(bridge, k, filters)

    def bridges(self, query: str, rankings: dict[str, list[ScoredChunk]]) -> list[str]:
        """Names mentioned in the top first-hop passages that the question does not mention.

        With a title index these are the titles of other documents named in those passages (entity
        linking against the corpus); otherwise capitalised names and 《》 titles. A passage's own title
        is not a bridge (searching it finds the same passage again).
        """
        return self._named(query, rankings)[: self.max_bridges]

    def named_in(self, query: str) -> list[str]:
        """Titles of corpus documents the question names (a one-word title is not named by the
        question's first word: "Who ..." does not name the band "Who")."""
        if self.titles is None:
            return []
        opening = query.lstrip()
        return list(
            dict.fromkeys(
                title
                for surface, title in self.titles.mentions(query)
                if " " in surface.strip() or not opening.startswith(surface)
            )
        )

    def about_named(self, query: str, hit: ScoredChunk) -> bool:
        """Whether the passage belongs to a document the question names (by title or short name):
        then what that passage names in turn is one link away from the question."""
        title = hit.chunk.title.strip().lower()
        return (
            bool(title)
            and self.titles is not None
            and title in {t.lower() for t in self.titles.mentioned_in(query)}
        )

    def linked(self, query: str, hits: list[ScoredChunk]) -> list[str]:
        """Titles of corpus documents named in the top ``hits`` but not in the question, all of them
        (none without a title index: an unlinked name is no document to go to)."""
        return self._named(query, {query: hits}) if self.titles is not None else []

    def _named(self, query: str, rankings: dict[str, list[ScoredChunk]]) -> list[str]:
        seen_query = query.lower()
        found: list[str] = []
        for hits in rankings.values():
            for hit in hits[: self.bridge_docs]:
                named = self.titles.mentions(hit.chunk.text) if self.titles else _names(hit.chunk.text)
                for surface, name in named:
                    own = name.lower() == hit.chunk.title.lower()
                    if surface.lower() in seen_query or name.lower() in seen_query or own or name in found:
                        continue
                    found.append(name)
        return found


class TitleLinker:
    """Finds the titles of corpus documents mentioned in a text (word n-grams, case-insensitive).

    A title is also found by its short name, when only one title has it: without the parenthesised
    qualifier ("Bethel University (Minnesota)" -> "Bethel University") or before its first comma
    ("Lake Placid, New York" -> "Lake Placid"), which is how passages mention other articles. A Latin
    mention of a capitalised title must be capitalised too (a name, not the common word "time" for
    the title "Time"); a final full stop or possessive is not part of the name ("by M. Ward." and
    "Corey Taylor's" name "M. Ward" and "Corey Taylor"); accents do not matter.
    """

    def __init__(self, titles: list[str], *, max_words: int = 8, min_chars: int = 3) -> None:
        self._by_key: dict[str, str] = {}
        for title in titles:
            key = _key(title)
            if len(key) >= min_chars and len(key.split()) <= max_words:
                self._by_key.setdefault(key, title)
        self._short: dict[str, str] = {}
        claimed: dict[str, set[str]] = {}
        for title in self._by_key.values():
            for short in _short_names(title):
                claimed.setdefault(_key(short), set()).add(title)
        for key, owners in claimed.items():
            if len(owners) == 1 and key not in self._by_key and len(key) >= min_chars:
                self._short[key] = next(iter(owners))
        self.max_words = max_words
        self._cjk = [k for k in self._by_key if _CJK_RE.search(k)]

    def knows(self, name: str) -> bool:
        return _key(name) in self._by_key

    def canonical(self, name: str) -> str:
        return self._by_key[_key(name)]

    def mentioned_in(self, text: str) -> list[str]:
        return list(dict.fromkeys(title for _, title in self.mentions(text)))

    def mentions(self, text: str) -> list[tuple[str, str]]:
        """(words as written, title) for each title the text names, in order of first mention."""
        words = _WORD_RE.findall(text)
        found: list[tuple[str, str]] = []
        start = 0
        while start < len(words):
            step = 1
            for size in range(min(self.max_words, len(words) - start), 0, -1):
                surface = _bare(" ".join(words[start : start + size]))
                title = self._lookup(surface)
                if title and not (title[:1].isupper() and surface[:1].islower()):
                    found.append((surface, title))
                    step = size  # the longest name wins: "West Virginia" does not also name "Virginia"
                    break
            start += step
        found += [(k, self._by_key[k]) for k in self._cjk if k in text]
        return found

    def _lookup(self, surface: str) -> str | None:
        key = _key(surface)
        return self._by_key.get(key) or self._short.get(key)


def _bare(surface: str) -> str:
    """A mention without what follows a name in running text: a full stop, a possessive 's."""
    return _POSSESSIVE_RE.sub("", surface.rstrip("."))


def _short_names(title: str) -> list[str]:
    """What a passage calls a document: its title without "(qualifier)" or ", place", when that
    leaves two words or more (one word, "United" of "United (album)", is mostly part of another name)."""
    bare = re.sub(r"\s*\([^)]*\)\s*$", "", title).strip()
    names = dict.fromkeys([bare, bare.split(",")[0].strip()])
    return [n for n in names if n != title and len(_WORD_RE.findall(n)) >= 2]


def _key(text: str) -> str:
    """Case- and accent-insensitive (Aschenbrödel = Aschenbrodel) for Latin titles, folded word by
    word exactly as keyword search folds them (``core.tokenize.fold_word``)."""
    if _CJK_RE.search(text):
        return text.strip()
    return " ".join(fold_word(word) for word in _WORD_RE.findall(unicodedata.normalize("NFKC", text)))


def fuse_hops(
    first: dict[str, list[ScoredChunk]],
    second: dict[str, list[ScoredChunk]],
    *,
    rrf_k: int = 60,
    second_weight: float = 0.5,
    second_slots: int = 3,
) -> list[ScoredChunk]:
    """Fuse within each hop, then let the second hop add what the first did not find.

    The first hop's order is kept (it answers the question as asked). Each second-hop search (one
    per bridge document) adds its best passage the first hop's top 10 lacks, right after the first
    hop's top passages (``second_slots`` at most): one new passage per document hopped to, so a hop
    displaces as few of the first hop's passages as it can. The first hop's other passages follow,
    then the rest of the second hop. Plain fusion of all lists would instead reward noise that many
    bridge searches agree on and push the question's own best passages down.
    """
    hop1 = reciprocal_rank_fusion({f"hop1:{q}": hits for q, hits in first.items()}, k=rrf_k)
    if not second:
        fused = hop1
    else:
        hop2 = reciprocal_rank_fusion({f"hop2:{q}": hits for q, hits in second.items()}, k=rrf_k)
        weighted = reciprocal_rank_fusion(
            {"hop1": hop1, "hop2": hop2}, k=rrf_k, weights={"hop1": 1.0, "hop2": second_weight}
        )
        found_first = {h.id for h in hop1}
        in_top = {h.id for h in hop1[:10]}
        fresh: list[str] = []
        for hits in second.values():
            best = next((h.id for h in hits if h.id not in in_top and h.id not in fresh), None)
            if best is not None and len(fresh) < second_slots:
                fresh.append(best)
        by_id = {h.id: h for h in weighted}
        order = [h.id for h in hop1[: second_slots * 2]]
        order += [i for i in fresh if i not in order]
        order += [h.id for h in weighted if h.id in found_first and h.id not in order]
        order += [h.id for h in weighted if h.id not in order]
        fused = [by_id[i] for i in order]
    for hit in fused:
        hit.ranks = _collapse_ranks(hit.ranks)
    return fused


def _names(text: str) -> list[tuple[str, str]]:
    names = [_ARTICLE_RE.sub("", m.group().strip()) for m in name_matches(text[:600], _NAME_SHAPE)]
    names = [n for n in names if " " in n]  # single capitalised words are mostly sentence starts
    names += find_titles(text[:600], 30, "《》「」“”")
    return [(name, name) for name in names[:6]]


def _collapse_ranks(ranks: dict[str, int]) -> dict[str, int]:
    """Keep the per-retriever ranks plus the best rank seen in each hop."""
    out: dict[str, int] = {}
    for key, rank in ranks.items():
        hop = key.split(":", 1)[0] if key.startswith("hop") else key
        out[hop] = min(rank, out.get(hop, rank))
    return out
