"""Follow-up questions made standalone by carrying the previous user turn's topic into them.

Retrieval sees one query, not the conversation: "那个性能问题怎么解决的" finds nothing unless it names the
HNSW index the user asked about a turn ago. Only user turns are used (assistant text is long and would
drift the topic); earlier follow-ups are resolved first, so a chain of follow-ups keeps its topic.
"""

from __future__ import annotations

import re

from core.text import contains_cjk
from providers.offline_brain.analysis import extract_entities
from providers.offline_brain.decompose import segment, topic_of

_ZH_DEMONSTRATIVES = (
    "它们",
    "它",
    "这个",
    "那个",
    "这些",
    "那些",
    "这种",
    "那种",
    "上述",
    "该",
    "其",
    "此",
    "那",
)
_ZH_ELLIPTIC_START = re.compile(r"^(?:那么?|还有|另外|那如果|如果是)")
_EN_PRONOUN = re.compile(r"\b(?:it|its|they|them|their|these|those)\b", re.IGNORECASE)
# "this/that" as determiners or bare pronouns, not as "the fact that ..."
_EN_DEMONSTRATIVE = re.compile(
    r"(?:^|\b(?:is|was|about|with|for|fix|solve|solved|handle|use|does|do|did|of|in|on|to|and|how|why|what|"
    r"does|explain|avoid|prevent|cause|causes)\s+)(?:this|that)\b",
    re.IGNORECASE,
)
_EN_ELLIPTIC_START = re.compile(
    r"^(?:and|but|also|so|then)?\s*(?:what|how)\s+about\b|^and\b|^also\b", re.IGNORECASE
)


def _zh_demonstrative(question: str) -> str | None:
    for token in segment(question):
        if token in _ZH_DEMONSTRATIVES:
            return token
    return None


def is_follow_up(question: str) -> bool:
    """Pronouns, demonstratives, elliptical openings or a very short question without its own entity."""
    q = question.strip()
    if contains_cjk(q):
        if _zh_demonstrative(q) or _ZH_ELLIPTIC_START.match(q) or (q.endswith("呢") and len(q) <= 12):
            return True
        return len(re.sub(r"\W", "", q)) <= 4 and not extract_entities(q)
    if _EN_PRONOUN.search(q) or _EN_DEMONSTRATIVE.search(q) or _EN_ELLIPTIC_START.match(q):
        return True
    return len(q.split()) <= 3 and not extract_entities(q)


def _zh_rewrite(question: str, previous: str, topic: str) -> str:
    q = question.strip()
    demo = _zh_demonstrative(q)
    if demo:
        tokens = list(segment(q))
        at = tokens.index(demo)
        head = "".join(tokens[at + 1 : at + 3])
        # "那个性能问题" after "HNSW 索引的性能问题…": use the fuller phrase the user said before
        for size in (2, 1):
            noun = "".join(tokens[at + 1 : at + 1 + size])
            if len(noun) >= 2 and noun in previous:
                if noun in topic:  # the topic up to the noun: "HNSW 索引的性能问题(严重)"
                    phrase = topic[: topic.index(noun) + len(noun)]
                else:
                    phrase = f"{_possessor(topic)}的{noun}"
                end = at + 1 + size
                return "".join(tokens[:at]) + phrase + "".join(tokens[end:])
        entity = _possessor(topic)
        connector = "" if head.startswith("的") or demo in ("它们", "它") else "的"
        if demo in ("其", "该", "此"):
            connector = "的"
        return "".join(tokens[:at]) + entity + connector + "".join(tokens[at + 1 :])
    if q.startswith("还有"):
        return f"{topic}{q}"
    stripped = _ZH_ELLIPTIC_START.sub("", q).strip("，, ")
    if stripped.endswith("呢"):
        return f"{_possessor(topic)}的{stripped}"
    return f"{topic}{stripped}" if stripped.startswith(("还", "的")) else f"关于{topic}，{stripped}"


def _possessor(topic: str) -> str:
    """ "HNSW 索引" from "HNSW 索引的性能问题": a pronoun refers to the thing, not to its attribute."""
    head = topic.split("的", 1)[0].strip()
    return head if len(head) >= 2 else topic


def _en_rewrite(question: str, topic: str) -> str:
    q = re.sub(r"^(?:and|but|also|so|then)\s+", "", question.strip(), flags=re.IGNORECASE)

    def pronoun(match: re.Match[str]) -> str:
        word = match.group(0).lower()
        return topic if word in ("its", "their") else f"the {topic}" if word in ("these", "those") else topic

    replaced, n = _EN_PRONOUN.subn(pronoun, q, count=1)
    if n:
        return replaced
    named = topic if re.search(r"[A-Z0-9]", topic) else f"the {topic}"
    replaced, n = re.subn(r"\b(?:this|that)\b", lambda _m: named, q, count=1, flags=re.IGNORECASE)
    if n and _EN_DEMONSTRATIVE.search(q):
        return replaced
    about = re.match(r"^(what|how)\s+about\s+(.+)$", q, re.IGNORECASE)
    if about:
        return f"{about.group(1)} about {topic} {about.group(2)}"
    return f"{q.rstrip('?')} (regarding {topic})?" if q.endswith("?") else f"{q} (regarding {topic})"


def contextualize_question(question: str, history: list[tuple[str, str]]) -> str:
    """A standalone form of ``question`` given (role, text) turns, oldest first; unchanged if self-contained."""
    if not isinstance(question, str):
        raise TypeError(f"question must be a string, got {type(question).__name__}")
    for turn in history:
        if not (isinstance(turn, tuple | list) and len(turn) == 2):
            raise ValueError(f"history turns must be (role, text) pairs, got {turn!r}")
        if turn[0] not in ("user", "assistant"):
            raise ValueError(f"history role must be 'user' or 'assistant', got {turn[0]!r}")
    users = [text for role, text in history if role == "user" and text.strip()]
    if not question.strip() or not users or not is_follow_up(question):
        return question
    # resolve earlier follow-ups first so "it" two turns later still finds the original topic
    previous = users[0]
    for text in users[1:]:
        previous = _standalone(text, previous)
    return _standalone(question, previous)


def _topic(previous: str) -> str:
    """The previous turn's topic; in English a long phrase gives way to the entity it names
    ("BM25 return negative scores" → "BM25": without a tagger the verb cannot be cut reliably)."""
    topic = topic_of(previous)
    if contains_cjk(previous) or len(topic.split()) < 3:
        return topic
    inside = [e for e in extract_entities(previous) if e in topic]
    return inside[0] if inside else topic


def _standalone(question: str, previous: str) -> str:
    if not is_follow_up(question):
        return question
    topic = _topic(previous)
    if not topic or topic.lower() in question.lower():
        return question
    if contains_cjk(question) or (contains_cjk(topic) and len(question.split()) <= 3):
        return _zh_rewrite(question, previous, topic)
    return _en_rewrite(question, topic)
