"""The entity graph (issue 26): one extractor, entities stored with the index, and a personalised
PageRank walk that reaches the passage sharing an entity, not words, with the question."""

from __future__ import annotations

import numpy as np
import pytest

from core.chunks import Chunk
from core.entities import entity_key, extract_entities, mentioned_keys
from retrievers.entity_graph import ENTITIES_KEY, EntityGraph, GraphParams

# A bridge question: the second passage shares only the bridge entity with the question.
EN_CORPUS = [
    ("en-phone", "Zorblat X", "The Zorblat X phone is manufactured by Quimsy Corporation."),
    ("en-bridge", "Quimsy Corporation", "Quimsy Corporation was established by Ada Lindqvist in 1999."),
    (
        "en-d1",
        "Zorblat reviews",
        "Reviewers of the new Zorblat phone praised its camera; its maker started a trend.",
    ),
    ("en-d2", "Phone makers", "Many phone makers started shipping folding models in the spring."),
    ("en-d3", "Tampere", "Tampere is a city in Finland with a long history of paper mills."),
    ("en-d4", "Camera phones", "The first camera phone was sold in 2000 and its maker started a trend."),
]
EN_QUESTION = "Who started the maker of the Zorblat X phone?"
ZH_CORPUS = [
    ("zh-book", "星河纪事", "《星河纪事》由青岚出版社出版，是一部长篇科幻小说。"),
    ("zh-bridge", "青岚出版社", "青岚出版社由林知远于一九八八年在杭州创办。"),
    ("zh-d1", "科幻小说", "星河系列的读者认为这部科幻小说情节紧凑，出版后人物鲜明。"),
    ("zh-d2", "出版业", "许多出版社近年开始出版有声书，谁也没有想到会这么受欢迎。"),
    ("zh-d3", "杭州", "杭州是浙江省的省会，以西湖闻名。"),
    ("zh-d4", "长篇小说", "长篇科幻小说的创办人是谁，一直有不同说法。"),
]
ZH_QUESTION = "《星河纪事》的出版社是谁创办的？"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "The current editor is Jan Philip Solovej from University of Copenhagen.",
            ["Jan Philip Solovej", "University of Copenhagen"],
        ),
        ("It borders Kentucky and Virginia to the north.", ["Kentucky", "Virginia"]),
        ('"Hello Love" is a song by Hank Snow.', ["Hello Love", "Hank Snow"]),
        ("刘慈欣创作的《三体》由重庆出版社出版，他出生于北京。", ["三体", "刘慈欣", "重庆出版社", "北京"]),
    ],
)
def test_the_extractor_finds_names_places_organisations_and_titles(text, expected):
    found = extract_entities(text)
    assert all(name in found for name in expected), found


def test_a_capitalised_sentence_opener_is_no_name_by_its_capital_alone():
    assert "Founded" not in extract_entities("Founded in 1930, the firm grew. It now employs many.")
    assert "Paris" in extract_entities("In Paris he met her.")
    assert "Who" not in extract_entities("Who was the first president of Quimsy Corporation?")


def test_entity_keys_fold_case_accents_articles_and_possessives():
    assert entity_key("The Beatles'") == entity_key("beatles")
    assert entity_key("Élysée Palace") == entity_key("Elysee palace")
    assert entity_key("歐洲") == entity_key("欧洲")


def test_a_question_names_graph_entities_by_ngrams_in_any_case_but_single_words_need_a_capital():
    vocab = {"hello love": 0, "time": 1, "hank snow": 2}
    assert mentioned_keys("who sang hello love?", vocab) == ["hello love"]
    assert mentioned_keys("what time is it", vocab) == []
    assert mentioned_keys("Time magazine", vocab) == ["time"]
    # an article folds away: "a border" is the key "border", still a common word, not the entity "Border"
    assert mentioned_keys("Which county shares a border with it?", {"border": 0}) == []
    assert mentioned_keys("He crossed the Border at dawn", {"border": 0}) == ["border"]


def test_the_walk_from_the_question_entity_reaches_the_bridge_passage_first():
    ids = ["a", "bridge", "c"]
    entities = [["Zorblat X", "Quimsy Corporation"], ["Quimsy Corporation", "Ada Lindqvist"], ["Tampere"]]
    graph = EntityGraph(ids, entities, max_entity_share=1.0)
    scores = graph.walk(graph.seeds_for("Who started the maker of the Zorblat X?"), {}, GraphParams())
    assert scores[1] > scores[2] == 0.0  # two steps away through Quimsy Corporation; Tampere unreachable
    assert scores[0] > scores[1]  # the passage naming the question's entity comes first


