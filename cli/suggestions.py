"""Three questions to try, drawn from the indexed documents' headings, in the documents' languages.

A new user facing an empty prompt does not know what the index holds; the session's first screen
offers questions its documents can answer. A heading that already asks something ("Why was a file
skipped?", "没有网络能用吗？") is offered as it is; any other becomes a question about its topic.
Languages take turns (the one with most chunks first), and each document gives at most one.
"""

from __future__ import annotations

import itertools
import re
from collections import Counter
from collections.abc import Iterable

from core.chunks import Chunk

# Reading the whole of a large index would slow the session's start: the first chunks suffice.
SCAN_LIMIT = 5000
MIN_CHARS, MAX_CHARS = 2, 60
_ASKS_ZH = re.compile(r"(吗|什么|怎么|为什么|如何|哪|多少|是否)")
_CODE = re.compile(r"[`{}<>=/\\]|^\W+$")


def asks(heading: str) -> bool:
    """Is the heading already a question? ("How files are split" is a topic; "文档如何切分" asks.)"""
    return heading.endswith(("?", "？")) or bool(_ASKS_ZH.search(heading))


def as_question(heading: str, language: str) -> str:
    """The heading as a question a reader would type, in the heading's language."""
    if asks(heading):
        return heading if heading.endswith(("?", "？")) else heading + ("？" if language == "zh" else "?")
    if language == "zh":
        return f"关于“{heading}”，文档里是怎么说的？"
    return f"What does the documentation say about {heading[0].lower() + heading[1:]}?"


def usable(heading: str) -> bool:
    return MIN_CHARS <= len(heading) <= MAX_CHARS and not _CODE.search(heading)


def suggest_questions(chunks: Iterable[Chunk], n: int = 3) -> list[str]:
    """Up to ``n`` questions from section headings (a document's own title only when it has no sections),
    question-like headings first, languages in turn, one per document."""
    per_language: dict[str, list[tuple[int, int, str, str]]] = {}
    counts: Counter[str] = Counter()
    seen: set[str] = set()
    for order, chunk in enumerate(itertools.islice(chunks, SCAN_LIMIT)):
        counts[chunk.language] += 1
        path = [h.strip() for h in chunk.heading_path if h.strip()]
        heading = path[-1] if path else ""
        if not heading or heading in seen or not usable(heading):
            continue
        seen.add(heading)
        priority = 0 if asks(heading) else 1 if len(path) > 1 else 2  # question, section, title
        per_language.setdefault(chunk.language, []).append((priority, order, heading, chunk.source))
    queues = {language: sorted(items) for language, items in per_language.items()}
    languages = sorted(queues, key=lambda lang: -counts[lang])
    picked: list[str] = []
    used_sources: set[str] = set()
    while len(picked) < n and any(queues.values()):
        for language in languages:
            queue = queues[language]
            choice = next((c for c in queue if c[3] not in used_sources), None) or (
                queue[0] if queue else None
            )
            if choice is None:
                continue
            queue.remove(choice)
            used_sources.add(choice[3])
            picked.append(as_question(choice[2], language))
            if len(picked) == n:
                break
    return picked
