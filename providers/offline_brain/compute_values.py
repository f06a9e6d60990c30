"""Computations over values the passages state: a difference, a sum, a ratio, a percentage, an average,
and the span of a stated range ("from 2019 to 2022", "2008年至2015年"). compute.py's other half.

The operands are the quantities of the sentences that best match the question (shared key terms, and
for Chinese shared character pairs, which survive jieba cutting 李明于 as one word); a count the
question names ("the three tests", "三个班") says how many to take. Each result is a calculator call,
so the answer shows the computation and the support checker can recompute it.
"""

from __future__ import annotations

import re
from typing import Literal

from core.schemas import Passage
from core.text import split_sentences
from providers.offline_brain.analysis import key_terms
from providers.offline_brain.lexicon import lexicon
from providers.offline_brain.weights import params
from tools import ToolError, ToolResult, run_tool
from tools.calculator import format_number
from tools.dates import FoundDate, find_dates
from tools.units import known_units

_ZH, _EN, _ANY = lexicon().tables("compute_values")


ValueKind = Literal["difference", "sum", "ratio", "percent", "average"]

# Cues, most specific first (a percentage question may also say "of the total").
_CUES: list[tuple[ValueKind, re.Pattern[str]]] = list(_ANY.cues.items())
# Questions that name a thing ("which region's rainfall is 100 mm more") or list values per item
# ("the average for each of ..."): the answer is a name or a list, not one computed number.
# A duration asked in Chinese without 后/前 ("担任校长多少年", "工作了几年"); 几年级 is a school grade.
_VALUE = re.compile(r"(?<![A-Za-z0-9_.])[$€£¥]?(?P<number>\d[\d,]*(?:\.\d+)?)" + _ANY.scale, re.I)
_UNITS_RE = "|".join(re.escape(u) for u in sorted(known_units(), key=len, reverse=True) if len(u) > 1)
_UNIT_AFTER = re.compile(r"[\u4e00-\u9fff](?<!年)|\s*(?:" + _UNITS_RE + r")(?![A-Za-z])", re.I)


def value_intent(question: str) -> ValueKind | Literal["span"] | None:
    """Which computation over stated values the question asks for, or "span" for a Chinese duration
    ("担任校长多少年"), computed only from a range one sentence states."""
    if _ANY.not_a_value.search(question):
        return None
    for kind, cue in _CUES:
        if cue.search(question):
            return kind
    if _ZH.duration.search(question):
        return "span"
    return None


def match_terms(text: str) -> frozenset[str]:
    """Key terms plus Chinese character pairs: what a question and a sentence share when they match."""
    labels = {m.casefold() for m in _ANY.label.findall(text)}  # "A城", "B公司": the letter is the name
    return frozenset(key_terms(text)) | frozenset(_ANY.cjk_pair.findall(text)) | labels


def sentences(passages: list[Passage]) -> list[tuple[int, str]]:
    """(passage number, sentence) for every sentence of the passages, in order."""
    return [(p.number, s) for p in passages for s in split_sentences(p.text)]


def overlaps(question: str, passages: list[Passage]) -> list[tuple[int, int, str]]:
    """(terms shared with the question, passage number, sentence) for every sentence, in order."""
    wanted = match_terms(question)
    return [(len(match_terms(sentence) & wanted), n, sentence) for n, sentence in sentences(passages)]


class Quantity:
    def __init__(self, value: float, text: str, scale: str, start: int) -> None:
        self.value, self.text, self.scale, self.start = value, text, scale, start


def quantities(sentence: str) -> list[Quantity]:
    """Numbers a sentence states as values: not dates, not a year (1000-2999 followed by 年 or alone)."""
    dated = [d for d in find_dates(sentence) if d.precision != "year" or d.text.endswith("年")]
    found = []
    for match in _VALUE.finditer(sentence):
        if any(d.start <= match.start() < d.end for d in dated):
            continue
        number = float(match.group("number").replace(",", ""))
        after = sentence[match.end() : match.end() + params().limits.compute_values["unit_chars"]]
        earliest, latest = params().limits.compute_values["year_range"]
        if (
            number.is_integer()
            and "," not in match.group("number")  # 1,200 is a count, 1200 may be a year
            and earliest <= number <= latest
            and not match.group("scale")
            and not _UNIT_AFTER.match(after)
        ):
            continue  # a bare year ("in 1892"); "1200平方公里", "1500 km" are quantities
        scale = (match.group("scale") or "").lower().replace("percent", "%")
        found.append(Quantity(number, match.group().strip(), scale, match.start()))
    return found


def _states(kind: ValueKind, sentence: str) -> bool:
    """Whether a sentence states the asked result itself, so there is nothing to compute."""
    return bool(_ANY.stated[kind].search(sentence))


def _measures(question: str, sentence: str, quantity: Quantity) -> bool:
    """Whether the words right after a value name something the question asks about ("16 gold medals")."""
    start = quantity.start + len(quantity.text)
    after = sentence[start : start + params().limits.compute_values["measure_chars"]]
    return bool(match_terms(after) & match_terms(question))


