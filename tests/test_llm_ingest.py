"""The LLM's part of ingest (issue 26): summaries of the summary tree and passage entities (OpenIE)
written by a model speaking the OpenAI protocol on localhost (``tests.openai_server``), bounded,
validated, cached; every failure leaves that node to the offline writer and never loses a document.
Chinese and English documents side by side."""

from __future__ import annotations

import logging
import re
from pathlib import Path

import pytest

from config import SettingsError, load_settings
from ingestion.entities import passage_entities
from providers.ingest_cache import cache_path
from providers.ingest_llm import OPENIE_STEP, SUMMARY_STEP, PassageEntities, appears_in, kept_entities
from retrievers.levels import DOCUMENT, SECTION
from tests.openai_server import (
    capped,
    hang,
    http_error,
    malformed,
    openai_server,
    refused_base_url,
    reply,
    reply_json,
    system_text,
    user_text,
)
from tests.test_global_route import EN_REPORT, ZH_REPORT

__all__ = ["openai_server"]  # the fixture, imported for pytest

MADE_UP = "Atlantis Shipping Corporation"  # never in any passage: the model's invention


def kind_of(body: dict) -> str:
    system = system_text(body)
    return (
        SUMMARY_STEP
        if system.startswith("You summarise")
        else OPENIE_STEP
        if "named entities" in system
        else ""
    )


def model_summary(body: dict) -> str:
    """The scripted model's summary: the first sentence of the text it was given, marked as its own."""
    text = user_text(body).split("Text:\n", 1)[-1].strip()
    first = re.split(r"(?<=[.。！？!?])\s*", text)[0].strip()
    return f"{first} 模型摘要。" if re.search(r"[\u4e00-\u9fff]", first) else f"{first} (model summary)."


def model_entities(body: dict) -> list[str]:
    """Capitalised runs and the names the scripted model knows (which the offline extractor, reading
    capitals and jieba's tags, misses), as the passage writes them, plus one made up."""
    passage = user_text(body).split("Passage:\n", 1)[-1]
    names = re.findall(r"\b[A-Z][a-z]+(?: [A-Z][a-z]+)+\b", passage)
    names += [n for n in ("north quay", "radio operator", "少儿读物", "阅览室") if n in passage]
    return [*dict.fromkeys(names), MADE_UP] if names else []


def plausible(body: dict):
    if kind_of(body) == SUMMARY_STEP:
        return reply(model_summary(body))
    if kind_of(body) == OPENIE_STEP:
        return reply_json({"entities": model_entities(body), "triples": []})
    return http_error(400, "not an ingest request", retry_after_ms=None)


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "harbour.md").write_text(EN_REPORT, encoding="utf-8")
    (folder / "library.md").write_text(ZH_REPORT, encoding="utf-8")
    return folder


@pytest.fixture
def llm_settings(settings, openai_server):
    return settings.model_copy(
        update={
            "chunk_size": 200,
            "chunk_overlap": 0,
            "summary_tree": True,
            "openai_base_url": openai_server.base_url,
            "openai_api_key": "sk-test-dummy",
            "llm_model": "scripted-model",
            "llm_ingest": "summaries,entities",
            "llm_max_retries": 0,
            "llm_ingest_timeout_s": 1.0,
        }
    )


def ingest(docs: Path, settings, embedder, **options):
    from ingestion.pipeline import ingest_paths

    return ingest_paths([docs], settings, embedder, progress=False, **options)


def chunks_of(settings) -> list:
    from retrievers.store import open_store

    store = open_store(settings)
    try:
        return list(store.iter_chunks())
    finally:
        store.close()


def chat_requests(server) -> list[dict]:
    return [body for body in server.requests if body.get("messages")]


def test_the_model_writes_the_tree_and_the_entities_in_both_languages(
    docs, llm_settings, embedder, openai_server
):
    openai_server.responder = plausible
    ingest(docs, llm_settings, embedder)
    chunks = chunks_of(llm_settings)
    summaries = [c for c in chunks if c.metadata.get("level")]
    for name in ("harbour.md", "library.md"):
        mine = [c for c in summaries if c.source.endswith(name)]
        assert {c.metadata["level"] for c in mine} == {SECTION, DOCUMENT}
        assert all(c.metadata["summary_by"] == "llm:scripted-model" for c in mine), [
            (c.metadata["summary_by"], c.text[:50]) for c in mine
        ]
    assert any("(model summary)" in c.text for c in summaries if c.source.endswith("harbour.md"))
    assert any("模型摘要" in c.text for c in summaries if c.source.endswith("library.md"))
    passages = [c for c in chunks if not c.metadata.get("level")]
    assert passages and all(c.metadata["entities_by"] == "llm:scripted-model" for c in passages)
    assert all(MADE_UP not in c.metadata["entities"] for c in passages)  # not in the text: dropped
    quay = next(c for c in passages if "north quay" in c.text)
    assert "north quay" in quay.metadata["entities"] and "north quay" not in passage_entities(
        quay.title, quay.text
    )
    assert quay.metadata["entities"][0] == "Harbour Safety Report 2023"  # the title first, as offline
    assert any("阅览室" in c.metadata["entities"] for c in passages if c.source.endswith("library.md"))
    # every request is bounded by its step's max_tokens, entities by a JSON schema with maxItems
    for body in chat_requests(openai_server):
        cap = (
            llm_settings.llm_max_tokens_summary
            if kind_of(body) == SUMMARY_STEP
            else llm_settings.llm_max_tokens_openie
        )
        assert body.get("max_tokens") == cap or body.get("max_completion_tokens") == cap
    openie = [b for b in chat_requests(openai_server) if kind_of(b) == OPENIE_STEP]
    schema = openie[0]["response_format"]["json_schema"]["schema"]
    assert schema["properties"]["entities"]["maxItems"] == 24


