"""An answer as plain text: the answer followed by its numbered sources (the chat endpoint and MCP)."""

from __future__ import annotations

from typing import Any

from graph.run import AskResult


def cited_text(result: AskResult, citations: list[dict[str, Any]] | None = None) -> str:
    """The answer followed by its numbered sources, the way a chat UI shows it."""
    cites = citations if citations is not None else [c.model_dump() for c in result.citations]
    if not cites:
        return result.answer
    lines = [result.answer, "", "Sources:"]
    for cite in cites:
        heading = f" — {cite['heading']}" if cite.get("heading") else ""
        lines.append(f"[{cite['number']}] {cite['source']}{heading}")
    return "\n".join(lines)
