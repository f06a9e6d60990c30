"""/v1/chat/completions behaves like OpenAI's, spoken to by the official ``openai`` client over a real
server: offline answers stream sentence by sentence, ``usage`` counts tokens with tiktoken, a common
model name is answered (with a warning) unless the server is strict, and every request leaves one
access-log line on stderr without the question unless ``-v``."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator

import httpx
import pytest

from providers.tokens import count_tokens
from server.spans import sentence_pieces
from tests.corpus import index_of_files
from tests.test_serve import DOCS, TOKEN, Server, client
from tests.test_serve import guarded as guarded  # the strict, -v server with a token (a fixture)

pytestmark = pytest.mark.slow

ACCESS_RE = re.compile(r"access (GET|POST|DELETE) (\S+) (\d{3}) (\d+)ms thread=(\S+)(?: question=(.*))?$")


@pytest.fixture(scope="module")
def server(tmp_path_factory, embedder) -> Iterator[Server]:
    srv = Server(index_of_files(tmp_path_factory, embedder, DOCS), tmp_path_factory.mktemp("serve_openai"))
    yield srv
    srv.stop()


def access_lines(server: Server, at_least: int = 0) -> list[tuple[str, ...]]:
    """The access lines logged so far, waiting (up to 10 s) for ``at_least`` of them: a line is written
    just after its response is sent, so the client can be a moment ahead of the log."""
    for _ in range(100):
        lines = server.log.read_text(encoding="utf-8").splitlines()
        found = [m.groups() for line in lines if (m := ACCESS_RE.search(line))]
        if len(found) >= at_least:
            break
        time.sleep(0.1)
    return found


@pytest.mark.parametrize(
    "question",
    [
        "How does hybrid search merge results, and what is the fusion constant k?",
        "向量索引什么时候切换为 HNSW？HNSW 的性能问题怎么解决？",
    ],
)
def test_offline_answer_streams_sentence_by_sentence(server, question):
    messages = [{"role": "user", "content": question}]
    plain = client(server).chat.completions.create(model="agentic-rag-hybrid", messages=messages)
    content = plain.choices[0].message.content
    answer = content.split("\n\nSources:")[0]

    stream = client(server).chat.completions.create(
        model="agentic-rag-hybrid", messages=messages, stream=True
    )
    pieces = [c.choices[0].delta.content for c in stream if c.choices and c.choices[0].delta.content]
    assert "".join(pieces) == content
    answer_pieces = pieces[:-1]  # the last piece is the sources list
    assert pieces[-1].startswith("\n\nSources:")
    assert answer_pieces == sentence_pieces(answer)
    assert len(answer_pieces) >= 2, answer  # more than one sentence, so more than one chunk


def test_usage_counts_prompt_and_completion_tokens(server):
    messages = [
        {"role": "system", "content": "Answer briefly."},
        {"role": "user", "content": "What is the fusion constant k of RRF?"},
    ]
    reply = client(server).chat.completions.create(model="agentic-rag", messages=messages)
    content = reply.choices[0].message.content
    # OpenAI's accounting: 3 tokens per message besides role and content, 3 to prime the reply
    prompt = 3 + sum(3 + count_tokens(m["role"]) + count_tokens(m["content"]) for m in messages)
    assert reply.usage.prompt_tokens == prompt
    assert reply.usage.completion_tokens == count_tokens(content) > 10
    assert reply.usage.total_tokens == prompt + reply.usage.completion_tokens

    zh = [{"role": "user", "content": "向量索引什么时候切换为 HNSW？"}]
    stream = client(server).chat.completions.create(
        model="agentic-rag", messages=zh, stream=True, stream_options={"include_usage": True}
    )
    chunks = list(stream)
    streamed = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    last = chunks[-1]
    assert last.choices == [] and last.usage is not None  # the usage chunk comes last, as OpenAI's
    assert last.usage.completion_tokens == count_tokens(streamed)
    assert last.usage.prompt_tokens == 3 + 3 + count_tokens("user") + count_tokens(zh[0]["content"])
    assert all(c.usage is None for c in chunks[:-1])


def test_a_common_model_name_is_answered_with_a_warning(server):
    messages = [{"role": "user", "content": "What does keyword search rank chunks with?"}]
    reply = client(server).chat.completions.create(model="gpt-4o", messages=messages)
    assert "BM25" in reply.choices[0].message.content
    assert reply.model == "gpt-4o"
    assert "unknown model 'gpt-4o'" in reply.model_extra["warning"]
    assert "AGENTIC_RAG_SERVE_STRICT_MODELS" in reply.model_extra["warning"]

    stream = list(client(server).chat.completions.create(model="gpt-4o", messages=messages, stream=True))
    assert "unknown model 'gpt-4o'" in stream[0].model_extra["warning"]
    assert "BM25" in "".join(c.choices[0].delta.content or "" for c in stream if c.choices)

    known = client(server).chat.completions.create(model="agentic-rag-keyword", messages=messages)
    assert "warning" not in known.model_extra


def test_every_request_leaves_one_access_line_without_the_question(server):
    before = len(access_lines(server))
    question = "关键词检索的参数 b 是多少？"
    httpx.post(server.url + "/v1/ask", json={"question": question, "thread_id": "log-t"}, timeout=60)
    httpx.get(server.url + "/v1/threads/log-t")
    httpx.get(server.url + "/v1/threads/no-such-thread")
    with httpx.stream("POST", server.url + "/v1/ask", json={"question": question, "stream": True}) as r:
        r.read()
    lines = access_lines(server, before + 4)[before:]
    assert sorted((m, p, s, t) for m, p, s, _, t, _ in lines) == sorted(
        [
            ("POST", "/v1/ask", "200", "log-t"),
            ("GET", "/v1/threads/log-t", "200", "log-t"),
            ("GET", "/v1/threads/no-such-thread", "404", "no-such-thread"),
            ("POST", "/v1/ask", "200", "-"),
        ]
    )
    streamed = next(line for line in lines if line[:2] == ("POST", "/v1/ask") and line[4] == "-")
    assert int(streamed[3]) > 0  # a streamed answer is timed to its last byte
    assert all(q is None for *_, q in lines)
    assert question not in server.log.read_text(encoding="utf-8")


def test_with_v_the_access_line_names_the_question(guarded):
    question = "什么是 HNSW？"
    before = len(access_lines(guarded))
    httpx.post(
        guarded.url + "/v1/ask", json={"question": question}, headers={"authorization": f"Bearer {TOKEN}"}
    )
    httpx.get(guarded.url + "/v1/models")  # refused without the token: still one line
    # a readiness probe's /healthz line may land in between (written after its response): not the subject
    for wanted in range(before + 2, before + 5):
        lines = [line for line in access_lines(guarded, wanted)[before:] if line[1] != "/healthz"]
        if len(lines) >= 2:
            break
    assert sorted(line[:3] for line in lines) == [("GET", "/v1/models", "401"), ("POST", "/v1/ask", "503")]
    asked = next(line for line in lines if line[1] == "/v1/ask")
    assert asked[5] == f'"{question}"'
