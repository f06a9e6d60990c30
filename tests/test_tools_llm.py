"""The LLM brain's tool calling (``bind_tools``) against a real local server speaking the OpenAI
protocol: the model's calls run through the registry, the results go into the answer request, the trace
names them and counts the tokens; a server without tool support is asked once, then the answer is
written without tools."""

from __future__ import annotations

import json

import pytest

from graph.builder import build_graph
from graph.run import ask
from tests.graph_fixtures import llm_context_over, university_chunks
from tests.openai_server import (
    http_error,
    openai_server,
    plausible_reply,
    reply,
    step_of,
    tool_call,
    user_text,
)


@pytest.fixture
def llm_context(settings, embedder, openai_server):
    with llm_context_over(university_chunks(), settings, embedder, openai_server.base_url) as context:
        yield context


def responder(tools_action, answers: list[str]):
    def respond(body):
        step = step_of(body)
        if step == "tools":
            assert [t["function"]["name"] for t in body["tools"]] == [
                "calculator",
                "date_diff",
                "unit_convert",
            ]
            return tools_action
        if step == "answer":
            answers.append(user_text(body))
        return plausible_reply(body)

    return respond


def generate_event(result):
    (entry,) = [e for e in result.trace if e.node == "generate"]
    return entry


@pytest.mark.parametrize(
    ("question", "args"),
    [
        ("How many years after Harvard was Yale founded?", {"start": "1636", "end": "1701", "unit": "years"}),
        ("哈佛大学和耶鲁大学的建校时间相差多少年？", {"start": "1636年", "end": "1701年", "unit": "年"}),
    ],
)
def test_model_tool_calls_run_through_the_registry(llm_context, openai_server, question, args):
    answers: list[str] = []
    openai_server.responder = responder(tool_call("date_diff", args), answers)
    result = ask(build_graph(), question, context=llm_context, mode="hybrid")
    generate = generate_event(result)
    assert generate.detail.startswith("date_diff: ") and "= 65 years" in generate.detail
    assert generate.counts["tool_calls"] == 1 and generate.model_calls == 2  # tools round + answer
    assert "Computed with tools" in answers[-1] and "= 65 years" in answers[-1]
    assert generate.tokens_in > 0 and generate.tokens_out > 0


def test_bad_tool_arguments_are_dropped_and_questions_without_computation_skip_the_round(
    llm_context, openai_server
):
    answers: list[str] = []
    openai_server.responder = responder(
        tool_call("date_diff", {"start": "yesterday", "end": "today"}), answers
    )
    result = ask(
        build_graph(), "How many years after Harvard was Yale founded?", context=llm_context, mode="hybrid"
    )
    assert generate_event(result).counts["tool_calls"] == 0 and "Computed with tools" not in answers[-1]
    before = len(openai_server.requests)
    ask(build_graph(), "Where is Yale University?", context=llm_context, mode="hybrid")
    steps = [step_of(body) for body in openai_server.requests[before:]]
    assert "tools" not in steps and "answer" in steps


def test_a_server_without_tool_support_is_asked_once(llm_context, openai_server):
    answers: list[str] = []
    openai_server.responder = responder(
        http_error(400, "tools are not supported", retry_after_ms=None), answers
    )
    for _ in range(2):
        result = ask(
            build_graph(),
            "How many years after Harvard was Yale founded?",
            context=llm_context,
            mode="hybrid",
        )
        assert result.answer and generate_event(result).counts["tool_calls"] == 0
    steps = [step_of(body) for body in openai_server.requests]
    assert steps.count("tools") == 1 and steps.count("answer") == 2
    json.dumps([e.model_dump(mode="json") for e in result.trace])  # the trace stays plain data
