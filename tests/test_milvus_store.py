"""The Milvus store against real engines: Milvus Lite in process and its gRPC server on 127.0.0.1.

Covers what the shared retriever and graph tests (run over both stores) do not: filter expressions built
from hostile values, incremental ingest by primary key, migration without re-embedding, parity of
rankings and answers between the stores, and several processes sharing one server.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import datetime
from pathlib import Path

import numpy as np
import pytest

from core.chunks import Chunk, Filters
from graph.builder import build_graph
from graph.run import ask
from ingestion.indexing import index_chunks
from ingestion.migrate import migrate_to_milvus
from ingestion.pipeline import ingest_paths
from nodes.context import AgentContext
from providers.brain import offline_brain
from retrievers.factory import build_retrievers
from retrievers.index import IndexNotFoundError, open_index
from retrievers.milvus_filters import FilterValueError, literal, to_expression
from retrievers.milvus_store import MilvusStore, encode_tokens
from retrievers.store import milvus_target, open_store
from tests.corpus import corpus_chunks
from tests.milvus_server import milvus_server_uri, with_store

ROOT = Path(__file__).resolve().parent.parent
GUIDE = ROOT / "docs" / "guide"
HOSTILE = ["O'Neil", 'say "hi"', "back\\slash", "' OR 1=1 --", '" or true or "', "50%_off", "a]b[c"]


# --- expressions -----------------------------------------------------------------------------------
def test_literals_escape_quotes_and_backslashes_and_refuse_control_characters():
    assert literal("O'Neil") == '"O\'Neil"'
    assert literal('say "hi"') == '"say \\"hi\\""'
    assert literal("back\\slash") == '"back\\\\slash"'
    assert literal('" or true or "') == '"\\" or true or \\""'
    assert literal("two\nlines") == '"two\\nlines"'
    with pytest.raises(FilterValueError, match="control character"):
        literal("bell\x07")


def test_expressions_cover_every_filter_with_escaped_values():
    filters = Filters(
        source="docs/*.md",
        language="zh",
        modified_after=datetime.fromtimestamp(1_700_000_000),
        equals={"team": "' OR 1=1 --", "title": 'a "b"', "chunk_index": "3"},
    )
    expression = to_expression(filters, lambda: ["docs/a.md", "docs/sub/b.md", "notes/c.md", "docs/x.txt"])
    assert '(source in ["docs/a.md", "docs/sub/b.md"])' in expression
    assert '(language == "zh")' in expression
    assert "(mtime >= 1700000000.0)" in expression
    assert '(meta_text["team"] == "\' OR 1=1 --")' in expression
    assert '(title == "a \\"b\\"")' in expression
    assert "(chunk_index == 3)" in expression
    assert to_expression(Filters(source="nowhere/*"), lambda: ["docs/a.md"]) == "false"
    assert to_expression(Filters(equals={"chunk_index": "03"}), lambda: []) == "false"


def _tricky_chunks() -> list[Chunk]:
    return [
        Chunk(
            id=f"t{i}",
            text=f"passage number {i} about quoting rules 引号规则 {i}",
            source=f"files/{value}.md",
            title=value,
            language="en",
            mtime=1_700_000_000 + i,
            metadata={"owner": value, "flag": i % 2 == 0},
        )
        for i, value in enumerate(HOSTILE)
    ]


@pytest.fixture
def tricky_store(settings, embedder, tmp_path):
    current = with_store(settings, "milvus", tmp_path)
    index_chunks(_tricky_chunks(), current, embedder, index_dir=current.index_dir, progress=False)
    store = open_store(current)
    yield store
    store.close()


@pytest.mark.parametrize("value", HOSTILE)
def test_hostile_values_match_exactly_their_own_chunk_and_nothing_else(tricky_store, embedder, value):
    query = embedder.embed_query("quoting rules")
    for filters in (
        Filters(equals={"owner": value}),
        Filters(equals={"title": value}),
        Filters(source=f"files/{value}.md"),
    ):
        hits = tricky_store.resolve(*tricky_store.vector_search(query, 10, filters))
        assert [c.title for c, _ in hits] == [value], filters
        hits = tricky_store.resolve(*tricky_store.keyword_search(["quot"], 10, filters))
        assert [c.title for c, _ in hits] == [value]


def test_filter_values_are_compared_as_text_like_the_local_index(tricky_store, embedder):
    query = embedder.embed_query("quoting rules")
    even = tricky_store.resolve(*tricky_store.vector_search(query, 10, Filters(equals={"flag": True})))
    assert sorted(c.id for c, _ in even) == ["t0", "t2", "t4", "t6"]
    keys, _ = tricky_store.vector_search(query, 10, Filters(source="nothing-like-this"))
    assert len(keys) == 0


@pytest.mark.parametrize("kind", ["local", "milvus"])
def test_both_stores_find_text_as_written_in_chunks_the_caller_may_read(settings, embedder, tmp_path, kind):
    """``mentions``: a Chinese name a posting lookup misses (jieba cuts 坂里村界於 into 坂里 / 村界于) is
    read in the text; a page the caller may not read, or a chunk left out, does not count; text a
    Milvus ``like`` pattern cannot hold literally counts as mentioned there (cannot tell)."""
    current = with_store(settings, kind, tmp_path)
    chunks = [
        Chunk(
            id="village",
            text="坂里村界於東源村與旭海村之間，地形屬於平原。",
            source="zh/pingtung.md",
            language="zh",
        ),
        Chunk(id="sale", text="The 50% off sale ends on Monday.", source="en/sale.md"),
    ]
    index_chunks(chunks, current, embedder, index_dir=current.index_dir, progress=False)
    store = open_store(current)
    try:
        assert store.mentions(["坂里村"]) and store.mentions(["旭海村"])
        assert not store.mentions(["珠穆朗玛峰"])
        assert not store.mentions(["坂里村"], Filters(source="en/*"))
        assert store.mentions(["坂里村"], Filters(source="zh/*"))
        assert not store.mentions(["坂里村"], without={"village"})
        assert store.mentions(["50% off"])  # found locally; in Milvus not readable as a pattern: counted
    finally:
        store.close()


# --- incremental ingest -----------------------------------------------------------------------------
def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def _summary(report) -> dict:
    names = lambda paths: sorted(Path(p).name for p in paths)  # noqa: E731
    return {
        "added": names(report.added),
        "updated": names(report.updated),
        "unchanged": names(report.unchanged),
        "removed": names(report.removed),
        "failed": names(f.source for f in report.failed),
        "chunks_embedded": report.chunks_embedded,
        "chunks_total": report.chunks_total,
    }


def _stored_ids(settings) -> dict[str, set[str]]:
    store = open_store(settings)
    try:
        out: dict[str, set[str]] = {}
        for chunk in store.iter_chunks():
            out.setdefault(Path(chunk.source).name, set()).add(chunk.id)
        return out
    finally:
        store.close()


def test_incremental_ingest_upserts_changed_and_deletes_removed_files_with_the_local_summary(
    settings, embedder, tmp_path
):
    docs = tmp_path / "docs"
    write(docs / "en.md", "# Vector index\n\nAbove 200,000 chunks the index switches to HNSW graphs.\n")
    write(docs / "zh.md", "# 混合检索\n\n混合检索使用倒数排名融合（RRF）合并两种检索结果。\n")
    write(docs / "notes.txt", "Error code E-4711 means the disk quota was exceeded.\n")
    stores = {name: with_store(settings, name, tmp_path) for name in ("local", "milvus")}
    steps = []
    for name, current in stores.items():
        first = ingest_paths([docs], current, embedder, progress=False)
        if name == "milvus":
            before = _stored_ids(current)
        steps.append((name, "first", _summary(first)))
    write(docs / "en.md", "# Vector index\n\nBelow the threshold the vector index searches exactly.\n")
    (docs / "notes.txt").unlink()
    write(docs / "bad.pdf", "not a pdf")
    for name, current in stores.items():
        steps.append((name, "second", _summary(ingest_paths([docs], current, embedder, progress=False))))
    local = [s for n, _, s in steps if n == "local"]
    milvus = [s for n, _, s in steps if n == "milvus"]
    assert local == milvus
    assert milvus[1]["updated"] == ["en.md"] and milvus[1]["removed"] == ["notes.txt"]
    assert milvus[1]["unchanged"] == ["zh.md"] and milvus[1]["chunks_embedded"] == 1
    after = _stored_ids(stores["milvus"])
    assert "notes.txt" not in after  # deleted by primary key
    assert after["zh.md"] == before["zh.md"]
    assert after["en.md"].isdisjoint(before["en.md"])  # the old version's chunks are gone
    store = open_store(stores["milvus"])
    try:
        assert sorted(Path(s).name for s in store.files()) == ["en.md", "zh.md"]
        hits = store.resolve(*store.keyword_search(["exact"], 5))
        assert [Path(c.source).name for c, _ in hits] == ["en.md"]
        assert len(store.keyword_search(["hnsw"], 5)[0]) == 0
    finally:
        store.close()


def test_a_missing_collection_says_how_to_create_it(settings, tmp_path):
    current = with_store(settings, "milvus", tmp_path)
    with pytest.raises(IndexNotFoundError, match=r"python main\.py ingest"):
        open_store(current)


# --- migration and parity ----------------------------------------------------------------------------
PARITY_QUERIES = [
    "How does hybrid search merge the rankings?",
    "混合检索如何合并两份排名？",
    "which embedder is the default",
    "默认的嵌入模型是什么",
    "what happens when a file fails to load",
    "文件加载失败会怎样",
    "How do I rebuild the index after changing the embedder?",
    "重建索引",
    "BM25 k1 b parameters",
    "会话线程 checkpoint",
    "retry limit of the agent loop",
    "HNSW threshold",
]


@pytest.fixture(scope="module")
def guide_stores(tmp_path_factory, embedder):
    """The bundled guide in a local index, and migrated from it into Milvus (no re-embedding)."""
    from config import load_settings

    root = tmp_path_factory.mktemp("guide")
    local = load_settings(index_dir=root / "index", embedder="use-multilingual", reranker="none")
    ingest_paths([GUIDE], local, embedder, progress=False)
    milvus = with_store(local, "milvus", root)
    result = migrate_to_milvus(local.index_dir, milvus)
    return local, milvus, result


def test_migration_copies_every_chunk_vector_and_file_record_without_re_embedding(guide_stores):
    local, milvus, result = guide_stores
    index = open_index(local.index_dir)
    store = MilvusStore.open(milvus_target(milvus))
    try:
        assert result["chunks"] == index.count() == store.count() and result["files"] == 10
        stored = {chunk.id: (chunk, vector) for chunk, vector in store.iter_rows()}
        vectors = np.load(index.generation / "vectors.npy")
        for pos, chunk, _ in index.docstore.iter_rows():
            twin, vector = stored[chunk.id]
            assert twin == chunk
            assert np.allclose(vector, vectors[pos], atol=1e-6)
        assert store.files() == index.docstore.files()
    finally:
        index.close()
        store.close()


def test_migrating_into_a_non_empty_collection_needs_replace(guide_stores):
    local, milvus, _ = guide_stores
    with pytest.raises(Exception, match="--replace"):
        migrate_to_milvus(local.index_dir, milvus)


def _overlap(a: list, b: list) -> float:
    return len({h.id for h in a} & {h.id for h in b}) / max(len(a), 1)


@pytest.mark.parametrize("mode", ["vector", "hybrid", "keyword"])
def test_both_stores_rank_the_same_top_10(guide_stores, embedder, mode):
    local, milvus, _ = guide_stores
    opened = [open_store(local), open_store(milvus)]
    try:
        sets = [build_retrievers(s, local, embedder) for s in opened]
        overlaps = [
            _overlap(sets[0].by_name(mode).search(q, 10), sets[1].by_name(mode).search(q, 10))
            for q in PARITY_QUERIES
        ]
    finally:
        for store in opened:
            store.close()
    assert sum(overlaps) / len(overlaps) >= 0.9, overlaps


GUIDE_QUESTIONS = (ROOT / "tests" / "data" / "guide_questions.txt").read_text(encoding="utf-8").splitlines()


def test_both_stores_give_the_same_answers_on_the_guide(guide_stores, embedder):
    local, milvus, _ = guide_stores
    answers = []
    for current in (local, milvus):
        store = open_store(current)
        try:
            context = AgentContext(
                settings=current,
                retrievers=build_retrievers(store, current, embedder),
                brain=offline_brain(),
                reranker=None,
            )
            answers.append([ask(build_graph(), q, context=context).answer for q in GUIDE_QUESTIONS])
        finally:
            store.close()
    assert all(answers[0]) and answers[0] == answers[1]


# --- the remote path: a Milvus gRPC server shared by several processes -------------------------------
def _cli(args: list[str], env: dict[str, str]) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, str(ROOT / "main.py"), *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )


@pytest.mark.slow
def test_several_processes_ingest_and_search_one_milvus_server(milvus_server_uri, settings, tmp_path):
    current = with_store(settings, "milvus", tmp_path, uri=milvus_server_uri)
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "AGENTIC_RAG_STORE": "milvus",
        "AGENTIC_RAG_MILVUS_URI": milvus_server_uri,
        "AGENTIC_RAG_MILVUS_COLLECTION": current.milvus_collection,
        "AGENTIC_RAG_EMBEDDER": "use-multilingual",
        "AGENTIC_RAG_RERANKER": "none",
        "AGENTIC_RAG_INDEX_DIR": str(tmp_path / "unused"),
    }
    ingest = _cli(["ingest", str(GUIDE / "en"), str(GUIDE / "zh"), "--json"], env)
    out, err = ingest.communicate(timeout=300)
    assert ingest.returncode == 0, err
    ingested = json.loads(out)
    assert len(ingested["added"]) == 10
    queries = ["hybrid search RRF", "混合检索", "rebuild the index", "嵌入模型"]
    running = [_cli(["search", q, "--json", "--k", "5", "--filter", "language=zh"], env) for q in queries]
    running += [
        _cli(["ask", "混合检索是怎么合并结果的？", "--json", "--brain", "offline"], env),
        _cli(["index", "stats", "--json"], env),
    ]
    outputs = []
    for process in running:
        out, err = process.communicate(timeout=300)
        assert process.returncode == 0, err
        outputs.append(json.loads(out))
    results = [o["results"] for o in outputs[:4]]
    assert all(results) and all(hit["language"] == "zh" for hits in results for hit in hits)
    answer, stats = outputs[4], outputs[5]
    assert answer["answer"] and answer["citations"]
    assert stats["chunks"] == ingested["chunks_total"] and stats["collection"] == current.milvus_collection
    assert not (tmp_path / "unused").exists()  # nothing written locally: the state is in the server


def test_keyword_tokens_survive_the_encoding_whole():
    tokens = ["gpt-4o", "混合", "检索", "o'neil", "x" * 500]
    words = encode_tokens(tokens).split(" ")
    assert len(words) == len(tokens) and len(set(words)) == len(tokens)
    assert bytes.fromhex(words[1]).decode() == "混合"
    assert len(encode_tokens(["abc"] * 100_000)) <= 65_535
