"""The offline answer to a whole-document or collection question: the summaries the ``global`` route
found, quoted and cited, one line per document or section (issue 26).

The offline writer answers a question with the sentences that match its words; "总结这份报告的主要结论"
matches no sentence by its words (总结, 这份 are about the request, not the report), so it would say the
documents do not mention them. A summary question is answered by the summaries themselves; with an
LLM the ordinary writer composes them.
"""

from __future__ import annotations

from core.schemas import DraftAnswer, Passage
from core.text import detect_language, split_sentences

MAX_CHARS = {"zh": 700, "en": 1400}  # the answer's length budget
PER_LINE = {"collection": 2, "document": 4}  # sentences quoted per summary: a line per document is short


def summary_answer(question: str, passages: list[Passage], scope: str = "document") -> DraftAnswer:
    """One cited line per summary, in the order found, within the length budget."""
    if not passages:
        return DraftAnswer(answer="", insufficient=True)
    language = "zh" if detect_language(question) == "zh" else "en"
    lines: list[str] = []
    used = 0
    for passage in passages:
        sentences = [s for s in split_sentences(passage.text) if s.strip()][: PER_LINE[scope]]
        if not sentences:
            continue
        label = _label(passage, scope)
        body = " ".join(sentences)
        room = MAX_CHARS[language] - used
        if lines and len(body) > room:
            break
        line = f"{label}{body} [{passage.number}]"
        lines.append(line)
        used += len(line)
    return DraftAnswer(answer="\n".join(f"- {line}" for line in lines))


def _label(passage: Passage, scope: str) -> str:
    """Whose summary a line is: the document's name for a collection, the section's heading otherwise."""
    name = passage.source.rsplit("/", 1)[-1] if scope == "collection" else passage.heading.split(" > ")[-1]
    return f"{name}: " if name else ""
