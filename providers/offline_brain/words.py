"""Whole words of a question, in its own language, for saying what the evidence lacks.

Search terms are cut for recall (bigrams of Chinese runs, stems of English words), so a message built
from them reads "缺少关于'用、创建、服务、务器'的信息". A reader needs the words as written: jieba words
for Chinese, surface words for English, each kept only when it carries content (it has a search term
that is not a stopword or question filler).
"""

from __future__ import annotations

from core.text import contains_cjk
from core.text import jieba as load_jieba
from providers.offline_brain.analysis import key_terms
from providers.offline_brain.decompose import segment
from providers.offline_brain.lexicon import lexicon

_ZH, _EN, _ANY = lexicon().tables("words")


def content_words(text: str) -> list[str]:
    """The words of ``text`` that carry content, in order, without repeats (surface forms)."""
    pieces = [w.strip() for w in segment(text)] if contains_cjk(text) else _EN.latin_word.findall(text)
    words = [w for w in pieces if w and (len(w) >= 2 or not contains_cjk(w)) and key_terms(w)]
    return list(dict.fromkeys(words))


def missing_words(question: str, evidence_terms: set[str]) -> list[str]:
    """Content words of the question none of whose search terms occur in the evidence."""
    return [w for w in content_words(question) if not any(t in evidence_terms for t in key_terms(w))]


def pos_tags(text: str) -> list[tuple[str, str]]:
    """(word, part-of-speech) pairs from jieba's tagger ("nr" marks a person's name)."""
    load_jieba()  # the one loader initialises the dictionary the tagger shares
    import jieba.posseg

    return [(pair.word, pair.flag) for pair in jieba.posseg.cut(text)]
