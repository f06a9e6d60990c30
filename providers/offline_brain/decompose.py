"""Rule-based decomposition of comparative, multi-part and bridge questions into standalone sub-queries.

Each sub-query must be searchable on its own, so comparisons keep their aspect ("A 在 C 上的表现"), clause
splits resolve "it/它" to the first clause's topic, and enumerations re-use the shared frame ("the causes of
X", "the consequences of X"). Bridge questions become a first hop plus a second-hop *template*: the first
hop's phrase in angle brackets (``"spouse of <director of Inception>"``). A retriever that learnt the bridge
entity substitutes it with :func:`fill_bridge`; one that did not still has a usable query after
:func:`strip_bridge`.

A simple question yields ``[]``.
"""

from __future__ import annotations

import re
from functools import lru_cache

from core.text import contains_cjk, jieba
from providers.offline_brain.lexicon import lexicon
from providers.offline_brain.weights import params

_LEX = lexicon()
_ZH, _EN, _ANY = _LEX.tables("decompose")
_RELATIONS = "|".join(sorted(_ZH.relational, key=len, reverse=True))  # longest first
_ZH_CHAIN, _ZH_ATTRIBUTE = (
    _LEX.regex(_LEX.entry(f"decompose.{name}", "zh"), rel=_RELATIONS) for name in ("chain", "attribute")
)

# ---- cue lexicon shared with the analyzer ---------------------------------------------------------

ZH_COMPARE_CUES = _ZH.compare_cues


def is_comparative(question: str) -> bool:
    """True when the question asks to contrast two or more things (zh or en cues)."""
    return any(cue in question for cue in ZH_COMPARE_CUES) or bool(_EN.compare_re.search(question))


# ---- helpers --------------------------------------------------------------------------------------


@lru_cache(maxsize=4096)
def segment(text: str) -> tuple[str, ...]:
    """Jieba word segmentation (precise mode), cached: connectors like 和 must be words, not characters."""
    return tuple(jieba().lcut(text))


def _clean(text: str) -> str:
    text = re.sub(r"\s+", " ", text).strip()
    return text.strip(" ,，、:：;；")


def _strip_end(question: str) -> str:
    return question.strip().rstrip("?？。.!！ ").strip()


def normalise_query(query: str) -> str:
    """Case- and space-insensitive form used to compare queries."""
    return re.sub(r"\s+", " ", query).strip().lower()


def _dedupe(queries: list[str]) -> list[str]:
    seen: set[str] = set()
    out: list[str] = []
    for q in queries:
        key = normalise_query(q)
        if key and key not in seen:
            seen.add(key)
            out.append(q)
    return out if len(out) >= 2 else []


# ---- Chinese lists (comparisons and enumerations) -------------------------------------------------


def zh_list(question: str) -> tuple[str, list[str], str] | None:
    """Find ``prefix, [items], rest`` around 、/和/与 connectors; None when no list of >= 2 items."""
    tokens = list(segment(question))
    stops = _ZH.list_boundary | _ZH.connectors

    def walk(at: int, step: int) -> int:
        """From ``at`` by ``step`` to the first boundary or connector: where a list item ends."""
        while 0 <= at < len(tokens) and (tokens[at].strip() == "" or tokens[at] not in stops):
            at += step
        return at

    for start, tok in enumerate(tokens):
        if tok not in _ZH.connectors or tok == "对":
            continue
        j = walk(start - 1, -1)  # the first item: back from the connector to a boundary
        first = "".join(tokens[j + 1 : start]).strip()
        if not first:
            continue
        items = [first]
        k = start
        while k < len(tokens) and tokens[k] in _ZH.connectors and tokens[k] != "对":
            m = walk(k + 1, 1)
            item = "".join(tokens[k + 1 : m]).strip()
            if not item:
                break
            items.append(item)
            k = m
            while k < len(tokens) and tokens[k].strip() == "":
                k += 1
        if len(items) >= 2:
            return "".join(tokens[: j + 1]), items, "".join(tokens[k:])
    return None


def _zh_comparison(question: str) -> list[str]:
    found = zh_list(_strip_end(question))
    if not found:
        return []
    _prefix, items, rest = found
    rest = rest.strip()
    which, zai = _ZH.which_more.match(rest), _ZH.in_aspect.match(rest)
    if which:
        aspect = f" {which.group(1).strip()}"
    elif zai:
        aspect = f" 在{zai.group(1)}上的表现"
    elif rest.startswith("在"):
        aspect = f" {rest}"
    else:
        for filler in _ZH.filler:
            rest = rest.replace(filler, "")
        aspect = "的" + (rest.strip(" 的是？?。，,") or "特点")
    return _dedupe([item + aspect for item in items])


def _zh_enumeration(question: str) -> list[str]:
    """ "A、B 和 C 的 X" → one query per item; needs 、 or 以及 so that plain "A 和 B" names stay whole."""
    found = zh_list(_strip_end(question)) if any(m in question for m in _ZH.enumeration_marks) else None
    if not found:
        return []
    prefix, items, rest = found
    rest = rest.replace("分别", "").replace("各自", "").strip()
    return _dedupe([_clean(f"{prefix}{item}{rest}") for item in items])