def test_reingest_and_incremental_ingest_never_pay_twice(docs, llm_settings, embedder, openai_server):
    openai_server.responder = plausible
    ingest(docs, llm_settings, embedder)
    first = len(chat_requests(openai_server))
    assert first > 0
    ingest(docs, llm_settings, embedder, rebuild=True)  # every file read again: all from the cache
    assert len(chat_requests(openai_server)) == first
    before = len(openai_server.requests)
    changed = EN_REPORT.replace("before winter", "before the autumn storms")
    (docs / "harbour.md").write_text(changed, encoding="utf-8")
    ingest(docs, llm_settings, embedder)
    bodies = [b for b in openai_server.requests[before:] if b.get("messages")]
    asked = [user_text(b) for b in bodies]
    assert asked and any("autumn storms" in text for text in asked)
    parts = [t.split("Text:", 1)[0] for b, t in zip(bodies, asked, strict=True) if kind_of(b) == SUMMARY_STEP]
    assert not any("Causes" in part or "Incidents" in part for part in parts)  # unchanged sections
    passages = [t for b, t in zip(bodies, asked, strict=True) if kind_of(b) == OPENIE_STEP]
    assert passages and not any("Investigators found" in t for t in passages)  # an unchanged passage
    assert not any("图书馆" in text for text in asked)  # the unchanged document


def test_a_failed_capped_hanging_or_made_up_reply_falls_back_for_that_node_only(
    docs, llm_settings, embedder, openai_server, caplog
):
    def flaky(body: dict):
        text = user_text(body)
        if kind_of(body) == SUMMARY_STEP and "Causes" in text.split("Text:", 1)[0]:
            return capped("Investigators found that worn")
        if kind_of(body) == SUMMARY_STEP and "存在问题" in text.split("Text:", 1)[0]:
            return malformed()
        if kind_of(body) == OPENIE_STEP and "Investigators found" in text:
            return reply_json({"entities": [MADE_UP, "Tokyo Bay"], "triples": []})  # only inventions
        if kind_of(body) == OPENIE_STEP and "借出图书" in text:
            return reply("{entities: [山城图书馆")  # malformed JSON
        if kind_of(body) == OPENIE_STEP and "injuries to dock workers" in text:
            return hang(3.0)  # longer than llm_ingest_timeout_s
        return plausible(body)

    openai_server.responder = flaky
    with caplog.at_level(logging.WARNING, logger="providers.ingest_llm"):
        report = ingest(docs, llm_settings, embedder)
    assert len(report.added) == 2 and not report.failed  # no document is lost
    chunks = chunks_of(llm_settings)
    sections = {tuple(c.heading_path)[-1]: c for c in chunks if c.metadata.get("level") == SECTION}
    assert sections["Causes"].metadata["summary_by"] == "extractive"
    assert sections["存在问题"].metadata["summary_by"] == "extractive"
    assert sections["Incidents"].metadata["summary_by"] == "llm:scripted-model"
    passages = {c.text: c for c in chunks if not c.metadata.get("level")}
    for marker in ("Investigators found", "借出图书", "injuries to dock workers"):
        passage = next(c for text, c in passages.items() if marker in text)
        assert "entities_by" not in passage.metadata and passage.metadata["entities"]  # the offline list
    assert MADE_UP not in str([c.metadata.get("entities") for c in chunks])
    warned = " ".join(r.getMessage() for r in caplog.records)
    assert "max_tokens" in warned and "summary" in warned and "appears in the passage" in warned
    assert "Timeout" in warned
    # failures are not cached: the next ingest asks those nodes again, and only those
    before = len(openai_server.requests)
    openai_server.responder = plausible
    ingest(docs, llm_settings, embedder, rebuild=True)
    asked = [user_text(b) for b in openai_server.requests[before:]]
    assert any("Investigators found" in t for t in asked) and not any("Fog was a factor" in t for t in asked)


