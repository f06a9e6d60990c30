"""The pieces the web page and the streaming endpoints rest on: sentence spans that join back into the
exact text, the supporting sentences marked in a cited passage, and upload advertised only when the
app has the upload route. Chinese and English side by side."""

from __future__ import annotations

import pytest
from fastapi import APIRouter, FastAPI

from core.schemas import Passage
from server.evidence import evidence_for
from server.spans import sentence_pieces, sentence_spans
from server.web_api import upload_route


@pytest.mark.parametrize(
    ("text", "sentences"),
    [
        (
            "Hybrid search merges results [1]. The constant k is 60 [1].\n\nBM25 ranks chunks [2].",
            ["Hybrid search merges results [1].", "The constant k is 60 [1].", "BM25 ranks chunks [2]."],
        ),
        (
            "混合检索使用 RRF。[1] 常数 k 取 60 [2]。另外，BM25 也有参数！",
            ["混合检索使用 RRF。[1]", "常数 k 取 60 [2]。", "另外，BM25 也有参数！"],
        ),
    ],
)
def test_sentence_pieces_join_back_into_the_text(text, sentences):
    assert [text[a:b] for a, b in sentence_spans(text)] == sentences
    pieces = sentence_pieces(text)
    assert "".join(pieces) == text and len(pieces) == len(sentences)
    assert sentence_pieces("one sentence") == ["one sentence"] and sentence_pieces("") == []


PASSAGES = [
    Passage(
        number=1,
        chunk_id="en",
        source="retrieval.md",
        heading="Hybrid search",
        text="Hybrid search merges vector and keyword results with RRF. The fusion constant k is 60. "
        "Results are then reranked.",
    ),
    Passage(
        number=2,
        chunk_id="zh",
        source="检索.md",
        text="当分块数量超过二十万时，向量索引会切换为 HNSW 图索引。HNSW 的代价是内存。",
    ),
    Passage(number=3, chunk_id="unused", source="other.md", text="Never cited here."),
]


def test_a_cited_passage_marks_the_sentences_the_answer_rests_on():
    answer = "The fusion constant k is 60 [1]. 分块数量超过二十万时，向量索引切换为 HNSW [2]。"
    evidence = evidence_for(answer, PASSAGES)
    assert [e.number for e in evidence] == [1, 2]  # only cited passages
    en, zh = evidence
    assert [en.text[a:b] for a, b in en.highlights] == ["The fusion constant k is 60."]
    assert [zh.text[a:b] for a, b in zh.highlights] == [
        "当分块数量超过二十万时，向量索引会切换为 HNSW 图索引。"
    ]
    assert en.source == "retrieval.md" and en.heading == "Hybrid search"


def test_upload_is_advertised_only_when_the_route_exists():
    app = FastAPI()
    assert upload_route(app) is None

    @app.get("/v1/collections/{name}/documents")
    async def listed() -> list[str]:
        return []

    assert upload_route(app) is None  # listing is not uploading

    @app.post("/v1/collections/{name}/documents")
    async def upload() -> dict[str, str]:
        return {}

    assert upload_route(app) == "/v1/collections/{name}/documents"
    # as the server mounts it: a router of the /v1 router (FastAPI keeps included routers nested)
    inner, v1, served = APIRouter(), APIRouter(prefix="/v1"), FastAPI()

    @inner.post("/collections/{collection}/documents")
    async def nested() -> dict[str, str]:
        return {}

    v1.include_router(inner)
    served.include_router(v1)
    assert upload_route(served) == "/v1/collections/{collection}/documents"