def _count_hint(question: str) -> int | None:
    match = _ANY.count_hint.search(question)
    if not match:
        return None
    return _ANY.count_words[(match.group(1) or match.group(2)).lower()]


def _ranked(question: str, passages: list[Passage]) -> list[tuple[int, int, str, list[Quantity]]]:
    """(overlap, passage, sentence, quantities) for sentences sharing terms with the question, best first."""
    scored = [(o, n, s, found) for o, n, s in overlaps(question, passages) if o and (found := quantities(s))]
    return sorted(scored, key=lambda s: -s[0])


def _mention(question: str, sentence: str, other: str) -> int:
    """Where the question first names what this sentence has and the other does not (its subject)."""
    own = match_terms(sentence) - match_terms(other)
    folded = question.casefold()
    positions = [folded.find(t.casefold()) for t in own if t and folded.find(t.casefold()) >= 0]
    return min(positions, default=len(question))


def tool_result(name: str, args: dict) -> ToolResult | None:
    """The tool's result, or None when the tool refuses the call (``ToolError``)."""
    try:
        return run_tool(name, args)
    except ToolError:
        return None


def _calc(expression: str) -> ToolResult | None:
    return tool_result("calculator", {"expression": expression})


def plan_values(
    question: str, passages: list[Passage], kind: ValueKind
) -> tuple[ToolResult, list[tuple[int, str, str]]] | None:
    """The calculator call and its operands as (passage, sentence, value text), or None."""
    ranked = _ranked(question, passages)
    if not ranked:
        return None
    hint = _count_hint(question)
    best_overlap, best_passage, best_sentence, best_values = ranked[0]
    if any(_states(kind, sentence) for overlap, _, sentence, _ in ranked if overlap == best_overlap):
        return None  # the best sentence already states it ("平均海拔为…", "a total of 37"): quote it
    if kind in ("sum", "average"):
        if hint is None and kind == "average":
            return None  # "年平均降雪", "average depth": an average is stated unless the question counts its parts
        if hint is None:  # "in total" without a count: only the values that measure what the question asks
            best_values = [q for q in best_values if _measures(question, best_sentence, q)]
        if len(best_values) >= 2 and (hint is None or len(best_values) == hint):
            chosen = [(best_passage, best_sentence, q) for q in best_values]
        else:
            singles = [
                (p, s, q[0])
                for o, p, s, q in ranked
                if len(q) == 1 and (hint or _measures(question, s, q[0]))
            ]
            chosen = singles[: hint or len(singles)]
            if len(chosen) < 2 or (hint is not None and len(chosen) != hint):
                return None
        if len({q.scale for _, _, q in chosen}) != 1:
            return None
        numbers = [format_number(q.value) for _, _, q in chosen]
        expression = " + ".join(numbers) if kind == "sum" else f"mean({', '.join(numbers)})"
        result = _calc(expression)
        return (result, [(p, s, q.text) for p, s, q in chosen]) if result else None
    # two operands: one sentence stating both, or the two best sentences stating one each
    if len(best_values) == 2 and (len(ranked) == 1 or ranked[1][0] < best_overlap or kind == "percent"):
        (a, b), sources = best_values, [(best_passage, best_sentence)] * 2
    else:
        pairs = [(o, p, s, q[0]) for o, p, s, q in ranked if len(q) == 1]
        if len(pairs) < 2:
            return None
        (_, pa, sa, a), (_, pb, sb, b) = pairs[0], pairs[1]
        if _mention(question, sb, sa) < _mention(question, sa, sb):
            (pa, sa, a), (pb, sb, b) = (pb, sb, b), (pa, sa, a)
        sources = [(pa, sa), (pb, sb)]
    if a.scale != b.scale:
        return None
    x, y = format_number(a.value), format_number(b.value)
    operands = [(sources[0][0], sources[0][1], a.text), (sources[1][0], sources[1][1], b.text)]
    if kind == "difference":
        big, small = (x, y) if a.value >= b.value else (y, x)
        result = _calc(f"{big} - {small}")
    elif kind == "ratio":
        result = _calc(f"{x} / {y}")
    else:  # percent: the part of the whole
        part, whole = (x, y) if a.value <= b.value else (y, x)
        result = _calc(f"{part} / {whole} * 100")
        if result is not None:
            result = result.model_copy(update={"shown": f"{part} / {whole} = {format_number(result.value)}%"})
    return (result, operands) if result else None


def stated_range(
    question: str, passages: list[Passage], day_precision: bool
) -> tuple[FoundDate, FoundDate, int, str] | None:
    """The two dates of the best-matching sentence that states both ends of a span ("from 2019 to
    2022", "2008年至2015年", "2012年加入…2020年离职"): (start, end, passage, sentence)."""
    matching = [row for row in overlaps(question, passages) if row[0]]
    if not matching:
        return None
    _, number, sentence = max(matching, key=lambda row: row[0])  # the first of the best
    dates = [d for d in find_dates(sentence) if not day_precision or d.precision == "day"]
    if len(dates) != 2:
        return None
    first, second = sorted(dates, key=lambda d: d.date)
    return first, second, number, sentence
