"""Which language each answer sentence is in, and the label a sentence in another language carries.

Language is decided per sentence, on its words rather than its letters: technical Chinese names its
APIs in Latin script ("使用 `helm install --namespace kube-system` 安装 chart。"), and counting letters
called such a sentence English, so a Chinese answer quoting it was labelled "quoted from an English
source". Code spans, URLs, command-line options and identifiers are set aside first; what remains is
Chinese when it has at least as many Chinese characters as Latin words.

The label ("（以下引自英文资料原文）" / "(Quoted from a Chinese source.)") goes before each run of sentences
in a language other than the reader's, naming that language, and nowhere else: an answer whose
sentences are all in the reader's language has none.
"""

from __future__ import annotations

from collections.abc import Callable

from core.text import CJK_RE
from providers.offline_brain.lexicon import lexicon

_ZH, _EN, _ANY = lexicon().tables("answer_language")  # what is set aside, a code line, language names


def sentence_language(sentence: str) -> str:
    """'zh' or 'en' for one sentence: its Chinese characters against its Latin words, with
    code, links, options and identifiers set aside (they are not the sentence's language)."""
    prose = _ANY.set_aside.sub(" ", sentence)
    cjk = len(CJK_RE.findall(prose))
    if not cjk:
        return "en"
    return "zh" if cjk >= len(_ANY.latin_word.findall(prose)) else "en"


def is_code_line(sentence: str) -> bool:
    """A line of code or markup: in no human language, so it carries no language label."""
    return bool(_ANY.code_line.search(sentence))


def source_label(reader: str, language: str) -> str:
    """The lead before a run of sentences in ``language`` that a ``reader`` reads; '' for their own."""
    name = _ANY.names.get(reader, {}).get(language)
    if language == reader or not name:
        return ""
    return f"（以下引自{name}资料原文）" if reader == "zh" else f"(Quoted from a {name} source.) "


def reader_copies(
    sentences: list[str],
    passage_of: list[int],
    topical: list[bool],
    reader: str,
    pair_similarity: Callable[[list[str], list[str]], list[list[float]]] | None,
) -> list[float]:
    """Per sentence: how closely a sentence in the reader's own language, in another passage and on the
    question, says the same (cosine by meaning, in [0, 1]); 0 for the reader's own sentences and where
    the evidence holds nothing in the reader's language. Translated pages give each fact twice; this
    is the signal (gate ``reader_copy`` in weights.json) that lets the reader's copy win."""
    languages = [sentence_language(s) for s in sentences]
    own = [i for i, lang in enumerate(languages) if lang == reader and topical[i]]
    foreign = [i for i, lang in enumerate(languages) if lang != reader and topical[i]]
    out = [0.0] * len(sentences)
    if not own or not foreign or pair_similarity is None:
        return out
    matrix = pair_similarity([sentences[i] for i in foreign], [sentences[j] for j in own])
    for row, i in zip(matrix, foreign, strict=True):
        near = [sim for sim, j in zip(row, own, strict=True) if passage_of[j] != passage_of[i]]
        out[i] = min(1.0, max(0.0, max(near, default=0.0)))
    return out


__all__ = ["is_code_line", "reader_copies", "sentence_language", "source_label"]
