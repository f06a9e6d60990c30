"""Dates in Chinese and English text, and the years or days between two of them.

Recognised: 2019年3月5日 / 2019年3月 / 2019年 (also with Chinese numerals: 二〇一九年三月五日),
2019-03-05, 2019/3/5, 2019.3.5, March 5, 2019 / 5 March 2019 / Mar. 2019, and a bare year (1000-2999).
A date keeps its precision (day, month or year) so "years between" of two bare years is their difference
and "days between" refuses what it cannot know.
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Literal

from pydantic import BaseModel

from tools.errors import ToolError

Precision = Literal["day", "month", "year"]

_MONTHS = {
    name: number
    for number, names in enumerate(
        [
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ],
        start=1,
    )
    for name in names
}
_MONTH = r"(?P<month_name>" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_ZH_VALUES = {ch: value for value, ch in enumerate("〇一二三四五六七八九")} | {"零": 0}
_ZH_DIGITS = "".join(_ZH_VALUES)
_ZH_NUM = rf"[{_ZH_DIGITS}十]+"

_PATTERNS: list[tuple[re.Pattern[str], Precision]] = [
    (re.compile(r"(?P<year>\d{4})\s*年\s*(?P<month>\d{1,2})\s*月\s*(?P<day>\d{1,2})\s*[日号]"), "day"),
    (re.compile(rf"(?P<zyear>[{_ZH_DIGITS}]{{4}})年(?P<zmonth>{_ZH_NUM})月(?P<zday>{_ZH_NUM})[日号]"), "day"),
    (re.compile(r"\b(?P<year>\d{4})[-/.](?P<month>\d{1,2})[-/.](?P<day>\d{1,2})\b"), "day"),
    (re.compile(rf"\b{_MONTH}\s+(?P<day>\d{{1,2}})(?:st|nd|rd|th)?,?\s+(?P<year>\d{{4}})\b", re.I), "day"),
    (
        re.compile(
            rf"\b(?P<day>\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTH}\s*,?\s+(?P<year>\d{{4}})\b", re.I
        ),
        "day",
    ),
    (re.compile(r"(?P<year>\d{4})\s*年\s*(?P<month>\d{1,2})\s*月"), "month"),
    (re.compile(rf"(?P<zyear>[{_ZH_DIGITS}]{{4}})年(?P<zmonth>{_ZH_NUM})月"), "month"),
    (re.compile(rf"\b{_MONTH}\s+(?P<year>\d{{4}})\b", re.I), "month"),
    (re.compile(r"(?P<year>\d{4})\s*年"), "year"),
    (re.compile(rf"(?P<zyear>[{_ZH_DIGITS}]{{4}})年"), "year"),
    (re.compile(r"(?<![\d.])(?P<year>1\d{3}|2\d{3})(?!\d|\.\d)"), "year"),
]


class FoundDate(BaseModel):
    """A date found in text: the day it denotes (1st of the month/year when less precise) and its span."""

    date: dt.date
    precision: Precision
    text: str
    start: int = 0
    end: int = 0


def _zh_number(text: str) -> int:
    """Chinese numerals as used in dates: 二〇一九 (digit by digit), 十二, 二十五, 三十一."""
    if "十" not in text:
        return int("".join(str(_ZH_VALUES[ch]) for ch in text))
    tens, _, ones = text.partition("十")
    return (_zh_number(tens) if tens else 1) * 10 + (_zh_number(ones) if ones else 0)


def _fields(match: re.Match[str]) -> tuple[int, int, int]:
    groups = match.groupdict()
    year = int(groups["year"]) if groups.get("year") else _zh_number(groups["zyear"])
    if groups.get("month_name"):
        month = _MONTHS[groups["month_name"].lower()]
    elif groups.get("month") or groups.get("zmonth"):
        month = int(groups["month"]) if groups.get("month") else _zh_number(groups["zmonth"])
    else:
        month = 1
    day = groups.get("day") or groups.get("zday")
    day_number = (int(day) if day.isdigit() else _zh_number(day)) if day else 1
    return year, month, day_number


def find_dates(text: str) -> list[FoundDate]:
    """Every date in ``text``, most precise reading first for overlapping spans, in order of position."""
    taken: list[tuple[int, int]] = []
    found: list[FoundDate] = []
    for pattern, precision in _PATTERNS:
        for match in pattern.finditer(text):
            start, end = match.span()
            if any(start < t_end and t_start < end for t_start, t_end in taken):
                continue
            try:
                day = dt.date(*_fields(match))
            except ValueError:  # 2019年2月30日 is not a date
                continue
            taken.append((start, end))
            found.append(FoundDate(date=day, precision=precision, text=match.group(), start=start, end=end))
    return sorted(found, key=lambda item: item.start)


def parse_date(text: str) -> FoundDate:
    """The single date ``text`` holds (the first one when several)."""
    found = find_dates(text.strip())
    if not found:
        raise ToolError(f"not a date: {text!r} (try 2019-03-05, 2019年3月5日 or March 5, 2019)")
    return found[0]


def years_between(first: str, second: str) -> int:
    """Whole years from the earlier date to the later one (bare years: their difference)."""
    a, b = sorted((parse_date(first), parse_date(second)), key=lambda d: d.date)
    years = b.date.year - a.date.year
    if "year" not in (a.precision, b.precision) and (b.date.month, b.date.day) < (a.date.month, a.date.day):
        years -= 1
    return years


def days_between(first: str, second: str) -> int:
    """Days from the earlier date to the later one; both need a day."""
    a, b = parse_date(first), parse_date(second)
    for item in (a, b):
        if item.precision != "day":
            raise ToolError(f"{item.text!r} has no day: days between needs full dates")
    return abs((b.date - a.date).days)
