"""A real HTTP server speaking the OpenAI chat-completions protocol, scripted by tests.

It runs ``http.server.ThreadingHTTPServer`` on 127.0.0.1 (free port) in a background thread, so the
real ``openai`` client, ``ChatOpenAI`` and the LLM brain are exercised end to end: HTTP, SSE
streaming, tool calls, json_schema response formats, retries, timeouts. Each request takes the next
scripted action; when the script is empty a responder (a function of the request body) decides, so a
whole graph run can be scripted by step. Every request body is recorded for assertions.

Use the ``openai_server`` fixture (import it into a test module or conftest)::

    def test_x(openai_server):
        openai_server.script(reply_json({"query_type": "factual"}), http_error(429), reply("hi [1]"))
        model = make_chat_model(base_url=openai_server.base_url, ...)
"""

from __future__ import annotations

import hashlib
import json
import re
import socket
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from providers import prompts

# --------------------------------------------------------------------------------------------------
# Script actions


@dataclass(frozen=True)
class Action:
    """One scripted server behaviour; build with the helper functions below."""

    kind: str  # reply | json | tool | error | hang | malformed
    text: str = ""
    payload: Any = None
    name: str | None = None
    status: int = 200
    seconds: float = 0.0
    retry_after_ms: int | None = None
    finish: str | None = None  # the finish_reason to report ("length": stopped at max_tokens)


def reply(text: str) -> Action:
    """Answer with assistant text (streamed in small pieces when the request asks for a stream)."""
    return Action("reply", text=text)


def capped(text: str) -> Action:
    """Answer with ``text`` as a reply the server stopped at the request's max_tokens."""
    return Action("reply", text=text, finish="length")


def reply_json(obj: Any) -> Action:
    """Answer with a JSON value the way the request asked: a tool call when tools were forced, else text."""
    return Action("json", payload=obj)


def tool_call(name: str | None, args: dict[str, Any] | str) -> Action:
    """Answer with a tool call; ``name=None`` uses the tool the request offered; str args are sent raw."""
    return Action("tool", name=name, payload=args)


def http_error(status: int, message: str = "scripted error", *, retry_after_ms: int | None = 10) -> Action:
    """Answer with an HTTP error; ``retry-after-ms`` keeps the client's backoff short in tests."""
    return Action("error", status=status, text=message, retry_after_ms=retry_after_ms)


def hang(seconds: float) -> Action:
    """Accept the request and send nothing for ``seconds`` (cut short when the server stops)."""
    return Action("hang", seconds=seconds)


def malformed(text: str = "this is not JSON {") -> Action:
    """Answer 200 with a body that is not a valid completion (a broken proxy or server)."""
    return Action("malformed", text=text)


# --------------------------------------------------------------------------------------------------
# Recognising what a request asks for

STEP_BY_SYSTEM = {
    prompts.ANALYZE_SYSTEM: "analyze",
    prompts.JUDGE_SYSTEM: "judge",
    prompts.REWRITE_SYSTEM: "rewrite",
    prompts.CONTEXTUALIZE_SYSTEM: "contextualize",
    prompts.COMPRESS_SYSTEM: "compress",
    prompts.ANSWER_SYSTEM: "answer",
    prompts.CHECK_SUPPORT_SYSTEM: "check_support",
    prompts.TOOLS_SYSTEM: "tools",
}


def system_text(body: dict[str, Any]) -> str:
    return "\n".join(_text(m.get("content")) for m in body.get("messages", []) if m.get("role") == "system")


def user_text(body: dict[str, Any]) -> str:
    return "\n".join(_text(m.get("content")) for m in body.get("messages", []) if m.get("role") == "user")


# The compact requests all ask under the writer's system prompt; their task text tells them apart.
STEP_BY_COMPACT_TASK = {
    prompts.ANALYZE_COMPACT_TASK: "analyze",
    prompts.JUDGE_COMPACT_TASK: "judge",
    prompts.CHECK_SUPPORT_COMPACT_TASK: "check_support",
}


