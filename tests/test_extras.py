"""Optional extras: without torch/sentence-transformers the `st:` and `cross-encoder:` paths say what to install."""

from __future__ import annotations

import sys

import pytest

from providers import embeddings, rerankers


@pytest.fixture
def without_sentence_transformers(monkeypatch):
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)  # import now raises ImportError
    embeddings._st_model.cache_clear()
    rerankers._cross_encoder.cache_clear()
    yield
    embeddings._st_model.cache_clear()
    rerankers._cross_encoder.cache_clear()


@pytest.mark.parametrize(
    "load", [lambda folder: embeddings._st_model(folder), lambda folder: rerankers._cross_encoder(folder)]
)
def test_missing_extra_is_a_clear_one_line_error(without_sentence_transformers, tmp_path, load):
    with pytest.raises(ValueError, match=r"pip install '\.\[st\]'") as caught:
        load(str(tmp_path))
    assert "\n" not in str(caught.value)
