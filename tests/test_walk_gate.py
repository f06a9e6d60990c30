"""The walk gate (issue 20): per question, a fitted decision whether the entity-graph walk's ranking leads
or hybrid's own ranking stands; each signal it reads is a number in [0, 1] with one meaning."""

from __future__ import annotations

import pytest

from core.chunks import Chunk, ScoredChunk
from retrievers.entity_graph import walk_first
from retrievers.walk_gate import WalkGate, packaged_gate
from retrievers.walk_signals import (
    SIGNALS,
    WalkView,
    extract,
    hybrid_top_in_walk,
    overlap,
    seed_specificity,
    seeds_named,
    top_covers_seeds,
    walk_top_in_hybrid,
)
from tests.test_entity_graph import EN_CORPUS, EN_QUESTION, ZH_CORPUS, ZH_QUESTION, index_corpus


def hits(*ids: str) -> list[ScoredChunk]:
    return [ScoredChunk(chunk=Chunk(id=i, text=i, source=f"{i}.md"), score=1.0) for i in ids]


def view(
    hybrid: list[str], walked: list[str], seeds: dict[str, float], links: dict[str, set[str]]
) -> WalkView:
    return WalkView(seeds, hits(*hybrid), hits(*walked), lambda chunk_id: links.get(chunk_id, set()))


# the same situations in both languages: passage ids and entity keys as an index would hold them
EN = {
    "top": "en-tampere-mills",
    "other": "en-tampere-history",
    "bridge": "en-quimsy",
    "a": "tampere",
    "b": "quimsy",
}
ZH = {"top": "zh-杭州-西湖", "other": "zh-杭州-历史", "bridge": "zh-青岚", "a": "杭州", "b": "青岚出版社"}
BOTH = pytest.mark.parametrize("lang", [EN, ZH], ids=["en", "zh"])


class TestHybridTopInWalk:
    @BOTH
    def test_one_over_the_rank_the_walk_gives_hybrids_best_passage(self, lang):
        v = view([lang["top"], lang["other"]], [lang["other"], lang["top"]], {}, {})
        assert hybrid_top_in_walk(v) == 0.5

    @BOTH
    def test_zero_when_the_walk_drops_it(self, lang):
        assert hybrid_top_in_walk(view([lang["top"]], [lang["bridge"]], {}, {})) == 0.0
        assert hybrid_top_in_walk(view([], [lang["bridge"]], {}, {})) == 0.0


class TestWalkTopInHybrid:
    @BOTH
    def test_one_when_both_rankings_start_with_the_same_passage(self, lang):
        assert walk_top_in_hybrid(view([lang["top"]], [lang["top"], lang["bridge"]], {}, {})) == 1.0

    @BOTH
    def test_zero_when_the_walks_pick_was_reached_through_a_bridge_only(self, lang):
        assert walk_top_in_hybrid(view([lang["top"], lang["other"]], [lang["bridge"]], {}, {})) == 0.0


class TestOverlap:
    @BOTH
    def test_the_share_of_the_walks_head_hybrid_also_holds(self, lang):
        v = view([lang["top"], lang["other"]], [lang["top"], lang["bridge"]], {}, {})
        assert overlap(v) == 0.5

    def test_only_the_top_ten_count(self):
        walked = [f"w{i}" for i in range(10)] + ["shared"]
        assert overlap(view(["shared"], walked, {}, {})) == 0.0


class TestSeedsNamed:
    @BOTH
    def test_counts_the_questions_entities_up_to_four(self, lang):
        assert seeds_named(view([], [], {lang["a"]: 0.5}, {})) == 0.25
        assert seeds_named(view([], [], {f"{lang['a']}{i}": 0.1 for i in range(7)}, {})) == 1.0


class TestSeedSpecificity:
    @BOTH
    def test_the_rarest_named_entity_decides(self, lang):
        assert seed_specificity(view([], [], {lang["a"]: 0.25, lang["b"]: 1.0}, {})) == 1.0
        assert seed_specificity(view([], [], {}, {})) == 0.0


