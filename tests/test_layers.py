"""Layers point down: every import of a project module, read from the source with ``ast`` (lazy and
TYPE_CHECKING imports included), goes to the same layer or one below it.

    core, config, tools  <  providers  <  retrievers, memory  <  ingestion  <  evaluators  <  nodes  <  graph  <  cli, server, main
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PROJECT = {
    "core",
    "config",
    "providers",
    "retrievers",
    "memory",
    "ingestion",
    "evaluators",
    "nodes",
    "graph",
    "cli",
    "server",
    "main",
    "tools",
}
# What each package may import besides itself.
ALLOWED: dict[str, set[str]] = {
    "core": set(),
    "config": set(),
    "tools": set(),
    "providers": {"core", "config", "tools"},
    "retrievers": {"core", "config", "providers"},
    "memory": {"core", "config", "providers"},
    "ingestion": {"core", "config", "providers", "retrievers"},
    "evaluators": {"core", "config", "providers", "retrievers", "ingestion"},
    "nodes": {"core", "config", "providers", "retrievers", "memory"},
    "graph": {"core", "config", "providers", "retrievers", "memory", "ingestion", "evaluators", "nodes"},
}
# The offline rules are reached through the brain's roles only.
PRIVATE = {"providers.offline_brain": "providers"}


def imports_of(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.lineno, node.module))
    return found


def source_files() -> list[Path]:
    files = [ROOT / "config.py"]
    for package in ALLOWED:
        if (ROOT / package).is_dir():
            files += sorted((ROOT / package).rglob("*.py"))
    return files


def violations(path: Path) -> list[str]:
    relative = path.relative_to(ROOT)
    layer = relative.parts[0].removesuffix(".py")
    out = []
    for line, module in imports_of(path):
        target = module.split(".")[0]
        if target not in PROJECT or target == layer:
            continue
        if target not in ALLOWED[layer]:
            out.append(f"{relative}:{line} imports {module} ({layer} may not import {target})")
    dotted = ".".join(relative.with_suffix("").parts)
    for private, owner in PRIVATE.items():
        allowed = dotted.startswith((private, f"{owner}.brain"))
        for line, module in imports_of(path):
            if not allowed and (module == private or module.startswith(private + ".")):
                out.append(f"{relative}:{line} imports {module} (only {owner}.brain may)")
    return out


def test_no_module_imports_upward() -> None:
    found = [v for path in source_files() for v in violations(path)]
    assert found == []


def test_core_imports_nothing_of_the_project() -> None:
    for path in sorted((ROOT / "core").rglob("*.py")):
        project = [m for _, m in imports_of(path) if m.split(".")[0] in PROJECT - {"core"}]
        assert project == [], path


@pytest.mark.parametrize(
    ("path", "source", "expected"),
    [
        ("providers/x.py", "from graph.run import ask", "providers may not import graph"),
        ("retrievers/x.py", "def f():\n    from nodes.common import ctx", "retrievers may not import nodes"),
        ("providers/x.py", "from retrievers.index import open_index", "providers may not import retrievers"),
        (
            "nodes/x.py",
            "from providers.offline_brain.decompose import strip_bridge",
            "only providers.brain may",
        ),
        ("core/x.py", "import config", "core may not import config"),
    ],
)
def test_the_checker_catches_an_upward_import(tmp_path, monkeypatch, path, source, expected) -> None:
    """The check itself must be able to fail: an upward import planted in a scratch tree is reported."""
    monkeypatch.setattr(f"{__name__}.ROOT", tmp_path)
    planted = tmp_path / path
    planted.parent.mkdir(parents=True)
    planted.write_text(source + "\n", encoding="utf-8")
    [message] = violations(planted)
    assert expected in message
