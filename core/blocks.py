"""The code block, command or table a sentence introduces, read off the passage that holds it and
bounded for an answer to show.

Why in core, beside ``core.cues.introduces_block``: this is passage layout (where a block starts and
ends after "…as follows:"), not the choice of an answer sentence; the offline writer asks it for the
blocks of the sentences it chose. What a table row and a command line look like, and how much of a block
an answer shows, are the caller's (``BlockShape``): the writer passes its lexicon's patterns and limits.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from itertools import takewhile

from core.cues import introduces_block

FENCE_OPEN = re.compile(r"^[ \t]*(`{3,}|~{3,})")
FENCES = ("```", "~~~")


@dataclass(frozen=True)
class BlockShape:
    """What a block's lines look like and how much of one an answer shows."""

    table_row: re.Pattern[str]
    command_line: re.Pattern[str]
    option_help: re.Pattern[str]  # a command-line option's help line ("--sign   use a PGP key to sign")
    max_lines: int  # 0: no block at all
    max_chars: int
    anchor_chars: int  # the introducing sentence's last characters, looked for in its passage


def introduced_block(sentence: str, text: str, shape: BlockShape) -> str:
    """The code block, command or table right after ``sentence`` in ``text`` when the sentence
    introduces it ("…as follows:", "运行以下命令："), at most ``shape.max_lines`` lines and
    ``shape.max_chars`` characters (a longer block is cut at a line and marked "…"); "" otherwise."""
    if not shape.max_lines or not introduces_block(sentence):
        return ""
    fragment = sentence.rstrip("。.:：")[-shape.anchor_chars :]
    at = text.find(fragment)
    if at < 0:
        return ""
    after = text[at + len(fragment) :].lstrip("。.:： \t")
    if not after.startswith(FENCES):  # the block starts on a line of its own, or the fence follows
        after = after[after.find("\n") + 1 :].lstrip("\n") if "\n" in after else ""
    lines = after.split("\n")
    if not lines or not lines[0].strip():
        return ""
    fence = FENCE_OPEN.match(lines[0])
    if fence:
        body = list(takewhile(lambda line: not line.strip().startswith(fence.group(1)), lines[1:]))
        opening, closing = lines[0].strip(), fence.group(1)
    elif shape.table_row.match(lines[0]) or shape.command_line.match(lines[0]):
        kind = shape.table_row if shape.table_row.match(lines[0]) else shape.command_line
        body = list(takewhile(lambda x: bool(x.strip()) and bool(kind.match(x)), lines))
        opening, closing = ("```", "```") if kind is shape.command_line else ("", "")
    else:
        return ""
    kept = bounded_lines(body, shape)
    if not kept:
        return ""
    return "\n".join([opening, *kept, closing] if opening else kept)


def option_lines(piece: str, shape: BlockShape) -> list[str]:
    """The option-help lines of a fenced block, spaces collapsed ("--sign use a PGP private key to sign
    this package"): a command reference lists its flags in a code block, each line a statement."""
    if not piece.lstrip().startswith(FENCES):
        return []
    return [" ".join(line.split()) for line in piece.split("\n") if shape.option_help.match(line)]


def bounded_lines(body: list[str], shape: BlockShape) -> list[str]:
    """The block's lines dedented, at most ``max_lines`` lines / ``max_chars`` characters (then "…")."""
    indent = min((len(x) - len(x.lstrip()) for x in body if x.strip()), default=0)
    kept: list[str] = []
    for line in (x[indent:].rstrip() for x in body):
        if len(kept) >= shape.max_lines or sum(len(x) + 1 for x in kept) + len(line) > shape.max_chars:
            kept.append("…")
            break
        kept.append(line)
    while kept and not kept[-1].strip():
        kept.pop()
    return kept if any(x.strip() and x != "…" for x in kept) else []


def bounded_block(block: str, shape: BlockShape) -> str:
    """A fenced block as an answer shows it: its fences around at most the bounded lines."""
    lines = block.strip().split("\n")
    closed = len(lines) > 1 and FENCE_OPEN.match(lines[-1])
    closing = lines[-1].strip() if closed else lines[0].strip()[:3]  # a fence's three marks
    return "\n".join([lines[0].strip(), *bounded_lines(lines[1:-1] if closed else lines[1:], shape), closing])
