"""Count the offline brain's lines of logic and of data (issue 20's "lines of logic ≤ 2,500").

Usage:
    python bench/brain_lines.py [--folder providers/offline_brain] [--per-file]

Read with Python's tokenizer, not ``wc``: a code line is a line holding a code token (docstrings and
comment-only lines excluded, a multi-line string or bracket counts every line it spans); docstring lines
are the lines of module/class/function docstrings; data lines are the lines of ``data/*.json``. Also
counted: ``re.compile`` calls, float literals in code (``0.0`` and ``1.0`` listed apart: the ends of the
[0, 1] scales), and module-level numeric constants (``NAME = <number>``), the kind of tuned number the
issue wants in the weights file instead.
"""

from __future__ import annotations

import argparse
import ast
import io
import sys
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SKIP = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER}


def _docstring_lines(tree: ast.AST) -> set[int]:
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            first = node.body[0] if node.body else None
            if (
                isinstance(first, ast.Expr)
                and isinstance(first.value, ast.Constant)
                and isinstance(first.value.value, str)
            ):
                lines.update(range(first.lineno, (first.end_lineno or first.lineno) + 1))
    return lines


def count_file(path: Path) -> dict[str, int]:
    """The figures of one Python file."""
    source = path.read_text(encoding="utf-8")
    tree = ast.parse(source)
    docs = _docstring_lines(tree)
    code: set[int] = set()
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type in SKIP:
            continue
        spanned = set(range(tok.start[0], tok.end[0] + 1))
        if spanned <= docs:
            continue
        code |= spanned
    floats = [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and type(n.value) is float]
    compiles = sum(
        1
        for n in ast.walk(tree)
        if isinstance(n, ast.Call)
        and isinstance(n.func, ast.Attribute)
        and n.func.attr == "compile"
        and isinstance(n.func.value, ast.Name)
        and n.func.value.id == "re"
    )
    constants = sum(
        1
        for n in tree.body
        if isinstance(n, ast.Assign | ast.AnnAssign)
        and isinstance(n.value, ast.Constant)
        and type(n.value.value) in (int, float)
    )
    return {
        "code": len(code),
        "docstring": len(docs),
        "re_compile": compiles,
        "floats": sum(1 for f in floats if f not in (0.0, 1.0)),
        "floats_0_1": sum(1 for f in floats if f in (0.0, 1.0)),
        "module_numbers": constants,
    }


def count(folder: Path) -> tuple[dict[str, int], dict[str, dict[str, int]]]:
    """Totals over ``folder/*.py`` (plus data lines of ``folder/data/*.json``) and the per-file figures."""
    files = {p.name: count_file(p) for p in sorted(folder.glob("*.py"))}
    total = {key: sum(f[key] for f in files.values()) for key in next(iter(files.values()))}
    total["data"] = sum(
        len(p.read_text(encoding="utf-8").splitlines()) for p in sorted(folder.glob("data/*.json"))
    )
    return total, files


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--folder", type=Path, default=ROOT / "providers" / "offline_brain")
    parser.add_argument("--per-file", action="store_true")
    args = parser.parse_args(argv)
    total, files = count(args.folder)
    if args.per_file:
        for name, figures in sorted(files.items(), key=lambda kv: -kv[1]["code"]):
            print(f"{name:22s} " + "  ".join(f"{k}={v}" for k, v in figures.items()))
    print("total: " + "  ".join(f"{k}={v}" for k, v in total.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
