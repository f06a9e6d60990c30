"""A bounded LLM path, against real endpoints on 127.0.0.1: a refused connection, a server that never
answers, a 429 then success, and 500 forever. Requests are counted; no test asserts a duration."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from graph.builder import build_graph
from graph.run import ask
from ingestion.indexing import index_chunks
from nodes.context import AgentContext
from providers.brain import make_brain, offline_brain
from retrievers.factory import build_retrievers
from retrievers.index import open_index
from tests.graph_fixtures import graph_corpus
from tests.openai_server import hang, http_error, openai_server, plausible_reply, refused_base_url, step_of

__all__ = ["openai_server"]  # the fixture is used by name

ROOT = Path(__file__).resolve().parent.parent
QUESTIONS = ["What does error code E-4711 mean?", "混合检索用什么算法合并结果？"]


@pytest.fixture
def contexts(settings, embedder):
    """``build(base_url, **settings)`` -> (LLM context, offline context) over the same real index."""
    index_chunks(graph_corpus(), settings, embedder, index_dir=settings.index_dir, progress=False)
    opened = []

    def build(base_url: str, **overrides) -> tuple[AgentContext, AgentContext]:
        current = settings.model_copy(
            update={"openai_base_url": base_url, "openai_api_key": "sk-test", **overrides}
        )
        index = open_index(current.index_dir)
        opened.append(index)
        retrievers = build_retrievers(index, current, embedder)
        llm = AgentContext(settings=current, retrievers=retrievers, brain=make_brain(current))
        offline = AgentContext(settings=current, retrievers=retrievers, brain=offline_brain())
        return llm, offline

    yield build
    for index in opened:
        index.close()


@pytest.mark.parametrize("question", QUESTIONS)
def test_refused_connection_switches_to_offline_at_once_with_one_warning(contexts, question):
    llm, offline = contexts(refused_base_url())
    result = ask(build_graph(), question, context=llm)
    expected = ask(build_graph(), question, context=offline)
    assert result.answer == expected.answer
    [warning] = result.warnings
    assert "cannot reach the LLM endpoint" in warning and "offline brain" in warning
    assert result.model_calls == 1  # one refused request; every later step skips the model
    reasons = [e.fallback_reason for e in result.trace if e.fallback_reason]
    assert "cannot reach" in reasons[0]
    assert len(reasons) > 1 and all("LLM off for this question" in r for r in reasons[1:])


def test_a_server_that_never_answers_ends_by_the_deadline(contexts, openai_server):
    openai_server.responder = lambda body: hang(30)
    llm, offline = contexts(openai_server.base_url, llm_deadline_s=1.0, llm_timeout_s=60.0)
    question = QUESTIONS[0]
    result = ask(build_graph(), question, context=llm)
    assert result.answer == ask(build_graph(), question, context=offline).answer
    [warning] = result.warnings
    assert "AGENTIC_RAG_LLM_DEADLINE_S" in warning
    assert len(openai_server.requests) == 1  # the step waiting at the deadline; none after it


def test_rate_limit_then_success_is_retried_and_answered_by_the_model(contexts, openai_server):
    openai_server.script(http_error(429, "slow down"))
    openai_server.responder = plausible_reply
    llm, _ = contexts(openai_server.base_url, llm_max_retries=2)
    result = ask(build_graph(), QUESTIONS[1], context=llm)
    assert result.warnings == []
    assert not [e for e in result.trace if e.fallback_reason]
    assert openai_server.steps()[:2] == [openai_server.steps()[0]] * 2  # the 429'd step asked twice


def test_server_errors_forever_are_retried_within_the_budget_then_offline(contexts, openai_server):
    openai_server.responder = lambda body: http_error(500, "upstream crashed")
    llm, offline = contexts(openai_server.base_url, llm_max_retries=2)
    question = QUESTIONS[0]
    result = ask(build_graph(), question, context=llm)
    assert result.answer == ask(build_graph(), question, context=offline).answer
    by_step: dict[str, int] = {}
    for body in openai_server.requests:
        by_step[step_of(body)] = by_step.get(step_of(body), 0) + 1
    assert set(by_step.values()) == {3}  # each step: first try + 2 retries, then the offline role
    assert all("transient" in e.fallback_reason for e in result.trace if e.fallback_reason)


def test_ask_command_prints_one_warning_and_lists_it_in_json(settings, embedder, tmp_path):
    index_chunks(graph_corpus(), settings, embedder, index_dir=settings.index_dir, progress=False)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENTIC_RAG_", "OPENAI_"))}
    env.update(
        AGENTIC_RAG_INDEX_DIR=str(settings.index_dir),
        AGENTIC_RAG_EMBEDDER="use-multilingual",
        AGENTIC_RAG_RERANKER="lexical",
        OPENAI_BASE_URL=refused_base_url(),
        OPENAI_API_KEY="sk-test",
        PYTHONPATH=str(ROOT),
    )
    for command in (["ask", QUESTIONS[1], "--json"], ["ask", QUESTIONS[1]]):
        done = subprocess.run(
            [sys.executable, str(ROOT / "main.py"), *command],
            env=env,
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, done.stderr
        warnings = [line for line in done.stderr.splitlines() if line.startswith("warning:")]
        assert len(warnings) == 1 and "cannot reach the LLM endpoint" in warnings[0]
        if "--json" in command:
            assert len(json.loads(done.stdout)["warnings"]) == 1


def test_session_checks_the_endpoint_once_and_warns_once(settings, embedder, tmp_path):
    index_chunks(graph_corpus(), settings, embedder, index_dir=settings.index_dir, progress=False)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENTIC_RAG_", "OPENAI_"))}
    env.update(
        AGENTIC_RAG_INDEX_DIR=str(settings.index_dir),
        AGENTIC_RAG_CHECKPOINT_DB=str(tmp_path / "cp.sqlite"),
        AGENTIC_RAG_EMBEDDER="use-multilingual",
        AGENTIC_RAG_RERANKER="lexical",
        OPENAI_BASE_URL=refused_base_url(),
        OPENAI_API_KEY="sk-test",
        PYTHONPATH=str(ROOT),
    )
    done = subprocess.run(
        [sys.executable, str(ROOT / "main.py")],
        input="\n".join(QUESTIONS) + "\n",
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    warnings = [line for line in done.stderr.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1 and "offline brain" in warnings[0]
    assert done.stdout.count("[1]") >= 2  # both questions answered, with citations
