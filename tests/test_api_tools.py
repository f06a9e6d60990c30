"""Configured HTTP APIs as tools, against a real HTTP server on localhost: trigger words route a question
to call_api, parameters come from the tool's own data (offline) or the model's tool call, the answer
cites the URL and the time; only the configured host is called, with timeouts and size limits."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar
from urllib.parse import parse_qs, urlsplit

import pytest

from core.chunks import Chunk
from graph.builder import build_graph
from graph.run import ask
from ingestion.indexing import index_chunks
from nodes.context import AgentContext
from providers.brain import make_brain, offline_brain
from providers.brain.sql import API_SYSTEM
from retrievers.factory import build_retrievers
from retrievers.index import open_index
from tests.graph_fixtures import one_passage_context
from tests.openai_server import openai_server, plausible_reply, system_text, tool_call
from tools.errors import ToolError
from tools.http import load_tools_file

WEATHER = {
    "Berlin": {"city": "Berlin", "temperature": 7, "conditions": "rain"},
    "Paris": {"city": "Paris", "temperature": 11, "conditions": "cloudy"},
}


class Handler(BaseHTTPRequestHandler):
    seen: ClassVar[list[dict]] = []

    def log_message(self, *args) -> None:
        pass

    def do_GET(self) -> None:
        url = urlsplit(self.path)
        query = {k: v[0] for k, v in parse_qs(url.query).items()}
        Handler.seen.append({"path": url.path, "query": query, "auth": self.headers.get("Authorization")})
        if url.path == "/v1/weather":
            if self.headers.get("Authorization") != "Bearer secret-token":
                return self._send(401, {"error": "bad token"})
            found = WEATHER.get(query.get("city", ""))
            return self._send(200, found) if found else self._send(404, {"error": "unknown city"})
        if url.path == "/slow":
            time.sleep(1.5)
            return self._send(200, {"ok": True})
        if url.path == "/big":
            return self._send(200, {"blob": "x" * 50_000})
        if url.path == "/moved":
            self.send_response(302)
            self.send_header("Location", "http://169.254.169.254/latest/meta-data")
            self.end_headers()
            return None
        return self._send(404, {"error": "no such path"})

    def _send(self, status: int, body: dict) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture
def api_server():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    Handler.seen = []
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


TOOLS_YAML = """
tools:
  - name: weather
    description: Current weather for a city
    url: {base}/v1/weather?city={{city}}&units={{units}}
    parameters:
      city:
        description: city name in English
        required: true
        values: {{柏林: Berlin, 巴黎: Paris, Berlin: Berlin, Paris: Paris}}
      units: {{default: metric}}
    auth: {{header: Authorization, env: WEATHER_TOKEN, prefix: "Bearer "}}
    triggers: [weather, 天气]
    show: [temperature, conditions]
  - name: slow
    description: A slow endpoint
    url: {base}/slow
    triggers: [slowly]
  - name: big
    description: A large response
    url: {base}/big
    triggers: [hugely]
  - name: moved
    description: Redirects to another host
    url: {base}/moved
    triggers: [elsewhere]
