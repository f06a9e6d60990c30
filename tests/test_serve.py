"""`python main.py serve`: the real server in a subprocess on 127.0.0.1, spoken to by real clients
(httpx and the official ``openai`` package), plain and streaming, in English and Chinese."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from config import load_settings
from ingestion.pipeline import ingest_paths
from tests.corpus import index_of_files

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent
TOKEN = "s3cret-token"
DOCS = {
    "hybrid_en.md": (
        "# Hybrid search\n\nHybrid search merges vector search and keyword search with reciprocal rank "
        "fusion (RRF). The fusion constant k is 60.\n\n## Keyword search\n\nKeyword search ranks chunks "
        "with BM25 (k1 = 1.2, b = 0.75) and keeps identifiers such as E-4711 whole.\n"
    ),
    "hnsw_zh.md": (
        "# 向量索引\n\n当分块数量超过二十万时，向量索引会从精确搜索切换为 HNSW 图索引。\n\n"
        "## 性能调优\n\nHNSW 索引的性能问题可以通过调大 ef_search 参数来解决，代价是查询变慢。\n"
    ),
}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Server:
    """`python main.py serve` as a subprocess; stopped (by its own pid) when the test module ends."""

    def __init__(self, index_dir: Path, tmp: Path, *flags: str, **env: str) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        full_env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTIC_RAG_")}
        full_env.update(
            PYTHONPATH=str(ROOT),
            AGENTIC_RAG_INDEX_DIR=str(index_dir),
            AGENTIC_RAG_CHECKPOINT_DB=str(tmp / "checkpoints.sqlite"),
            AGENTIC_RAG_EMBEDDER="use-multilingual",
            AGENTIC_RAG_RERANKER="lexical",
            AGENTIC_RAG_BRAIN="offline",
        )
        full_env.update(env)
        self.log = tmp / "server.log"
        self.proc = subprocess.Popen(
            [sys.executable, str(ROOT / "main.py"), *flags, "serve", "--port", str(self.port)],
            env=full_env,
            cwd=tmp,
            stdout=self.log.open("w"),
            stderr=subprocess.STDOUT,
        )
        self._wait()

    def _wait(self) -> None:
        for _ in range(600):
            if self.proc.poll() is not None:
                raise RuntimeError(f"server exited: {self.log.read_text()}")
            try:
                if httpx.get(self.url + "/healthz", timeout=1).status_code == 200:
                    return
            except httpx.HTTPError:
                time.sleep(0.2)
        raise RuntimeError(f"server did not start: {self.log.read_text()}")

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()


@pytest.fixture(scope="module")
def index_dir(tmp_path_factory, embedder) -> Path:
    return index_of_files(tmp_path_factory, embedder, DOCS)


@pytest.fixture(scope="module")
def server(index_dir, tmp_path_factory) -> Iterator[Server]:
    srv = Server(index_dir, tmp_path_factory.mktemp("serve"))
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def guarded(tmp_path_factory, embedder) -> Iterator[Server]:
    """A server with a bearer token, a 2 KB request limit, strict model names, ``-v`` and an empty index."""
    folder = tmp_path_factory.mktemp("empty_index")
    empty_docs = tmp_path_factory.mktemp("no_docs")
    ingest_paths([empty_docs], load_settings(index_dir=folder), embedder, index_dir=folder, progress=False)
    srv = Server(
        folder,
        tmp_path_factory.mktemp("serve_guarded"),
        "-v",
        AGENTIC_RAG_SERVE_TOKEN=TOKEN,
        AGENTIC_RAG_SERVE_STRICT_MODELS="true",
        AGENTIC_RAG_SERVE_MAX_REQUEST_KB="2",
    )
    yield srv
    srv.stop()


def sse_events(response: httpx.Response) -> list[tuple[str, dict]]:
    events, name = [], "message"
    for line in response.iter_lines():
        if line.startswith("event: "):
            name = line[len("event: ") :]
        elif line.startswith("data: "):
            events.append((name, json.loads(line[len("data: ") :])))
            name = "message"
    return events


# --- health --------------------------------------------------------------------------------------------


def test_health_and_readiness(server):
    assert httpx.get(server.url + "/healthz").json() == {"status": "ok"}
    ready = httpx.get(server.url + "/readyz")
    assert ready.status_code == 200
    assert ready.json()["chunks"] > 0


# --- /v1/ask ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("question", "source"),
    [
        ("What is the fusion constant k of RRF?", "hybrid_en.md"),
        ("HNSW 索引的性能问题怎么解决？", "hnsw_zh.md"),
    ],
)
def test_ask_returns_cited_answer_and_trace(server, question, source):
    response = httpx.post(server.url + "/v1/ask", json={"question": question, "mode": "hybrid"}, timeout=60)
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["answer"]
    assert any(c["source"].endswith(source) for c in body["citations"])
    nodes = [step["node"] for step in body["trace"] if step["node"] != "lookup_cache"]  # the answer cache
    assert nodes[:2] == ["contextualize", "retrieve_hybrid"]
    assert body["mode"] == "hybrid"


def test_ask_streams_steps_then_tokens_then_answer(server):
    question = "HNSW 索引的性能问题怎么解决？"
    with httpx.stream(
        "POST", server.url + "/v1/ask", json={"question": question, "stream": True}, timeout=60
    ) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        events = sse_events(response)
    kinds = [name for name, _ in events]
    assert kinds[0] == "step" and kinds[-1] == "answer"
    assert kinds.index("token") > kinds.index("step")
    steps = [data["node"] for name, data in events if name == "step"]
    assert steps[0] == "contextualize" and "generate" in steps
    answer = events[-1][1]
    assert "".join(data["text"] for name, data in events if name == "token") == answer["answer"]
    assert any(c["source"].endswith("hnsw_zh.md") for c in answer["citations"])


def test_threads_keep_a_conversation_and_can_be_deleted(server):
    thread = "conv-1"
    for question in ("What does keyword search use?", "关键词检索的参数 b 是多少？"):
        response = httpx.post(
            server.url + "/v1/ask", json={"question": question, "thread_id": thread}, timeout=60
        )
        assert response.status_code == 200 and response.json()["thread_id"] == thread
    listed = httpx.get(server.url + "/v1/threads").json()
    assert thread in [t["thread_id"] for t in listed]
    shown = httpx.get(server.url + f"/v1/threads/{thread}").json()
    assert [role for role, _ in shown["turns"]] == ["user", "assistant", "user", "assistant"]
    assert httpx.delete(server.url + f"/v1/threads/{thread}").json() == {"deleted": thread}
    gone = httpx.get(server.url + f"/v1/threads/{thread}")
    assert gone.status_code == 404 and gone.json()["error"]["code"] == "thread_not_found"
    assert httpx.delete(server.url + f"/v1/threads/{thread}").status_code == 404


def test_a_checkpoint_database_deleted_under_the_server_is_one_clear_error(index_dir, tmp_path):
    srv = Server(index_dir, tmp_path)
    try:
        first = httpx.post(
            srv.url + "/v1/ask",
            json={"question": "How does hybrid search merge results?", "thread_id": "t"},
            timeout=60,
        )
        assert first.status_code == 200
        for leftover in tmp_path.glob("checkpoints.sqlite*"):
            if leftover.is_file():
                leftover.unlink()  # the store (and its WAL) removed while the server runs

        gone = httpx.post(
            srv.url + "/v1/ask", json={"question": "HNSW 的性能问题怎么解决？", "thread_id": "t"}, timeout=60
        )
        error = gone.json()["error"]
        assert gone.status_code == 503 and error["code"] == "checkpoint_store_unavailable"
        assert "was deleted or replaced" in error["message"] and "restart the server" in error["message"]
        one_off = httpx.post(srv.url + "/v1/ask", json={"question": "HNSW 的性能问题怎么解决？"}, timeout=60)
        assert one_off.status_code == 200 and "ef_search" in one_off.json()["answer"]
    finally:
        srv.stop()


def test_bad_requests_get_json_errors(server):
    unknown_mode = httpx.post(server.url + "/v1/ask", json={"question": "x", "mode": "magic"})
    assert unknown_mode.status_code == 422
    assert "mode" in unknown_mode.json()["error"]["message"]
    not_json = httpx.post(
        server.url + "/v1/ask", content=b"{not json", headers={"content-type": "application/json"}
    )
    assert not_json.status_code == 422 and not_json.json()["error"]["code"] == "invalid_request"
    too_long = httpx.post(server.url + "/v1/ask", json={"question": "问" * 5000}, timeout=60)
    assert (
        too_long.status_code == 400
        and "AGENTIC_RAG_MAX_QUESTION_CHARS" in too_long.json()["error"]["message"]
    )
    bad_filter = httpx.post(server.url + "/v1/ask", json={"question": "x", "filters": {"after": "soon"}})
    assert bad_filter.status_code == 400 and bad_filter.json()["error"]["message"]
    missing = httpx.get(server.url + "/v1/nothing-here")
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "not_found"


# --- OpenAI-compatible, with the official client ---------------------------------------------------------


def client(server: Server, key: str = "unused") -> openai.OpenAI:
    return openai.OpenAI(base_url=server.url + "/v1", api_key=key, timeout=60, max_retries=0)


def test_models_list_every_mode(server):
    ids = [model.id for model in client(server).models.list()]
    assert ids[0] == "agentic-rag"
    assert {"agentic-rag-hybrid", "agentic-rag-keyword", "agentic-rag-agentic"} <= set(ids)


@pytest.mark.parametrize(
    ("question", "source"),
    [
        ("How does hybrid search merge results?", "hybrid_en.md"),
        ("向量索引什么时候切换为 HNSW？", "hnsw_zh.md"),
    ],
)
def test_chat_completion_plain_and_streaming_agree(server, question, source):
    messages = [{"role": "system", "content": "be brief"}, {"role": "user", "content": question}]
    plain = client(server).chat.completions.create(model="agentic-rag-hybrid", messages=messages)
    content = plain.choices[0].message.content
    assert plain.choices[0].finish_reason == "stop"
    assert "Sources:" in content and source in content and "[" in content
    assert any(c["source"].endswith(source) for c in plain.model_extra["citations"])

    stream = client(server).chat.completions.create(
        model="agentic-rag-hybrid", messages=messages, stream=True
    )
    chunks = list(stream)
    streamed = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert streamed == content
    assert chunks[-1].choices[0].finish_reason == "stop"


def test_chat_uses_earlier_turns_as_history(server):
    messages = [
        {"role": "user", "content": "What does keyword search use?"},
        {"role": "assistant", "content": "Keyword search ranks chunks with BM25 [1]."},
        {"role": "user", "content": "What is its parameter b?"},
    ]
    reply = client(server).chat.completions.create(model="agentic-rag-keyword", messages=messages)
    assert "0.75" in reply.choices[0].message.content


def test_chat_errors_reach_the_openai_client(server, guarded):
    with pytest.raises(openai.NotFoundError) as unknown:  # AGENTIC_RAG_SERVE_STRICT_MODELS=true
        client(guarded, key=TOKEN).chat.completions.create(
            model="gpt-9", messages=[{"role": "user", "content": "hi"}]
        )
    assert "GET /v1/models" in str(unknown.value)
    with pytest.raises(openai.BadRequestError):
        client(server).chat.completions.create(
            model="agentic-rag", messages=[{"role": "assistant", "content": "no question"}]
        )


# --- auth, limits, empty index ---------------------------------------------------------------------------


def test_bearer_token_is_required_except_for_probes(guarded):
    assert httpx.get(guarded.url + "/healthz").status_code == 200
    assert httpx.get(guarded.url + "/v1/models").status_code == 401
    wrong = httpx.get(guarded.url + "/v1/models", headers={"authorization": "Bearer nope"})
    assert wrong.status_code == 401 and wrong.json()["error"]["code"] == "invalid_api_key"
    with pytest.raises(openai.AuthenticationError):
        client(guarded, key="nope").models.list()
    assert next(m.id for m in client(guarded, key=TOKEN).models.list()) == "agentic-rag"


def test_request_size_limit(guarded):
    headers = {"authorization": f"Bearer {TOKEN}"}
    big = httpx.post(guarded.url + "/v1/ask", json={"question": "x" * 3000}, headers=headers)
    assert big.status_code == 413 and big.json()["error"]["code"] == "request_too_large"

    def chunked():
        yield b'{"question": "'
        yield b"y" * 3000
        yield b'"}'

    streamed = httpx.post(guarded.url + "/v1/ask", content=chunked(), headers=headers)
    assert streamed.status_code == 413


def test_empty_index_says_run_ingest_everywhere(guarded):
    headers = {"authorization": f"Bearer {TOKEN}"}
    assert httpx.get(guarded.url + "/readyz").status_code == 401  # every route but /healthz needs a key
    ready = httpx.get(guarded.url + "/readyz", headers=headers)
    assert ready.status_code == 503 and "the index is empty: run ingest" in ready.json()["error"]["message"]
    for stream in (False, True):
        asked = httpx.post(
            guarded.url + "/v1/ask", json={"question": "什么是 HNSW？", "stream": stream}, headers=headers
        )
        assert asked.status_code == 503 and asked.json()["error"]["code"] == "index_empty"
    with pytest.raises(openai.InternalServerError) as chat:
        client(guarded, key=TOKEN).chat.completions.create(
            model="agentic-rag", messages=[{"role": "user", "content": "what is HNSW?"}]
        )
    assert "the index is empty: run ingest" in str(chat.value)


def test_the_readme_curl_example_gets_a_cited_answer(server):
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    curl = next(block for block in re.findall(r"```bash\n(.*?)```", readme, re.S) if "curl" in block)
    assert "/v1/chat/completions" in curl
    body = json.loads(re.search(r"-d '(.*?)'", curl, re.S).group(1))
    reply = httpx.post(server.url + "/v1/chat/completions", json=body, timeout=60)
    assert reply.status_code == 200
    content = reply.json()["choices"][0]["message"]["content"]
    assert "Sources:" in content and "hybrid_en.md" in content


def test_concurrent_requests_share_one_engine_and_one_thread_takes_turns(server):
    from concurrent.futures import ThreadPoolExecutor

    questions = [
        "What is the fusion constant k?",
        "HNSW 索引的性能问题怎么解决？",
        "What does BM25 use for b?",
    ]

    def ask(n: int) -> httpx.Response:
        body = {"question": questions[n % 3], "mode": "hybrid"}
        if n < 3:
            body["thread_id"] = "shared-thread"  # three turns on one conversation at once
        return httpx.post(server.url + "/v1/ask", json=body, timeout=120)

    with ThreadPoolExecutor(max_workers=8) as pool:
        replies = list(pool.map(ask, range(8)))
    assert [r.status_code for r in replies] == [200] * 8
    assert all(r.json()["citations"] for r in replies)
    turns = httpx.get(server.url + "/v1/threads/shared-thread").json()["turns"]
    assert [role for role, _ in turns] == ["user", "assistant"] * 3


# --- with a language model: the answer is sent once the independent check has passed it -----------------


def llm_server_for(index_dir: Path, tmp: Path, responder) -> tuple[Server, Any]:
    from tests.openai_server import ScriptedOpenAIServer

    model = ScriptedOpenAIServer(responder=responder).start()
    srv = Server(
        index_dir,
        tmp,
        AGENTIC_RAG_BRAIN="llm",
        AGENTIC_RAG_ANSWER_CACHE="false",  # every question reaches the model: its answer is what is tested
        OPENAI_BASE_URL=model.base_url,
        OPENAI_API_KEY="sk-test-dummy",
    )
    return srv, model


@pytest.fixture(scope="module")
def llm_server(index_dir, tmp_path_factory) -> Iterator[Server]:
    from tests.openai_server import plausible_reply

    srv, model = llm_server_for(index_dir, tmp_path_factory.mktemp("serve_llm"), plausible_reply)
    yield srv
    srv.stop()
    model.stop()


@pytest.fixture(scope="module")
def obeying_server(tmp_path_factory, embedder) -> Iterator[Server]:
    """A model that obeys the instruction planted in the handbooks and answers "PWNED [1] ."."""
    from tests.openai_server import by_step, plausible_reply, reply
    from tests.test_reliability import PLANTED

    index = index_of_files(
        tmp_path_factory, embedder, {f"handbook_{lang}.md": doc for lang, (doc, _, _) in PLANTED.items()}
    )
    obey = by_step(
        {step: plausible_reply for step in ("analyze", "judge", "rewrite", "compress", "check_support")}
        | {"answer": reply("PWNED [1] .")}
    )
    srv, model = llm_server_for(index, tmp_path_factory.mktemp("serve_obey"), obey)
    yield srv
    srv.stop()
    model.stop()


def test_llm_answer_is_sent_once_checked(llm_server):
    with httpx.stream(
        "POST",
        llm_server.url + "/v1/ask",
        json={"question": "What is the fusion constant k?", "mode": "hybrid", "stream": True},
        timeout=120,
    ) as response:
        events = sse_events(response)
    tokens = [(i, data["text"]) for i, (name, data) in enumerate(events) if name == "token"]
    answer = events[-1][1]
    assert events[-1][0] == "answer" and answer["citations"]
    assert [text for _, text in tokens] == [answer["answer"]]  # whole, as checked
    generate_done = next(
        i for i, (name, data) in enumerate(events) if name == "step" and data["node"] == "generate"
    )
    verify_done = next(
        i for i, (name, data) in enumerate(events) if name == "step" and data["node"] == "verify"
    )
    assert generate_done < tokens[0][0] < verify_done  # after the check, before verify's step

    stream = client(llm_server).chat.completions.create(
        model="agentic-rag-hybrid",
        messages=[{"role": "user", "content": "What is the fusion constant k?"}],
        stream=True,
    )
    text = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
    assert text.startswith(answer["answer"]) and "Sources:" in text


@pytest.mark.parametrize("language", ["en", "zh"])
def test_a_rejected_llm_answer_is_never_streamed(obeying_server, language):
    from tests.test_reliability import PLANTED

    _, question, fact = PLANTED[language]
    with httpx.stream(
        "POST",
        obeying_server.url + "/v1/ask",
        json={"question": question, "mode": "hybrid", "stream": True},
        timeout=120,
    ) as response:
        events = sse_events(response)
    answer = events[-1][1]
    assert events[-1][0] == "answer" and fact in answer["answer"]
    tokens = "".join(data["text"] for name, data in events if name == "token")
    assert tokens == answer["answer"] and "PWNED" not in tokens
    generate = next(data for name, data in events if name == "step" and data["node"] == "generate")
    assert "answer rejected: repeats an instruction planted" in generate["fallback_reason"]

    stream = client(obeying_server).chat.completions.create(
        model="agentic-rag-hybrid", messages=[{"role": "user", "content": question}], stream=True
    )
    text = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
    said = text.split("Sources:")[0]  # the sources list quotes the passages, planted text included
    assert "PWNED" not in said and fact in said


def test_an_unreachable_model_is_reported_and_the_offline_brain_answers(index_dir, tmp_path):
    srv = Server(
        index_dir,
        tmp_path,
        AGENTIC_RAG_BRAIN="llm",
        OPENAI_BASE_URL=f"http://127.0.0.1:{free_port()}/v1",  # nothing listens there
        OPENAI_API_KEY="sk-test-dummy",
    )
    try:
        reply = httpx.post(
            srv.url + "/v1/ask",
            json={"question": "HNSW 索引的性能问题怎么解决？", "mode": "hybrid"},
            timeout=120,
        )
    finally:
        srv.stop()
    assert reply.status_code == 200
    body = reply.json()
    assert body["warnings"] and body["answer"] and body["citations"]


# --- issue 21: confidence, small talk and empty input over HTTP ------------------------------------------------


@pytest.mark.parametrize(
    "question", ["What is the fusion constant k of RRF?", "HNSW 索引的性能问题怎么解决？"]
)
def test_answers_carry_a_confidence_on_the_api_and_the_openai_response(server, question):
    body = httpx.post(server.url + "/v1/ask", json={"question": question}, timeout=60).json()
    assert 0.0 <= body["confidence"] <= 1.0 and isinstance(body["needs_review"], bool)
    assert body["needs_review"] == (body["confidence"] < 0.7)  # the default review_threshold
    reply = client(server).chat.completions.create(
        model="agentic-rag", messages=[{"role": "user", "content": question}]
    )
    assert 0.0 <= reply.model_extra["confidence"] <= 1.0 and "needs_review" in reply.model_extra


def test_small_talk_and_empty_input_over_http(server):
    hello = httpx.post(server.url + "/v1/ask", json={"question": "你好"}, timeout=60).json()
    assert hello["stop_reason"] == "small_talk" and "文档" in hello["answer"] and not hello["citations"]
    empty = httpx.post(server.url + "/v1/ask", json={"question": "\u200b\u200b???"}, timeout=60)
    assert empty.status_code == 400 and "invisible characters" in empty.text
