"""Offline evaluation metrics for retrieval and answers, as small pure functions.

Conventions shared by every function here:
- ``ranked_ids`` is the retriever's output best first; an id repeated later in the list counts only at
  its first position (a retriever that returns the same chunk twice gains nothing from it).
- A metric that is undefined for a query (no gold ids, no acceptable answer, no citation) returns
  ``None``; :func:`mean_defined` leaves those out of averages, so a query without gold passages neither
  helps nor hurts a retriever.
- Answers are compared after :func:`normalize_answer` (SQuAD-style, extended for Chinese).
"""

from __future__ import annotations

import math
import re
import string
import unicodedata
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

from core.text import CJK, CJK_EXTENSION_B, to_simplified

AnswerLike = str | Sequence[str] | None

_CJK = CJK + CJK_EXTENSION_B
# Whitespace next to a CJK character carries no meaning ("4 分钟" == "4分钟").
_SPACE_NEAR_CJK_RE = re.compile(rf"(?<=[{_CJK}])\s+|\s+(?=[{_CJK}])")
_ARTICLES_RE = re.compile(r"\b(?:a|an|the)\b")
# A token is one CJK character or a run of other non-space characters (a Latin word, a number).
_TOKEN_RE = re.compile(rf"[{_CJK}]|[^\s{_CJK}]+")
_ASCII_PUNCT = frozenset(string.punctuation)


# --------------------------------------------------------------------------------------------------
# retrieval
# --------------------------------------------------------------------------------------------------


def _top_k_unique(ranked_ids: Sequence[str], k: int) -> list[str]:
    """The first ``k`` distinct ids, keeping each at its first position."""
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    seen: dict[str, None] = {}
    for doc_id in ranked_ids:
        if doc_id not in seen:
            seen[doc_id] = None
            if len(seen) == k:
                break
    return list(seen)


def recall_at_k(ranked_ids: Sequence[str], gold_ids: Iterable[str], k: int) -> float | None:
    """Fraction of the distinct gold ids found among the first ``k`` distinct ranked ids.

    Empty gold -> ``None`` (undefined, left out of averages).
    """
    gold = set(gold_ids)
    if not gold:
        return None
    return len(gold.intersection(_top_k_unique(ranked_ids, k))) / len(gold)


def all_gold_recall_at_k(ranked_ids: Sequence[str], gold_ids: Iterable[str], k: int) -> float | None:
    """1.0 when every gold id is in the top ``k`` (multi-hop "supporting-passage recall"), else 0.0."""
    gold = set(gold_ids)
    if not gold:
        return None
    return 1.0 if gold.issubset(_top_k_unique(ranked_ids, k)) else 0.0


def hit_at_k(ranked_ids: Sequence[str], gold_ids: Iterable[str], k: int) -> float | None:
    """1.0 when at least one gold id is in the top ``k``, else 0.0."""
    gold = set(gold_ids)
    if not gold:
        return None
    return 1.0 if gold.intersection(_top_k_unique(ranked_ids, k)) else 0.0


def precision_at_k(ranked_ids: Sequence[str], gold_ids: Iterable[str], k: int) -> float | None:
    """Gold ids in the top ``k`` divided by ``k`` (not by the list length: a short list is not rewarded)."""
    gold = set(gold_ids)
    if not gold:
        return None
    return len(gold.intersection(_top_k_unique(ranked_ids, k))) / k


def mrr_at_k(ranked_ids: Sequence[str], gold_ids: Iterable[str], k: int = 10) -> float | None:
    """Reciprocal rank (1-based, among distinct ids) of the first gold id in the top ``k``; 0.0 if none."""
    gold = set(gold_ids)
    if not gold:
        return None
    for rank, doc_id in enumerate(_top_k_unique(ranked_ids, k), start=1):
        if doc_id in gold:
            return 1.0 / rank
    return 0.0


