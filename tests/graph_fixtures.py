"""Fixture corpora for graph tests: the shared bilingual corpus plus a two-hop chain."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from core.chunks import Chunk
from memory.checkpointer import open_checkpointer
from nodes.context import AgentContext
from nodes.state import CHECKPOINT_TYPES
from tests.corpus import corpus_chunks

# The answer ("Marta Kowalczyk") sits in a passage that shares no words with the question; it is
# reachable only through the bridge entity ("Harbor Lights Festival") named in the first passage.
TWO_HOP = [
    (
        "hop-1",
        "Quillon Bridge",
        "The Quillon Bridge was opened in 1932 as part of the Harbor Lights Festival celebrations.",
    ),
    (
        "hop-2",
        "Harbor Lights Festival",
        "Marta Kowalczyk, a painter, started the Harbor Lights Festival and designed its paper lanterns.",
    ),
    ("noise-1", "River Ferries", "River ferries carried passengers across the bay before 1930."),
    ("noise-2", "Lantern Making", "Paper lanterns are traditionally made from bamboo frames and rice paper."),
    (
        "noise-3",
        "Bridge openings",
        "Many bridges were opened with celebrations, parades and fireworks in the 1930s.",
    ),
    ("noise-4", "City founders", "The city was founded by merchants who built the first harbor wall."),
    (
        "noise-5",
        "Quillon Street",
        "Quillon Street runs from the old market to the bridge and was paved in 1928.",
    ),
]
TWO_HOP_QUESTION = "Who founded the celebrations during which the Quillon Bridge was opened?"
# The same in Chinese: the director ("林晓岚") is named only in the film's own passage, which the bridge
# passage points to by its 《title》; the question's "执导" is in neither passage.
TWO_HOP_ZH = [
    ("zhhop-1", "白鹭书院", "白鹭书院建于清代，是电影《灯河往事》的主要取景地。"),
    ("zhhop-2", "灯河往事", "《灯河往事》由林晓岚拍摄，讲述渡口人家三代人的故事。"),
]
TWO_HOP_ZH_QUESTION = "以白鹭书院为主要取景地的电影是谁执导的？"


# A conversation over the guide corpus: zh and en turns, one follow-up (它) to resolve.
CONVERSATION = [
    "混合检索是如何合并结果的？",
    "那它的常数是多少？",
    "What does error code E-4711 mean?",
    "How does keyword search rank chunks?",
    "HNSW 是什么？",
]


# Two founding dates in both languages: a question can ask for the span between them (a computation).
UNIVERSITIES = [
    (
        "harvard",
        "Harvard University",
        "Harvard University was founded in 1636 in Cambridge, Massachusetts. It is the oldest institution "
        "of higher learning in the United States. Its library is the largest academic library in the world.",
    ),
    (
        "yale",
        "Yale University",
        "Yale University was established in 1701 in New Haven, Connecticut. It is the third-oldest "
        "university in the country. Its motto is Lux et veritas.",
    ),
    (
        "yale-zh",
        "耶鲁大学",
        "耶鲁大学成立于1701年，位于康涅狄格州纽黑文。耶鲁是美国第三古老的大学。它的校训是光明与真知。",
    ),
    (
        "harvard-zh",
        "哈佛大学",
        "哈佛大学创建于1636年，是美国历史最悠久的高等学府。哈佛的图书馆是世界上最大的学术图书馆。",
    ),
]


def university_chunks() -> list[Chunk]:
    return [Chunk(id=cid, text=text, source=f"{cid}.md", title=title) for cid, title, text in UNIVERSITIES]


@contextmanager
def llm_context_over(
    chunks: list[Chunk],
    settings: Any,
    embedder: Any,
    base_url: str,
    *,
    brain_embedder: Any = None,
    **overrides: Any,
) -> Iterator[AgentContext]:
    """An LLM ``AgentContext`` over ``chunks`` in a real local index, its model at ``base_url``;
    ``brain_embedder`` (None: none) lets the brain's offline fallbacks and answer check judge by meaning."""
    from ingestion.indexing import index_chunks
    from providers.brain import make_brain
    from retrievers.factory import build_retrievers
    from retrievers.index import open_index

    index_chunks(chunks, settings, embedder, index_dir=settings.index_dir, progress=False)
    current = settings.model_copy(
        update={"openai_base_url": base_url, "openai_api_key": "sk-test", "llm_max_retries": 0, **overrides}
    )
    index = open_index(current.index_dir)
    try:
        yield AgentContext(
            settings=current,
            retrievers=build_retrievers(index, current, embedder),
            brain=make_brain(current, brain_embedder),
        )
    finally:
        index.close()


def graph_corpus() -> list[Chunk]:
    extra = [
        Chunk(id=cid, text=text, source=f"history/{cid}.md", title=title, heading_path=[title], language="en")
        for cid, title, text in TWO_HOP
    ] + [
        Chunk(id=cid, text=text, source=f"history/{cid}.md", title=title, heading_path=[title], language="zh")
        for cid, title, text in TWO_HOP_ZH
    ]
    return corpus_chunks() + extra


@pytest.fixture(params=["local", "milvus"])
def make_context(request, settings, embedder, tmp_path):
    """Build an ``AgentContext`` over the graph corpus in a real store; overrides change settings.

    Every test using it runs over both stores: the local index and Milvus (Lite, in process).
    """
    from ingestion.indexing import index_chunks
    from providers.brain import offline_brain
    from retrievers.factory import build_retrievers
    from retrievers.store import open_store
    from tests.milvus_server import with_store

    settings = with_store(settings, request.param, tmp_path)
    index_chunks(graph_corpus(), settings, embedder, index_dir=settings.index_dir, progress=False)
    opened = []

    def build(brain=None, **overrides) -> AgentContext:
        current = settings.model_copy(update=overrides)
        index = open_store(current)
        opened.append(index)
        return AgentContext(
            settings=current,
            retrievers=build_retrievers(index, current, embedder),
            brain=brain or offline_brain(embedder=embedder),
            reranker=None,
        )

    yield build
    for index in opened:
        index.close()


@pytest.fixture(params=["sqlite", "postgres"])
def saver(request, tmp_path):
    """The graph's checkpointer on SQLite and on PostgreSQL (needs ``postgres_url`` in the test module)."""
    url = request.getfixturevalue("postgres_url") if request.param == "postgres" else None
    with open_checkpointer(
        sqlite_path=tmp_path / "checkpoints.sqlite", postgres_url=url, allowed_types=CHECKPOINT_TYPES
    ) as opened:
        yield opened


@pytest.fixture
def one_passage_context(settings, embedder):
    """An ``AgentContext`` over a one-passage local index (about hybrid search), for the routes that
    answer beyond passages; keyword arguments set its other fields (``sql=``, ``api_tools=``)."""
    from ingestion.indexing import index_chunks
    from providers.brain import offline_brain
    from retrievers.factory import build_retrievers
    from retrievers.index import open_index

    chunk = Chunk(
        id="guide", text="Hybrid search fuses BM25 and dense results.", source="g.md", title="Hybrid"
    )
    index_chunks([chunk], settings, embedder, index_dir=settings.index_dir, progress=False)
    index = open_index(settings.index_dir)

    def build(brain=None, current=None, **fields) -> AgentContext:
        current = current or settings
        return AgentContext(
            settings=current,
            retrievers=build_retrievers(index, current, embedder),
            brain=brain or offline_brain(embedder=embedder),
            **fields,
        )

    yield build
    index.close()
