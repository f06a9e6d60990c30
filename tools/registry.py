"""The tools the agent may call, by name, with pydantic-checked arguments.

Both brains use the same registry: the offline brain calls ``run`` directly, the LLM brain hands
``langchain_tools()`` to ``bind_tools`` and runs the calls the model makes through ``run`` as well, so
a tool behaves the same whoever asks for it. Every result carries a one-line ``shown`` computation the
answer quotes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from tools.calculator import calculate, format_number
from tools.dates import days_between, parse_date, years_between
from tools.errors import ToolError
from tools.units import convert


class CalculatorArgs(BaseModel):
    expression: str = Field(description="arithmetic only, e.g. (1200 - 950) / 950 * 100")


class DateDiffArgs(BaseModel):
    start: str = Field(description="a date: 2019-03-05, 2019年3月5日, March 5, 2019 or a year")
    end: str = Field(description="another date in the same formats")
    unit: str = Field(default="years", description="years or days")


class ConvertArgs(BaseModel):
    value: float
    from_unit: str = Field(description="e.g. km, mile, kg, 斤, °C")
    to_unit: str


class ToolResult(BaseModel):
    """What a tool returned, and the computation as a line the answer can show."""

    name: str
    args: dict[str, Any]
    value: float | int
    shown: str


def _calculator(args: CalculatorArgs) -> ToolResult:
    value = calculate(args.expression)
    return ToolResult(
        name="calculator",
        args=args.model_dump(),
        value=value,
        shown=f"{args.expression} = {format_number(value)}",
    )


def _date_diff(args: DateDiffArgs) -> ToolResult:
    unit = args.unit.strip().lower()
    if unit in ("years", "year", "年"):
        value, label = years_between(args.start, args.end), "years"
    elif unit in ("days", "day", "天", "日"):
        value, label = days_between(args.start, args.end), "days"
    else:
        raise ToolError(f"unit must be years or days, got {args.unit!r}")
    start, end = parse_date(args.start).text, parse_date(args.end).text
    return ToolResult(
        name="date_diff", args=args.model_dump(), value=value, shown=f"{end} - {start} = {value} {label}"
    )


def _convert(args: ConvertArgs) -> ToolResult:
    value = convert(args.value, args.from_unit, args.to_unit)
    rounded = round(value, 6)
    return ToolResult(
        name="unit_convert",
        args=args.model_dump(),
        value=rounded,
        shown=f"{format_number(args.value)} {args.from_unit} = {format_number(rounded)} {args.to_unit}",
    )


class ToolSpec(BaseModel):
    name: str
    description: str
    args: type[BaseModel]
    func: Callable[[Any], ToolResult]


TOOLS: dict[str, ToolSpec] = {
    spec.name: spec
    for spec in (
        ToolSpec(
            name="calculator",
            description="Evaluate an arithmetic expression (+ - * / ** %, sqrt, round, min, max, sum, mean).",
            args=CalculatorArgs,
            func=_calculator,
        ),
        ToolSpec(
            name="date_diff",
            description="Whole years or days between two dates (Chinese or English formats).",
            args=DateDiffArgs,
            func=_date_diff,
        ),
        ToolSpec(
            name="unit_convert",
            description="Convert a quantity between units of length, mass, time, area, volume, speed, temperature.",
            args=ConvertArgs,
            func=_convert,
        ),
    )
}


def run_tool(name: str, args: dict[str, Any]) -> ToolResult:
    """Run one tool call; unknown tools and bad arguments are a ``ToolError`` with a one-line reason."""
    spec = TOOLS.get(name)
    if spec is None:
        raise ToolError(f"unknown tool {name!r} (known: {', '.join(TOOLS)})")
    try:
        parsed = spec.args.model_validate(args)
    except ValidationError as exc:
        first = exc.errors()[0]
        raise ToolError(f"{name}: bad argument {'.'.join(map(str, first['loc']))}: {first['msg']}") from None
    return spec.func(parsed)


def langchain_tools() -> list[Any]:
    """The registry as LangChain tools, for ``chat_model.bind_tools``."""
    from langchain_core.tools import StructuredTool

    def bound(spec: ToolSpec) -> Callable[..., str]:
        return lambda **kwargs: run_tool(spec.name, kwargs).shown

    return [
        StructuredTool.from_function(
            func=bound(spec), name=spec.name, description=spec.description, args_schema=spec.args
        )
        for spec in TOOLS.values()
    ]
