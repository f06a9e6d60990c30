"""A streamed answer that has stopped answering: it repeats itself, or it copies out the passage list.

Small models do both (docs/benchmarks.md, issue 22): the 0.5B, asked one CMRC question, wrote the
prompt's ``<context>`` back entry by entry (``[1] cmrc2018_trial/TRIAL_662 › …``) until its 400-token
cap, and under a JSON schema the 1.5B wrote the same sub-query 27 times. Either way every token after
the point found here is waste, so the writer stops reading there and keeps what came before.

The bounds are safety limits, not tuned weights: three identical copies of a unit that spans at least
``MIN_LOOP_CHARS`` characters and holds at least two word characters (so a Markdown rule ``-----`` or a
table's ``|---|---|`` is not a loop), and a context entry's own header (``[n] source``), which no answer
writes.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from core.schemas import Passage

MIN_LOOP_CHARS = 48  # three copies together; shorter runs ("哈哈哈", "...") are text, not a loop
MAX_LOOP_UNIT = 400  # longer units repeat only in replies that hit the step's token cap anyway
_WORD_RE = re.compile(r"\w")
_SENTENCE_END_RE = re.compile(r"[.!?。！？\n](?:\s*\[\d+(?:\s*[,，]\s*\d+)*\])*")  # with the markers after it


def loop_at(text: str) -> int | None:
    """Where the second copy of a unit repeated three times at the end of ``text`` begins, else None."""
    size = len(text)
    for unit in range(max(1, -(-MIN_LOOP_CHARS // 3)), min(MAX_LOOP_UNIT, size // 3) + 1):
        if text[size - 1] != text[size - 1 - unit]:
            continue
        last = text[size - unit :]
        if text[size - 2 * unit : size - unit] != last or text[size - 3 * unit : size - 2 * unit] != last:
            continue
        if len(_WORD_RE.findall(last)) >= 2:
            return size - 2 * unit
    return None


def echo_at(text: str, passages: Sequence[Passage]) -> int | None:
    """Where ``text`` starts writing out a context entry (``[n] source``, as prompts.passages_block
    lists it), else None."""
    found = [text.find(f"[{p.number}] {p.source}") for p in passages if p.source]
    found = [at for at in found if at >= 0]
    return min(found) if found else None


def runaway(text: str, passages: Sequence[Passage]) -> tuple[int, str] | None:
    """(where the answer stopped answering, how) for the earlier of a loop and an echo, else None."""
    points = [
        (at, how)
        for at, how in (
            (loop_at(text), "repeated itself"),
            (echo_at(text, passages), "copied out the passages"),
        )
        if at is not None
    ]
    return min(points) if points else None


def kept_before(text: str, at: int) -> str:
    """The text before ``at``, ended at its last sentence end (and the citations after it) when it has
    one: a loop's first copy can start mid-sentence."""
    head = text[:at]
    ends = list(_SENTENCE_END_RE.finditer(head))
    return (head[: ends[-1].end()] if ends else head).rstrip()