def step_of(body: dict[str, Any]) -> str | None:
    """Which brain step a request belongs to, recognised by its system prompt or its compact task."""
    return compact_step(body) or STEP_BY_SYSTEM.get(system_text(body).strip())


def compact_step(body: dict[str, Any]) -> str | None:
    """The step of a compact request (issue 22), or None for a request with its own system prompt."""
    user = user_text(body)
    return next((step for task, step in STEP_BY_COMPACT_TASK.items() if task in user), None)


def is_compact_judge(body: dict[str, Any]) -> bool:
    return compact_step(body) == "judge"


def _text(content: Any) -> str:
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return content or ""


def _forced_tool(body: dict[str, Any]) -> str | None:
    choice = body.get("tool_choice")
    if isinstance(choice, dict):
        return choice.get("function", {}).get("name")
    tools = body.get("tools") or []
    return tools[0]["function"]["name"] if tools and choice not in (None, "none") else None


Responder = Callable[[dict[str, Any]], Action]


def by_step(actions: dict[str, Action | Callable[[dict[str, Any]], Action]]) -> Responder:
    """A responder choosing the action by step name (see ``step_of``); values may be callables."""

    def respond(body: dict[str, Any]) -> Action:
        step = step_of(body)
        chosen = actions.get(step or "")
        if chosen is None:
            return http_error(400, f"openai_server: no reply scripted for step {step!r}")
        return chosen(body) if callable(chosen) else chosen

    return respond


def plausible_reply(body: dict[str, Any]) -> Action:
    """A sensible reply for any brain step, read off the request, for scripting whole graph runs.

    analyze: factual/hybrid; judge: every passage relevant and sufficient (in the compact reply's
    shape when the compact prompt asks); rewrite and contextualize:
    the question itself; compress: the first sentence of each passage; answer: the first passage's
    opening cited as [1]; check_support: every sentence supported.
    """
    step, user = step_of(body), user_text(body)
    asked = re.findall(r"Question:\n(.*?)(?:\n\n|$)", user, re.S)
    question = asked[-1].strip() if asked else user.strip()
    if step == "analyze":
        return reply_json({"query_type": "factual", "recommended_strategy": "hybrid", "sub_queries": []})
    if step == "judge":
        if is_compact_judge(body):
            return reply_json({"is_sufficient": True, "missing_info": []})
        numbers = sorted({int(n) for n in re.findall(r"^\[(\d+)\] ", user, re.M)})
        judgements = [{"n": n, "relevance": 0.9, "reason": "on topic"} for n in numbers]
        return reply_json({"judgements": judgements, "is_sufficient": True, "suggested_action": "answer"})
    if step == "rewrite":
        return reply(f"{question} details")
    if step == "contextualize":
        return reply(user.rsplit("Latest user message:\n", 1)[-1].strip())
    if step == "compress":
        return reply_json({"keep": re.findall(r"^\[(\d+\.1)\] ", user, re.M)})
    if step == "answer":
        first = re.search(r"^\[1\] [^:]*: (.{1,80})", user, re.M)
        return reply(f"{first.group(1).strip() if first else question} [1]")
    if step == "check_support":
        count = len(re.findall(r"^\d+\. ", user.split("Answer sentences:", 1)[-1], re.M))
        return reply_json({"supported": [True] * count})
    return http_error(400, "openai_server: request is not a brain step", retry_after_ms=None)


def _unscripted(body: dict[str, Any]) -> Action:
    return http_error(400, f"openai_server: script exhausted (step {step_of(body)!r})", retry_after_ms=None)


# --------------------------------------------------------------------------------------------------
# The server


