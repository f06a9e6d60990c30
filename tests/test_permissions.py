"""Document permissions enforced before search, over every store, retriever and surface.

The matrix: users alice (hr), bob (eng), carol (fin) and dave (no group) against documents of each group
plus a public one, every document holding a planted secret in English and in Chinese. Whatever a user
asks, through whichever retriever, store or HTTP route, no answer, citation, snippet or trace may hold
text of a document they may not read; and each user still finds their own group's secret.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from app.wiring import build_context
from config import load_settings
from core.access import AccessGroupError, readable
from core.chunks import Filters
from graph.builder import build_graph
from graph.run import ask
from ingestion.pipeline import ingest_paths
from retrievers.factory import open_retrievers
from tests.milvus_server import with_store

GROUPS = ("hr", "eng", "fin")
# Each group's document: front matter (hr), --access on the ingest run (eng, fin), and one public one.
SECRETS = {
    "hr": ("ZEBRA-4417", "斑马口令"),
    "eng": ("OTTER-9052", "水獭口令"),
    "fin": ("PUFFIN-3368", "海鹦口令"),
    "public": ("HERON-1200", "苍鹭口令"),
}
USERS = {"alice": ["hr"], "bob": ["eng"], "carol": ["fin"], "dave": []}
QUESTIONS = {
    "hr": ("What is the payroll vault passphrase?", "薪资保险库的口令是什么？"),
    "eng": ("What is the build server passphrase?", "构建服务器的口令是什么？"),
    "fin": ("What is the treasury ledger passphrase?", "财务总账的口令是什么？"),
    "public": ("What is the lobby wifi passphrase?", "大厅无线网络的口令是什么？"),
}
TOPICS = {
    "hr": ("payroll vault", "薪资保险库"),
    "eng": ("build server", "构建服务器"),
    "fin": ("treasury ledger", "财务总账"),
    "public": ("lobby wifi", "大厅无线网络"),
}


def document(group: str) -> str:
    en, zh = SECRETS[group]
    topic_en, topic_zh = TOPICS[group]
    head = "---\ntitle: Payroll vault\naccess: [hr]\n---\n" if group == "hr" else ""
    return (
        f"{head}# The {topic_en}\n\nThe {topic_en} passphrase is {en}. Only staff who need the {topic_en} "
        f"may use the passphrase {en}.\n\n## {topic_zh}\n\n{topic_zh}的口令是{zh}。{topic_zh}的口令{zh}"
        "只给需要的人。\n"
    )


def write_corpus(root: Path) -> dict[str, Path]:
    folders = {}
    for group in (*GROUPS, "public"):
        folder = root / group
        folder.mkdir(parents=True)
        (folder / f"{group}.md").write_text(document(group), encoding="utf-8")
        folders[group] = folder
    return folders


def ingest_corpus(folders: dict[str, Path], settings, embedder) -> None:
    """hr by its front matter, eng and fin with ``--access`` on their runs, public with none."""
    for group, folder in folders.items():
        access = [group] if group in ("eng", "fin") else None
        ingest_paths([folder], settings, embedder, progress=False, access=access)


def forbidden(user: str) -> list[str]:
    """Every planted text of documents the user may not read."""
    allowed = set(USERS[user]) | {"public"}
    return [text for group, pair in SECRETS.items() if group not in allowed for text in pair]


def assert_no_leak(user: str, payload: object) -> None:
    text = payload if isinstance(payload, str) else json.dumps(payload, ensure_ascii=False, default=str)
    leaked = [secret for secret in forbidden(user) if secret in text]
    assert not leaked, f"{user} saw {leaked}"


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> dict[str, Path]:
    return write_corpus(tmp_path_factory.mktemp("permission_docs"))


@pytest.fixture(scope="module", params=["local", "milvus"])
def store_settings(request, corpus, tmp_path_factory, embedder):
    tmp = tmp_path_factory.mktemp(f"perm_{request.param}")
    base = load_settings(
        index_dir=tmp / "index", checkpoint_db=tmp / "c.sqlite", embedder="use-multilingual", reranker="none"
    )
    settings = with_store(base, request.param, tmp)
    ingest_corpus(corpus, settings, embedder)
    return settings


@pytest.fixture(scope="module")
def retrievers(store_settings):
    found = open_retrievers(store_settings)
    yield found
    found.index.close()


# --- ingest -------------------------------------------------------------------------------------------
def test_groups_come_from_front_matter_or_the_run_and_none_means_everyone(retrievers):
    stored = {Path(c.source).stem: c.metadata.get("access") for c in retrievers.index.iter_chunks()}
    assert stored == {"hr": ["hr"], "eng": ["eng"], "fin": ["fin"], "public": None}
    assert readable({}, ["eng"]) and readable({"access": ["hr"]}, None)
    assert not readable({"access": ["hr"]}, ["eng"]) and not readable({"access": ["hr"]}, [])


def test_a_bad_group_name_is_refused(tmp_path, settings, embedder):
    docs = tmp_path / "d"
    docs.mkdir()
    (docs / "a.md").write_text("---\naccess: [hr, 'bad group!']\n---\n# A\n\ntext here\n", encoding="utf-8")
    report = ingest_paths([docs], settings, embedder, progress=False)
    assert report.failed and "access group" in report.failed[0].reason
    with pytest.raises(AccessGroupError):
        ingest_paths([docs], settings, embedder, progress=False, access=["no spaces allowed"])


def test_changing_a_runs_groups_reindexes_unchanged_files(tmp_path, settings, embedder):
    docs = tmp_path / "d"
    docs.mkdir()
    (docs / "a.md").write_text("# A\n\nplain text about otters\n", encoding="utf-8")
    assert ingest_paths([docs], settings, embedder, progress=False).added
    again = ingest_paths([docs], settings, embedder, progress=False, access=["eng"])
    assert again.updated and not again.unchanged
    store = open_retrievers(settings).index
    assert {tuple(c.metadata["access"]) for c in store.iter_chunks()} == {("eng",)}
    store.close()


# --- every retriever, both stores ---------------------------------------------------------------------
RETRIEVERS = ("vector", "keyword", "hybrid", "multi_hop", "hyde", "entity_graph")


def _search(retrievers, name: str, query: str, filters: Filters, secret: str, k: int = 10):
    if name == "hyde":  # the worst case: a hypothetical answer that holds the secret itself
        return retrievers.hyde.search(query, k, filters, hypothetical_answer=f"The passphrase is {secret}.")
    return retrievers.by_name(name).search(query, k, filters)


@pytest.mark.parametrize("name", RETRIEVERS)
@pytest.mark.parametrize("user", list(USERS))
def test_no_retriever_returns_a_chunk_the_user_may_not_read(retrievers, name, user):
    filters = Filters().for_caller(USERS[user])
    for group, (en, zh) in SECRETS.items():
        for query, secret in ((f"{QUESTIONS[group][0]} {en}", en), (f"{QUESTIONS[group][1]} {zh}", zh)):
            hits = _search(retrievers, name, query, filters, secret)
            assert all(readable(h.chunk.metadata, USERS[user]) for h in hits), (name, user, query)
            assert_no_leak(user, [h.chunk.text for h in hits])
            if group in (*USERS[user], "public") and name != "keyword":
                assert any(secret in h.chunk.text for h in hits), (name, user, query)


@pytest.mark.parametrize("user", list(USERS))
def test_the_filter_acts_before_ranking_so_k_permitted_hits_come_back(retrievers, user):
    """Dropping hits after ranking would leave fewer than k (none, for a query aimed at a document the
    user may not read); the mask before ranking returns the best k permitted chunks."""
    filters = Filters().for_caller(USERS[user])
    permitted = sum(readable(c.metadata, USERS[user]) for c in retrievers.index.iter_chunks())
    for group, (en, zh) in SECRETS.items():
        for name in ("vector", "hybrid", "hyde"):
            for query, secret in ((f"{QUESTIONS[group][0]} {en}", en), (f"{QUESTIONS[group][1]} {zh}", zh)):
                hits = _search(retrievers, name, query, filters, secret, k=1)
                assert len(hits) == 1 and readable(hits[0].chunk.metadata, USERS[user]), (name, query)
        hits = retrievers.hybrid.search("passphrase 口令", 50, filters)
        assert len(hits) == permitted


@pytest.mark.parametrize("user", ["alice", "dave"])
def test_the_agent_over_either_store_answers_only_from_readable_documents(store_settings, user):
    context = build_context(store_settings)
    app = build_graph()
    filters = Filters().for_caller(USERS[user])
    try:
        for group in SECRETS:
            for question in QUESTIONS[group]:
                for mode in ("hybrid", "agentic"):
                    result = ask(app, question, context=context, mode=mode, filters=filters)
                    assert_no_leak(user, result.model_dump(mode="json"))
                    if group in (*USERS[user], "public"):
                        assert any(s in result.answer for s in SECRETS[group]), (user, question, mode)
    finally:
        context.retrievers.index.close()


@pytest.mark.parametrize("store", ["local", "milvus"])
def test_group_names_are_matched_whole_never_as_patterns(store, settings, embedder, tmp_path):
    """``_`` and ``%`` are wildcards of Milvus ``like``; groups are hex-encoded there, so "g_1" never
    matches "gx1", and "eng" never matches "engineering"."""
    from core.chunks import Chunk
    from ingestion.indexing import index_chunks
    from retrievers.milvus_filters import access_expression
    from retrievers.store import open_store

    assert "g_1" not in access_expression(["g_1"]) and "%|675f31|%" in access_expression(["g_1"])
    current = with_store(settings, store, tmp_path)
    chunks = [
        Chunk(id=f"c{i}", text=f"shared topic text number {i}", source=f"{i}.md", metadata={"access": groups})
        for i, groups in enumerate([["gx1"], ["engineering"], ["g_1"], ["eng", "hr"]])
    ]
    index_chunks(chunks, current, embedder, index_dir=current.index_dir, progress=False)
    opened = open_store(current)
    try:
        query = embedder.embed_query("shared topic text")
        for caller, expected in (
            (["g_1"], ["c2"]),
            (["eng"], ["c3"]),
            (["g%"], []),
            (["hr", "gx1"], ["c0", "c3"]),
        ):
            hits = opened.resolve(*opened.vector_search(query, 10, Filters().for_caller(caller)))
            assert sorted(c.id for c, _ in hits) == expected, caller
    finally:
        opened.close()


def test_the_local_index_masks_agree_with_the_docstore_query(tmp_path, settings, embedder):
    """The index ORs per-group masks from one pass; the docstore's SQL says the same for every caller,
    including a record whose metadata names one group as a plain string."""
    from core.chunks import Chunk
    from ingestion.indexing import index_chunks
    from retrievers.index import open_index

    chunks = [
        Chunk(id=f"c{i}", text=f"text {i}", source=f"{i}.md", metadata={"access": groups} if groups else {})
        for i, groups in enumerate([None, ["hr"], ["hr", "eng"], "fin", [], ["eng"]])
    ]
    index_chunks(chunks, settings, embedder, index_dir=settings.index_dir, progress=False)
    index = open_index(settings.index_dir)
    try:
        for caller in ([], ["hr"], ["eng"], ["fin"], ["hr", "fin"], ["nobody"]):
            sql = index.docstore.allowed_mask(Filters(access=caller), index.size)
            assert (index.mask(Filters(access=caller)) == sql).all(), caller
            expected = [readable(c.metadata, caller) for c in chunks]
            assert sql.tolist() == expected, caller
    finally:
        index.close()


def test_hnsw_filtered_search_is_exact_over_the_permitted_vectors_query_after_query():
    """Below 50,000 permitted vectors HNSW scores them directly in its float16 store (exact); a mask's
    bitmap selector is reused for the same mask and never for another. The flat index likewise."""
    import numpy as np

    from retrievers.vector_index import HnswParams, VectorIndex

    rng = np.random.default_rng(3)
    vectors = rng.standard_normal((600, 32)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    hnsw = VectorIndex.build(vectors, 32, HnswParams(threshold=1))
    flat = VectorIndex.build(vectors, 32, HnswParams(threshold=0))
    assert hnsw.is_hnsw and not flat.is_hnsw
    masks = [np.arange(600) % 10 == g for g in (3, 7)]
    for index in (hnsw, flat):
        for query in vectors[:5]:
            for mask in (*masks, masks[0]):
                positions, _ = index.search(query, 10, mask)
                allowed = np.flatnonzero(mask)
                exact = allowed[np.argsort(-(vectors[allowed] @ query))[:10]]
                assert positions.tolist() == exact.tolist()