# ---- English lists --------------------------------------------------------------------------------


def _split_last_item(text: str) -> tuple[str, str]:
    """Split a trailing qualifier off the last item: "X in terms of Y" -> ("X", "in terms of Y")."""
    parts = _EN.boundary_prep.split(text, maxsplit=1)
    if len(parts) == 2 and parts[0].strip():
        return parts[0].strip(), parts[1].strip()
    return text.strip(), ""


def _split_first_item(text: str) -> tuple[str, str]:
    """Split "What were the causes" into ("What were the", "causes") at the last function word."""
    words = text.split()
    cut = max((i + 1 for i, word in enumerate(words) if word.lower().strip(",") in _EN.function), default=0)
    if cut >= len(words):
        return text, ""
    return " ".join(words[:cut]), " ".join(words[cut:])


def _compose(prefix: str, item: str, suffix: str, question_like: bool) -> str:
    if _EN.ends_with_article.search(prefix):
        item = _EN.leading_article.sub("", item)
    aspect = _EN.in_terms_of.match(suffix)
    if aspect:
        item, suffix = f"{item} {aspect.group(1)}", ""
    query = _clean(" ".join(p for p in (prefix, item, suffix) if p)).rstrip("?")
    if question_like and _EN.wh_start.match(query):
        query += "?"
    return query


def _both(first: str, rest: str, frame: str = "", question_like: bool = False) -> list[str]:
    """One query per side of a comparison: ``first``, and the second item ``rest`` opens with (what
    follows it qualifies both)."""
    second, suffix = _split_last_item(rest)
    return _dedupe([_compose(frame, item, suffix, question_like) for item in (first, second)])


def _en_comparison(question: str) -> list[str]:
    q = _strip_end(question)
    # "A vs B", "A versus B"
    vs = _EN.versus.split(q, maxsplit=1)
    if len(vs) == 2:
        prefix, first = _split_first_item(vs[0])
        if not first:
            return []
        return _both(first, vs[1], prefix if _EN.wh_start.match(prefix) else "", True)
    # "A or B for X?"
    alt = _EN.a_or_b.match(q)
    if alt and not _EN.wh_start.match(q):
        return _both(alt.group("a"), alt.group("b"))
    # "Is A better than B for X"
    than = _EN.a_than_b.search(q)
    if than and (first := _split_first_item(than.group("left"))[1]):
        return _both(first, than.group("right"))
    # "difference(s) between A and B", "compare A and/with/to B", "how does A compare to B", "A differ from B"
    how = _EN.how_compare.search(q)
    if how:
        return _both(how.group("a"), how.group("b"))
    differ = _EN.a_differ_from_b.search(q)
    if differ and (first := _split_first_item(differ.group("a"))[1]):
        return _both(first, differ.group("b"))
    cue = _EN.between_cue.search(q)
    if not cue:
        return []
    items = [p.strip() for p in _EN.item_separators.split(q[cue.end() :]) if p and p.strip()]
    if len(items) < 2:
        return []
    items[-1], suffix = _split_last_item(items[-1])
    prefix = ""
    if " of " in items[0]:
        prefix, items[0] = items[0].rsplit(" of ", 1)
        prefix = _EN.leading_article.sub("", prefix.strip()) + " of"
    if not prefix and not suffix:
        return _dedupe([f"What is {item}?" for item in items])
    return _dedupe([_compose(prefix, item, suffix, False) for item in items])


def _en_enumeration(question: str) -> list[str]:
    """ "What were the causes, key battles and consequences of X", "What is the memory cost as well as
    the latency of HNSW" → one query per item, frame kept."""
    q = _strip_end(question)
    return _en_framed(_EN.enumeration.search(q) if "," in q else None) or _en_framed(_EN.as_well_as.search(q))


def _en_framed(match: re.Match[str] | None) -> list[str]:
    """The items of a matched enumeration (``head``, ``mid`` items, ``tail``), each in the shared frame;
    [] when an item is longer than an item can be."""
    if not match:
        return []
    head, first = _split_first_item(match.group("head"))
    middle = [m.strip() for m in (match.groupdict().get("mid") or "").split(",") if m.strip()]
    last, suffix = _split_last_item(match.group("tail"))
    items = [first, *middle, last]
    if not first or any(len(item.split()) > params().limits.decompose["item_words"] for item in items):
        return []
    return _dedupe([_compose(head, item, suffix, True) for item in items])


# ---- clauses joined by conjunctions ---------------------------------------------------------------


