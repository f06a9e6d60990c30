"""Input that is not a question about the documents: small talk and text with nothing left to search.

"hi", "谢谢", "你好" get a short reply saying what the assistant can do, without a search (searching
the corpus for "hi" found "as well as . !?" and served it with a citation). Input that is empty once
invisible characters (zero-width spaces, BOMs, joiners) and punctuation are removed ("???", two
zero-width spaces) is refused as empty with a clear message. Small talk is recognised only as the
whole message, so "Hello World example?" is still a question.
"""

from __future__ import annotations

import re
import unicodedata

from core.text import detect_language

# Whole-message greetings, thanks and farewells (lower case, punctuation removed), by reply kind.
SMALL_TALK: dict[str, frozenset[str]] = {
    "greeting": frozenset(
        {
            "hi",
            "hello",
            "hey",
            "hi there",
            "hello there",
            "hey there",
            "good morning",
            "good afternoon",
            "good evening",
            "yo",
            "howdy",
            "greetings",
            "你好",
            "您好",
            "嗨",
            "哈喽",
            "早上好",
            "下午好",
            "晚上好",
            "大家好",
            "你好啊",
            "在吗",
            "hi you",
            "hello bot",
        }
    ),
    "thanks": frozenset(
        {
            "thanks",
            "thank you",
            "thx",
            "ty",
            "many thanks",
            "thanks a lot",
            "thank you very much",
            "cheers",
            "谢谢",
            "谢谢你",
            "多谢",
            "感谢",
            "谢啦",
            "非常感谢",
            "谢谢您",
            "ok thanks",
            "great thanks",
        }
    ),
    "farewell": frozenset({"bye", "goodbye", "see you", "再见", "拜拜", "回头见"}),
}
_SEPARATORS = re.compile(r"[\s\W_]+", re.UNICODE)

REPLIES = {
    ("greeting", "en"): "Hello! I answer questions about the documents in this collection, citing the "
    "passages each answer comes from. Ask me something, for example “How do I …?”.",
    (
        "greeting",
        "zh",
    ): "你好！我可以根据本资料库中的文档回答问题，并注明每个答案引用的段落。请直接提问，例如“如何……？”。",
    ("thanks", "en"): "You're welcome! Ask me anything else about the documents; I answer from them, "
    "with citations.",
    ("thanks", "zh"): "不客气！还有关于这些文档的问题，随时问我；我会根据文档作答并注明出处。",
    ("farewell", "en"): "Goodbye! Come back with any question about the documents.",
    ("farewell", "zh"): "再见！有关于这些文档的问题，欢迎随时来问。",
}
EMPTY_AFTER_NORMALISING = (
    "The question has no words once invisible characters and punctuation are removed; please type a "
    "question. / 去掉不可见字符和标点后，问题为空，请输入问题。"
)


def visible_text(text: str) -> str:
    """``text`` in NFKC without format characters (zero-width spaces and joiners, BOMs, bidi marks)."""
    normal = unicodedata.normalize("NFKC", text)
    return "".join(ch for ch in normal if unicodedata.category(ch) != "Cf").strip()


def has_content(text: str) -> bool:
    """Whether any letter, digit or ideograph is left (not only punctuation, symbols and spaces)."""
    return any(unicodedata.category(ch)[0] in "LN" for ch in visible_text(text))


def small_talk_kind(text: str) -> str:
    """``greeting`` / ``thanks`` / ``farewell`` when the whole message is small talk, else ""."""
    key = _SEPARATORS.sub(" ", visible_text(text).lower()).strip()
    for kind, phrases in SMALL_TALK.items():
        if key in phrases:
            return kind
    return ""


def small_talk_reply(text: str) -> str:
    """The short reply to small talk in its language (zh or en), or "" for anything else."""
    kind = small_talk_kind(text)
    if not kind:
        return ""
    language = "zh" if detect_language(visible_text(text)) == "zh" else "en"
    return REPLIES[(kind, language)]
