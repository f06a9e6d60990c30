"""Answer caches: exact hits on the normalised question, semantic hits on paraphrases (real embedder),
scoped by mode and filters, and invalidated when the index generation changes."""

from __future__ import annotations

from pathlib import Path

from memory.answer_cache import AnswerCache, normalise_question, read_cache_stats

PAYLOAD = {
    "answer": "BM25 ranks by term statistics; vector search by embedding similarity [1].",
    "citations": [],
}


def open_cache(tmp_path: Path, generation: str = "gen-000001") -> AnswerCache:
    return AnswerCache(tmp_path / "cache" / "answers.sqlite", generation=generation, semantic_threshold=0.95)


def test_exact_hits_ignore_case_width_spacing_and_final_punctuation(tmp_path: Path) -> None:
    assert normalise_question("  BM25 和 向量检索 有什么区别？ ") == normalise_question(
        "ｂｍ25 和 向量检索 有什么区别"
    )
    cache = open_cache(tmp_path)
    cache.store("What is BM25?", "agentic", None, PAYLOAD)
    hit = cache.lookup("  what is   bm25 ", "agentic", None)
    assert hit is not None and (hit.kind, hit.payload) == ("exact", PAYLOAD)
    cache.store("BM25 和向量检索有什么区别？", "agentic", None, {"answer": "区别 [1]"})
    assert cache.lookup("ＢＭ25 和向量检索有什么区别", "agentic", None).payload == {"answer": "区别 [1]"}
    assert cache.lookup("What is HNSW?", "agentic", None) is None
    assert cache.stats() == {"entries": 2, "hits_exact": 2, "hits_semantic": 0, "misses": 1}


def test_mode_and_filters_are_part_of_the_key(tmp_path: Path) -> None:
    cache = open_cache(tmp_path)
    cache.store("What is BM25?", "agentic", {"sources": ["a.md"]}, PAYLOAD)
    assert cache.lookup("What is BM25?", "hybrid", {"sources": ["a.md"]}) is None
    assert cache.lookup("What is BM25?", "agentic", None) is None
    assert cache.lookup("What is BM25?", "agentic", {"sources": ["a.md"]}) is not None


def test_semantic_hits_for_paraphrases_but_not_for_other_codes_or_entities(tmp_path: Path, embedder) -> None:
    cache = open_cache(tmp_path)
    for question in ("哈佛大学是哪一年建立的？", "错误码 E-4711 是什么意思？", "BM25 和向量检索有什么区别？"):
        cache.store(question, "agentic", None, {"answer": question}, embedder.embed_query(question))

    def similar(question: str):
        return cache.lookup(question, "agentic", None, embedder.embed_query(question))

    paraphrase = similar("哈佛大学建立于哪一年？")
    assert paraphrase is not None and paraphrase.kind == "semantic"
    assert paraphrase.payload == {"answer": "哈佛大学是哪一年建立的？"}
    assert similar("BM25 与向量检索的区别是什么？").question == "BM25 和向量检索有什么区别？"
    assert similar("耶鲁大学是哪一年建立的？") is None  # another university (cosine 0.76)
    assert similar("错误码 E-4712 是什么意思？") is None  # cosine 0.98, but another code
    assert cache.stats()["hits_semantic"] == 2


def test_english_paraphrase_hits_and_new_generation_invalidates(tmp_path: Path, embedder) -> None:
    question = "What does error code E-4711 mean?"
    cache = open_cache(tmp_path)
    cache.store(question, "agentic", None, PAYLOAD, embedder.embed_query(question))
    rephrased = "what does error code E-4711 mean"
    assert cache.lookup(rephrased, "agentic", None, embedder.embed_query(rephrased)).kind == "exact"
    cache.close()
    reopened = open_cache(tmp_path, generation="gen-000002")  # the index was rebuilt
    assert reopened.lookup(question, "agentic", None, embedder.embed_query(question)) is None
    assert reopened.stats()["entries"] == 0
    reopened.close()
    assert read_cache_stats(tmp_path / "cache" / "answers.sqlite", "gen-000002")["misses"] == 1
    assert read_cache_stats(tmp_path / "nowhere.sqlite", "gen-000002") is None