class TestTopCoversSeeds:
    @BOTH
    def test_the_share_of_seed_weight_hybrids_best_passage_names(self, lang):
        seeds = {lang["a"]: 0.75, lang["b"]: 0.25}
        assert top_covers_seeds(view([lang["top"]], [], seeds, {lang["top"]: {lang["a"]}})) == 0.75
        assert top_covers_seeds(view([lang["top"]], [], seeds, {lang["top"]: {lang["a"], lang["b"]}})) == 1.0

    @BOTH
    def test_only_the_best_passage_counts(self, lang):
        seeds = {lang["a"]: 1.0}
        assert (
            top_covers_seeds(view([lang["top"], lang["other"]], [], seeds, {lang["other"]: {lang["a"]}}))
            == 0.0
        )


def test_every_signal_is_a_number_in_the_unit_interval():
    v = view(["a", "b", "c"], ["c", "d", "a"], {"x": 1.0, "y": 0.2}, {"a": {"x"}, "c": {"y"}})
    values = extract(v)
    assert set(values) == set(SIGNALS)
    assert all(0.0 <= value <= 1.0 for value in values.values()), values


def test_the_packaged_gate_has_provenance_held_out_sets_and_round_trips():
    gate = packaged_gate()
    about = gate.provenance
    assert set(about["fitted_on"]).isdisjoint(about["held_out"])
    assert "bench/fit_walk_gate.py" in about["command"]
    assert set(about["figures"]["held_out"]) == set(about["held_out"])
    assert set(gate.weights) == set(SIGNALS)
    assert WalkGate.from_dict(gate.to_dict()) == gate
    with pytest.raises(ValueError, match="unknown signals"):
        WalkGate.from_dict({**gate.to_dict(), "weights": {"question_language": 1.0}})


def test_the_gate_leads_at_or_above_its_threshold():
    gate = WalkGate(intercept=0.0, weights={"overlap": 1.0}, threshold=0.5)
    assert gate.leads({"overlap": 0.0})  # p = 0.5
    assert not gate.leads({"overlap": -0.1})
    assert not gate.with_threshold(0.9).leads({"overlap": 1.0})


def test_a_walk_that_leaves_hybrids_head_for_one_named_page_keeps_hybrids_order():
    """DRCD's and SciFact's case: hybrid's best passage names the question's one, common entity; the walk
    ranks that page's other passages by PageRank and shares little with hybrid's head."""
    single_hop = {
        "hybrid_top_in_walk": 0.2,
        "walk_top_in_hybrid": 0.0,
        "overlap": 0.2,
        "seeds_named": 0.25,
        "seed_specificity": 0.05,
        "top_covers_seeds": 1.0,
    }
    assert not packaged_gate().leads(single_hop)


def test_a_walk_anchored_on_a_rare_entity_that_agrees_with_hybrids_head_leads():
    """MuSiQue's and HotpotQA's case: the question names a rare entity, the walk keeps hybrid's best
    passages and adds the bridge passage hybrid's best does not name."""
    bridge = {
        "hybrid_top_in_walk": 1.0,
        "walk_top_in_hybrid": 1.0,
        "overlap": 0.7,
        "seeds_named": 0.5,
        "seed_specificity": 1.0,
        "top_covers_seeds": 0.5,
    }
    assert packaged_gate().leads(bridge)


ALWAYS = WalkGate(intercept=20.0, weights={}, threshold=0.5)
NEVER = WalkGate(intercept=-20.0, weights={}, threshold=0.5)


@pytest.mark.parametrize(
    ("corpus", "question", "language"),
    [(EN_CORPUS, EN_QUESTION, "en"), (ZH_CORPUS, ZH_QUESTION, "zh")],
    ids=["en", "zh"],
)
def test_the_retriever_follows_its_gate(corpus, question, language, settings, embedder):
    """On a real index: a gate that reads the question as single-hop returns hybrid's own ranking (the
    walk's passages do not enter); one that reads it as a bridge question returns the walk-led ranking."""
    store, retrievers = index_corpus(corpus, settings, embedder, language)
    try:
        graph = retrievers.entity_graph
        hybrid = retrievers.hybrid.search(question, 6)
        walked = graph.rank(question, hybrid, 6)
        assert walked and [h.id for h in walk_first(walked, hybrid)[:6]] != [h.id for h in hybrid]
        graph.gate = NEVER
        kept = graph.search(question, 6)
        assert [h.id for h in kept] == [h.id for h in hybrid]
        assert not any("entity_graph" in h.ranks for h in kept)
        graph.gate = ALWAYS
        assert [h.id for h in graph.search(question, 6)] == [h.id for h in walk_first(walked, hybrid)[:6]]
        assert graph.walk_leads(question, hybrid, walked) is True
    finally:
        store.close()
