"""Specification of the offline brain's judging, rewriting, memory and extractive answering (zh and en)."""

from __future__ import annotations

import pytest

from core.chunks import Chunk, ScoredChunk
from core.schemas import Passage, RetrievalEvaluation
from providers.brain import Brain, offline_brain
from providers.tokens import count_tokens

HNSW_ZH = (
    "HNSW 是一种基于图的近似最近邻索引。它的内存占用较高，因为每个节点保存多层邻居。"
    "降低 M 参数可以减少内存占用，但召回率会下降。"
)
BM25_EN = (
    "BM25 is a ranking function used by search engines. It scores documents by term frequency and inverse "
    "document frequency. The parameter k1 controls term frequency saturation. The parameter b controls "
    "length normalisation."
)
WEATHER_EN = "The weather in Paris is mild in spring. Tourists visit the Louvre in large numbers."


@pytest.fixture(scope="module")
def brain() -> Brain:
    return offline_brain()


def passages() -> list[Passage]:
    return [
        Passage(number=1, chunk_id="zh-1", source="docs/hnsw.md", heading="HNSW 索引", text=HNSW_ZH),
        Passage(number=2, chunk_id="en-1", source="docs/bm25.md", heading="BM25", text=BM25_EN),
        Passage(number=3, chunk_id="en-2", source="docs/travel.md", heading="Paris", text=WEATHER_EN),
    ]


def scored(text: str, chunk_id: str, rerank: float, source: str = "docs/x.md") -> ScoredChunk:
    return ScoredChunk(
        chunk=Chunk(id=chunk_id, text=text, source=source), score=rerank, scores={"rerank": rerank}
    )


def test_implements_the_brain_protocol(brain: Brain) -> None:
    assert isinstance(brain, Brain)
    assert brain.name == "offline" and brain.calls.drain() == []
    with pytest.raises(ValueError, match="sufficiency_threshold"):
        offline_brain(sufficiency_threshold=1.5)


class TestJudge:
    def test_sufficient_when_top_chunks_cover_the_question(self, brain: Brain) -> None:
        question = "What does the k1 parameter of BM25 control?"
        chunks = [scored(WEATHER_EN, "w", 3.0), scored(BM25_EN, "b", 1.0)]
        evaluation = brain.judge(question, brain.analyze(question), chunks, [])
        assert evaluation.is_sufficient and evaluation.suggested_action == "answer"
        relevance = {j.chunk_id: j.relevance for j in evaluation.judgements}
        assert relevance["b"] > relevance["w"]  # coverage beats a higher rerank score without the terms
        assert all(0.0 <= j.relevance <= 1.0 for j in evaluation.judgements)

    def test_insufficient_lists_missing_terms_zh(self, brain: Brain) -> None:
        question = "HNSW 索引的 efSearch 参数如何影响查询延迟？"
        chunks = [scored(WEATHER_EN, "w", 0.9), scored(BM25_EN, "b", 0.2)]
        evaluation = brain.judge(question, brain.analyze(question), chunks, [question])
        assert not evaluation.is_sufficient
        assert "efsearch" in [m.lower() for m in evaluation.missing_info]
        assert evaluation.suggested_action != "answer"

    def test_uncovered_sub_query_suggests_multi_hop(self, brain: Brain) -> None:
        question = "What is the difference between BM25 and HNSW?"
        analysis = brain.analyze(question).model_copy(update={"recommended_strategy": "hybrid"})
        evaluation = brain.judge(question, analysis, [scored(BM25_EN, "b", 1.0)], [])
        assert not evaluation.is_sufficient
        assert evaluation.suggested_action == "multi_hop"
        assert "What is HNSW?" in evaluation.missing_info

    @pytest.mark.parametrize(
        "question",
        [
            "How is the HNSW ef_construction parameter tuned for recall?",
            "HNSW 的 ef_construction 参数怎么调？",
        ],
    )
    def test_the_retry_uses_the_retriever_the_first_search_lacked(self, brain: Brain, question: str) -> None:
        """Judged by what was searched: keyword hits alone -> vector; a fused search that missed an
        identifier -> keyword search alone."""
        analysis = brain.analyze(question)
        keyword_only = scored(WEATHER_EN, "w", 1.0).model_copy(update={"ranks": {"keyword": 1}})
        evaluation = brain.judge(question, analysis, [keyword_only], [])
        assert evaluation.suggested_action == "retry_vector"
        fused = scored(WEATHER_EN, "w", 1.0).model_copy(update={"ranks": {"keyword": 1, "vector": 3}})
        evaluation = brain.judge(question, analysis, [fused], [])
        assert evaluation.suggested_action == "retry_keyword"

    def test_is_deterministic(self, brain: Brain) -> None:
        question = "HNSW 的内存占用为什么高？"
        chunks = [scored(HNSW_ZH, "h", 0.4), scored(BM25_EN, "b", 0.7)]
        first = brain.judge(question, brain.analyze(question), chunks, [])
        assert first == brain.judge(question, brain.analyze(question), chunks, [])
        assert first.is_sufficient


