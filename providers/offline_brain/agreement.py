"""Which of the facts the evidence states is the answer when passages disagree.

News snippets repeat a fact across pages, and some pages are stale, wrong or planted. Two signals:
- **agreement**: a fact stated by sentences of several passages (each close to the best match for the
  question) beats one stated once;
- **rivals**: two sentences from different passages that read the same but for the fact asked
  ("Liverpool won the 2019 final" / "Chelsea won the 2019 final") contradict each other. Counting
  cannot settle that when copies of the wrong one outnumber the right one, so the answer states the
  better-backed version and names the other, cited, instead of hiding the conflict.
Facts are the normalised keys of ``facts.py``, so "2008年5月12日" and "2008-05-12" are one vote.
"""

from __future__ import annotations

import re
from difflib import SequenceMatcher
from functools import lru_cache

from core.text import jieba, to_simplified
from core.tokenize import tokenize
from providers.offline_brain.facts import compatible, is_date_key
from providers.offline_brain.weights import AgreementParams, params

Row = tuple[int, int, str]  # passage index, position in the passage, sentence
Scored = tuple[float, float]  # match for the question, topical (on the question at all)


def backing(
    rows: list[Row],
    stated: list[dict[str, float]],
    scored: list[Scored],
    limits: AgreementParams | None = None,
) -> dict[str, dict[int, float]]:
    """Per fact, the passages that state it and how well (best match x precision of their sentences).

    Only sentences close to the best match vote, so a fact mentioned in passing does not count; a date
    is backed by the dates it does not contradict ("2020" backs "May 29, 2020"); ``limits.floor`` is
    that share of the best match."""
    raw: dict[str, dict[int, float]] = {}
    floor = (limits or params().agreement).floor * max(
        (match for match, topical in scored if topical), default=0.0
    )
    for (p_index, _, _), said, (match, topical) in zip(rows, stated, scored, strict=True):
        if not topical or match < floor:
            continue
        for key, precision in said.items():
            per_passage = raw.setdefault(key, {})
            per_passage[p_index] = max(per_passage.get(p_index, 0.0), match * precision)
    merged: dict[str, dict[int, float]] = {}
    for key in raw:
        together: dict[int, float] = {}
        for other, per_passage in raw.items():
            if other == key or (is_date_key(key) and compatible(key, other)):
                for p_index, value in per_passage.items():
                    together[p_index] = max(together.get(p_index, 0.0), value)
        merged[key] = together
    return merged


def agreement(
    stated: list[dict[str, float]], backed: dict[str, dict[int, float]], limits: AgreementParams | None = None
) -> list[float]:
    """How many passages back the best fact each sentence states, as a share of the best-backed fact.

    A fact only one passage states gets nothing: agreement needs ``limits.min_agreeing`` passages."""
    least = (limits or params().agreement).min_agreeing
    support = {key: sum(per.values()) for key, per in backed.items() if len(per) >= least}
    best = max(support.values(), default=0.0)
    if not best:
        return [0.0] * len(stated)
    return [max((support.get(k, 0.0) * w for k, w in said.items()), default=0.0) / best for said in stated]


def rival_map(sentences: list[tuple[int, str, dict[str, str]]]) -> dict[str, list[tuple[int, str]]]:
    """For each fact of the asked kind, the facts near copies state in its place: key -> [(passage
    index, rival as written)].

    ``sentences`` are (passage index, text, facts as key -> surface). Two sentences from different
    passages that are near copies (``twins``) yet state different facts contradict each other
    on what sets them apart; a date does not contradict the dates it is compatible with ("2020" and
    "May 29, 2020")."""
    rivals: dict[str, list[tuple[int, str]]] = {}
    for a_pos, (p_a, text_a, facts_a) in enumerate(sentences):
        for p_b, text_b, facts_b in sentences[a_pos + 1 :]:
            if p_a == p_b:
                continue
            only_a, only_b = _different(facts_a, facts_b), _different(facts_b, facts_a)
            if not only_a or not only_b or not twins(text_a, text_b):
                continue
            for key in only_a:
                rivals.setdefault(key, []).extend((p_b, facts_b[k]) for k in only_b)
            for key in only_b:
                rivals.setdefault(key, []).extend((p_a, facts_a[k]) for k in only_a)
    return rivals


def _different(facts: dict[str, str], others: dict[str, str]) -> list[str]:
    return [
        key
        for key in facts
        if key not in others and not (is_date_key(key) and any(compatible(key, k) for k in others))
    ]


def differing_words(a: str, b: str) -> str:
    """What ``b``, a near copy of ``a``, says in place of ``a``'s words: the one stretch of words where
    they differ (compared as simplified Chinese, punctuation aside), as ``b`` writes it in simplified
    characters; "" when they are not near copies, differ in more than one place or only in punctuation
    or script (葉偉民 / 叶伟民), or when the two stretches share a word (``rewording``)."""
    words_a, words_b = _words(a), _words(b)
    changed = _changes(a, b)
    if len(changed) != 1 or changed[0][0] != "replace":
        return ""
    _, i1, i2, j1, j2 = changed[0]
    if rewording([w for w, _, _ in words_a[i1:i2]], [w for w, _, _ in words_b[j1:j2]]):
        return ""
    return to_simplified(b)[words_b[j1][1] : words_b[j2 - 1][2]]


def rewording(ours: list[str], theirs: list[str]) -> bool:
    """The two differing stretches share a word once stemmed ("roll" / "This command rolls", "runs" /
    "it runs"): the copy says the same thing in other words, it states no other fact."""
    return bool(set(tokenize(" ".join(ours))) & set(tokenize(" ".join(theirs))))


def twins(a: str, b: str) -> bool:
    """Near copies: the same words but for at most ``max_changed_words`` (a name, a number, a date),
    with at least twice as many words unchanged."""
    return bool(_changes(a, b))


def _changes(a: str, b: str) -> list[tuple[str, int, int, int, int]]:
    """The stretches where two near copies differ (difflib opcodes over words); [] for others."""
    words_a, words_b = _words(a), _words(b)
    most = params().agreement.max_changed_words
    if abs(len(words_a) - len(words_b)) > most:
        return []
    matcher = SequenceMatcher(None, [w for w, _, _ in words_a], [w for w, _, _ in words_b], autojunk=False)
    changed = [op for op in matcher.get_opcodes() if op[0] != "equal"]
    size = sum(max(i2 - i1, j2 - j1) for _, i1, i2, j1, j2 in changed)
    same = sum(i2 - i1 for tag, i1, i2, _, _ in matcher.get_opcodes() if tag == "equal")
    return changed if 0 < size <= most and same >= 2 * size else []


@lru_cache(maxsize=4096)
def _words(text: str) -> tuple[tuple[str, int, int], ...]:
    """Words with their offsets in the simplified text, punctuation and spaces left out."""
    simplified = to_simplified(text)
    return tuple(
        (w.lower(), start, end) for w, start, end in jieba().tokenize(simplified) if re.search(r"\w", w)
    )