def topic_of(question: str) -> str:
    """The noun phrase a question is about ("How does hybrid search work?" → "hybrid search").

    Used to resolve "it/它" in later clauses and in follow-up questions.
    """
    q = _strip_end(question)
    if contains_cjk(q):
        q = _ZH.lead.sub("", q)
        kept: list[str] = []
        for token in segment(q):
            if token in _ZH.predicate and kept:
                break
            if token not in _ZH.predicate:
                kept.append(token)
        return "".join(kept).strip(" ，,") or q
    q = _EN.lead.sub("", q)
    # "create an HNSW index" → "HNSW index": a lower-case word before an article is a verb here
    q = _EN.verb_before_article.sub("", q)
    q = _EN.leading_determiner.sub("", q)
    q = _EN.trailing_verb.sub("", q)
    cut = _EN.cut.sub("", q).strip(" ,")
    words = (cut or q).split()
    return " ".join(words[: params().limits.decompose["topic_words"]]).strip(" ,")


def _resolve_pronouns(clause: str, topic: str, first_clause: str) -> str:
    if contains_cjk(clause):
        return _ZH.pronoun.sub(topic, clause, count=1)

    if re.search(rf"\b(?:the|a|an)\s+{re.escape(topic)}\b", first_clause, re.IGNORECASE):
        topic = f"the {topic}"  # "create an index … delete it" → "delete the index"

    def repl(match: re.Match[str]) -> str:
        word = match.group(1).lower()
        return f"{topic}'s" if word in ("its", "their") else topic

    return _EN.pronoun.sub(repl, clause, count=1)


def _clauses(question: str) -> list[str]:
    q = question.strip()
    if contains_cjk(q):
        parts = [_clean(p) for p in _ZH.clause_split.split(q)]
        parts = [p for p in parts if len(p) >= params().limits.decompose["clause_chars"]]
        if len(parts) < 2 or not all(_ZH.question_cue.search(p) for p in parts[1:]):
            return []
    else:
        parts = [_clean(p) for p in _EN.clause_split.split(q)]
        parts = [p for p in parts if len(p.split()) >= 2]
        if len(parts) < 2:
            return []
    topic = topic_of(parts[0])
    resolved = [parts[0]] + [_resolve_pronouns(p, topic, parts[0]) for p in parts[1:]]
    resolved = [p.rstrip("?？") for p in resolved]
    if not contains_cjk(q):
        resolved = [p[0].upper() + p[1:] + ("?" if _EN.wh_start.match(p) else "") for p in resolved]
    return _dedupe(resolved)


# ---- bridge (nested relation) questions -----------------------------------------------------------


def _en_bridge(question: str) -> list[str]:
    q = _strip_end(question)
    wh = _EN.wh_aux_body.match(q)
    if not wh:
        return []
    body = wh.group("body")
    # "the R1 of the R2 of X", "the R1 of the film that ...", "the R of each of the top 5 ..."
    nested = _EN.r_of_inner.match(body)
    if nested:
        inner = _EN.each_of.sub("", nested.group("inner"))
        inner_np = _EN.inner_head.match(inner)
        if inner_np and (  # the inner phrase describes an entity
            (inner_np.group("head").lower() in _EN.relational and " of " in inner)
            or _EN.relclause.search(inner)
            or _EN.ranked.match(inner)
        ):
            first = _EN.leading_article.sub("", inner)
            return [first, f"{nested.group('r1')} of <{first}>"]
    # "Where was the author of X born?"
    life = _EN.life.match(body)
    if life and life.group("r").lower() in _EN.relational:
        first = f"{life.group('r')} of {life.group('x')}"
        return [first, f"{wh.group('wh')} {wh.group('aux')} <{first}> {life.group('verb')}?"]
    return []


def _zh_bridge(question: str) -> list[str]:
    q = _strip_end(question)
    chain = _ZH_CHAIN.match(q)  # "<VP>的人的妻子…", "<X>的导演的妻子…"
    if chain:
        first = chain.group("first")
        return [first, f"<{first}>的{chain.group('r')}{chain.group('rest')}"]
    # "X 的作者出生在哪里": an attribute of the entity a relation names
    attr = _ZH_ATTRIBUTE.match(q)
    if attr and not _ZH.identity_only.match(attr.group("rest").strip()):
        first = f"{attr.group('x')}的{attr.group('r')}"
        return [first, f"<{first}>{attr.group('rest')}"]
    # "设计埃菲尔铁塔的工程师还设计了哪些建筑": a relative clause names the entity, then a new predicate
    verbal = _ZH.described.match(q)
    if verbal and not _ZH.identity_only.match(verbal.group("rest").strip()):
        first = verbal.group("first")
        if segment(first)[0] not in _ZH.not_a_described_head:
            return [first, f"<{first}>{verbal.group('rest')}"]
    return []


def bridge_hops(question: str) -> list[str]:
    """First hop plus second-hop template for nested-relation questions, else []."""
    return _zh_bridge(question) if contains_cjk(question) else _en_bridge(question)


# ---- entry point ----------------------------------------------------------------------------------


def decompose(question: str) -> list[str]:
    """Standalone sub-queries for a comparative, multi-part or bridge question; [] for a simple one."""
    if not question or not question.strip():
        return []
    zh = contains_cjk(question)
    readings = [_zh_comparison if zh else _en_comparison] if is_comparative(question) else []
    readings += [_clauses, bridge_hops, _zh_enumeration if zh else _en_enumeration]
    return next((subs for read in readings if (subs := read(question))), [])
