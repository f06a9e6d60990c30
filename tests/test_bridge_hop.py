"""A question naming a document whose passage names another: the agent hops there even when the
first passage holds every word of the question (a lexical judge then sees nothing missing), and
the document hopped to gets a place in the top 10 without pushing out the first search's best."""

from __future__ import annotations

import pytest

from core.chunks import Chunk, ScoredChunk
from core.schemas import QueryAnalysis, RetrievalEvaluation
from graph.builder import build_graph
from graph.run import ask
from nodes.evaluate import HopTargets, hop_targets
from nodes.policy import evidence_hop_reason, policy_for
from retrievers.multi_hop import TitleLinker, fuse_hops
from tests.corpus import corpus_chunks

AGENTIC = policy_for("agentic")

# The first passage holds every content word of its question; the answer (a city) is only in the
# passage of the document it names, which shares no word with the question.
BRIDGE_EN = [
    (
        "album",
        "Velmora Nights",
        "Velmora Nights is the third studio album by the singer-songwriter Ansel Corrigan, a state fair favourite.",
    ),
    ("singer", "Ansel Corrigan", "Ansel Corrigan grew up in Oregon and learned guitar from his grandmother."),
]
QUESTION_EN = "Velmora Nights is the third studio album by a singer-songwriter from what state?"
BRIDGE_ZH = [
    ("novel", "霜桥夜话", "《霜桥夜话》是一部长篇小说，作者顾明远出生于一座海滨城市。"),
    ("writer", "顾明远", "顾明远是泉州人，年轻时在码头做过搬运工。"),
]
QUESTION_ZH = "《霜桥夜话》作者出生于哪座海滨城市？"


def bridge_corpus() -> list[Chunk]:
    def chunk(cid: str, title: str, text: str, language: str) -> Chunk:
        return Chunk(
            id=cid, text=text, source=f"bridge/{cid}.md", title=title, heading_path=[title], language=language
        )

    return (
        corpus_chunks() + [chunk(*row, "en") for row in BRIDGE_EN] + [chunk(*row, "zh") for row in BRIDGE_ZH]
    )


@pytest.fixture(params=[False], ids=["no entity graph"])
def bridge_context(request, settings, embedder):
    """A real local index (FAISS + BM25) over the shared bilingual corpus plus the two chains; the
    evidence hop is what the agent does where the index has no entity graph (``params``)."""
    from ingestion.indexing import index_chunks
    from nodes.context import AgentContext
    from providers.brain import offline_brain
    from providers.rerankers import make_reranker
    from retrievers.factory import build_retrievers
    from retrievers.store import open_store

    index_chunks(bridge_corpus(), settings, embedder, index_dir=settings.index_dir, progress=False)
    current = settings.model_copy(update={"top_k": 2, "entity_graph": request.param})
    index = open_store(current)
    yield AgentContext(
        settings=current,
        retrievers=build_retrievers(index, current, embedder),
        brain=offline_brain(embedder=embedder),
        reranker=make_reranker("lexical"),
    )
    index.close()


@pytest.mark.parametrize(
    ("question", "first", "target"),
    [(QUESTION_EN, "album", "singer"), (QUESTION_ZH, "novel", "writer")],
)
def test_the_agent_hops_through_a_document_the_question_names(bridge_context, question, first, target):
    searched_once = bridge_context.retrievers.hybrid.search(question, 10)
    assert first in [h.id for h in searched_once[:2]]
    result = ask(build_graph(), question, context=bridge_context, mode="agentic")
    hop = next(e for e in result.trace if e.node == "evaluate")
    assert "named in the question" in hop.detail, result.trace_line()
    assert result.ranked_ids[0] == first  # the first search's best keeps its place
    assert target in result.ranked_ids[:3]
    assert sum(1 for e in result.trace if e.node.startswith("retrieve_")) == 2


@pytest.mark.parametrize("bridge_context", [True], ids=["entity graph"], indirect=True)
@pytest.mark.parametrize(
    ("question", "first", "target"),
    [(QUESTION_EN, "album", "singer"), (QUESTION_ZH, "novel", "writer")],
)
def test_with_the_entity_graph_the_first_search_already_reaches_the_named_document(
    bridge_context, question, first, target
):
    """The walk goes from the question's title to the passage naming the same person: no second hop."""
    result = ask(build_graph(), question, context=bridge_context, mode="agentic")
    assert result.ranked_ids[0] == first and target in result.ranked_ids[:3], result.trace_line()
    assert sum(1 for e in result.trace if e.node.startswith("retrieve_")) == 1


@pytest.mark.parametrize(
    ("question", "through", "target"),
    [(QUESTION_EN, "Velmora Nights", "Ansel Corrigan"), (QUESTION_ZH, "霜桥夜话", "顾明远")],
)
def test_hop_targets_name_where_to_go_and_the_named_document_that_leads_there(
    bridge_context, question, through, target
):
    first = bridge_context.retrievers.hybrid.search(question, 10)[:2]
    evaluation = bridge_context.brain.judge(question, QueryAnalysis(), first, [])
    found = hop_targets(bridge_context, question, first, evaluation)
    assert found == HopTargets(targets=[target], through=[through], asked=[])
    plain = "How does keyword search rank chunks?"
    hits = bridge_context.retrievers.hybrid.search(plain, 10)[:2]
    nothing_named = bridge_context.brain.judge(plain, QueryAnalysis(), hits, [])
    assert hop_targets(bridge_context, plain, hits, nothing_named) == HopTargets()


