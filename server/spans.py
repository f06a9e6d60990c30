"""Sentences as spans of the original text: what streaming and highlighting need from the splitter.

``core.text.split_sentences`` returns stripped (sometimes re-joined) sentences; a client that is sent
pieces must be able to join them back into the exact answer, and a page that highlights a passage
sentence needs its offsets. Each sentence is found again in the text by its non-space characters.
"""

from __future__ import annotations

from itertools import pairwise

from core.text import split_sentences


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """``(start, end)`` of each sentence in ``text`` (trailing space excluded); one span when lost."""
    spans: list[tuple[int, int]] = []
    cursor = 0
    for sentence in split_sentences(text):
        wanted = [ch for ch in sentence if not ch.isspace()]
        if not wanted:
            continue
        start = end = None
        pos = cursor
        for ch in wanted:
            while pos < len(text) and text[pos].isspace():
                pos += 1
            if pos >= len(text) or text[pos] != ch:
                return [(0, len(text))] if text.strip() else []
            if start is None:
                start = pos
            pos += 1
            end = pos
        assert start is not None and end is not None
        spans.append((start, end))
        cursor = end
    return spans


def sentence_pieces(text: str) -> list[str]:
    """The text cut after each sentence (its following space kept): ``"".join(pieces) == text``."""
    spans = sentence_spans(text)
    if len(spans) <= 1:
        return [text] if text else []
    cuts = [0] + [start for start, _ in spans[1:]] + [len(text)]
    return [text[a:b] for a, b in pairwise(cuts) if b > a]
