"""Compact requests for small local models (issue 22) through the whole graph, against a real local
server speaking the OpenAI protocol: every request after the analysis repeats the writer's prompt from
its first token, so a llama.cpp server (which keeps the previous request's processed tokens) reads only
what differs; a computation is planned by the offline rules rather than in a tool-calling round, whose
own system prompt and tools would break that chain."""

from __future__ import annotations

import pytest

from core.chunks import Chunk
from graph.builder import build_graph
from graph.run import ask
from ingestion.indexing import index_chunks
from nodes.context import AgentContext
from providers import prompts
from providers.brain import make_brain
from retrievers.factory import build_retrievers
from retrievers.index import open_index
from tests.openai_server import openai_server, plausible_reply, step_of, system_text, user_text

__all__ = ["openai_server"]

DOCS = [
    (
        "harvard",
        "Harvard University",
        "Harvard University was founded in 1636 in Cambridge, Massachusetts. It is the oldest institution "
        "of higher learning in the United States. Its library is the largest academic library in the world.",
    ),
    (
        "yale",
        "Yale University",
        "Yale University was established in 1701 in New Haven, Connecticut. It is the third-oldest "
        "university in the country. Its motto is Lux et veritas.",
    ),
    (
        "yale-zh",
        "耶鲁大学",
        "耶鲁大学成立于1701年，位于康涅狄格州纽黑文。耶鲁是美国第三古老的大学。它的校训是光明与真知。",
    ),
    (
        "harvard-zh",
        "哈佛大学",
        "哈佛大学创建于1636年，是美国历史最悠久的高等学府。哈佛的图书馆是世界上最大的学术图书馆。",
    ),
]


@pytest.fixture
def compact_context(settings, embedder, openai_server):
    chunks = [Chunk(id=cid, text=text, source=f"{cid}.md", title=title) for cid, title, text in DOCS]
    index_chunks(chunks, settings, embedder, index_dir=settings.index_dir, progress=False)
    current = settings.model_copy(
        update={
            "openai_base_url": openai_server.base_url,
            "openai_api_key": "sk-test",
            "llm_max_retries": 0,
            "llm_compact": "on",
        }
    )
    index = open_index(current.index_dir)
    openai_server.responder = plausible_reply
    yield AgentContext(
        settings=current,
        retrievers=build_retrievers(index, current, embedder),
        brain=make_brain(current, embedder),
    )
    index.close()


def asked(openai_server, since: int = 0) -> list[tuple[str | None, str]]:
    return [(step_of(body), user_text(body)) for body in openai_server.requests[since:]]


@pytest.mark.parametrize("question", ["耶鲁大学的校训是什么？", "What is Yale's motto?"])
def test_every_compact_request_repeats_the_writers_prompt_from_its_first_token(
    compact_context, openai_server, question
):
    result = ask(build_graph(), question, context=compact_context)
    requests = asked(openai_server)
    steps = [step for step, _ in requests]
    assert steps[:3] == ["analyze", "judge", "answer"] and result.answer
    assert {system_text(body) for body in openai_server.requests} == {prompts.ANSWER_SYSTEM}
    [judge] = [text for step, text in requests if step == "judge"]
    [answer] = [text for step, text in requests if step == "answer"]
    assert judge.startswith(answer)  # the judge was shown exactly the passages the writer reads
    for step, text in requests[3:]:  # the support check after it: the same passages block first
        assert step == "check_support" and text.startswith(answer.rsplit("\n\nQuestion:", 1)[0])


@pytest.mark.parametrize(
    "question", ["哈佛大学和耶鲁大学的建校时间相差多少年？", "How many years after Harvard was Yale founded?"]
)
def test_a_compact_brain_plans_computations_by_the_rules_without_a_tool_round(
    compact_context, openai_server, question
):
    result = ask(build_graph(), question, context=compact_context)
    steps = [step for step, _ in asked(openai_server)]
    assert "tools" not in steps and not any(body.get("tools") for body in openai_server.requests)
    [answer] = [text for step, text in asked(openai_server) if step == "answer"]
    assert "Computed with tools" in answer and "65" in answer.split("Computed with tools", 1)[1]
    [generate] = [e for e in result.trace if e.node == "generate"]
    assert generate.counts["tool_calls"] == 1 and generate.model_calls == 1  # the answer request alone
