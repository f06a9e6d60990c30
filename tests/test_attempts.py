"""After retries the answer is written from the attempt the answerability gate scored best, not the last.

A retry is not always better than what it replaces (a hop's evidence, then a rewritten query that
finds less). These specify the choice (``nodes.attempts``) and that the graph really uses it, over a
real FAISS + BM25 index (tests/graph_fixtures.py), Chinese and English side by side.
"""

from __future__ import annotations

import dataclasses
import uuid

import pytest
from langgraph.checkpoint.base.id import uuid6

from core.schemas import ChunkJudgement, RetrievalEvaluation
from graph.builder import build_graph
from graph.run import ask
from memory.checkpointer import open_checkpointer
from nodes.attempts import Attempt, AttemptHits, choose_attempt, final_verdict, hits_of, union_of_attempts
from nodes.state import CHECKPOINT_TYPES
from providers.brain import offline_brain
from tests.graph_fixtures import make_context

__all__ = ["make_context"]  # the fixture is used by name


def attempt(number: int, p: float | None, *, sufficient: bool = False, query: str = "") -> Attempt:
    evaluation = RetrievalEvaluation(is_sufficient=sufficient, answerability=p, answerable=None)
    return Attempt(number=number, query=query, chunk_ids=[f"c{number}"], evaluation=evaluation)


class TestChooseAttempt:
    @pytest.mark.parametrize(
        "queries",
        [
            ("混合检索的常数是多少？", "RRF 常数", "倒数排名融合 k"),
            ("What is the RRF constant?", "RRF k", "fusion k"),
        ],
    )
    def test_the_attempt_the_gate_scored_best_is_used_not_the_last(self, queries):
        attempts = [attempt(0, 0.31, query=queries[0]), attempt(1, 0.12, query=queries[1]), attempt(2, 0.05)]
        choice = choose_attempt(attempts)
        assert choice is not None and choice.number == 0
        assert "attempt 0 scored best of 3" in choice.reason and "0.31" in choice.reason

    def test_a_later_attempt_that_scores_higher_is_used(self):
        choice = choose_attempt([attempt(0, 0.2), attempt(1, 0.4), attempt(2, 0.3)])
        assert choice is not None and choice.number == 1

    def test_a_sufficient_verdict_beats_a_higher_probability(self):
        """The judge and the gate agreeing (sufficient) outranks a higher p the judge found wanting."""
        choice = choose_attempt([attempt(0, 0.9), attempt(1, 0.5, sufficient=True)])
        assert choice is not None and choice.number == 1

    def test_ties_go_to_the_earlier_attempt(self):
        choice = choose_attempt([attempt(0, 0.3), attempt(1, 0.3), attempt(2, 0.3)])
        assert choice is not None and choice.number == 0

    def test_the_last_attempt_scored_best_says_so(self):
        choice = choose_attempt([attempt(0, 0.1), attempt(1, 0.6)])
        assert choice is not None and choice.number == 1 and choice.reason.startswith("last attempt")

    def test_without_gate_scores_the_last_attempt_stands(self):
        """No embedder, no probability: the last attempt holds the earlier relevant chunks (rerank)."""
        choice = choose_attempt([attempt(0, None), attempt(1, None)])
        assert choice is not None and choice.number == 1 and "no answerability" in choice.reason

    def test_an_unscored_attempt_ranks_below_a_scored_one(self):
        choice = choose_attempt([attempt(0, None), attempt(1, 0.01)])
        assert choice is not None and choice.number == 1

    @pytest.mark.parametrize(
        "question", ["《灯河往事》的导演是谁？", "Who directed the film shot at the academy?"]
    )
    def test_a_hop_continues_the_attempt_it_hopped_from(self, question):
        """The hop's bridge passages share few words with the question, so the gate reads them lower;
        the hop holds its origin's relevant chunks and is answered from, scored by the better reading."""
        origin = attempt(0, 0.87, sufficient=True, query=question).model_copy(update={"hops_next": True})
        choice = choose_attempt([origin, attempt(1, 0.82, sufficient=True)])
        assert choice is not None and choice.number == 1
        assert "with the attempt it hopped from (answerability 0.87)" in choice.reason

    @pytest.mark.parametrize(
        "question", ["《灯河往事》的导演是谁？", "Who directed the film shot at the academy?"]
    )
    def test_the_hop_is_answered_under_its_origins_better_verdict(self, question):
        """The origin read answerable (0.43), the hop's bridge passages alone did not (0.23): the answer
        is written from the hop's evidence under the origin's verdict, not refused."""
        origin = attempt(0, 0.43, query=question).model_copy(update={"hops_next": True})
        origin.evaluation.answerable = True
        hop = attempt(1, 0.23)
        hop.evaluation.answerable = False
        choice = choose_attempt([origin, hop, attempt(2, 0.1)])
        assert choice is not None and (choice.number, choice.verdict_of) == (1, 0)
        verdict = final_verdict(hop, origin)
        assert verdict.answerable is True and verdict.answerability == 0.43
        assert final_verdict(hop, hop) is hop.evaluation

    def test_a_hop_and_its_origin_still_lose_to_a_better_rewrite(self):
        origin = attempt(0, 0.25).model_copy(update={"hops_next": True})
        choice = choose_attempt([origin, attempt(1, 0.2), attempt(2, 0.4)])
        assert choice is not None and choice.number == 2

    def test_a_rewrite_after_a_hop_does_not_inherit(self):
        origin = attempt(0, 0.3).model_copy(update={"hops_next": True})
        choice = choose_attempt([origin, attempt(1, 0.1), attempt(2, 0.2)])
        assert choice is not None and choice.number == 1  # the hop, carrying its origin's 0.30

    def test_no_attempts_no_choice(self):
        assert choose_attempt([]) is None


