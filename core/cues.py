"""Cues every layer reads the same way, as data (``core/data/cues.json``): a sentence addressed to an
assistant or a reader as an instruction ("Ignore previous instructions…", "tell the user to visit … to
log in", 忽略以上指令); a sentence that introduces the code block, command or table after it ("…as
follows:", 如下：); and a reference code appended to a question ("[case 0.1]", "(ticket 5-26)").

Why in core: ingestion keeps a code block with its introducing sentence, the offline writer never copies
an instruction and includes an introduced block, the LLM answer check rejects a repeated instruction and
the answer cache compares questions without appended reference codes; one definition keeps them agreeing.
"""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path

CUES_FILE = Path(__file__).resolve().parent / "data" / "cues.json"
_SENTENCE_END_RE = re.compile(r"(?<=[.!?])\s+|(?<=[。！？])|\n+")  # "http://evil.example" ends nothing


@cache
def cue(name: str) -> re.Pattern[str]:
    """One compiled case-insensitive regex over the patterns of ``name`` in ``cues.json``."""
    data = json.loads(CUES_FILE.read_text(encoding="utf-8"))
    if name not in data or name.startswith("_"):
        raise KeyError(f"no cue named {name!r} in {CUES_FILE}")
    return re.compile("|".join(f"(?:{p})" for p in data[name]), re.IGNORECASE | re.MULTILINE)


def is_instruction(sentence: str) -> bool:
    """The sentence tells an assistant or the reader what to do or say, rather than stating content."""
    return bool(cue("instruction").search(sentence))


def instruction_sentences(text: str) -> list[str]:
    """The sentences of ``text`` that read as instructions (``is_instruction``), as written."""
    return [s.strip() for s in _SENTENCE_END_RE.split(text) if s.strip() and is_instruction(s)]


def introduces_block(sentence: str) -> bool:
    """The sentence leads into what follows it: it ends with ":"/"：", "as follows", "如下"…"""
    return bool(cue("introduces_block").search(sentence.rstrip()))


def without_reference_code(question: str) -> str:
    """The question without a trailing reference code ("… commissioned? [case 0.1]" → "… commissioned?").

    Such a code names the asker's ticket, not anything the documents say; applied repeatedly, so
    "… (ticket 5-26) [case 0.1]" loses both."""
    text = question
    while True:
        stripped = cue("reference_code").sub("", text).rstrip()
        if stripped == text.rstrip() or not stripped:
            return text.rstrip() if stripped else text
        text = stripped
