"""Retrievers over a real FAISS + BM25 + SQLite index built from a small bilingual corpus."""

from __future__ import annotations

from datetime import datetime

import faiss
import numpy as np
import pytest
from rank_bm25 import BM25Okapi

from core.chunks import Chunk, Filters, ScoredChunk
from core.tokenize import tokenize
from ingestion.indexing import index_chunks
from retrievers.bm25 import BM25Index
from retrievers.factory import build_retrievers
from retrievers.fusion import reciprocal_rank_fusion
from retrievers.langchain import LangChainRetriever
from retrievers.store import open_store
from retrievers.vector_index import HnswParams, VectorIndex
from tests.corpus import corpus_chunks
from tests.milvus_server import with_store


@pytest.fixture(params=["local", "milvus"])
def retrievers(request, settings, embedder, tmp_path):
    """Every retriever test runs over both stores: the local index and Milvus (Lite, in process)."""
    settings = with_store(settings, request.param, tmp_path)
    index_chunks(corpus_chunks(), settings, embedder, index_dir=settings.index_dir, progress=False)
    store = open_store(settings)
    yield build_retrievers(store, settings, embedder)
    store.close()


def ids(hits: list[ScoredChunk]) -> list[str]:
    return [h.id for h in hits]


# --- tokenizer -------------------------------------------------------------------------------------
def test_tokenizer_keeps_identifiers_whole_and_splits_chinese_with_jieba():
    tokens = tokenize("We compared gpt-4o, BM25 and v2.3 against ISO-9001")
    assert {"gpt-4o", "bm25", "v2.3", "iso-9001"} <= set(tokens)
    assert {"混合", "检索"} <= set(tokenize("混合检索很好用"))
    assert tokenize("使用 gpt-4o 检索")[:1] == ["使用"] and "gpt-4o" in tokenize("使用 gpt-4o 检索")


# --- BM25 ------------------------------------------------------------------------------------------
def test_bm25_scores_agree_with_rank_bm25_on_the_same_tokens():
    docs = [tokenize(text) for *_, text in __import__("tests.corpus", fromlist=["DOCS"]).DOCS]
    reference = BM25Okapi(docs, k1=1.2, b=0.75)
    ours = BM25Index.build(docs, k1=1.2, b=0.75)
    for query in ["BM25 检索", "error code E-4711", "关键词检索 结巴", "gpt-4o", "hnsw vector index"]:
        q = tokenize(query)
        np.testing.assert_allclose(ours.scores(q), reference.get_scores(q), rtol=1e-5, atol=1e-6)


def test_bm25_top_k_equals_ranking_every_document_also_with_ties_and_filters():
    """top_k ranks only the documents the query's postings touch; the result must be what scoring
    and sorting every document gives: best score first, ties (here: exact copies) by position."""
    base = [tokenize(text) for *_, text in __import__("tests.corpus", fromlist=["DOCS"]).DOCS]
    docs = [*base, *base, *base]  # every document three times: many exact ties, some at the cut
    index = BM25Index.build(docs)
    allowed = np.arange(len(docs)) % 2 == 0
    for query in ["BM25 检索", "error code E-4711", "关键词检索 结巴 检索", "hnsw vector index", "无关词"]:
        q = tokenize(query)
        every = index.scores(q)
        for k in (1, 2, 5, len(docs)):
            for mask in (None, allowed):
                scores = every if mask is None else np.where(mask, every, 0.0)
                hits = np.flatnonzero(scores > 0)
                expected = hits[np.lexsort((hits, -scores[hits]))][:k]
                positions, values = index.top_k(q, k, mask)
                assert positions.tolist() == expected.tolist(), (query, k)
                np.testing.assert_allclose(values, scores[expected])