def ndcg_at_k(ranked_ids: Sequence[str], gold_ids: Iterable[str], k: int = 10) -> float | None:
    """nDCG@k with binary relevance: DCG = sum over gold hits of 1/log2(rank+1), rank 1-based among
    distinct ids; the ideal DCG puts min(|gold|, k) relevant ids at the top."""
    gold = set(gold_ids)
    if not gold:
        return None
    dcg = sum(
        1.0 / math.log2(rank + 1)
        for rank, doc_id in enumerate(_top_k_unique(ranked_ids, k), start=1)
        if doc_id in gold
    )
    ideal = sum(1.0 / math.log2(rank + 1) for rank in range(1, min(len(gold), k) + 1))
    return dcg / ideal


def counterfactual_above_gold_at_k(
    ranked_ids: Sequence[str], gold_ids: Iterable[str], counterfactual_ids: Iterable[str], k: int
) -> float | None:
    """1.0 when a planted counterfactual passage is in the top ``k`` and ranks above the best true gold
    passage (or no gold passage made the top ``k``), else 0.0; ``None`` without planted passages or gold.

    RGB robustness: the share of queries where wrong evidence would be read before the right one."""
    gold, fakes = set(gold_ids), set(counterfactual_ids)
    if not gold or not fakes:
        return None
    for doc_id in _top_k_unique(ranked_ids, k):
        if doc_id in gold:
            return 0.0
        if doc_id in fakes:
            return 1.0
    return 0.0


# --------------------------------------------------------------------------------------------------
# answers
# --------------------------------------------------------------------------------------------------


def flatten_answers(raw: Any) -> list[str]:
    """Every acceptable answer string found in a dataset's answer field, in order, without duplicates.

    Strings stay as they are; lists (DRCD spans, RGB alternatives, nested RGB lists) are flattened;
    FanOutQA dicts contribute keys and values; numbers print without a spurious ``.0``; booleans become
    ``yes``/``no``; ``None`` gives no answer.
    """
    out: list[str] = []

    def visit(value: Any) -> None:
        if value is None:
            return
        if isinstance(value, bool):
            out.append("yes" if value else "no")
        elif isinstance(value, int):
            out.append(str(value))
        elif isinstance(value, float):
            out.append(str(int(value)) if value.is_integer() else repr(value))
        elif isinstance(value, str):
            if value.strip():
                out.append(value.strip())
        elif isinstance(value, dict):
            for key, item in value.items():
                visit(key)
                visit(item)
        elif isinstance(value, Iterable):
            for item in value:
                visit(item)
        else:
            out.append(str(value))

    visit(raw)
    return list(dict.fromkeys(out))


def _answer_list(answers: Any) -> list[str]:
    return [answers] if isinstance(answers, str) else flatten_answers(answers)


# Chinese separators become spaces (so "records，2005年" keeps "2005" apart); they are mapped before
# NFKC, which would turn "，" into an ASCII comma that is deleted the SQuAD way (joining its neighbours).
_SEPARATORS = {
    **{
        **{  # CJK symbols and punctuation: 、。《》「」『』【】〔〕 and the ideographic space (not 〇 or 々)
            chr(c): " " for c in range(0x3000, 0x3040) if unicodedata.category(chr(c))[0] in "PZ"
        },
    },  # CJK symbols: 、。《》「」『』【】〔〕 and the ideographic space
    **dict.fromkeys("，．：；？！（）［］｛｝“”·•‧…—–｡｢｣､･", " "),
    "‘": "'",  # curly apostrophes behave like ASCII ones: "Hall’s" == "Hall's"
    "’": "'",
}
_SEPARATOR_TABLE = str.maketrans(_SEPARATORS)
_POSSESSIVE_RE = re.compile(r"(?<=\w)'s\b")


def _strip_punct(text: str) -> str:
    return "".join(
        ch for ch in text if ch not in _ASCII_PUNCT and not unicodedata.category(ch).startswith("P")
    )


