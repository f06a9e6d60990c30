"""`search --mode hyde`: the hypothetical answer is the best first-pass sentence (offline HyDE) or the
one given with --hypothesis; hits are ranked by the mixed vector."""

from __future__ import annotations

import json

import pytest

from config import load_settings
from core.chunks import Chunk, ScoredChunk
from ingestion.indexing import index_chunks
from main import main
from providers.brain.hyde import best_first_pass_sentence
from tests.graph_fixtures import graph_corpus


def hit(text: str) -> ScoredChunk:
    return ScoredChunk(chunk=Chunk(id=text[:8], text=text, source="a.md"), score=1.0)


def test_best_first_pass_sentence_zh_and_en() -> None:
    hits = [hit("HNSW 是一种图索引。它的查询延迟很低，适合大规模向量检索。"), hit("BM25 是关键词检索算法。")]
    assert best_first_pass_sentence("HNSW 的查询延迟如何？", hits) == "它的查询延迟很低，适合大规模向量检索。"
    hits = [hit("Reciprocal rank fusion merges rankings. The fusion constant k is 60 by default.")]
    assert best_first_pass_sentence("What is the default fusion constant?", hits) == (
        "The fusion constant k is 60 by default."
    )
    assert best_first_pass_sentence("量子纠缠", hits) == ""


@pytest.fixture
def index_env(tmp_path, monkeypatch, embedder):
    settings = load_settings(index_dir=tmp_path / "index", embedder="use-multilingual", reranker="none")
    index_chunks(graph_corpus(), settings, embedder, index_dir=settings.index_dir, progress=False)
    monkeypatch.setenv("AGENTIC_RAG_INDEX_DIR", str(settings.index_dir))
    monkeypatch.setenv("AGENTIC_RAG_EMBEDDER", "use-multilingual")
    return settings


def search_json(capsys, *argv: str) -> dict:
    capsys.readouterr()
    assert main(["search", *argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_search_mode_hyde_uses_the_first_pass_sentence_or_the_given_hypothesis(index_env, capsys) -> None:
    out = search_json(capsys, "Who started the Harbor Lights Festival?", "--mode", "hyde", "--k", "3")
    assert "Harbor Lights Festival" in out["hypothesis"]
    assert out["results"][0]["id"] == "hop-2" and "hyde" in out["results"][0]["ranks"]
    zh = search_json(capsys, "错误码 E-4711 是什么意思？", "--mode", "hyde", "--k", "3")
    assert "E-4711" in zh["hypothesis"]
    given = search_json(
        capsys, "bridge", "--mode", "hyde", "--hypothesis", "Quillon Street was paved in 1928.", "--k", "1"
    )
    assert (
        given["hypothesis"] == "Quillon Street was paved in 1928." and given["results"][0]["id"] == "noise-5"
    )