def test_large_vector_index_stores_float16_and_finds_what_exact_search_finds():
    """Above the threshold the HNSW graph keeps float16 vectors: half the memory, same neighbours."""
    rng = np.random.default_rng(0)
    centres = rng.standard_normal((20, 64)).astype(np.float32)
    vectors = centres[rng.integers(0, 20, 3000)] + 0.3 * rng.standard_normal((3000, 64)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    exact = VectorIndex.build(vectors, 64, HnswParams(threshold=0))
    hnsw = VectorIndex.build(vectors, 64, HnswParams(threshold=1000))
    assert hnsw.is_hnsw and not exact.is_hnsw
    per_vector = (faiss.serialize_index(hnsw.index).nbytes - 3000 * 2 * 32 * 4) / 3000
    assert per_vector < 64 * 4 * 0.6  # float32 would be 256 bytes per vector (graph links aside)
    overlap = []
    for query in vectors[:50]:
        found, scores = hnsw.search(query, 10)
        truth, truth_scores = exact.search(query, 10)
        overlap.append(len(set(found.tolist()) & set(truth.tolist())) / 10)
        np.testing.assert_allclose(scores[0], truth_scores[0], atol=2e-3)
    assert np.mean(overlap) >= 0.95
    allowed = np.zeros(3000, dtype=bool)
    allowed[::7] = True  # a filtered search reads the float16 vectors back
    positions, _ = hnsw.search(vectors[0], 5, allowed)
    assert positions.size == 5 and allowed[positions].all()


def test_chinese_keyword_search_returns_real_scores(retrievers):
    hits = retrievers.keyword.search("中文关键词检索怎么分词", 3)
    assert hits and hits[0].id == "jieba-zh"
    assert hits[0].score > 0


# --- the identifier / paraphrase pair ------------------------------------------------------------
def test_exact_identifier_dense_search_misses_and_bm25_finds(retrievers):
    assert retrievers.keyword.search("E-4711", 3)[0].id == "err-4711"
    assert retrievers.vector.search("E-4711", 3)[0].id != "err-4711"


def test_paraphrase_bm25_misses_and_dense_search_finds(retrievers):
    query = "a feline resting on a rug"
    assert "cat" not in ids(retrievers.keyword.search(query, 3))
    assert retrievers.vector.search(query, 3)[0].id == "cat"


def test_hybrid_finds_both_the_identifier_and_the_paraphrase(retrievers):
    assert "err-4711" in ids(retrievers.hybrid.search("E-4711", 3))
    assert "cat" in ids(retrievers.hybrid.search("a feline resting on a rug", 3))


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("怎样把向量检索和关键词检索的结果合在一起", "rrf-zh"),
        ("How are vector and keyword results merged?", "rrf-zh"),
        ("安装需要什么 Python 版本", "py-zh"),
        ("When does the vector index switch to HNSW?", "hnsw-en"),
        ("用 gpt-4o 生成答案", "mix"),
    ],
)
def test_chinese_english_and_mixed_queries(retrievers, query, expected):
    assert expected in ids(retrievers.hybrid.search(query, 3))


# --- fusion ----------------------------------------------------------------------------------------
def _hit(cid: str, name: str, rank: int) -> ScoredChunk:
    chunk = Chunk(id=cid, text=cid, source=f"{cid}.md", metadata={"m": cid})
    return ScoredChunk(chunk=chunk, score=1.0 / rank, ranks={name: rank}, scores={name: 1.0 / rank})


def test_rrf_fuses_a_chunk_found_twice_once_with_both_ranks():
    fused = reciprocal_rank_fusion(
        {
            "vector": [_hit("a", "vector", 1), _hit("b", "vector", 2)],
            "keyword": [_hit("b", "keyword", 1), _hit("c", "keyword", 2)],
        },
        k=60,
    )
    assert ids(fused).count("b") == 1
    b = next(h for h in fused if h.id == "b")
    assert b.ranks == {"vector": 2, "keyword": 1}
    assert b.chunk.metadata == {"m": "b"}
    assert b.score == pytest.approx(1 / 62 + 1 / 61)
    assert ids(fused)[0] == "b"


def test_rrf_weights_are_really_applied():
    rankings = {"vector": [_hit("a", "vector", 1)], "keyword": [_hit("c", "keyword", 1)]}
    assert ids(reciprocal_rank_fusion(rankings, weights={"vector": 1.0, "keyword": 3.0}))[0] == "c"
    assert ids(reciprocal_rank_fusion(rankings, weights={"vector": 3.0, "keyword": 1.0}))[0] == "a"
    fused = reciprocal_rank_fusion(rankings, weights={"vector": 2.0, "keyword": 1.0})
    assert fused[0].score == pytest.approx(2 / 61)


