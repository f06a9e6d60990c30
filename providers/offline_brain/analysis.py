"""Rule-based query analysis: type, complexity, entities, identifiers and a retrieval strategy.

Rules, not a model: they are deterministic, explainable in one sentence (``reasoning`` names the cues that
fired) and fast enough to run on every turn. Accuracy on a labelled zh/en set is measured by
``bench/analyzer_accuracy.py`` (see docs/analyzer.md).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from core.global_intent import global_score, is_global
from core.schemas import Complexity, QueryAnalysis, QueryType, StrategyName
from core.text import CJK_RE, contains_cjk, detect_language
from core.tokenize import identifiers_in, tokenize
from providers.offline_brain.decompose import (
    EN_COMPARE_RE,
    ZH_COMPARE_CUES,
    bridge_hops,
    decompose,
    segment,
    zh_list,
)

_QUOTED = re.compile(
    r"\"([^\"]{2,80})\"|“([^”]{1,80})”|「([^」]{1,80})」|`([^`]{1,80})`|(?<!\w)'([^']{3,80})'(?!\w)"
)
_TITLE = re.compile(r"《([^》]{1,80})》")

# ---- query type ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Cue:
    """A surface cue for a query type; strong cues (question words) outweigh topical ones (install, 影响)."""

    pattern: re.Pattern[str]
    weight: int


def _zh(*words: str, weight: int) -> Cue:
    return Cue(re.compile("|".join(map(re.escape, words))), weight)


def _en(*phrases: str, weight: int) -> Cue:
    return Cue(re.compile(r"\b(?:" + "|".join(phrases) + r")\b", re.IGNORECASE), weight)


TYPE_CUES: dict[QueryType, tuple[Cue, ...]] = {
    "comparative": (
        _zh(*ZH_COMPARE_CUES, weight=3),
        Cue(EN_COMPARE_RE, 3),
        _en(r"which is better", r"which one should i (?:use|choose|pick)", weight=3),
    ),
    "analytical": (
        _zh("为什么", "为何", "原因", "起因", "怎么会", "原理", "机制", weight=2),
        _zh("影响", "分析", "解释", "意义", "作用", "后果", "导致", weight=1),
        _en(
            r"why",
            r"what causes",
            r"what caused",
            r"explain",
            r"how (?:does|do|did) .{1,60} work",
            r"what (?:is|are) the (?:reasons?|causes?)",
            weight=2,
        ),
        _en(
            r"impacts?",
            r"effects? of",
            r"analy[sz]e",
            r"causes",
            r"consequences",
            r"implications?",
            r"reasons?",
            r"affect",
            r"lead to",
            weight=1,
        ),
    ),
    "procedural": (
        _zh("如何", "怎么", "怎样", "步骤", "流程", "教程", "方法", weight=2),
        _zh("安装", "配置", "设置", "部署", "搭建", "创建", "升级", "迁移", "启用", "调", weight=1),
        _en(
            r"how (?:to|do i|do you|can i|should i|would i|do we|can we|should we)",
            r"steps?",
            r"guide",
            r"tutorial",
            weight=2,
        ),
        _en(
            r"install",
            r"set ?up",
            r"configure",
            r"deploy",
            r"enable",
            r"upgrade",
            r"migrate",
            r"create",
            r"fix",
            r"stop",
            weight=1,
        ),
    ),
}
_TYPE_ORDER: tuple[QueryType, ...] = ("comparative", "analytical", "procedural")


def _word_boundaries(text: str) -> set[int]:
    """Character offsets where jieba words start or end, so 作用 never fires inside 光合作用."""
    bounds, pos = {0}, 0
    for word in segment(text):
        pos += len(word)
        bounds.add(pos)
    return bounds


def _cue_match(cue: Cue, text: str, bounds: set[int] | None) -> str | None:
    for match in cue.pattern.finditer(text):
        if bounds is None or not contains_cjk(match.group(0)):
            return match.group(0)
        if match.start() in bounds and match.end() in bounds:
            return match.group(0)
    return None


def classify_type(question: str) -> tuple[QueryType, list[str]]:
    """The query type with the highest cue weight (ties: comparative > analytical > procedural).

    Quoted phrases are ignored (a quoted "零停机部署" names a thing, it does not ask how to deploy).
    """
    text = _QUOTED.sub(" ", question)
    bounds = _word_boundaries(text) if contains_cjk(text) else None
    best: QueryType = "factual"
    best_score = 0
    fired: list[str] = []
    for qtype in _TYPE_ORDER:
        score = 0
        for cue in TYPE_CUES[qtype]:
            found = _cue_match(cue, text, bounds)
            if found:
                score += cue.weight
                fired.append(found.strip())
        if score > best_score:
            best, best_score = qtype, score
    return best, fired


# ---- entities and identifiers -------------------------------------------------------------------

_CAP_NAME = re.compile(
    r"\b[A-Z][\w'-]*(?:\s+(?:of|the|and|de|von|van|du|da|la|for|on)\s+[A-Z][\w'-]*|\s+[A-Z][\w'-]*)+"
)
_CAP_WORD = re.compile(r"\b[A-Z][a-z][\w-]*\b")
_QUESTION_WORDS = frozenset(
    [
        "what",
        "which",
        "who",
        "whom",
        "whose",
        "how",
        "why",
        "when",
        "where",
        "is",
        "are",
        "was",
        "were",
        "do",
        "does",
        "did",
        "can",
        "could",
        "should",
        "would",
        "will",
    ]
)
_SENTENCE_START_WORDS = _QUESTION_WORDS | frozenset(
    [
        "compare",
        "explain",
        "describe",
        "list",
        "name",
        "give",
        "tell",
        "show",
        "find",
        "in",
        "on",
        "for",
        "the",
        "a",
        "an",
        "and",
        "or",
        "of",
        "vs",
        "versus",
        "between",
        "if",
        "please",
        "also",
    ]
)
_FLAG = re.compile(r"(?<![\w-])--?[a-zA-Z][\w-]*")
_CALL = re.compile(r"\b[A-Za-z_][\w.]*\(\)")
_PATH = re.compile(r"(?:[\w.-]+/)+[\w.-]+|\b[\w-]+\.(?:py|md|txt|json|yaml|yml|toml|cfg|ini|sh|pdf|html)\b")


def quoted_phrases(question: str) -> list[str]:
    """Phrases the user quoted to be matched exactly ("…", “…”, 「…」, `…`)."""
    return [next(g for g in m.groups() if g) for m in _QUOTED.finditer(question)]


def _is_code_like(token: str) -> bool:
    """Codes, versions, error numbers, snake_case/kebab identifiers with caps or digits, API symbol names."""
    if re.fullmatch(r"\d+", token):
        value = int(token)
        return len(token) >= 3 and not (1000 <= value <= 2100)
    if re.search(r"\d", token):
        return not re.fullmatch(r"(?:top|v)?\d", token, re.IGNORECASE)
    if "_" in token or "." in token or "/" in token:
        return True
    if "-" in token:
        return any(c.isupper() for c in token)
    humps = re.findall(r"[A-Z][a-z]+", token)
    return len(humps) >= 3 or bool(re.fullmatch(r"[a-z]+[A-Z]\w*", token))


def exact_terms(question: str) -> list[str]:
    """Tokens a keyword search must match exactly: codes, versions, flags, paths, calls, quoted phrases."""
    found = [t for t in identifiers_in(question) if _is_code_like(t)]
    found += _FLAG.findall(question) + _CALL.findall(question) + _PATH.findall(question)
    found += quoted_phrases(question)
    return list(dict.fromkeys(t.strip() for t in found if t.strip()))


def _zh_entities(question: str) -> list[str]:
    """Chinese names around 和/与/、/对比: the items a comparison or enumeration names."""
    found = zh_list(question.strip().rstrip("？?。"))
    if not found:
        return []
    return [item for item in found[1] if 1 < len(item) <= 20]


def extract_entities(question: str) -> list[str]:
    """Quoted strings, CamelCase/ALLCAPS names, capitalised multiword names and Chinese list items."""
    entities: list[str] = quoted_phrases(question) + _TITLE.findall(question)
    entities += [t for t in identifiers_in(question) if not re.fullmatch(r"\d+", t)]
    if contains_cjk(question):
        entities += _zh_entities(question)
    for match in _CAP_NAME.finditer(question):
        words = match.group(0).split()
        # "Compare ..." at the start is a verb; "On the Origin of Species" mid-sentence is a title
        strip = _SENTENCE_START_WORDS if match.start() == 0 else _QUESTION_WORDS
        while words and words[0].lower() in strip:
            words = words[1:]
        if len(words) >= 2 or (words and match.start() > 0):
            entities.append(" ".join(words))
    for match in _CAP_WORD.finditer(question):
        word = match.group(0)
        if match.start() > 0 and word.lower() not in _SENTENCE_START_WORDS:
            entities.append(word)
    # keep the longest form: drop entities contained in a longer one
    unique = list(dict.fromkeys(e.strip() for e in entities if e.strip()))
    return [e for e in unique if not any(e != other and e in other for other in unique)]


# ---- key terms (shared with judge / extractive) --------------------------------------------------

QUESTION_FILLER = frozenset(
    [
        "explain",
        "describ",
        "compar",
        "differ",
        "differ",
        "differenc",
        "between",
        "versus",
        "vs",
        "pros",
        "cons",
        "advantag",
        "disadvantag",
        "tell",
        "know",
        "want",
        "need",
        "pleas",
        "step",
        "steps",
        "way",
        "ways",
        "use",
        "work",
        "mean",
        "happen",
        "exampl",
        "list",
        "name",
        "give",
        "show",
        "find",
        "detail",
        "overview",
        "introduct",
        *ZH_COMPARE_CUES,
        "特点",
        "介绍",
        "一下",
        "说明",
        "解释",
        "分析",
        "原因",
        "为何",
        "哪里",
        "哪儿",
        "哪一",
        "哪些",
        "多少",
        "几",
        "怎样",
        "如何",
        "怎么",
        "步骤",
        "方法",
        "问题",
        "请问",
        "呢",
        "吗",
        "么",
        "是不是",
        "能否",
        "可否",
        "一般",
        "主要",
        "具体",
        "分别",
        "各自",
        "表现",
        "哪个",
        "什么样",
        "有何",
        "什么",
        "意思",
    ]
)


def key_terms(text: str) -> list[str]:
    """Content terms of a question or sentence (tokenizer terms minus stopwords and question filler)."""
    terms = [t for t in tokenize(text) if t not in QUESTION_FILLER and len(t) > 0]
    return list(dict.fromkeys(terms))


def drop_identifier_parts(terms: list[str]) -> list[str]:
    """Drop "ef" and "construction" when "ef_construction" is there: the tokenizer adds parts for recall."""
    return [t for t in terms if not any(t != o and t in re.split(r"[-_.+/]", o) for o in terms)]


def surface_terms(text: str) -> dict[str, str]:
    """Map each key term to its surface form in the text (stemmed "retriev" → "retrieval")."""
    stemmed = tokenize(text)
    plain = tokenize(text, stem=False)
    if len(stemmed) != len(plain):
        return {t: t for t in stemmed}
    return {s: p for s, p in zip(stemmed, plain, strict=True)}


# ---- complexity and strategy ---------------------------------------------------------------------

_VAGUE = re.compile(
    r"\b(?:thing|things|stuff|something|somehow|kind of|sort of|whatever)\b|那个|那种|这种|之类|东西|某种|那玩意",
    re.IGNORECASE,
)
_CLAUSE_MARKS = re.compile(
    r"[,，;；]|\b(?:and|but|while|whereas|if|when|because)\b|并且|而且|以及|同时|如果|因为"
)


def _length(question: str) -> int:
    """Words for Latin text, characters/2 for CJK (a Chinese word is about two characters)."""
    if contains_cjk(question):
        cjk = len(CJK_RE.findall(question))
        latin = len(re.findall(r"[A-Za-z0-9]+", question))
        return cjk // 2 + latin
    return len(question.split())


def estimate_complexity(question: str, sub_queries: list[str], entities: list[str]) -> Complexity:
    """simple: one ask; moderate: two asks, several entities or qualifiers; complex: three or more asks."""
    n_sub = len(sub_queries)
    clauses = len(_CLAUSE_MARKS.findall(question))
    length = _length(question)
    if n_sub >= 3 or (n_sub >= 2 and (length > 25 or clauses >= 3)) or clauses >= 4:
        return "complex"
    if n_sub == 2 or len(entities) >= 3 or length > 14 or clauses >= 2:
        return "moderate"
    return "simple"


def recommend_strategy(
    question: str, query_type: QueryType, sub_queries: list[str], exact: list[str], bridge: bool
) -> tuple[StrategyName, str]:
    """multi_hop > keyword > vector > hybrid, with the cue that decided."""
    if len(sub_queries) >= 2:
        return "multi_hop", "bridge relation" if bridge else f"{len(sub_queries)} sub-queries"
    if exact:
        return "keyword", f"exact terms {', '.join(exact[:3])}"
    if _VAGUE.search(question):
        return "vector", "vague wording"
    if query_type == "analytical":
        return "vector", "conceptual why/explain question without rare terms"
    return "hybrid", "specific terms without exact identifiers"


def analyze_question(question: str) -> QueryAnalysis:
    """Full rule-based analysis of one question."""
    if not isinstance(question, str):
        raise TypeError(f"question must be a string, got {type(question).__name__}")
    text = question.strip()
    if not text:
        return QueryAnalysis(reasoning="empty question", language="en")
    query_type, cues = classify_type(text)
    sub_queries = decompose(text)
    bridge = bool(sub_queries) and sub_queries == bridge_hops(text)
    entities = extract_entities(text)
    exact = exact_terms(text)
    complexity = estimate_complexity(text, sub_queries, entities)
    strategy, why = recommend_strategy(text, query_type, sub_queries, exact, bridge)
    if is_global(text):  # issue 26: a whole-document or collection question (core.global_intent)
        strategy, why = "global", f"whole-document/collection question (score {global_score(text):.2f})"
    cue_text = f"cues {', '.join(dict.fromkeys(cues))}" if cues else "no type cue"
    reasoning = f"{query_type} ({cue_text}); {complexity}; {strategy} because {why}."
    return QueryAnalysis(
        query_type=query_type,
        complexity=complexity,
        sub_queries=sub_queries,
        recommended_strategy=strategy,
        reasoning=reasoning,
        entities=entities,
        identifiers=list(dict.fromkeys(identifiers_in(text) + exact)),
        language=detect_language(text),
    )


__all__ = [
    "analyze_question",
    "classify_type",
    "drop_identifier_parts",
    "estimate_complexity",
    "exact_terms",
    "extract_entities",
    "key_terms",
    "recommend_strategy",
    "segment",
    "surface_terms",
]
