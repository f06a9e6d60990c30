"""What a follow-up's referring word may be replaced by: a whole noun phrase, never a fragment.

Two ways a resolved follow-up went wrong (issue 21): the referent was a piece of the earlier question
rather than the thing it named ("How do I enable CORS?" gave "I enable CORS", so "What are its default
allowed methods?" became "What are I enable CORS's …"; "混合检索默认怎么合并结果？" gave "混合检索默认";
"语义缓存的阈值" gave "语义"), and a pronoun was replaced although its own sentence already names what it
means ("…when the index is damaged, and how do I rebuild it …" took a fragment of an earlier Chinese turn
for "it"). :func:`whole_noun_phrase` repairs the first, :func:`names_a_thing` detects the second.
Word lists live in the lexicon (``np_asker``, ``np_trailing_modifiers``).
"""

from __future__ import annotations

import re

from core.text import contains_cjk
from providers.offline_brain.lexicon import lexicon
from providers.offline_brain.words import pos_tags

_ZH, _EN, _ANY = lexicon().tables("noun_phrases")


def _en_phrase(subject: str) -> str:
    """'I enable CORS' -> 'CORS': the asker and their verb are not the thing asked about."""
    words = subject.split()
    if len(words) > 2 and lexicon().pattern("np_asker").match(subject):  # more than the asker and verb
        subject = " ".join(words[2:])
    return _EN.article.sub("", subject).strip()


def _zh_phrase(subject: str, question: str) -> str:
    """'混合检索默认' -> '混合检索'; '语义' in '语义缓存的阈值' -> '语义缓存'; '开启 CORS' asked by
    "怎么开启 CORS？" -> 'CORS'."""
    modifiers = lexicon().words("np_trailing_modifiers", "zh")
    changed = True
    while changed:
        changed = False
        for word in modifiers:
            if subject.endswith(word) and len(subject) > len(word) + 1:
                subject, changed = subject[: -len(word)], True
    at = question.find(subject)
    how = "|".join(lexicon().words("np_how_asks_an_action", "zh"))
    tokens = pos_tags(subject)
    if at >= 0 and re.search(f"(?:{how})$", question[:at]) and len(tokens) >= 2 and tokens[0][1] == "v":
        # "怎么开启 CORS": the verb after 怎么 is the action asked about, its object the thing
        rest = "".join(word for word, _ in tokens[1:]).strip()
        if rest:
            subject, at = rest, at + subject.index(rest)
    if subject and at >= 0:
        following = pos_tags(question[at + len(subject) :])
        # a word tagged as a verb that modifies a noun through 的 ("缓存的阈值") belongs to the phrase
        if len(following) >= 2 and following[0][1].startswith("v") and following[1][0] == "的":
            subject += following[0][0]
    return subject.strip()


def whole_noun_phrase(subject: str, question: str) -> str:
    """The noun phrase ``subject`` (what ``question`` is about, as the resolver read it) stands for."""
    if not subject:
        return subject
    if contains_cjk(subject):
        return _zh_phrase(subject, question)
    return _en_phrase(subject)


def names_a_thing(text: str) -> bool:
    """The text names something a later pronoun can stand for: a noun phrase with a determiner or a
    technical name in English ("the index", "CORS"), a noun in Chinese ("索引", "重排序器"). The verb of
    "How do I turn it off?" names nothing."""
    if contains_cjk(text):
        return any(flag in _ZH.naming_tags for word, flag in pos_tags(text) if word.strip())
    rest = re.sub(r"^\W*\w+", "", text)  # the question's first word is capitalised, not a name
    return bool(_EN.determined.search(text) or _EN.technical.search(rest))


__all__ = ["names_a_thing", "whole_noun_phrase"]
