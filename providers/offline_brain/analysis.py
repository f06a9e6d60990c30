"""Rule-based query analysis: type, complexity, entities, identifiers and a retrieval strategy.

Rules, not a model: they are deterministic, explainable in one sentence (``reasoning`` names the cues that
fired) and fast enough to run on every turn. Accuracy on a labelled zh/en set is measured by
``bench/analyzer_accuracy.py`` (see docs/analyzer.md).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from itertools import accumulate

from core.global_intent import global_score, is_global
from core.names import NameShape, find_titles, name_matches
from core.schemas import Complexity, QueryAnalysis, QueryType, StrategyName
from core.text import CJK_RE, contains_cjk, detect_language
from core.tokenize import identifiers_in, tokenize
from providers.offline_brain.decompose import (
    ZH_COMPARE_CUES,
    bridge_hops,
    decompose,
    segment,
    zh_list,
)
from providers.offline_brain.lexicon import lexicon
from providers.offline_brain.weights import params

_LEX = lexicon()
_ZH, _EN, _ANY = _LEX.tables("analysis")
_NAME_SHAPE = NameShape.from_dict(_EN.name_shape)


# ---- query type ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Cue:
    """A surface cue for a query type; strong cues (question words) outweigh topical ones (install, 影响)."""

    pattern: re.Pattern[str]
    weight: int


def _cue(item: dict) -> Cue:
    """A cue of the data: words (zh) as written, phrases (en, regexes) whole-word and case-insensitively,
    or (``use``) a list decompose shares: its words or its regex."""
    entry = _LEX.entry(item["use"], item["language"]) if "use" in item else item
    if "regex" in entry:
        return Cue(_LEX.regex(entry), item["weight"])
    if "words" in entry:
        return Cue(re.compile("|".join(map(re.escape, entry["words"]))), item["weight"])
    return Cue(re.compile(r"\b(?:" + "|".join(entry["phrases"]) + r")\b", re.IGNORECASE), item["weight"])


_TYPE_ORDER: tuple[QueryType, ...] = ("comparative", "analytical", "procedural")
TYPE_CUES: dict[QueryType, tuple[Cue, ...]] = {
    qtype: tuple(
        _cue(item) for item in _LEX.entry("analysis.type_cues", "any")["cues"] if item["type"] == qtype
    )
    for qtype in _TYPE_ORDER
}


def _word_boundaries(text: str) -> set[int]:
    """Character offsets where jieba words start or end, so 作用 never fires inside 光合作用."""
    return {0, *accumulate(len(word) for word in segment(text))}


def _cue_match(cue: Cue, text: str, bounds: set[int] | None) -> str | None:
    for match in cue.pattern.finditer(text):
        if bounds is None or not contains_cjk(match.group(0)) or {match.start(), match.end()} <= bounds:
            return match.group(0)
    return None


def classify_type(question: str) -> tuple[QueryType, list[str]]:
    """The query type with the highest cue weight (ties: comparative > analytical > procedural).

    Quoted phrases are ignored (a quoted "零停机部署" names a thing, it does not ask how to deploy).
    """
    text = _ANY.quoted.sub(" ", question)
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

_SENTENCE_START_WORDS = _EN.question_words | _EN.sentence_start_words


def quoted_phrases(question: str) -> list[str]:
    """Phrases the user quoted to be matched exactly ("…", “…”, 「…」, `…`)."""
    return [next(g for g in m.groups() if g) for m in _ANY.quoted.finditer(question)]


def _is_code_like(token: str) -> bool:
    """Codes, versions, error numbers, snake_case/kebab identifiers with caps or digits, API symbol names."""
    lim = params().limits.analysis
    if re.fullmatch(r"\d+", token):
        value, (earliest, latest) = int(token), lim["year_range"]
        return len(token) >= lim["code_digits"] and not (earliest <= value <= latest)
    if re.search(r"\d", token):
        return not re.fullmatch(r"(?:top|v)?\d", token, re.IGNORECASE)
    if "_" in token or "." in token or "/" in token:
        return True
    if "-" in token:
        return any(c.isupper() for c in token)
    humps = re.findall(r"[A-Z][a-z]+", token)
    return len(humps) >= lim["camel_humps"] or bool(re.fullmatch(r"[a-z]+[A-Z]\w*", token))


def exact_terms(question: str) -> list[str]:
    """Tokens a keyword search must match exactly: codes, versions, flags, paths, calls, quoted phrases."""
    found = [t for t in identifiers_in(question) if _is_code_like(t)]
    found += _EN.flag.findall(question) + _EN.call.findall(question) + _EN.path.findall(question)
    found += quoted_phrases(question)
    return list(dict.fromkeys(t.strip() for t in found if t.strip()))


def _zh_entities(question: str) -> list[str]:
    """Chinese names around 和/与/、/对比: the items a comparison or enumeration names."""
    found = zh_list(question.strip().rstrip("？?。"))
    items = found[1] if found else []
    return [item for item in items if 1 < len(item) <= params().limits.analysis["entity_chars"]]


def extract_entities(question: str) -> list[str]:
    """Quoted strings, CamelCase/ALLCAPS names, capitalised multiword names and Chinese list items."""
    entities: list[str] = quoted_phrases(question) + find_titles(
        question, params().limits.analysis["title_chars"]
    )
    entities += [t for t in identifiers_in(question) if not re.fullmatch(r"\d+", t)]
    if contains_cjk(question):
        entities += _zh_entities(question)
    for match in name_matches(question, _NAME_SHAPE):
        words = match.group(0).split()
        # "Compare ..." at the start is a verb; "On the Origin of Species" mid-sentence is a title
        strip = _SENTENCE_START_WORDS if match.start() == 0 else _EN.question_words
        while words and words[0].lower() in strip:
            words = words[1:]
        if len(words) >= 2 or (words and match.start() > 0):
            entities.append(" ".join(words))
    for match in _ANY.cap_word.finditer(question):
        word = match.group(0)
        if match.start() > 0 and word.lower() not in _SENTENCE_START_WORDS:
            entities.append(word)
    # keep the longest form: drop entities contained in a longer one
    unique = list(dict.fromkeys(e.strip() for e in entities if e.strip()))
    return [e for e in unique if not any(e != other and e in other for other in unique)]


# ---- key terms (shared with judge / extractive) --------------------------------------------------

QUESTION_FILLER = frozenset([*_ANY.question_filler, *ZH_COMPARE_CUES])


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
    clauses = len(_ANY.clause_marks.findall(question))
    length, lim = _length(question), params().limits.analysis
    long = length > lim["long_words"] or clauses >= lim["many_clauses"]
    if n_sub >= lim["many_parts"] or (n_sub >= 2 and long) or clauses >= lim["most_clauses"]:
        return "complex"
    if (
        n_sub == 2
        or len(entities) >= lim["some_entities"]
        or length > lim["some_words"]
        or clauses >= lim["some_clauses"]
    ):
        return "moderate"
    return "simple"


def recommend_strategy(
    question: str, query_type: QueryType, sub_queries: list[str], exact: list[str], bridge: bool
) -> tuple[StrategyName, str]:
    """multi_hop > keyword > vector > hybrid, with the cue that decided."""
    if len(sub_queries) >= 2:
        return "multi_hop", "bridge relation" if bridge else f"{len(sub_queries)} sub-queries"
    if exact:
        return "keyword", f"exact terms {', '.join(exact[: params().limits.analysis['reason_terms']])}"
    if _ANY.vague.search(question):
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
    "surface_terms",
]