"""


@pytest.fixture
def tools(tmp_path, api_server, monkeypatch):
    monkeypatch.setenv("WEATHER_TOKEN", "secret-token")
    path = tmp_path / "tools.yaml"
    path.write_text(TOOLS_YAML.format(base=api_server), encoding="utf-8")
    return load_tools_file(path, timeout_s=0.5, max_kb=8)


@pytest.fixture
def graph_context(one_passage_context, tools):
    return lambda brain=None, current=None: one_passage_context(brain, current, api_tools=tools)


@pytest.mark.parametrize(
    ("question", "shown"),
    [
        ("What is the weather in Berlin right now?", "temperature 7; conditions rain [1]."),
        ("巴黎现在的天气怎么样？", "temperature 11; conditions cloudy[1]。"),
    ],
)
def test_a_trigger_word_calls_the_configured_api(graph_context, api_server, question, shown):
    result = ask(build_graph(), question, context=graph_context())
    assert "call_api" in [e.node for e in result.trace] and "retrieve_hybrid" not in [
        e.node for e in result.trace
    ]
    assert result.answer.endswith(shown)
    (citation,) = result.citations
    assert citation.source.startswith(f"{api_server}/v1/weather?city=") and "units=metric" in citation.source
    assert citation.snippet.startswith("GET ") and citation.snippet.endswith("Z")  # URL + time
    assert Handler.seen[-1]["auth"] == "Bearer secret-token"


def test_questions_without_a_trigger_or_its_parameters_search_passages(graph_context):
    plain = ask(build_graph(), "How does hybrid search fuse results?", context=graph_context())
    assert "call_api" not in [e.node for e in plain.trace]
    unknown_city = ask(build_graph(), "What is the weather in Rome?", context=graph_context())
    skipped = next(e for e in unknown_city.trace if e.node == "call_api")
    assert skipped.decision == "skipped" and "retrieve_hybrid" in [e.node for e in unknown_city.trace]
    assert Handler.seen == []


@pytest.mark.parametrize(
    ("question", "reason"),
    [
        ("Fetch it slowly", "no answer within 0.5 s"),
        ("Fetch it hugely", "larger than 8 KB"),
        ("Fetch it from elsewhere", "redirects are not followed"),
    ],
)
def test_failed_calls_are_said_plainly(graph_context, question, reason):
    result = ask(build_graph(), question, context=graph_context())
    assert result.answer.startswith("The API call failed:") and reason in result.answer
    assert all("169.254" not in str(s) for s in Handler.seen)


def test_values_are_encoded_into_the_url_and_the_host_stays_fixed(tools, api_server):
    url = tools.get("weather").url_for({"city": "x&units=imperial/../@evil.com", "units": "metric"})
    assert url.startswith(f"{api_server}/v1/weather?city=x%26units%3Dimperial%2F..%2F%40evil.com&")
    with pytest.raises(ToolError, match="unknown parameters"):
        tools.get("weather").url_for({"city": "Berlin", "host": "evil.com"})


def test_bad_tools_files_are_one_line_errors(tmp_path):
    cases = {
        "host.yaml": "tools: [{name: t, description: d, url: 'http://{host}/x', parameters: {host: {}}}]",
        "post.yaml": "tools: [{name: t, description: d, url: 'http://a.example/x', method: POST}]",
        "undeclared.yaml": "tools: [{name: t, description: d, url: 'http://a.example/{q}'}]",
        "broken.yaml": "tools: [",
    }
    for name, text in cases.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
        with pytest.raises(ToolError) as caught:
            load_tools_file(tmp_path / name)
        assert str(caught.value).startswith(f"tools file {tmp_path / name}") and "\n" not in str(caught.value)


def test_missing_token_is_named(tools, monkeypatch):
    monkeypatch.delenv("WEATHER_TOKEN")
    with pytest.raises(ToolError, match="set WEATHER_TOKEN"):
        tools.call("weather", {"city": "Berlin"})


def test_openapi_documents_are_read_as_tools(tmp_path, api_server, monkeypatch):
    monkeypatch.setenv("WEATHER_TOKEN", "secret-token")
    document = {
        "openapi": "3.0.3",
        "servers": [{"url": api_server}],
        "components": {
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer", "x-auth-env": "WEATHER_TOKEN"}}
        },
        "security": [{"bearer": []}],
        "paths": {
            "/v1/weather": {
                "get": {
                    "operationId": "weather",
                    "summary": "Current weather",
                    "x-triggers": ["weather"],
                    "parameters": [
                        {"name": "city", "in": "query", "required": True, "x-values": ["Berlin", "Paris"]},
                        {"name": "units", "in": "query", "schema": {"default": "metric"}},
                    ],
                }
            }
        },
    }
    path = tmp_path / "openapi.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    tools = load_tools_file(path)
    tool = tools.get("weather")
    args = tool.read_args("weather in Paris?")
    assert args == {"city": "Paris", "units": "metric"}
    assert tools.call("weather", args).data["temperature"] == 11


def test_the_model_fills_the_parameters_through_tool_calling(graph_context, settings, openai_server):
    def respond(body):
        if system_text(body).strip() == API_SYSTEM:
            assert [t["function"]["name"] for t in body["tools"]] == ["weather", "slow", "big", "moved"]
            return tool_call("weather", {"city": "Paris"})
        return plausible_reply(body)

    openai_server.responder = respond
    current = settings.model_copy(
        update={"openai_base_url": openai_server.base_url, "openai_api_key": "sk-test", "llm_max_retries": 0}
    )
    result = ask(
        build_graph(),
        "What is the weather like in the French capital today?",
        context=graph_context(make_brain(current), current),
    )
    assert "temperature 11" in result.answer and Handler.seen[-1]["query"]["city"] == "Paris"
    assert next(e for e in result.trace if e.node == "call_api").detail.startswith("model call weather")