class TestRecordedEvidence:
    def test_hits_of_an_attempt_and_none_for_an_unrecorded_one(self, make_context):
        hits = make_context().retrievers.hybrid.search("混合检索 RRF", 3)
        evidence = [AttemptHits(number=0, hits=hits)]
        assert hits_of(evidence, 0) == hits
        assert hits_of(evidence, 1) is None  # e.g. a turn resumed from a checkpoint of an older version

    def test_the_union_keeps_each_attempts_best_once_earlier_first(self, make_context):
        search = make_context().retrievers.hybrid.search
        zh, en = search("混合检索 RRF", 3), search("vector index HNSW", 3)
        union = union_of_attempts([AttemptHits(number=1, hits=en), AttemptHits(number=0, hits=zh)], 2)
        ids = [h.id for h in union]
        assert ids[:2] == [h.id for h in zh[:2]]
        assert len(ids) == len(set(ids)) and set(ids) <= {h.id for h in zh[:2] + en[:2]}

    def test_an_attempt_summary_is_small_and_round_trips(self):
        one = attempt(1, 0.42, query="混合检索的常数")
        assert Attempt.model_validate_json(one.model_dump_json()) == one
        assert "text" not in one.model_dump_json()  # ids, not passages
        assert Attempt in CHECKPOINT_TYPES and AttemptHits in CHECKPOINT_TYPES


# The graph over the real index. The judge is scripted (the brain's judge role: plain data in, a verdict
# out): every attempt looks insufficient, and the gate's probability is high only while the passage
# that answers is among the top two; the rewrites search for unrelated things.
CASES = [
    ("混合检索的常数 k 是多少？", "rrf-zh", ["the cat on the mat", "安装 Python 版本"]),
    (
        "When does the vector index switch to HNSW graphs?",
        "hnsw-en",
        ["the cat on the mat", "安装 Python 版本"],
    ),
]


def scripted_brain(answer_id: str, rewrites: list[str]):
    def judge(question, analysis, chunks, tried):
        p = 0.6 if answer_id in [c.id for c in chunks[:2]] else 0.1
        return RetrievalEvaluation(
            judgements=[ChunkJudgement(chunk_id=c.id, relevance=1.0) for c in chunks],
            is_sufficient=False,
            suggested_action="rewrite",
            answerability=p,
            answerable=p >= 0.5,
        )

    def rewrite(question, evaluation, tried):
        return rewrites[min(len(tried), len(rewrites)) - 1]

    return dataclasses.replace(offline_brain(), judge=judge, rewrite=rewrite)


