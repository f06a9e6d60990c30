"""Tools: the safe calculator, date arithmetic and unit conversion, on hand-written zh/en cases."""

from __future__ import annotations

import pytest

from tools import TOOLS, ToolError, langchain_tools, run_tool
from tools.calculator import calculate
from tools.dates import days_between, find_dates, years_between
from tools.units import convert

# ---------------------------------------------------------------------------------------------- calculator


@pytest.mark.parametrize(
    ("expression", "value"),
    [
        ("2023 - 1998", 25),
        ("(1200 - 950) / 950 * 100", pytest.approx(26.315789, rel=1e-6)),
        ("3 × 4 ÷ 2", 6),  # zh/typeset operators
        ("（１２＋８）×３", 60),  # full-width digits and brackets
        ("1,234,567 + 1", 1234568),
        ("2^10", 1024),
        ("15% * 200", 30),
        ("sqrt(16) + round(2.6)", 7),
        ("-7 // 2", -4),
    ],
)
def test_calculator_evaluates_arithmetic(expression: str, value: object) -> None:
    assert calculate(expression) == value


@pytest.mark.parametrize(
    ("expression", "reason"),
    [
        ("__import__('os').system('echo hi')", "not allowed"),
        ("open('x')", "not allowed"),
        ("(1).__class__", "not allowed"),
        ("x + 1", "not allowed"),
        ("9 ** 99999", "exponent"),
        ("1 / 0", "division by zero"),
        ("2 +", "not an arithmetic expression"),
        ("", "empty"),
    ],
)
def test_calculator_refuses_anything_but_arithmetic(expression: str, reason: str) -> None:
    with pytest.raises(ToolError, match=reason):
        calculate(expression)


# ---------------------------------------------------------------------------------------------- dates


def test_dates_found_in_zh_and_en_text_with_their_precision() -> None:
    zh = find_dates("该公司成立于2019年3月5日，2021年6月上市，二〇二三年十二月三十一日退市。")
    assert [(d.date.isoformat(), d.precision) for d in zh] == [
        ("2019-03-05", "day"),
        ("2021-06-01", "month"),
        ("2023-12-31", "day"),
    ]
    en = find_dates("Born on March 5, 2019; moved 7 July 2020; retired in 1998 and again in Oct. 2001.")
    assert [(d.date.isoformat(), d.precision) for d in en] == [
        ("2019-03-05", "day"),
        ("2020-07-07", "day"),
        ("1998-01-01", "year"),
        ("2001-10-01", "month"),
    ]
    (invalid_day,) = find_dates("2019年2月30日")  # no such day: read as the month it names
    assert (invalid_day.date.isoformat(), invalid_day.precision) == ("2019-02-01", "month")


def test_years_and_days_between_dates() -> None:
    assert years_between("1998年", "2023年") == 25
    assert years_between("2019-03-05", "2023年3月4日") == 3  # one day short of four years
    assert years_between("March 5, 2019", "5 March 2023") == 4
    assert days_between("2019年3月5日", "2019-03-15") == 10
    assert days_between("December 31, 2023", "2024/1/1") == 1
    with pytest.raises(ToolError, match="no day"):
        days_between("2019年", "2020年1月1日")
    with pytest.raises(ToolError, match="not a date"):
        years_between("昨天", "today")


# ---------------------------------------------------------------------------------------------- units


def test_unit_conversion_zh_and_en() -> None:
    assert convert(10, "公里", "米") == 10000
    assert convert(1, "mile", "km") == pytest.approx(1.609344)
    assert convert(2, "斤", "公斤") == 1
    assert convert(100, "°C", "华氏度") == pytest.approx(212)
    assert convert(32, "fahrenheit", "celsius") == pytest.approx(0)
    assert convert(15, "亩", "公顷") == pytest.approx(1)
    assert convert(50, "MB", "KB") == 51200  # data sizes in binary multiples
    with pytest.raises(ToolError, match="cannot convert length"):
        convert(1, "km", "kg")
    with pytest.raises(ToolError, match="unknown unit"):
        convert(1, "furlong", "m")


# ---------------------------------------------------------------------------------------------- registry


def test_registry_runs_tools_by_name_and_shows_the_computation() -> None:
    assert run_tool("calculator", {"expression": "2023 - 1998"}).shown == "2023 - 1998 = 25"
    result = run_tool("date_diff", {"start": "1998年", "end": "2023年", "unit": "年"})
    assert (result.value, result.shown) == (25, "2023年 - 1998年 = 25 years")
    assert run_tool("unit_convert", {"value": 5, "from_unit": "km", "to_unit": "mile"}).shown == (
        "5 km = 3.10686 mile"
    )
    with pytest.raises(ToolError, match="unknown tool"):
        run_tool("shell", {"cmd": "ls"})
    with pytest.raises(ToolError, match="bad argument value"):
        run_tool("unit_convert", {"value": "lots", "from_unit": "km", "to_unit": "m"})


def test_langchain_tools_match_the_registry_and_run_through_it() -> None:
    tools = {tool.name: tool for tool in langchain_tools()}
    assert set(tools) == set(TOOLS)
    assert tools["calculator"].invoke({"expression": "6 * 7"}) == "6 * 7 = 42"
    assert "start" in tools["date_diff"].args