@dataclass
class ScriptedOpenAIServer:
    """Holds the script and the recorded requests; ``start()`` serves them over HTTP."""

    model: str = "scripted-model"
    chunk_chars: int = 4
    responder: Responder = _unscripted
    embedding_status: int = 200  # the HTTP status every /embeddings request gets (200: vectors)
    embedding_dim: int = 8
    requests: list[dict[str, Any]] = field(default_factory=list)
    _queue: deque[Action] = field(default_factory=deque)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _stopping: threading.Event = field(default_factory=threading.Event)
    _httpd: ThreadingHTTPServer | None = None
    _thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        if self._httpd is None:
            raise RuntimeError("server not started")
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}/v1"

    def script(self, *actions: Action) -> None:
        """Queue actions; each chat-completions request consumes one, in order."""
        with self._lock:
            self._queue.extend(actions)

    def remaining(self) -> int:
        with self._lock:
            return len(self._queue)

    def steps(self) -> list[str | None]:
        """The brain step of every recorded request, in arrival order."""
        return [step_of(body) for body in self.requests]

    def start(self) -> ScriptedOpenAIServer:
        server = self

        class Handler(_Handler):
            owner = server

        self._httpd = _QuietServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(
            target=self._httpd.serve_forever,
            kwargs={"poll_interval": 0.05},
            name="openai-server",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def _next_action(self, body: dict[str, Any]) -> Action:
        with self._lock:
            self.requests.append(body)
            if self._queue:
                return self._queue.popleft()
        return self.responder(body)


class _QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Clients that time out close their socket mid-reply; that is expected here."""


class _Handler(BaseHTTPRequestHandler):
    owner: ScriptedOpenAIServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        if self.path.rstrip("/").endswith("/models"):
            model = {"id": self.owner.model, "object": "model", "created": 0, "owned_by": "tests"}
            self._send_json(200, {"object": "list", "data": [model]})
        else:
            self._send_json(404, _error_body("not found", "not_found_error"))

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        if self.path.rstrip("/").endswith("/embeddings"):
            self._embeddings(json.loads(raw or b"{}"))
            return
        if not self.path.rstrip("/").endswith("/chat/completions"):
            self._send_json(404, _error_body(f"unknown path {self.path}", "not_found_error"))
            return
        try:
            body = json.loads(raw or b"{}")
        except json.JSONDecodeError:
            self._send_json(400, _error_body("request body is not JSON", "invalid_request_error"))
            return
        action = self.owner._next_action(body)
        self._perform(action, body)

    def _embeddings(self, body: dict[str, Any]) -> None:
        """``/v1/embeddings``: a deterministic unit vector per input (from its SHA-256), or the scripted
        ``embedding_status`` error for every request."""
        with self.owner._lock:
            self.owner.requests.append(body)
        if self.owner.embedding_status != 200:
            self._send_json(
                self.owner.embedding_status, _error_body("scripted embedding error", "scripted_error")
            )
            return
        inputs = body.get("input") or []
        inputs = [inputs] if isinstance(inputs, str) else inputs
        data = []
        for i, text in enumerate(inputs):
            digest = hashlib.sha256(str(text).encode()).digest()[: self.owner.embedding_dim]
            vector = [b / 255.0 - 0.5 for b in digest]
            norm = sum(v * v for v in vector) ** 0.5 or 1.0
            data.append({"object": "embedding", "index": i, "embedding": [v / norm for v in vector]})
        usage = {"prompt_tokens": len(inputs), "total_tokens": len(inputs)}
        self._send_json(200, {"object": "list", "data": data, "model": body.get("model"), "usage": usage})

    def _perform(self, action: Action, body: dict[str, Any]) -> None:
        if action.kind == "hang":
            if self.owner._stopping.wait(action.seconds):
                return
            action = reply("(too late)")
        if action.kind == "error":
            headers = {"retry-after-ms": str(action.retry_after_ms)} if action.retry_after_ms else {}
            self._send_json(action.status, _error_body(action.text, "scripted_error"), headers)
            return
        if action.kind == "malformed":
            self._send_raw(200, action.text.encode(), "application/json")
            return
        message = _message_for(action, body)
        if body.get("stream"):
            self._send_stream(message, body)
        else:
            self._send_json(200, _completion(self.owner.model, message, body))

    # -- transport ---------------------------------------------------------------------------------

    def _send_json(self, status: int, obj: Any, headers: dict[str, str] | None = None) -> None:
        self._send_raw(status, json.dumps(obj, ensure_ascii=False).encode(), "application/json", headers)

    def _send_raw(
        self, status: int, data: bytes, content_type: str, headers: dict[str, str] | None = None
    ) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)

    def _send_stream(self, message: dict[str, Any], body: dict[str, Any]) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        for chunk in _stream_chunks(self.owner.model, message, body, self.owner.chunk_chars):
            self.wfile.write(f"data: {json.dumps(chunk, ensure_ascii=False)}\n\n".encode())
            self.wfile.flush()
        self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()


# --------------------------------------------------------------------------------------------------
# Completion payloads


def _message_for(action: Action, body: dict[str, Any]) -> dict[str, Any]:
    """The assistant message (content or tool calls) an action produces for this request."""
    forced = _forced_tool(body)
    if action.kind == "json" and forced:
        action = tool_call(forced, action.payload)
    if action.kind == "tool":
        args = action.payload if isinstance(action.payload, str) else json.dumps(action.payload)
        call = {
            "id": f"call_{uuid.uuid4().hex[:12]}",
            "type": "function",
            "function": {"name": action.name or forced or "tool", "arguments": args},
        }
        return {"role": "assistant", "content": None, "tool_calls": [call]}
    text = json.dumps(action.payload, ensure_ascii=False) if action.kind == "json" else action.text
    message = {"role": "assistant", "content": text}
    return {**message, "_finish": action.finish} if action.finish else message


def _usage(body: dict[str, Any], message: dict[str, Any]) -> dict[str, int]:
    prompt = sum(len(_text(m.get("content"))) for m in body.get("messages", [])) // 4 + 1
    completion = len(json.dumps(message)) // 4 + 1
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


def _completion(model: str, message: dict[str, Any], body: dict[str, Any]) -> dict[str, Any]:
    message = dict(message)
    finish = message.pop("_finish", None) or ("tool_calls" if message.get("tool_calls") else "stop")
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex[:12]}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body.get("model") or model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
        "usage": _usage(body, message),
    }


def _stream_chunks(
    model: str, message: dict[str, Any], body: dict[str, Any], size: int
) -> Iterator[dict[str, Any]]:
    base = {
        "id": f"chatcmpl-{uuid.uuid4().hex[:12]}",
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": body.get("model") or model,
    }

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}]}

    yield chunk({"role": "assistant", "content": ""})
    if message.get("tool_calls"):
        call = message["tool_calls"][0]
        head = {"index": 0, "id": call["id"], "type": "function"}
        yield chunk(
            {"tool_calls": [{**head, "function": {"name": call["function"]["name"], "arguments": ""}}]}
        )
        args = call["function"]["arguments"]
        for i in range(0, len(args), size):
            yield chunk({"tool_calls": [{"index": 0, "function": {"arguments": args[i : i + size]}}]})
        yield chunk({}, "tool_calls")
    else:
        text = message.get("content") or ""
        for i in range(0, len(text), size):
            yield chunk({"content": text[i : i + size]})
        yield chunk({}, message.get("_finish") or "stop")
    if (body.get("stream_options") or {}).get("include_usage"):
        yield {**base, "choices": [], "usage": _usage(body, message)}


def _error_body(message: str, kind: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "param": None, "code": None}}


# --------------------------------------------------------------------------------------------------
# Fixture


@pytest.fixture
def openai_server(monkeypatch: pytest.MonkeyPatch) -> Iterator[ScriptedOpenAIServer]:
    """A started server; OPENAI_* variables point at it so nothing can reach the internet."""
    server = ScriptedOpenAIServer().start()
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-dummy")
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    monkeypatch.delenv("OPENAI_API_BASE", raising=False)
    try:
        yield server
    finally:
        server.stop()


def refused_base_url() -> str:
    """A base URL on 127.0.0.1 where nothing listens: connecting is refused at once."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"