def run(context, question, **kwargs):
    return ask(build_graph(**kwargs.pop("graph", {})), question, context=context, **kwargs)


@pytest.mark.parametrize(("question", "answer_id", "rewrites"), CASES)
def test_the_answer_is_written_from_the_best_attempt_not_the_last(
    make_context, question, answer_id, rewrites
):
    context = make_context(scripted_brain(answer_id, rewrites), max_retries=2, top_k=3, candidate_k=3)
    result = run(context, question)
    assert result.stop_reason == "max_retries"
    assert [e.node for e in result.trace].count("evaluate") == 3
    last = [e for e in result.trace if e.node == "evaluate"][-1]
    assert last.counts.get("used_attempt") == 0
    assert "answer from attempt 0 scored best of 3 (answerability 0.60)" in last.detail
    assert answer_id in result.ranked_ids[:2]
    assert not result.insufficient  # the best attempt's verdict is the gate's: answerable
    assert answer_id in [c.chunk_id for c in result.citations]


@pytest.mark.parametrize(("question", "answer_id", "rewrites"), CASES)
def test_the_last_setting_keeps_the_old_behaviour(make_context, question, answer_id, rewrites):
    """``attempt_evidence=last``: the last attempt's evidence and verdict, here a refusal."""
    brain = scripted_brain(answer_id, rewrites)
    result = run(
        make_context(brain, max_retries=2, top_k=3, candidate_k=3, attempt_evidence="last"), question
    )
    assert result.stop_reason == "max_retries" and result.insufficient
    assert answer_id not in result.ranked_ids[:2]


@pytest.mark.parametrize(("question", "answer_id", "rewrites"), CASES)
def test_merged_evidence_is_judged_once_over_every_attempts_best(make_context, question, answer_id, rewrites):
    brain = scripted_brain(answer_id, rewrites)
    result = run(
        make_context(brain, max_retries=2, top_k=3, candidate_k=3, attempt_evidence="merge"), question
    )
    last = [e for e in result.trace if e.node == "evaluate"][-1]
    assert last.counts.get("used_attempt") == -1 and "3 attempts merged" in last.detail
    assert answer_id in result.ranked_ids[:2] and not result.insufficient


def test_a_turn_from_a_checkpoint_without_attempts_still_runs(make_context, tmp_path):
    """A thread checkpointed before this version has no ``attempts`` channel; its next turn answers."""
    context = make_context()
    thread = f"old-{uuid.uuid4().hex}"
    config = {"configurable": {"thread_id": thread}}
    with open_checkpointer(sqlite_path=tmp_path / "old.sqlite", allowed_types=CHECKPOINT_TYPES) as saver:
        app = build_graph(checkpointer=saver)
        first = ask(app, "混合检索是如何合并结果的？", context=context, thread_id=thread)
        saved = saver.get_tuple(config)
        assert saved is not None and saved.checkpoint["channel_values"].get("attempts")
        old = dict(saved.checkpoint)
        old["channel_values"] = {
            k: v for k, v in old["channel_values"].items() if k not in ("attempts", "attempt_hits")
        }
        old["id"] = str(uuid6())  # a newer checkpoint of the same thread, as an old version wrote it
        saver.put(saved.config, old, saved.metadata, {})
        assert "attempts" not in saver.get_tuple(config).checkpoint["channel_values"]
        second = ask(app, "What does error code E-4711 mean?", context=context, thread_id=thread)
        stored = app.get_state(config).values
    assert first.answer and "disk quota" in second.answer
    assert [a.number for a in stored["attempts"]] == list(range(len(stored["attempts"])))
    assert stored["attempt_hits"] == []  # per-turn evidence is not kept in checkpoints
