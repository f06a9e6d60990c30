"""docs/api.md names only what exists: every `module.name(params)` in its headings resolves, and each
parameter it lists is one the callable (or pydantic model) takes, in the same order."""

from __future__ import annotations

import importlib
import inspect
import re
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
SIGNATURE = re.compile(r"`([a-z_]+(?:\.[A-Za-z_]+)+)(?:\(([^`]*)\))?`")


def documented() -> list[tuple[str, list[str] | None]]:
    text = (ROOT / "docs" / "api.md").read_text(encoding="utf-8")
    found = []
    for line in text.splitlines():
        if line.startswith("### "):
            for name, params in SIGNATURE.findall(line):
                names = [
                    p.split("=")[0].strip().lstrip("*")
                    for p in params.split(",")
                    if p.strip() not in ("", "*")
                ]
                found.append((name, names if "(" in line else None))
    return found


def resolve(dotted: str) -> Any:
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        for attr in parts[cut:]:
            obj = getattr(obj, attr)
        return obj
    raise LookupError(dotted)


def parameters(obj: Any) -> list[str]:
    if isinstance(obj, type) and hasattr(obj, "model_fields"):
        return list(obj.model_fields)
    return [n for n in inspect.signature(obj).parameters if n != "self"]


def test_the_reference_covers_the_public_entry_points():
    names = {name for name, _ in documented()}
    assert {"app.build_graph", "app.build_context", "app.ask", "config.load_settings"} <= names
    assert {"retrievers.factory.open_retrievers", "retrievers.search.search"} <= names


@pytest.mark.parametrize(("name", "params"), documented(), ids=[n for n, _ in documented()])
def test_every_documented_name_and_parameter_exists(name, params):
    obj = resolve(name)
    if params:
        real = parameters(obj)
        assert [p for p in params if p in real] == params, f"{name}: documented {params}, real {real}"
        assert sorted(params, key=real.index) == params  # same order
