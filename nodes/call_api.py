"""call_api: answer a question from a configured HTTP API (AGENTIC_RAG_TOOLS_FILE), cited by URL and time.

analyze_query routes here when the question contains a trigger word of a configured tool (the tools
file declares them: data, not code). With an LLM the model picks the tool and fills its parameters
through tool calling; offline, or when the model makes no usable call, the triggered tool's own
parameter data reads them from the question. A failed call (timeout, too large, an HTTP error, a host
not configured) is said plainly; a question no tool can be called for goes on to passage search.
"""

from __future__ import annotations

import hashlib
import time
from typing import Any

from langgraph.runtime import Runtime

from core.schemas import Citation
from core.text import detect_language
from core.trace import Decision
from nodes.common import ctx, event, question_of
from nodes.context import AgentContext
from nodes.state import AgentState
from providers.api_tools import ApiResponse, ApiTools, ToolError


def api_route_reason(question: str, tools: ApiTools | None) -> str:
    """Why the question goes to a configured API, or "" (no tool's trigger word is in it)."""
    if tools is None:
        return ""
    fired = tools.triggered(question)
    if not fired:
        return ""
    return "api: " + ", ".join(f"{tool.name} (trigger {word!r})" for tool, word in fired)


def _planned_calls(
    question: str, tools: ApiTools, context: AgentContext
) -> tuple[list[tuple[str, dict]], str]:
    """(tool, args) calls and who chose them: the model's calls to configured tools, else the rules."""
    if context.brain.choose_api is not None:
        calls = context.brain.choose_api(question, tools.langchain_tools())
        known = {t.name for t in tools.tools}
        chosen = [(c["name"], dict(c.get("args") or {})) for c in calls if c.get("name") in known]
        if chosen:
            return chosen[:1], "model"
    for tool, _ in tools.triggered(question):
        args = tool.read_args(question)
        if args is not None:
            return [(tool.name, args)], "rules"
    return [], ""


def api_answer(question: str, response: ApiResponse, shown: str) -> str:
    zh = detect_language(question) == "zh"
    if zh:
        return f"根据 {response.tool} 接口（{response.fetched_at} 获取）：{shown}[1]。"
    return f"According to the {response.tool} API (fetched {response.fetched_at}): {shown} [1]."


def call_api(state: AgentState, runtime: Runtime[AgentContext]) -> dict[str, Any]:
    started = time.perf_counter()
    context = ctx(runtime)
    question = question_of(state)
    tools: ApiTools | None = context.api_tools
    calls, chooser = _planned_calls(question, tools, context) if tools is not None else ([], "")
    if not calls or tools is None:
        return {
            "strategy": "hybrid",
            "trace": [
                event("call_api", started, context, Decision.SKIPPED, "no API call: searching passages")
            ],
        }
    name, args = calls[0]
    zh = detect_language(question) == "zh"
    try:
        response = tools.call(name, args)
    except ToolError as exc:
        answer = f"接口调用失败：{exc}。" if zh else f"The API call failed: {exc}."
        return {
            "answer": answer,
            "citations": [],
            "passages": [],
            "insufficient": True,
            "stop_reason": "api_error",
            "trace": [
                event("call_api", started, context, Decision.INSUFFICIENT, f"{chooser} call {name}: {exc}")
            ],
        }
    tool = tools.get(name)
    digest = hashlib.sha256(f"{response.url}\n{response.fetched_at}".encode()).hexdigest()[:12]
    citation = Citation(
        number=1,
        chunk_id=f"api:{digest}",
        source=response.url,
        heading=f"API {name} · {response.fetched_at}",
        snippet=f"GET {response.url} at {response.fetched_at}",
    )
    return {
        "answer": api_answer(question, response, response.shown(tool.show)),
        "citations": [citation],
        "passages": [],
        "insufficient": False,
        "stop_reason": "api",
        "trace": [
            event(
                "call_api",
                started,
                context,
                Decision.ANSWERED,
                f"{chooser} call {name}: GET {response.url} ({response.status})",
                query=response.url,
            )
        ],
    }


def route_after_api(state: AgentState) -> str:
    """An answer (or a plainly said failure) goes to the final message; no call goes to passage search."""
    return "verify" if state.get("answer") else "retrieve_hybrid"