def normalize_answer(text: str | None) -> str:
    """SQuAD normalisation extended for Chinese.

    Chinese separators (``，。、；：（）《》「」·`` and curly quotes) become spaces; NFKC folds
    full-width ASCII (``ＡＢＣ１２３``) to half-width; then lower-case, drop English possessive ``'s``,
    delete the remaining punctuation (``7.07`` -> ``707``, ``GPT-4`` -> ``gpt4``), drop the articles
    a/an/the, collapse whitespace and remove whitespace touching a CJK character. Traditional and
    simplified characters are kept as written (no conversion).
    """
    if not text:
        return ""
    text = unicodedata.normalize("NFKC", text.translate(_SEPARATOR_TABLE)).lower()
    text = _strip_punct(_POSSESSIVE_RE.sub("", text))
    text = _ARTICLES_RE.sub(" ", text)
    text = " ".join(text.split())
    return _SPACE_NEAR_CJK_RE.sub("", text)


def answer_tokens(text: str | None) -> list[str]:
    """Tokens of the normalised text: each CJK character alone, other runs split on whitespace.

    For plain English this is SQuAD's whitespace split; for Chinese it is character tokenisation; mixed
    text gets both (``GPT-4发布`` -> ``gpt4``, ``发``, ``布``).
    """
    return _TOKEN_RE.findall(normalize_answer(text))


def exact_match(prediction: str | None, answers: Any) -> float | None:
    """1.0 when the normalised prediction equals any normalised acceptable answer; ``None`` when there
    is no acceptable answer to compare with."""
    golds = _answer_list(answers)
    if not golds:
        return None
    pred = normalize_answer(prediction)
    return 1.0 if any(pred == normalize_answer(gold) for gold in golds) else 0.0


def _f1(pred_tokens: list[str], gold_tokens: list[str]) -> float:
    if not pred_tokens or not gold_tokens:
        return 1.0 if pred_tokens == gold_tokens else 0.0
    same = sum((Counter(pred_tokens) & Counter(gold_tokens)).values())
    if same == 0:
        return 0.0
    precision = same / len(pred_tokens)
    recall = same / len(gold_tokens)
    return 2 * precision * recall / (precision + recall)


def token_f1(prediction: str | None, answers: Any) -> float | None:
    """SQuAD token F1 over :func:`answer_tokens`, the maximum over acceptable answers; ``None`` when
    there is no acceptable answer."""
    golds = _answer_list(answers)
    if not golds:
        return None
    pred_tokens = answer_tokens(prediction)
    return max(_f1(pred_tokens, answer_tokens(gold)) for gold in golds)


def _contains_answer(text: str, golds: Sequence[str], *, simplify: bool = False) -> bool:
    """Normalised substring match that respects Latin word and number edges: "70" is not found in
    "170" and "art" not in "party", while "70" is found in "共有70个" (no spaces in Chinese).
    ``simplify`` also folds traditional characters to simplified on both sides."""
    fold = to_simplified if simplify else (lambda value: value)
    haystack = normalize_answer(fold(text))
    for gold in golds:
        needle = normalize_answer(fold(gold))
        if not needle:
            continue
        pattern = re.escape(needle)
        if needle[0].isascii() and needle[0].isalnum():
            pattern = r"(?<![a-z0-9])" + pattern
        if needle[-1].isascii() and needle[-1].isalnum():
            pattern += r"(?![a-z0-9])"
        if re.search(pattern, haystack):
            return True
    return False


def answer_in_context(context: str | None, answers: Any) -> float | None:
    """1.0 when some normalised acceptable answer occurs in the normalised context (the evidence handed
    to the generator could support the answer), whole Latin words and numbers only; ``None`` without
    answers."""
    golds = _answer_list(answers)
    if not golds:
        return None
    return 1.0 if _contains_answer(context or "", golds) else 0.0


def answer_has_gold(answer: str | None, answers: Any) -> float | None:
    """1.0 when the answer text itself contains an acceptable answer after normalisation (case, width,
    punctuation, traditional -> simplified), whole Latin words and numbers only; ``None`` without answers.

    Unlike :func:`answer_in_context` this reads what the user reads: a fact that sits only in the
    evidence or a citation snippet does not count."""
    golds = _answer_list(answers)
    if not golds:
        return None
    return 1.0 if _contains_answer(answer or "", golds, simplify=True) else 0.0


