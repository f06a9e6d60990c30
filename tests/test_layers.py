"""Layers point down: every import of a project module, read from the source with ``ast`` (lazy and
TYPE_CHECKING imports included), goes to the same layer or one below it; and no chain of imports
among the project's modules comes back to where it started.

    core, config, tools                                the vocabulary at the bottom
    providers  <  retrievers, memory  <  ingestion  <  evaluators
    nodes                                              receive an AgentContext, never build one
    graph                                              the state machine: builder, routing, ask()
    app                                                wiring from settings (app.wiring), Studio's graph, shared services
    cli, server, main                                  the programs on top
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
    "app",
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
ALLOWED["app"] = ALLOWED["graph"] | {"graph"}
# The programs on top may use every floor and each other; nothing imports them.
_BELOW_TOP = set(ALLOWED["app"]) | {"app", "tools"}
ALLOWED |= {
    "cli": _BELOW_TOP | {"server"},
    "server": _BELOW_TOP | {"cli"},
    "main": _BELOW_TOP | {"cli", "server"},
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
    files = [ROOT / "config.py", ROOT / "main.py"]
    for package in ALLOWED:
        if (ROOT / package).is_dir():
            files += sorted((ROOT / package).rglob("*.py"))
    return [f for f in files if f.exists()]


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


def module_name(path: Path, root: Path) -> str:
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph(files: list[Path], root: Path) -> dict[str, set[str]]:
    """Module -> the project modules it imports anywhere in its body (late imports included). ``from a
    import b`` points at ``a.b`` when that is a module, else at ``a``; a package's ``__init__`` is not
    counted as imported by its submodules (every package here keeps its ``__init__`` lazy)."""
    modules = {module_name(f, root): f for f in files}
    edges: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                targets = [f"{node.module}.{alias.name}" for alias in node.names]
            else:
                continue
            for target in targets:
                while target and target not in modules:
                    target = target.rpartition(".")[0]
                if target and target != name:
                    edges[name].add(target)
    return edges


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(start: str) -> None:  # iterative: the project's import chains are deep
        work = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    group = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        group.append(member)
                        if member == node:
                            break
                    if len(group) > 1:
                        found.append(sorted(group))
            elif child not in index:
                index[child] = low[child] = len(index)
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(sorted(edges[child]))))
            elif child in on_stack:
                low[node] = min(low[node], index[child])

    for name in sorted(edges):
        if name not in index:
            visit(name)
    return sorted(found)


def test_no_import_cycle_among_the_projects_modules() -> None:
    assert cycles(import_graph(source_files(), ROOT)) == []


def test_the_cycle_finder_catches_a_late_import_back(tmp_path) -> None:
    """A function-level import that closes a loop (the way the ingestion circles were held apart) counts."""
    (tmp_path / "ingestion").mkdir()
    (tmp_path / "ingestion" / "__init__.py").write_text("", encoding="utf-8")
    (tmp_path / "ingestion" / "a.py").write_text("from ingestion.b import g\n", encoding="utf-8")
    (tmp_path / "ingestion" / "b.py").write_text("def g():\n    from ingestion import a\n", encoding="utf-8")
    (tmp_path / "ingestion" / "c.py").write_text("from ingestion.a import g\n", encoding="utf-8")
    files = sorted(tmp_path.rglob("*.py"))
    assert cycles(import_graph(files, tmp_path)) == [["ingestion.a", "ingestion.b"]]