def test_a_question_naming_no_document_is_answered_from_one_search(bridge_context):
    for question in ("How does keyword search rank chunks?", "混合检索是如何合并结果的？"):
        result = ask(build_graph(), question, context=bridge_context, mode="agentic")
        searches = [e.node for e in result.trace if e.node.startswith("retrieve_")]
        assert searches == ["retrieve_hybrid"], result.trace_line()


@pytest.mark.parametrize(
    ("through", "target"), [(["Velmora Nights"], "Ansel Corrigan"), (["霜桥夜话"], "顾明远")]
)
def test_a_passage_about_what_the_question_names_earns_a_hop_without_missing_words(through, target):
    nothing_missing = RetrievalEvaluation(is_sufficient=True, suggested_action="answer")
    single = QueryAnalysis()
    why = evidence_hop_reason(AGENTIC, single, nothing_missing, attempt=0, targets=[target], through=through)
    assert "named in the question" in why and target in why and through[0] in why
    assert evidence_hop_reason(AGENTIC, single, nothing_missing, attempt=0, targets=[target]) == ""
    assert evidence_hop_reason(AGENTIC, single, nothing_missing, attempt=0, targets=[], through=through) == ""
    assert (
        evidence_hop_reason(AGENTIC, single, nothing_missing, attempt=1, targets=[target], through=through)
        == ""
    )
    parts = QueryAnalysis(sub_queries=["Velmora Nights 是什么", "Ansel Corrigan 是谁"])
    assert (
        evidence_hop_reason(AGENTIC, parts, nothing_missing, attempt=0, targets=[target], through=through)
        == ""
    )


LINKER = TitleLinker(
    [
        "M. Ward",
        "Bethel University (Minnesota)",
        "Lake Placid, New York",
        "United (Marian Gold album)",
        "Maria (song)",
        "Maria (film)",
        "Aschenbrödel",
        "Corey Taylor",
        "Time",
        "灯河往事",
    ]
)


@pytest.mark.parametrize(
    ("text", "titles"),
    [
        ("The album is by singer-songwriter M. Ward.", ["M. Ward"]),  # a full stop ends the sentence
        ("She studied at Bethel University in 1990.", ["Bethel University (Minnesota)"]),
        ("The games were held in Lake Placid twice.", ["Lake Placid, New York"]),
        ("Corey Taylor's first band", ["Corey Taylor"]),
        ("Strauss wrote Aschenbrodel late in life.", ["Aschenbrödel"]),
        ("At the time, the United States sent troops.", []),  # a common word; a one-word short name
        ("Maria was a hit.", []),  # a short name two documents share leads nowhere
        ("At that Time the magazine", ["Time"]),
        ("她主演了电影《灯河往事》。", ["灯河往事"]),
    ],
)
def test_titles_are_found_as_passages_write_them(text, titles):
    assert LINKER.mentioned_in(text) == titles


def scored(chunk_id: str, title: str = "") -> ScoredChunk:
    return ScoredChunk(chunk=Chunk(id=chunk_id, text=chunk_id, source="x.md", title=title), score=1.0)


def test_each_document_hopped_to_adds_its_best_passage_only():
    """Three passages of one linked document take one slot; the first search's top 9 stay in the top 10."""
    first = {"question": [scored(f"first-{i}") for i in range(12)]}
    second = {
        "Ansel Corrigan": [scored("ansel-1"), scored("ansel-2"), scored("ansel-3")],
        "顾明远": [scored("first-2"), scored("gu-1")],
    }
    top = [h.id for h in fuse_hops(first, second, rrf_k=60)][:10]
    assert "ansel-1" in top and "gu-1" in top
    assert "ansel-2" not in top and "ansel-3" not in top
    assert top[:6] == [f"first-{i}" for i in range(6)]
    assert [i for i in top if i.startswith("first")] == [f"first-{i}" for i in range(8)]


@pytest.mark.parametrize(("asked", "language"), [(["North Dakota"], "en"), (["灯河往事"], "zh")])
def test_a_document_the_question_names_and_the_search_missed_earns_a_hop(asked, language):
    nothing_missing = RetrievalEvaluation(is_sufficient=True, suggested_action="answer")
    single = QueryAnalysis(language=language)
    why = evidence_hop_reason(AGENTIC, single, nothing_missing, attempt=0, targets=asked, asked=asked)
    assert "the question names" in why and asked[0] in why
    assert evidence_hop_reason(AGENTIC, single, nothing_missing, attempt=0, targets=asked) == ""
    assert evidence_hop_reason(AGENTIC, single, nothing_missing, attempt=1, targets=asked, asked=asked) == ""


def test_the_question_names_documents_but_not_by_its_question_word():
    from retrievers.multi_hop import MultiHopRetriever

    hops = MultiHopRetriever(base=None, titles=TitleLinker(["Who", "North Dakota", "灯河往事", "When"]))  # type: ignore[arg-type]
    assert hops.named_in("Who wrote the song When in North Dakota?") == ["When", "North Dakota"]
    assert hops.named_in("《灯河往事》由谁执导？") == ["灯河往事"]
