"""Computations the passages cannot state: years or days between two dated events, a quantity in another
unit, an arithmetic expression. The offline brain's rule-based tool use.

``plan_computation`` reads the question for what to compute and the passages for the operands (the
sentences that best match the question and hold a date or a quantity), then calls the tool registry.
The answer quotes the operand sentences with their [n] markers and shows the computation citing the same
passages, so a reader (and the support checker) can follow every number back to its source.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, Field

from core.schemas import DraftAnswer, Passage
from core.text import detect_language
from providers.offline_brain.compute_values import (
    match_terms,
    overlaps,
    plan_values,
    sentences,
    stated_range,
    tool_result,
    value_intent,
)
from providers.offline_brain.lexicon import lexicon
from tools import ToolResult
from tools.dates import find_dates
from tools.units import known_units

_LEX = lexicon()
_ZH, _EN, _ANY = _LEX.tables("compute")


# span: years of a range one sentence states (a Chinese duration question, compute_values.py)
Intent = Literal[
    "years", "days", "span", "convert", "arithmetic", "difference", "sum", "ratio", "percent", "average"
]

# A stated span or age: a number below 1000 (not a year) with years/days/岁/年/天.
# Unit names too ambiguous to read from running text ("in", "t", "分"); they still work in the tools.
_UNIT_NAMES = sorted((u for u in known_units() if u not in _ANY.ambiguous_units), key=len, reverse=True)
_UNIT = "(?:" + "|".join(re.escape(u) for u in _UNIT_NAMES) + r")(?![A-Za-z])"
_QUANTITY = re.compile(rf"(?P<value>\d[\d,]*(?:\.\d+)?)\s*(?P<unit>{_UNIT})", re.I)
# The unit a question asks for; one-letter names ("in G1 phase", "to m") are too ambiguous there.
_ASKED_UNIT = (
    "(?:" + "|".join(re.escape(u) for u in _UNIT_NAMES if len(u) > 1 or not u.isascii()) + r")(?![A-Za-z])"
)
_TARGET_UNIT = _LEX.regex(_LEX.entry("compute.target_unit", "any"), asked_unit=_ASKED_UNIT)
# Arithmetic only when asked for: "1945-1949" or "1/3" in a question is a range or a fraction, not a sum.


class Operand(BaseModel):
    """A value read from a passage sentence."""

    text: str
    sentence: str
    passage: int


class Computation(BaseModel):
    intent: Intent
    result: ToolResult
    operands: list[Operand] = Field(default_factory=list)

    @property
    def cited(self) -> list[int]:
        return list(dict.fromkeys(o.passage for o in self.operands))


def computation_intent(question: str) -> Intent | None:
    """What the question asks to compute, if anything: date spans first, then units, then arithmetic."""
    if _ANY.years.search(question):
        return "years"
    if _ANY.days.search(question):
        return "days"
    over_values = value_intent(question)  # a difference, sum, ratio, ... of stated values (compute_values.py)
    if over_values:
        return over_values
    if _TARGET_UNIT.search(question):
        return "convert"
    expression = _ANY.expression.search(question)
    if expression and _ANY.compute_cue.search(question) and re.search(r"[-+*/×÷^%]", expression.group()):
        return "arithmetic"
    return None


class _Candidate(BaseModel):
    passage: int
    sentence: str
    value: str
    terms: frozenset[str]


def _best_pair(question: str, candidates: list[_Candidate]) -> tuple[_Candidate, _Candidate] | None:
    """Two operands from different sentences that together cover the most question terms; for an age,
    the event the question names and the birth date of someone it names."""
    wanted = set(match_terms(question))

    def shared(c: _Candidate) -> int:
        return len(c.terms & wanted)

    if _ANY.age.search(question):
        births = [c for c in candidates if _ANY.birth.search(c.sentence) and shared(c)]
        events = [c for c in candidates if not _ANY.birth.search(c.sentence) and shared(c)]
        return (max(births, key=shared), max(events, key=shared)) if births and events else None
    scored = sorted(candidates, key=lambda c: -shared(c))
    if not scored or not shared(scored[0]):
        return None
    first = scored[0]
    rest = [c for c in scored[1:] if c.value != first.value and c.sentence != first.sentence]
    second = max(rest, key=lambda c: (len((c.terms & wanted) - first.terms), shared(c)), default=None)
    if second is None or not (second.terms & wanted) - first.terms:
        return None
    return first, second


def _date_candidates(passages: list[Passage], precision_needed: bool) -> list[_Candidate]:
    return [
        _Candidate(passage=number, sentence=sentence, value=date.text, terms=match_terms(sentence))
        for number, sentence in sentences(passages)
        for date in find_dates(sentence)
        if not precision_needed or date.precision == "day"
    ]


def _states_count(question: str, passages: list[Passage]) -> bool:
    """A best-matching sentence already says how many years or days ("12岁", "65 years"): quote it."""
    scored = overlaps(question, passages)
    top = max((overlap for overlap, _, _ in scored), default=0)
    return top > 0 and any(_ANY.count.search(sentence) for overlap, _, sentence in scored if overlap == top)


def _date_span(
    question: str, passages: list[Passage], unit: Literal["years", "days"], *, range_only: bool = False
) -> Computation | None:
    if _states_count(question, passages):
        return None
    asked = find_dates(question)
    if len(asked) >= 2:  # both dates are in the question: nothing to look up
        start, end = asked[0].text, asked[1].text
        operands: list[Operand] = []
    elif not _ANY.age.search(question) and (span := stated_range(question, passages, unit == "days")):
        first_date, second_date, number, sentence = span  # both ends in one sentence: "from 2019 to 2022"
        start, end = first_date.text, second_date.text
        operands = [
            Operand(text=d.text, sentence=sentence, passage=number) for d in (first_date, second_date)
        ]
    elif range_only:
        return None
    else:
        pair = _best_pair(question, _date_candidates(passages, precision_needed=unit == "days"))
        if pair is None:
            return None
        first, second = sorted(pair, key=lambda c: find_dates(c.value)[0].date)
        start, end = first.value, second.value
        operands = [Operand(text=c.value, sentence=c.sentence, passage=c.passage) for c in (first, second)]
    result = tool_result("date_diff", {"start": start, "end": end, "unit": unit})
    return Computation(intent=unit, result=result, operands=operands) if result else None


def _conversion(question: str, passages: list[Passage]) -> Computation | None:
    """The quantity of the best-matching sentences converted; none when one of them already gives it in
    the unit asked for (the extractive answer quotes it)."""
    target = _TARGET_UNIT.search(question)
    if target is None:
        return None
    found: list[tuple[int, Operand, ToolResult]] = []
    for overlap, number, sentence in overlaps(question, passages):
        for match in _QUANTITY.finditer(sentence) if overlap else ():
            value = float(match.group("value").replace(",", ""))
            units = {"from_unit": match.group("unit"), "to_unit": target.group("unit")}
            result = tool_result("unit_convert", {"value": value, **units})
            if result is None:  # another dimension: not the quantity asked about
                continue
            found.append((overlap, Operand(text=match.group(), sentence=sentence, passage=number), result))
    if not found:
        return None
    top = max(overlap for overlap, _, _ in found)
    best = [(operand, result) for overlap, operand, result in found if overlap == top]
    if any(result.value == result.args["value"] for _, result in best):
        return None
    operand, result = best[0]
    return Computation(intent="convert", result=result, operands=[operand])


def _arithmetic(question: str) -> Computation | None:
    match = _ANY.expression.search(question)
    result = tool_result("calculator", {"expression": match.group().strip()}) if match else None
    return Computation(intent="arithmetic", result=result) if result else None


def plan_computation(question: str, passages: list[Passage]) -> Computation | None:
    """The tool call the question needs with operands from the passages, or None when none applies."""
    intent = computation_intent(question)
    if intent == "span":
        return _date_span(question, passages, "years", range_only=True)
    if intent in ("years", "days"):
        return _date_span(question, passages, intent)
    if intent == "convert":
        return _conversion(question, passages)
    if intent == "arithmetic":
        return _arithmetic(question)
    planned = plan_values(question, passages, intent) if intent is not None else None
    if planned is None:
        return None
    result, used = planned
    operands = {
        value + sentence: Operand(text=value, sentence=sentence, passage=n) for n, sentence, value in used
    }
    return Computation(intent=intent, result=result, operands=list(operands.values()))


def _marker(numbers: list[int]) -> str:
    return "".join(f"[{n}]" for n in numbers)


def computed_answer(question: str, computation: Computation) -> DraftAnswer:
    """The operand sentences with their citations, then the computation and its result."""
    zh = detect_language(question) == "zh"
    end = "。" if zh else "."
    quoted = [f"{o.sentence.rstrip('。.!！?？')}{_marker([o.passage])}{end}" for o in computation.operands]
    shown = computation.result.shown
    if zh and computation.intent in ("years", "days", "span"):
        shown = shown.replace(" years", " 年").replace(" days", " 天")
    cite = _marker(computation.cited)
    if zh:
        text = ("根据资料：" + "".join(quoted) if quoted else "") + f"计算：{shown}{cite}。"
    else:
        text = (
            "According to the documents: " + " ".join(quoted) + " " if quoted else ""
        ) + f"Computed: {shown}{cite}."
    return DraftAnswer(answer=text.strip(), insufficient=False)
