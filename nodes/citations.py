"""Numbered citations: the [n] markers of an answer and the passages they point at."""

from __future__ import annotations

import re
from collections.abc import Callable

from core.schemas import Citation, Passage, SentenceSupport
from core.text import CITATION_RE, parse_citations, replace_citations


def citations_for(answer: str, passages: list[Passage]) -> list[Citation]:
    """Citations for the markers that refer to real passages, in order of first use."""
    by_number = {p.number: p for p in passages}
    return [
        Citation(
            number=n,
            chunk_id=by_number[n].chunk_id,
            source=by_number[n].source,
            heading=by_number[n].heading,
            snippet=by_number[n].text[:160],
        )
        for n in parse_citations(answer)
        if n in by_number
    ]


def strip_unknown_markers(answer: str, passages: list[Passage]) -> str:
    """Drop [n] markers that point at no passage (a model may invent them)."""
    numbers = {p.number for p in passages}
    return replace_citations(answer, lambda n: n in numbers)


def first_use_numbers(answer: str, passages: list[Passage]) -> dict[int, int]:
    """Old passage number -> new: 1..n in the order the answer first cites them, uncited ones after.

    The writer cites passage numbers from the evidence order ([3] before [1], gaps); readers expect
    [1] first."""
    order = [n for n in parse_citations(answer) if n in {p.number for p in passages}]
    order += [p.number for p in passages if p.number not in order]
    return {old: new for new, old in enumerate(order, start=1)}


def renumber_markers(text: str, new_number: dict[int, int]) -> str:
    return CITATION_RE.sub(
        lambda m: (
            "["
            + ", ".join(str(new_number.get(int(n), n)) for n in re.split(r"\s*[,，]\s*", m.group(1)))
            + "]"
        ),
        text,
    )


def renumber(answer: str, passages: list[Passage], new_number: dict[int, int]) -> tuple[str, list[Passage]]:
    """The answer and its passages with every passage renumbered, so each marker still points at it."""
    by_number = {p.number: p for p in passages}
    renumbered = [by_number[old].model_copy(update={"number": new}) for old, new in new_number.items()]
    return renumber_markers(answer, new_number), sorted(renumbered, key=lambda p: p.number)


def renumber_checks(support: list[SentenceSupport], new_number: dict[int, int]) -> list[SentenceSupport]:
    """Sentence checks with their markers and cited numbers renumbered the same way."""
    return [
        s.model_copy(
            update={
                "sentence": renumber_markers(s.sentence, new_number),
                "cited": sorted(new_number.get(n, n) for n in s.cited),
            }
        )
        for s in support
    ]


def renumber_by_first_use(answer: str, passages: list[Passage]) -> tuple[str, list[Passage]]:
    return renumber(answer, passages, first_use_numbers(answer, passages))


def check_as_written(
    check: Callable[[str, list[Passage]], list[SentenceSupport]],
    answer: str,
    passages: list[Passage],
    written_numbers: dict[str, int],
) -> list[SentenceSupport]:
    """``check`` run on the answer as the writer numbered it, its passages in the writer's order under
    the writer's numbers (``written_numbers``: chunk id -> number; compression can leave gaps such as
    [1] [3] [7]), the result in the reader's numbering. A model server that keeps the previous request's
    tokens (llama.cpp) then reads only the check's task and sentences."""
    as_written = {p.number: written_numbers.get(p.chunk_id, 0) for p in passages}
    if 0 in as_written.values() or all(old == new for old, new in as_written.items()):
        return check(answer, passages)
    back = {new: old for old, new in as_written.items()}
    return renumber_checks(check(*renumber(answer, passages, as_written)), back)