def test_the_walk_prefers_the_passage_about_a_bridge_entity_to_passages_that_merely_mention_it():
    """From the wind farm to Iowa: the passage titled "Iowa" (the state's own page) comes before the
    passages that name Iowa in passing; 苏州 likewise for a Chinese title with a qualifier."""
    ids = ["farm", "mention-1", "iowa", "mention-2", "zh-garden", "zh-mention", "zh-city"]
    titles = ["Intrepid Wind Farm", "Iowa caucuses", "Iowa", "Corn Belt", "拙政园", "苏州评弹", "苏州 (城市)"]
    entities = [
        ["Intrepid Wind Farm", "Iowa"],
        ["Iowa caucuses", "Iowa"],
        ["Iowa", "Des Moines"],
        ["Corn Belt", "Iowa"],
        ["拙政园", "苏州"],
        ["苏州评弹", "苏州"],
        ["苏州", "太湖"],
    ]
    graph = EntityGraph(
        ids, entities, max_entity_share=1.0, titles=titles, title_weight=GraphParams().title_weight
    )
    for question, target, others in (
        ("Who was president when the area where Intrepid Wind Farm is located became a state?", 2, (1, 3)),
        ("拙政园所在的城市有多少人口？", 6, (5,)),
    ):
        scores = graph.walk(graph.seeds_for(question), {}, GraphParams())
        assert all(scores[target] > scores[other] > 0 for other in others), scores


def test_a_passage_the_caller_may_not_read_neither_ranks_nor_links_two_readable_ones():
    """Zorblat X -> (hidden: Quimsy Corporation, Ada Lindqvist) -> Ada Lindqvist's passage: without the
    hidden passage no path joins the question's passage to the last one."""
    ids = ["phone", "hidden", "founder"]
    entities = [
        ["Zorblat X", "Quimsy Corporation"],
        ["Quimsy Corporation", "Ada Lindqvist"],
        ["Ada Lindqvist"],
    ]
    graph = EntityGraph(ids, entities, max_entity_share=1.0)
    seeds = graph.seeds_for("Who started the maker of the Zorblat X?")
    assert graph.walk(seeds, {}, GraphParams())[2] > 0.0
    masked = graph.walk(seeds, {"hidden": 1.0}, GraphParams(), np.array([True, False, True]))
    assert masked[1] == 0.0 and masked[2] == 0.0 and masked[0] > 0.0


def index_corpus(corpus, settings, embedder, language):
    """(store, retrievers) over ``corpus`` ((id, title, text) rows) in a real local index."""
    from ingestion.indexing import index_chunks
    from retrievers.factory import build_retrievers
    from retrievers.store import open_store

    chunks = [
        Chunk(id=cid, text=text, source=f"{cid}.md", title=title, heading_path=[title], language=language)
        for cid, title, text in corpus
    ]
    index_chunks(chunks, settings, embedder, index_dir=settings.index_dir, progress=False)
    store = open_store(settings)
    return store, build_retrievers(store, settings, embedder)


@pytest.mark.parametrize(
    ("corpus", "question", "language"),
    [(EN_CORPUS, EN_QUESTION, "en"), (ZH_CORPUS, ZH_QUESTION, "zh")],
    ids=["en", "zh"],
)
def test_entity_graph_search_finds_the_bridge_passage_hybrid_misses(
    corpus, question, language, settings, embedder
):
    store, retrievers = index_corpus(corpus, settings, embedder, language)
    try:
        bridge = f"{language}-bridge"
        assert all(ENTITIES_KEY in c.metadata for c in store.iter_chunks())  # stored at ingest
        hybrid = [h.id for h in retrievers.hybrid.search(question, 3)]
        fused = [h.id for h in retrievers.entity_graph.search(question, 3)]
        assert bridge not in hybrid
        assert bridge in fused
        assert f"{language}-{'phone' if language == 'en' else 'book'}" in fused
    finally:
        store.close()


def test_entity_graph_honours_filters(settings, embedder):
    from core.chunks import Filters

    store, retrievers = index_corpus(EN_CORPUS, settings, embedder, "en")
    try:
        hits = retrievers.entity_graph.search(EN_QUESTION, 5, Filters(source="en-d*"))
        assert hits and all(h.chunk.source.startswith("en-d") for h in hits)
    finally:
        store.close()


def test_entities_survive_incremental_reingest_and_new_generations(tmp_path, settings, embedder):
    from ingestion.pipeline import ingest_paths
    from retrievers.store import open_store

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "quimsy.md").write_text(
        "# Quimsy\n\nQuimsy Corporation was established by Ada Lindqvist.\n", encoding="utf-8"
    )
    (docs / "zorblat.md").write_text(
        "# Zorblat\n\nThe Zorblat X phone is made by Quimsy Corporation.\n", encoding="utf-8"
    )
    ingest_paths([docs], settings, embedder, progress=False)
    (docs / "zorblat.md").write_text(
        "# Zorblat\n\nThe Zorblat Y phone is made in Tampere.\n", encoding="utf-8"
    )
    report = ingest_paths([docs], settings, embedder, progress=False)
    assert report.unchanged and report.updated
    store = open_store(settings)
    try:
        by_source = {c.source.rsplit("/", 1)[-1]: c.metadata[ENTITIES_KEY] for c in store.iter_chunks()}
        assert "Ada Lindqvist" in by_source["quimsy.md"]  # kept from the first generation
        assert "Tampere" in by_source["zorblat.md"] and "Quimsy Corporation" not in by_source["zorblat.md"]
    finally:
        store.close()