RETRIEVAL_NODES = frozenset({"retrieve_vector", "retrieve_keyword", "retrieve_hybrid"})
_HOPS_RE = re.compile(r"(\d+) sub-quer(?:y|ies), (\d+) bridge hops?")


def retrievals_in_trace(trace: Sequence[Any]) -> int:
    """Searches one question cost, counted from its trace: one per vector/keyword/hybrid node run, and
    for a multi-hop node its sub-queries plus its bridge hops."""
    total = 0
    for item in trace:
        entry = item.model_dump() if hasattr(item, "model_dump") else item  # a TraceEvent or its dict
        node = entry.get("node")
        if node in RETRIEVAL_NODES:
            total += 1
        elif node == "retrieve_multi_hop":
            counts = entry.get("counts") or {}
            if "sub_queries" in counts:
                total += int(counts["sub_queries"]) + int(counts.get("bridge_hops", 0))
            else:  # traces written before the count existed
                found = _HOPS_RE.search(f"{entry.get('detail', '')} {entry.get('decision', '')}")
                total += int(found.group(1)) + int(found.group(2)) if found else 1
    return total


def citation_precision(
    cited_ids: Sequence[str],
    gold_ids: Iterable[str],
    cited_texts: Sequence[str] | None = None,
    answers: Any = None,
) -> float | None:
    """Fraction of citations that are correct: the cited chunk is a gold passage, or its text
    (``cited_texts[i]``, aligned with ``cited_ids``) contains an acceptable answer. Duplicated
    citations count once. ``None`` when nothing was cited."""
    texts = list(cited_texts or [])
    pairs: dict[str, str] = {}
    for i, cited in enumerate(cited_ids):
        pairs.setdefault(cited, texts[i] if i < len(texts) else "")
    if not pairs:
        return None
    gold = set(gold_ids)
    golds = _answer_list(answers)
    correct = sum(
        1 for cited, text in pairs.items() if cited in gold or (golds and _contains_answer(text, golds))
    )
    return correct / len(pairs)


def insufficient_rate(flags: Iterable[bool]) -> float | None:
    """Share of queries where the system said the evidence was insufficient; ``None`` for no queries."""
    values = [bool(flag) for flag in flags]
    return sum(values) / len(values) if values else None


def misled(prediction: str | None, answers: Any, fake_answers: Any) -> float | None:
    """1.0 when the prediction states a counterfactual answer (RGB ``fakeanswer``) and no acceptable
    answer, i.e. planted wrong evidence was believed; ``None`` without a fake answer or a prediction."""
    fakes = _answer_list(fake_answers)
    if not fakes or not prediction:
        return None
    return (
        1.0
        if _contains_answer(prediction, fakes) and not _contains_answer(prediction, _answer_list(answers))
        else 0.0
    )


# --------------------------------------------------------------------------------------------------
# aggregation
# --------------------------------------------------------------------------------------------------


def mean_defined(values: Iterable[float | None]) -> float | None:
    """Mean of the defined values (``None`` and NaN left out); ``None`` when none is defined."""
    kept = [v for v in values if v is not None and not math.isnan(v)]
    return sum(kept) / len(kept) if kept else None


def percentile(values: Iterable[float], p: float) -> float | None:
    """The p-th percentile (0-100) with linear interpolation between closest ranks (numpy's default,
    Excel's PERCENTILE.INC); ``None`` for no values."""
    if not 0 <= p <= 100:
        raise ValueError(f"percentile p must be within [0, 100], got {p}")
    data = sorted(float(v) for v in values)
    if not data:
        return None
    position = (len(data) - 1) * p / 100
    lower = math.floor(position)
    upper = min(lower + 1, len(data) - 1)
    return data[lower] + (data[upper] - data[lower]) * (position - lower)