# --- filters ---------------------------------------------------------------------------------------
FILTER_CASES = [
    (Filters(source="docs/zh/*"), lambda c: c.source.startswith("docs/zh/")),
    (Filters(language="en"), lambda c: c.language == "en"),
    (
        Filters(modified_after=datetime.fromtimestamp(1_700_000_000 + 5 * 86_400)),
        lambda c: c.mtime >= 1_700_000_000 + 5 * 86_400,
    ),
    (
        Filters(modified_before=datetime.fromtimestamp(1_700_000_000 + 2 * 86_400)),
        lambda c: c.mtime <= 1_700_000_000 + 2 * 86_400,
    ),
    (Filters(equals={"team": "search"}), lambda c: c.metadata["team"] == "search"),
    (Filters(equals={"title": "Error codes"}), lambda c: c.title == "Error codes"),
]


@pytest.mark.parametrize(("filters", "accept"), FILTER_CASES)
@pytest.mark.parametrize("mode", ["vector", "keyword", "hybrid", "multi_hop", "hyde"])
def test_every_retriever_honours_every_filter(retrievers, filters, accept, mode):
    retriever = retrievers.by_name(mode)
    hits = retriever.search("检索 search error index Python", 10, filters)
    assert all(accept(h.chunk) for h in hits)
    expected_any = [c for c in corpus_chunks() if accept(c)]
    if mode != "keyword":
        assert hits, f"{mode} returned nothing for {filters}"
    assert len(hits) <= len(expected_any)


def test_filters_from_cli_pairs():
    f = Filters.from_pairs(["source=docs/*.md", "language=zh", "after=2024-01-01", "team=search"])
    assert f.source == "docs/*.md" and f.language == "zh" and f.equals == {"team": "search"}
    assert f.modified_after == datetime(2024, 1, 1)
    with pytest.raises(ValueError, match="key=value"):
        Filters.from_pairs(["nonsense"])


# --- multi-hop and HyDE ----------------------------------------------------------------------------
def test_multi_hop_merges_sub_queries_without_duplicates(retrievers):
    hits = retrievers.multi_hop.search(
        "BM25 和 HNSW 的区别", 6, sub_queries=["BM25 keyword search", "HNSW vector index"]
    )
    found = ids(hits)
    assert len(found) == len(set(found))
    assert {"bm25-en", "hnsw-en"} <= set(found)


def test_hyde_searches_with_the_hypothetical_answer(retrievers):
    hits = retrievers.hyde.search(
        "pets", 2, hypothetical_answer="A cat was sitting on the mat for the whole afternoon."
    )
    assert hits[0].id == "cat" and "hyde" in hits[0].ranks


def test_langchain_retriever_adapter_returns_documents_with_metadata(retrievers):
    docs = LangChainRetriever(retriever=retrievers.hybrid, k=2).invoke("E-4711")
    assert docs[0].metadata["id"] == "err-4711"
    assert docs[0].metadata["source"] == "docs/errors.md"
    assert "keyword" in docs[0].metadata["ranks"]


def test_multi_hop_links_titles_mentioned_in_first_hop_passages():
    from retrievers.multi_hop import TitleLinker

    linker = TitleLinker(["Harbor Lights Festival", "Kur", "灯笼节", "a"])
    text = "The bridge opened during the Harbor Lights Festival, near Kur; 当晚举办灯笼节。"
    assert linker.mentioned_in(text) == ["Harbor Lights Festival", "Kur", "灯笼节"]
    assert linker.knows("harbor lights festival") and not linker.knows("a")


def test_traditional_chinese_is_segmented_like_simplified():
    assert set(tokenize("馬祖地區的觀光")) & set(tokenize("马祖地区的观光")) >= {"马祖", "地区", "观光"}


# --- fusion that cannot fall far below its best part ------------------------------------------------
from retrievers.fusion import Ranking, convex, fuse, minmax_unit, rrf  # noqa: E402

# Queries on the test corpus where one side is useless: identifiers (dense search cannot read codes)
# and paraphrases that share no word with their passage (BM25 finds nothing).
ONE_SIDED = [
    ("E-4711", "err-4711"),
    ("错误码 E-4712", "err-4712"),
    ("a feline resting on a rug", "cat"),
    ("gpt-4o", "mix"),
]


def _reciprocal_rank(hits: list[ScoredChunk], gold: str) -> float:
    found = ids(hits)
    return 1.0 / (found.index(gold) + 1) if gold in found else 0.0


