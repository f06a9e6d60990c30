"""Whether a question asks about a whole document or collection (the ``global`` route), as a score.

Each feature is a pattern family (data below); the score is a logistic model over them whose weights
were fitted on the labelled set ``tests/data/global_questions.jsonl`` (even lines; odd lines held out:
``python bench/global_intent_fit.py`` refits and prints both). No single cue decides: "总结会议在哪里举
行？" has a summary word but asks where, "What does the summary_tree setting do?" names a setting.
The scope says where the route looks: one document's summary tree, or every document's summary.
"""

from __future__ import annotations

import math
import re
from typing import Literal

Scope = Literal["document", "collection"]

# feature -> pattern (case-insensitive); each contributes its weight when it matches
FEATURES: dict[str, str] = {
    "summary_word": r"\b(?:summari[sz]e|summary|overview|outline|recap|gist|synopsis)\b|总结|概括|概述|归纳|综述|摘要|梳理|简要介绍|大意",
    "main_points": r"\b(?:main|key|central|overall|core)\s+(?:points?|topics?|ideas?|conclusions?|findings?|themes?|takeaways?|message|arguments?)\b|主要(?:结论|内容|观点|发现|话题|主题|讲)|要点|核心观点|主题|共同结论",
    "document_scope": r"\b(?:this|the|that)\s+(?:\w+\s+){0,3}?(?:report|document|doc|article|paper|guide|file|book|chapter|contract|text)\b|这(?:份|篇|本|个)[^，。？?]{0,8}(?:报告|文档|文章|论文|指南|文件|书|合同)|全文|本文",
    "collection_scope": r"\b(?:these|all(?:\s+the)?|each|every|the)\s+(?:\w+\s+){0,2}?(?:docs|documents|reports|files|articles|papers|sources)\b|\bcollection\b|\bacross\b|这些|所有文档|所有的文档|各份|各篇|知识库|整体",
    "about_what": r"\bwhat\s+(?:is|are)\s+[\w\s]{0,30}\babout\b|\bwhat\s+(?:\w+\s+){0,3}(?:covers?|discuss(?:es)?)\b|\bdescribe what\b|讲(?:了)?(?:什么|些什么)|说了什么|在讨论什么|涉及哪些|分别是什么",
    "fact_question": r"^\s*(?:who|when|where|which|how\s+(?:many|much|do|does|can)|is|are|does|do|why|in which)\b|谁|哪(?:一|个|家|里|些)|多少|何时|什么时候|为什么|怎么|如何|是否",
    "names_setting": r"`[^`]+`|\b[A-Z][A-Z0-9]*_[A-Z0-9_]+\b|\b[a-z]+_[a-z_]+\b",
}
_COMPILED = {name: re.compile(pattern, re.IGNORECASE) for name, pattern in FEATURES.items()}

# fitted by bench/global_intent_fit.py (logistic regression, L2 0.1, on the even lines of the set)
WEIGHTS: dict[str, float] = {
    "summary_word": 2.17,
    "main_points": 1.65,
    "document_scope": 2.52,
    "collection_scope": 2.9,
    "about_what": 2.7,
    "fact_question": -3.04,
    "names_setting": -0.82,
}
BIAS = -1.58
THRESHOLD = 0.5


def features(question: str) -> dict[str, float]:
    return {name: 1.0 if pattern.search(question) else 0.0 for name, pattern in _COMPILED.items()}


def global_score(question: str) -> float:
    """Probability that the question is about a whole document or collection."""
    values = features(question)
    z = BIAS + sum(WEIGHTS[name] * value for name, value in values.items())
    return 1.0 / (1.0 + math.exp(-z))


def is_global(question: str) -> bool:
    return global_score(question) >= THRESHOLD


def global_scope(question: str) -> Scope:
    """Collection when the question speaks of several documents, else the one it is about."""
    return "collection" if _COMPILED["collection_scope"].search(question) else "document"
