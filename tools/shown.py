"""Check a computation an answer shows ("1701 - 1636 = 65 years", "6650 km = 4132.12 miles",
"(1200 - 950) / 950 = 0.263158") by computing it again with the same tools.

The support checker uses this: a shown computation is supported when it recomputes to the result it
states and its operands come from the passages it cites, not by word overlap with them.
"""

from __future__ import annotations

import math
import re

from tools.calculator import calculate
from tools.dates import days_between, find_dates, years_between
from tools.errors import ToolError
from tools.units import convert

LEADS = ("Computed:", "计算：")
_SPAN = re.compile(r"^(?P<left>.+?) - (?P<right>.+)$")
_COUNT = re.compile(r"^(?P<n>\d+)\s*(?P<unit>years|days|年|天)$")
_QUANTITY = re.compile(r"^(?P<value>-?\d[\d,]*(?:\.\d+)?)\s*(?P<unit>\D.*)$")


def strip_lead(sentence: str) -> str | None:
    """The computation after its lead ("Computed:", "计算："), or None when the sentence shows none."""
    text = sentence.strip()
    for lead in LEADS:
        if text.startswith(lead):
            return text[len(lead) :].strip().rstrip("。.").strip()
    return None


def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-4, abs_tol=1e-6)


def recomputes(computation: str) -> bool:
    """Whether ``left = result`` holds when computed again (a date span, a conversion or arithmetic)."""
    left, sep, result = computation.rpartition(" = ")
    if not sep:
        return False
    left, result = left.strip(), result.strip()
    try:
        count, span = _COUNT.match(result), _SPAN.match(left)
        if count and span and len(find_dates(span["left"])) == 1 and len(find_dates(span["right"])) == 1:
            between = years_between if count["unit"] in ("years", "年") else days_between
            return between(span["right"], span["left"]) == int(count["n"])
        source, target = _QUANTITY.match(left), _QUANTITY.match(result)
        if source and target:
            try:
                value = convert(float(source["value"].replace(",", "")), source["unit"], target["unit"])
                return _close(value, float(target["value"].replace(",", "")))
            except ToolError:  # not a conversion ("50 / 200 = 25%"): arithmetic
                pass
        return _close(float(calculate(left)), float(calculate(result)))
    except (ToolError, ValueError):
        return False


def operands(computation: str) -> list[str]:
    """The numbers the left side uses, to look for in the cited passages (commas dropped)."""
    left = computation.rpartition(" = ")[0]
    return [n.replace(",", "") for n in re.findall(r"\d[\d,]*(?:\.\d+)?", left)]
