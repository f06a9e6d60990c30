"""The graph's Mermaid diagram, generated from the compiled graph, and its place in README.md."""

from __future__ import annotations

import re
from pathlib import Path

START_MARK = "<!-- graph-diagram:start -->"
END_MARK = "<!-- graph-diagram:end -->"


def mermaid() -> str:
    from graph.builder import build_graph

    return build_graph().get_graph().draw_mermaid().strip()


def readme_block() -> str:
    return f"{START_MARK}\n```mermaid\n{mermaid()}\n```\n{END_MARK}"


def update_readme(path: Path) -> bool:
    """Rewrite the diagram block in README; returns True when it changed."""
    text = path.read_text(encoding="utf-8")
    pattern = re.compile(re.escape(START_MARK) + r".*?" + re.escape(END_MARK), re.S)
    if not pattern.search(text):
        raise ValueError(f"{path} has no {START_MARK} ... {END_MARK} block")
    updated = pattern.sub(lambda _: readme_block(), text)
    if updated != text:
        path.write_text(updated, encoding="utf-8")
    return updated != text


if __name__ == "__main__":
    changed = update_readme(Path(__file__).resolve().parent.parent / "README.md")
    print("README diagram updated" if changed else "README diagram already current")
