"""The README's graph diagram is generated from the compiled graph and must not drift from the code."""

from __future__ import annotations

from pathlib import Path

from graph.diagram import END_MARK, START_MARK, readme_block

README = Path(__file__).resolve().parent.parent / "README.md"


def test_readme_diagram_matches_the_compiled_graph():
    text = README.read_text(encoding="utf-8")
    start, end = text.find(START_MARK), text.find(END_MARK)
    assert 0 <= start < end, f"README.md lost its {START_MARK} ... {END_MARK} block"
    block = text[start : end + len(END_MARK)]
    assert block == readme_block(), "the graph changed: run `python -m graph.diagram` to refresh README.md"


def test_the_diagram_shows_the_retry_loop_and_every_retrieval_route():
    block = readme_block()
    assert "evaluate -.-> rewrite_query;" in block and "evaluate -.-> compress;" in block
    for node in ("retrieve_vector", "retrieve_keyword", "retrieve_hybrid", "search_sub_query"):
        assert f"rewrite_query -.-> {node};" in block
    for node in ("retrieve_sql", "call_api"):  # the routes beyond passages (issue 26)
        assert f"analyze_query -.-> {node};" in block and f"{node} -.-> verify;" in block