@pytest.mark.parametrize("method", ["convex", "rrf"])
def test_hybrid_is_never_far_below_its_best_part_when_one_side_is_useless(retrievers, method):
    retrievers.hybrid.fusion = method
    for query, gold in ONE_SIDED:
        best_part = max(
            _reciprocal_rank(retrievers.vector.search(query, 10), gold),
            _reciprocal_rank(retrievers.keyword.search(query, 10), gold),
        )
        fused = _reciprocal_rank(retrievers.hybrid.search(query, 10), gold)
        assert best_part > 0, (query, "the test needs one side that finds the passage")
        # the default (convex) keeps the gold passage where its best part put it, or higher
        slack = 0.0 if method == "convex" else 0.5
        assert fused >= best_part - slack, (method, query, ids(retrievers.hybrid.search(query, 10)))


def test_hybrid_fetches_only_the_final_k_chunks_and_records_both_sides(retrievers):
    hits = retrievers.hybrid.search("混合检索 RRF 融合", 2)
    assert len(hits) == 2 and "rrf-zh" in ids(hits)
    found = next(h for h in hits if h.id == "rrf-zh")
    assert {"vector", "keyword"} <= set(found.ranks) and "convex" in found.scores


@pytest.mark.parametrize("method", ["convex", "rrf"])
def test_fusion_weights_keep_their_meaning_on_a_real_index(retrievers, method):
    """Weight 0 drops a side entirely; the other side's order comes through unchanged."""
    hybrid = retrievers.hybrid
    hybrid.fusion = method
    for query in ["BM25 关键词检索", "vector index HNSW"]:
        hybrid.weights = {"vector": 0.0, "keyword": 1.0}
        keyword_only = [h for h in hybrid.search(query, 5) if "keyword" in h.ranks]
        assert ids(keyword_only) == ids(retrievers.keyword.search(query, 5))[: len(keyword_only)]
        hybrid.weights = {"vector": 1.0, "keyword": 0.0}
        vector_only = [h for h in hybrid.search(query, 5) if "vector" in h.ranks]
        assert ids(vector_only) == ids(retrievers.vector.search(query, 5))[: len(vector_only)]


def test_convex_fusion_is_a_weighted_mean_of_min_max_scaled_scores():
    rankings = {
        "vector": Ranking([1, 2, 3], [0.9, 0.5, 0.1]),
        "keyword": Ranking([3, 4], [12.0, 2.0]),
    }
    fused = {f.key: f for f in convex(rankings, weights={"vector": 1.0, "keyword": 3.0})}
    assert fused[1].score == pytest.approx(0.25 * 1.0)
    assert fused[3].score == pytest.approx(0.25 * 0.0 + 0.75 * 1.0)
    assert fused[4].score == pytest.approx(0.0)
    assert fused[3].ranks == {"vector": 3, "keyword": 1} and fused[3].scores["keyword"] == 12.0
    # a bigger weight moves the order toward that side, as in RRF
    assert convex(rankings, weights={"vector": 3.0, "keyword": 1.0})[0].key == 1
    assert convex(rankings, weights={"vector": 1.0, "keyword": 3.0})[0].key == 3


def test_min_max_scaling_edge_cases():
    assert minmax_unit([]).size == 0
    assert minmax_unit([4.0]).tolist() == [1.0]  # one hit: the retriever still vouches for it
    assert minmax_unit([2.0, 1.0], floor=0.0).tolist() == [1.0, 0.5]


def test_position_rrf_matches_the_chunk_rrf_and_unknown_fusion_is_refused():
    rankings = {"vector": Ranking([5, 6], [0.9, 0.8]), "keyword": Ranking([6, 7], [3.0, 1.0])}
    fused = rrf(rankings, k=60, weights={"vector": 0.5, "keyword": 1.0})
    assert [f.key for f in fused] == [6, 7, 5]
    assert fused[0].score == pytest.approx(0.5 / 62 + 1 / 61)
    with pytest.raises(ValueError, match="unknown fusion 'max'"):
        fuse("max", rankings)


def test_chunks_are_found_by_their_own_id_in_either_store(retrievers):
    found = retrievers.index.chunks_by_id(["err-4711", "no-such-id"])
    assert list(found) == ["err-4711"] and "E-4711" in found["err-4711"].text
