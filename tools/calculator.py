"""A safe calculator: arithmetic expressions parsed with ``ast`` and evaluated node by node, never ``eval``.

Only numbers, + - * / // % **, parentheses and a few named functions are accepted; anything else (names,
attributes, calls to other functions, huge powers) is a ``ToolError`` with a one-line reason.
"""

from __future__ import annotations

import ast
import math
import operator
import re
from collections.abc import Callable

from tools.errors import ToolError

MAX_EXPONENT = 1000
MAX_CHARS = 500

_BINARY: dict[type, Callable[[float, float], float]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_UNARY: dict[type, Callable[[float], float]] = {ast.UAdd: operator.pos, ast.USub: operator.neg}
_FUNCTIONS: dict[str, Callable[..., float]] = {
    "abs": abs,
    "round": round,
    "min": min,
    "max": max,
    "sqrt": math.sqrt,
    "log": math.log,
    "log10": math.log10,
    "exp": math.exp,
    "sum": lambda *values: math.fsum(values),
    "mean": lambda *values: math.fsum(values) / len(values),
}
# Symbols people (and Chinese text) write for the same operators.
_SYMBOLS = str.maketrans(
    {"×": "*", "÷": "/", "（": "(", "）": ")", "－": "-", "＋": "+", "＊": "*", "／": "/", "^": "**"}
)
_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}\b)")
_PERCENT = re.compile(r"(\d+(?:\.\d+)?)%")


def normalise_expression(expression: str) -> str:
    """Full-width digits and operators, × ÷ ^, thousands separators and n% written as Python arithmetic."""
    text = expression.translate(_SYMBOLS)
    text = "".join(chr(ord(ch) - 0xFEE0) if "０" <= ch <= "９" or ch == "．" else ch for ch in text)
    text = _THOUSANDS.sub("", text)
    return _PERCENT.sub(r"(\1/100)", text).strip().rstrip("=").strip()


def calculate(expression: str) -> float | int:
    """The value of an arithmetic expression; ints stay ints when the result is whole."""
    text = normalise_expression(expression)
    if not text:
        raise ToolError("empty expression")
    if len(text) > MAX_CHARS:
        raise ToolError(f"expression longer than {MAX_CHARS} characters")
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError:
        raise ToolError(f"not an arithmetic expression: {expression!r}") from None
    try:
        value = _evaluate(tree.body)
    except ZeroDivisionError:
        raise ToolError("division by zero") from None
    except (OverflowError, ValueError) as exc:
        raise ToolError(f"cannot compute {expression!r}: {exc}") from None
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return int(value)
    return value


def _evaluate(node: ast.AST) -> float:
    if (
        isinstance(node, ast.Constant)
        and isinstance(node.value, int | float)
        and not isinstance(node.value, bool)
    ):
        return node.value
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _evaluate(node.left), _evaluate(node.right)
        if isinstance(node.op, ast.Pow) and abs(right) > MAX_EXPONENT:
            raise ToolError(f"exponent {right} is larger than {MAX_EXPONENT}")
        return _BINARY[type(node.op)](left, right)
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _UNARY[type(node.op)](_evaluate(node.operand))
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in _FUNCTIONS
        and not node.keywords
    ):
        return _FUNCTIONS[node.func.id](*(_evaluate(arg) for arg in node.args))
    raise ToolError(f"not allowed in a calculation: {ast.unparse(node)!r}")


def format_number(value: float | int) -> str:
    """A result as people write it: whole numbers without a decimal point, others to 6 significant digits."""
    if isinstance(value, int):
        return str(value)
    return f"{value:.6g}"