def test_rewrite_targets_missing_info_and_never_repeats(brain: Brain) -> None:
    question = "How is the HNSW ef_construction parameter tuned for recall?"
    evaluation = RetrievalEvaluation(is_sufficient=False, missing_info=["ef_construction", "recall"])
    tried = [question]
    for _ in range(6):
        new = brain.rewrite(question, evaluation, tried)
        assert " ".join(new.lower().split()) not in {" ".join(t.lower().split()) for t in tried}
        tried.append(new)
    assert "ef_construction" in tried[1]
    zh = brain.rewrite("HNSW 的内存占用怎么降低？", RetrievalEvaluation(missing_info=["内存"]), ["HNSW 内存"])
    assert "内存" in zh and zh != "HNSW 内存"


class TestContextualize:
    def test_zh_follow_up_carries_previous_topic(self, brain: Brain) -> None:
        history = [("user", "HNSW 索引的性能问题有哪些？"), ("assistant", "主要是内存占用高、构建慢。")]
        assert brain.contextualize("那个性能问题怎么解决的", history) == "HNSW 索引的性能问题怎么解决的"
        assert brain.contextualize("它的内存占用怎么降低？", history) == "HNSW 索引的内存占用怎么降低？"
        assert brain.contextualize("那召回率呢？", history) == "HNSW 索引的召回率呢？"

    def test_en_follow_up_carries_previous_topic(self, brain: Brain) -> None:
        history = [("user", "How does hybrid search work?"), ("assistant", "It fuses BM25 and vectors.")]
        assert brain.contextualize("and what about its latency?", history) == (
            "what about the hybrid search's latency?"
        )
        assert brain.contextualize("Is it fast?", [("user", "Why does BM25 return negative scores?")]) == (
            "Is BM25 fast?"
        )

    def test_chain_of_follow_ups_keeps_the_first_topic(self, brain: Brain) -> None:
        history = [("user", "How does hybrid search work?"), ("user", "Is it fast?")]
        assert "hybrid search" in brain.contextualize("What about its memory use?", history)

    @pytest.mark.parametrize(
        "question",
        [
            "什么是 BM25 算法？",
            "What is the evidence that smoking causes cancer?",
            "应该怎么选择 HNSW 的 M 参数？",
        ],
    )
    def test_self_contained_question_is_unchanged(self, brain: Brain, question: str) -> None:
        assert brain.contextualize(question, [("user", "How does hybrid search work?")]) == question

    def test_bad_history_gets_a_clear_error(self, brain: Brain) -> None:
        with pytest.raises(ValueError, match="role"):
            brain.contextualize("what about it?", [("system", "x")])