def test_a_document_stops_asking_at_its_call_cap(docs, llm_settings, embedder, openai_server, caplog):
    openai_server.responder = plausible
    settings = llm_settings.model_copy(update={"llm_ingest_max_calls": 2})
    with caplog.at_level(logging.WARNING, logger="providers.ingest_llm"):
        ingest(docs, settings, embedder)
    assert len(chat_requests(openai_server)) == 4  # two per document
    by = [c.metadata.get("summary_by") for c in chunks_of(settings) if c.metadata.get("level")]
    assert by.count("llm:scripted-model") == 4 and "extractive" in by
    assert "requests are spent" in caplog.text


def test_two_timeouts_in_a_row_or_an_unreachable_endpoint_end_model_use_for_the_run(
    docs, llm_settings, embedder, openai_server, caplog
):
    openai_server.responder = lambda body: hang(3.0)
    with caplog.at_level(logging.WARNING, logger="providers.ingest_llm"):
        report = ingest(docs, llm_settings, embedder)
    assert len(chat_requests(openai_server)) == 2 and len(report.added) == 2
    assert "not used for the rest of this ingest" in caplog.text
    caplog.clear()
    gone = llm_settings.model_copy(update={"openai_base_url": refused_base_url()})
    with caplog.at_level(logging.WARNING, logger="providers.ingest_llm"):
        report = ingest(docs, gone, embedder, rebuild=True)
    assert len(report.added) == 2 and caplog.text.count("not used for the rest of this ingest") == 1
    assert all(c.metadata.get("summary_by") in (None, "extractive") for c in chunks_of(gone))


def test_a_damaged_cache_is_moved_aside_and_rebuilt(docs, llm_settings, embedder, openai_server, caplog):
    openai_server.responder = plausible
    path = cache_path(llm_settings.index_dir)
    path.parent.mkdir(parents=True)
    path.write_bytes(b"this is not a SQLite database" * 100)
    with caplog.at_level(logging.WARNING):
        ingest(docs, llm_settings, embedder)
    assert "damaged" in caplog.text and list(path.parent.glob(f"{path.name}.damaged-*"))
    first = len(chat_requests(openai_server))
    ingest(docs, llm_settings, embedder, rebuild=True)
    assert len(chat_requests(openai_server)) == first  # the rebuilt cache serves the second run


def test_the_setting_chooses_what_the_model_writes(monkeypatch):
    assert load_settings().llm_ingest_set() == {"summaries"}
    assert load_settings().llm_ingest_set(small_model=True) == frozenset()  # packaged models are slow
    monkeypatch.setenv("AGENTIC_RAG_LLM_INGEST", "summarise, OpenIE")
    assert load_settings().llm_ingest_set(small_model=True) == {"summaries", "entities"}
    monkeypatch.setenv("AGENTIC_RAG_LLM_INGEST", "none")
    assert load_settings().llm_ingest_set() == frozenset()
    monkeypatch.setenv("AGENTIC_RAG_LLM_INGEST", "everything")
    with pytest.raises(SettingsError, match="LLM_INGEST"):
        load_settings()


def test_offline_ingest_sends_nothing_even_with_the_tree_on(docs, settings, embedder, openai_server):
    ingest(
        docs,
        settings.model_copy(update={"summary_tree": True, "chunk_size": 200, "chunk_overlap": 0}),
        embedder,
    )
    assert not openai_server.requests


@pytest.mark.parametrize(
    ("name", "text", "expected"),
    [
        ("North Quay", "collisions at the north quay.", True),
        ("Zürich", "Sie wohnt in Zurich.", True),
        ("Paris", "Comparison of parish records", False),
        ("山城图书馆", "本年度山城圖書館共借出图书", True),
        ("上海图书馆", "本年度山城图书馆共借出图书", False),
    ],
)
def test_an_entity_counts_only_when_the_passage_contains_it(name, text, expected):
    assert appears_in(name, text) is expected


def test_entities_are_kept_as_written_once_each_and_inventions_dropped():
    reply = PassageEntities.model_validate(
        {
            "entities": ["North Quay", "north quay", MADE_UP],
            "triples": [{"subject": "Harbour", "relation": "has", "object": "North Quay"}],
        }
    )
    assert kept_entities(reply, "The Harbour lost a crane at the North Quay.") == ["North Quay", "Harbour"]


def test_a_model_that_cannot_be_built_leaves_ingest_offline_with_one_warning(settings, caplog):
    from providers.ingest_llm import open_ingest_writer

    asked = settings.model_copy(update={"brain": "llm", "summary_tree": True, "openai_base_url": None})
    with caplog.at_level(logging.WARNING, logger="providers.ingest_llm"):
        assert open_ingest_writer(asked.model_copy(update={"openai_api_key": None})) is None
    assert "not used" in caplog.text and "OPENAI_API_KEY" in caplog.text