def test_agentic_mode_fuses_the_walk_and_says_so_in_the_trace(settings, embedder):
    from graph.builder import build_graph
    from graph.run import ask
    from nodes.context import AgentContext
    from providers.brain import offline_brain

    store, retrievers = index_corpus(EN_CORPUS, settings, embedder, "en")
    try:
        context = AgentContext(
            settings=settings, retrievers=retrievers, brain=offline_brain(embedder=embedder), reranker=None
        )
        app = build_graph()
        agentic = ask(app, EN_QUESTION, context=context, mode="agentic")
        hybrid = ask(app, EN_QUESTION, context=context, mode="hybrid")
        searched = [e for e in agentic.trace if e.node in ("retrieve_hybrid", "retrieve_multi_hop")]
        assert any(e.counts.get("by_entity_graph") or e.counts.get("entity_graph") for e in searched), (
            agentic.trace_line()
        )
        assert "en-bridge" in agentic.ranked_ids[:4]
        assert agentic.ranked_ids.index("en-bridge") < hybrid.ranked_ids.index("en-bridge")
        assert not any(e.counts.get("by_entity_graph") for e in hybrid.trace if e.node == "retrieve_hybrid")
    finally:
        store.close()


def test_a_passage_only_the_walk_found_keeps_its_place_when_the_reranker_demotes_it():
    """The bridge passage shares the entity, not the words: a lexical reranker would push it out."""
    from core.chunks import ScoredChunk
    from nodes.rerank import keep_second_hop_slots

    def hit(cid: str, **ranks: int) -> ScoredChunk:
        return ScoredChunk(chunk=Chunk(id=cid, text=cid, source=f"{cid}.md"), score=1.0, ranks=ranks)

    fused = [
        hit("phone", entity_graph=1, vector=1, keyword=1),
        hit("bridge", entity_graph=2),
        hit("review", entity_graph=3, vector=2),
    ]
    reranked = [fused[0], fused[2], fused[1]]
    assert [h.id for h in keep_second_hop_slots(fused, reranked)] == ["phone", "bridge", "review"]
    both = [fused[0], hit("bridge", entity_graph=2, keyword=5), fused[2]]
    assert [h.id for h in keep_second_hop_slots(both, [both[0], both[2], both[1]])] == [
        "phone",
        "review",
        "bridge",
    ]


@pytest.mark.parametrize(
    ("corpus", "question", "language"),
    [
        (EN_CORPUS, "How do I contact the maker of the Zorblat X phone?", "en"),
        (ZH_CORPUS, "如何联系《星河纪事》的出版社？", "zh"),
    ],
    ids=["en", "zh"],
)
def test_a_how_to_question_keeps_hybrids_order_with_the_walk_fused_in(
    corpus, question, language, settings, embedder
):
    """Walk order leads for fact questions (the bridge questions it was chosen on); a how-to question
    asks for the passage that says how, so there the walk joins hybrid's ranking by RRF instead."""
    from core.schemas import QueryAnalysis
    from nodes.policy import policy_for
    from nodes.retrieve import graph_or_hybrid
    from retrievers.entity_graph import walk_first
    from retrievers.fusion import reciprocal_rank_fusion

    store, retrievers = index_corpus(corpus, settings, embedder, language)
    try:
        graph = retrievers.entity_graph

        class Context:  # what graph_or_hybrid reads of the agent's context
            pass

        context = Context()
        context.retrievers = retrievers
        policy = policy_for("agentic")
        how_to = graph_or_hybrid(context, policy, QueryAnalysis(query_type="procedural"))
        assert graph_or_hybrid(context, policy, QueryAnalysis(query_type="factual")) is graph
        assert graph_or_hybrid(context, policy, None) is graph
        hybrid = retrievers.hybrid.search(question, 6)
        walked = graph.rank(question, hybrid, 6)
        assert walked, "the question names a graph entity: the walk runs"
        fused = reciprocal_rank_fusion(
            {"hybrid": hybrid, "entity_graph": walked},
            weights={"hybrid": 1.0, "entity_graph": graph.params.how_to_fusion_weight},
        )
        assert [h.id for h in how_to.search(question, 6)] == [h.id for h in fused[:6]]
        assert [h.id for h in graph.search(question, 6)] == [h.id for h in walk_first(walked, hybrid)[:6]]
        assert [h.id for h in how_to.search(question, 6)] != [h.id for h in graph.search(question, 6)]
    finally:
        store.close()