class TestCompress:
    @pytest.mark.parametrize(
        ("question", "kept_source"),
        [("HNSW 的内存占用怎么减少？", "docs/hnsw.md"), ("What does k1 control in BM25?", "docs/bm25.md")],
    )
    def test_within_budget_keeps_metadata(self, brain: Brain, question: str, kept_source: str) -> None:
        compressed = brain.compress(question, passages(), token_budget=40)
        assert sum(count_tokens(p.text) for p in compressed) <= 40
        kept = {p.source: p for p in compressed}
        assert kept_source in kept
        original = next(p for p in passages() if p.source == kept_source)
        assert kept[kept_source].number == original.number
        assert kept[kept_source].chunk_id == original.chunk_id
        assert kept[kept_source].heading == original.heading
        assert "docs/travel.md" not in kept  # nothing relevant there, others remain

    def test_sentences_keep_their_order(self, brain: Brain) -> None:
        text = brain.compress("BM25 parameter k1 b", passages(), token_budget=200)[0].text
        assert text.index("k1") < text.index("length normalisation")

    @pytest.mark.parametrize(
        ("question", "text", "answer"),
        [
            (
                "Who designed the Quillon Bridge?",
                "The Quillon Bridge opened in 1932. Its designer was Marta Kowalczyk. Rain fell.",
                "Marta Kowalczyk",
            ),
            ("奎隆桥是谁设计的？", "奎隆桥于1932年通车。设计师是玛尔塔·科瓦尔奇克。那天下雨。", "玛尔塔"),
        ],
    )
    def test_spare_budget_keeps_neighbouring_sentences_of_a_matched_passage(
        self, brain: Brain, question: str, text: str, answer: str
    ) -> None:
        passage = Passage(number=1, chunk_id="c1", source="docs/bridge.md", text=text)
        compressed = brain.compress(question, [passage], token_budget=200)
        assert answer in compressed[0].text

    def test_bad_budget_is_rejected(self, brain: Brain) -> None:
        with pytest.raises(ValueError, match="token_budget"):
            brain.compress("x", passages(), token_budget=0)


class TestAnswer:
    def test_en_answer_cites_the_passage_that_holds_the_sentence(self, brain: Brain) -> None:
        draft = brain.write("What does the k1 parameter of BM25 control?", passages())
        assert not draft.insufficient
        assert "The parameter k1 controls term frequency saturation [2]." in draft.answer
        assert "[1]" not in draft.answer and "[3]" not in draft.answer

    def test_zh_answer_cites_the_passage_that_holds_the_sentence(self, brain: Brain) -> None:
        draft = brain.write("HNSW 的内存占用为什么高？", passages())
        assert not draft.insufficient
        # no boilerplate lead; "它" comes with the sentence that says what it is
        assert draft.answer.startswith(
            "HNSW 是一种基于图的近似最近邻索引[1]。 它的内存占用较高，因为每个节点保存多层邻居[1]。"
        )

    def test_insufficient_evidence_says_so_and_names_the_gap(self, brain: Brain) -> None:
        en = brain.write("Who invented the HNSW algorithm and in which year?", passages())
        assert en.insufficient and en.answer.startswith("This cannot be determined from the documents")
        assert "invented" in en.missing
        zh = brain.write("Milvus 的分布式部署需要哪些组件？", passages())
        assert zh.insufficient and zh.answer.startswith("根据现有资料无法确定")
        assert "milvus" in [m.lower() for m in zh.missing]

    def test_every_sentence_of_an_offline_answer_is_supported(self, brain: Brain) -> None:
        for question in ("What does the k1 parameter of BM25 control?", "HNSW 的内存占用为什么高？"):
            support = brain.verify(brain.write(question, passages()).answer, passages())
            assert support and all(s.supported for s in support)


class TestCheckSupport:
    def test_flags_an_unsupported_sentence(self, brain: Brain) -> None:
        answer = "The parameter k1 controls term frequency saturation [2]. BM25 was invented in 1994 by Robertson [2]."
        support = brain.verify(answer, passages())
        assert [s.supported for s in support] == [True, False]
        assert support[0].cited == [2] and support[1].score < 0.6

    def test_uncited_claim_is_unsupported_but_lead_is_fine(self, brain: Brain) -> None:
        answer = "根据资料：HNSW 的内存占用较高[1]。降低 M 参数会让查询变快十倍。"
        support = brain.verify(answer, passages())
        assert support[0].supported and support[0].cited == [1]
        assert not support[1].supported and support[1].cited == []

    def test_citing_a_missing_passage_is_unsupported(self, brain: Brain) -> None:
        support = brain.verify("BM25 is a ranking function used by search engines [9].", passages())
        assert not support[0].supported
