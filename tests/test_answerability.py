"""Answerability (issue 21): refuse what the documents do not say, answer what they do, greet without
searching, refuse empty input, and carry a confidence with a review queue.

Real parts throughout: a local index of a small bilingual documentation corpus (Helm- and Vue-like
pages, English and Chinese), the packaged use-multilingual embedder, the e5 reranker, the offline brain
with the fitted answerability model (providers/brain/answerability/answerability.json), SQLite checkpoints.
"""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from core.chunks import Chunk
from core.confidence import answer_confidence, needs_review
from core.small_talk import has_content, small_talk_kind, small_talk_reply
from core.trace import Decision
from graph.builder import build_graph
from graph.run import ask
from memory.checkpointer import open_checkpointer
from memory.review import review_queue
from nodes.context import AgentContext
from nodes.state import CHECKPOINT_TYPES
from providers.brain.answerability.gate import AnswerabilityGate
from providers.brain.answerability.model import AnswerabilityModel, packaged_model
from providers.brain.answerability.signals import SIGNALS, extract
from tests.openai_server import openai_server, plausible_reply

DOCS = [
    (
        "helm-rollback",
        "helm/en/rollback.md",
        "helm rollback",
        "Use `helm rollback RELEASE REVISION` to roll a release back to an earlier revision. "
        "Run `helm history RELEASE` first to see the revisions of the release.",
    ),
    (
        "helm-install",
        "helm/en/install.md",
        "helm install",
        "`helm install NAME CHART` installs a chart as a new release. Pass `--values values.yaml` to "
        "override the chart's default values, or `--set key=value` for a single value.",
    ),
    (
        "helm-repo",
        "helm/en/repo.md",
        "helm repo",
        "`helm repo add NAME URL` adds a chart repository; `helm repo update` fetches the latest charts.",
    ),
    (
        "helm-uninstall",
        "helm/en/uninstall.md",
        "helm uninstall",
        "`helm uninstall RELEASE` removes all of the resources associated with the release.",
    ),
    (
        "vue-watch",
        "vue/zh/watchers.md",
        "侦听器",
        "在 Vue 中可以使用 `watch` 选项在响应式数据变化时执行回调函数，例如在数据变化后发起异步请求。",
    ),
    (
        "vue-computed",
        "vue/zh/computed.md",
        "计算属性",
        "计算属性使用 `computed` 定义，它会基于响应式依赖进行缓存，只有依赖变化时才会重新计算。",
    ),
    (
        "vue-vif",
        "vue/zh/conditional.md",
        "条件渲染",
        "`v-if` 指令用于条件性地渲染一块内容，只有指令的表达式返回真值时才会被渲染。",
    ),
    (
        "vue-events",
        "vue/zh/events.md",
        "事件处理",
        "使用 `v-on` 指令（简写为 `@`）监听 DOM 事件，并在事件触发时执行对应的 JavaScript 代码。",
    ),
    (
        "vue-props",
        "vue/en/props.md",
        "Props",
        "Components declare the props they accept with `defineProps`; a parent passes data down through them.",
    ),
]
ANSWERABLE = [
    ("How do I roll back a Helm release to an earlier revision?", "helm rollback"),
    ("在 Vue 中如何在数据变化时执行回调？", "watch"),
]
OFF_DOMAIN = [
    ("What is the capital of France?", "cannot be determined from the documents"),
    ("How do I configure Kafka consumer groups?", "cannot be determined from the documents"),
    ("法国的首都是哪里？", "根据现有资料无法确定"),
    ("珠穆朗玛峰有多高？", "根据现有资料无法确定"),
]
# the question names what no page mentions, while its other words are the docs' own (release, 组件)
NAMES_THE_UNKNOWN = [
    ("How do I install a Django app with Helm?", "Django"),
    ("如何用 Helm 安装一个 Django 应用？", "Django"),
]


@pytest.fixture(scope="module")
def docs_context(tmp_path_factory, embedder) -> AgentContext:
    """A real local index of the documentation pages, the e5 reranker and the offline brain."""
    from config import load_settings
    from ingestion.indexing import index_chunks
    from providers.brain import offline_brain
    from providers.rerankers import make_reranker
    from retrievers.factory import build_retrievers
    from retrievers.store import open_store

    folder = tmp_path_factory.mktemp("answerability")
    settings = load_settings(
        index_dir=folder / "index",
        checkpoint_db=folder / "checkpoints.sqlite",
        embedder="use-multilingual",
        reranker="e5",
        answer_cache=False,
    )
    chunks = [
        Chunk(
            id=cid,
            text=text,
            source=source,
            title=title,
            heading_path=[title],
            language="zh" if "/zh/" in source else "en",
        )
        for cid, source, title, text in DOCS
    ]
    index_chunks(chunks, settings, embedder, index_dir=settings.index_dir, progress=False)
    index = open_store(settings)
    yield AgentContext(
        settings=settings,
        retrievers=build_retrievers(index, settings, embedder),
        brain=offline_brain(embedder=embedder),
        reranker=make_reranker("e5", cache_dir=folder / "cache"),
    )
    index.close()


@pytest.fixture(scope="module")
def asked(docs_context):
    """Every question of this module asked once through the real graph (shared by the tests below)."""
    app = build_graph()
    questions = [q for q, _ in ANSWERABLE + OFF_DOMAIN + NAMES_THE_UNKNOWN] + [
        "hi",
        "谢谢",
        "你好",
        "thanks",
        "???",
        "\u200b\u200b",
    ]
    return {q: ask(app, q, context=docs_context) for q in questions}


# --- the model --------------------------------------------------------------------------------------------


def test_the_packaged_model_has_provenance_and_round_trips():
    model = packaged_model()
    assert set(model.weights) <= set(SIGNALS)
    assert 0 < model.threshold < 1
    for key in ("fitted_on", "held_out", "date", "command", "figures", "threshold_rule"):
        assert key in model.provenance, key
    assert not set(model.provenance["fitted_on"]) & set(model.provenance["held_out"])
    assert AnswerabilityModel.from_dict(model.to_dict()) == model
    with pytest.raises(ValueError, match="unknown signals"):
        AnswerabilityModel.from_dict({**model.to_dict(), "weights": {"word_overlap": 1.0}})


def test_signals_are_in_unit_range_and_the_model_separates_on_and_off_domain(docs_context):
    gate = AnswerabilityGate(docs_context.brain.judge.judge.meaning)
    retrievers, reranker = docs_context.retrievers, docs_context.reranker
    seen = {}
    for question in [ANSWERABLE[0][0], OFF_DOMAIN[0][0], ANSWERABLE[1][0], OFF_DOMAIN[2][0]]:
        chunks = reranker.rerank(question, retrievers.hybrid.search(question, 30))[:10]
        signals = extract(question, chunks, gate.meaning)
        assert set(signals) == set(SIGNALS) and all(0.0 <= v <= 1.0 for v in signals.values())
        seen[question] = gate.assess(question, chunks)
    # en and zh: the on-topic question scores above the threshold, the off-domain one below
    assert seen[ANSWERABLE[0][0]].answerable and not seen[OFF_DOMAIN[0][0]].answerable
    assert seen[ANSWERABLE[1][0]].answerable and not seen[OFF_DOMAIN[2][0]].answerable
    assert seen[ANSWERABLE[0][0]].probability > seen[OFF_DOMAIN[0][0]].probability
    assert gate.assess("anything", []).answerable is False


@pytest.mark.parametrize("question", [OFF_DOMAIN[0][0], OFF_DOMAIN[2][0]])
def test_the_gate_overrules_a_judge_that_calls_off_domain_evidence_sufficient(docs_context, question):
    from core.schemas import RetrievalEvaluation

    gate = AnswerabilityGate(docs_context.brain.judge.judge.meaning)
    chunks = docs_context.reranker.rerank(question, docs_context.retrievers.hybrid.search(question, 30))[:10]
    said = RetrievalEvaluation(is_sufficient=True, suggested_action="answer", reasoning="words overlap")
    judged = gate.apply(said, question, chunks)
    assert not judged.is_sufficient and judged.suggested_action == "rewrite" and judged.answerable is False
    assert judged.answerability is not None and judged.answerability < gate.model.threshold
    assert "answerability" in judged.reasoning
    on_topic = ANSWERABLE[0][0]
    kept = gate.apply(said, on_topic, docs_context.retrievers.hybrid.search(on_topic, 10))
    assert kept.is_sufficient and kept.answerable is True


# --- what the collection never mentions ------------------------------------------------------------------------


def test_the_collection_probe_lists_the_names_no_readable_chunk_mentions(docs_context):
    from core.chunks import Filters

    keyword = docs_context.retrievers.keyword
    assert keyword.unmentioned(["Helm", "Terraform", "helm_release"]) == ["Terraform", "helm_release"]
    assert keyword.unmentioned(["Django", "computed", "响应式"]) == ["Django"]
    # a name only pages the caller may not read mention counts as unmentioned (no leak of their words)
    assert keyword.unmentioned(["Helm", "v-if"], Filters(source="vue/*")) == ["Helm"]
    # the fit removes gold passages: without its only holder, a name is unmentioned
    assert keyword.unmentioned(["rollback"], without={"helm-rollback"}) == ["rollback"]
    assert keyword.unmentioned(["rollback"], without={"helm-install"}) == []


def test_a_name_one_letter_from_a_word_of_the_index_is_a_misspelling_not_news(docs_context):
    """A misspelt name ("Revisoin" for revision, "Rollbakc", "Histroy"): a user's typo in a
    capitalised word must not read as something the documents never mention."""
    from retrievers.keyword import near_spellings

    keyword = docs_context.retrievers.keyword
    assert keyword.unmentioned(["Revisoin", "Rollbakc", "Histroy", "Terraform"]) == ["Terraform"]
    assert "british" in near_spellings("brittish") and "brittish" not in near_spellings("brittish")
    # short words and other scripts have no near spellings: one letter makes another word there
    assert near_spellings("vue") == set() and near_spellings("响应式数据") == set()


@pytest.mark.parametrize(
    ("question", "found", "names"),
    [
        ("How do I use React's useEffect hook?", ["React", "useEffect"], ["React", "useEffect"]),
        ("Which algorithm ranks keyword search?", ["keyword search", "algorithm"], []),  # plain words
        ("How do I deploy with Terraform?", ["HashiCorp Terraform"], []),  # a model's normalised name
        ("如何在 Django 中定义模型？", ["Django", "模型"], ["Django", "模型"]),
        ("珠穆朗瑪峰有多高？", ["珠穆朗玛峰"], ["珠穆朗玛峰"]),  # the analysis reads simplified characters
    ],
)
def test_only_names_the_question_itself_writes_are_looked_up(question, found, names):
    from core.names import asked_names

    assert asked_names(question, found) == names


@pytest.mark.parametrize(
    ("question", "found", "names"),
    [
        # no capital marks a Chinese name: its part of speech does
        ("珠穆朗玛峰有多高？", [], ["珠穆朗玛峰"]),
        ("珠穆朗瑪峰有多高？", [], ["珠穆朗玛峰"]),
        ("法国的首都是哪里？", [], ["法国"]),
        ("如何在 Vue 中使用插槽？", ["Vue"], ["Vue"]),  # 插槽 is a word, not a name
        ("What is the capital of France?", ["France"], ["France"]),
        ("How do I use slots?", [], []),
    ],
)
def test_the_collection_is_asked_about_the_analysis_names_and_the_chinese_proper_nouns(
    question, found, names
):
    from core.names import names_to_look_up

    assert names_to_look_up(question, found) == names


@pytest.mark.parametrize(
    ("question", "guess"),
    [("什么样的纽西兰鸡毛松才可以被砍伐？", "松才"), ("宏碁和浩漢的公司都位於新北市的哪一地方？", "和浩汉")],
)
def test_a_chinese_name_is_one_jiebas_dictionary_lists_not_an_hmm_guess(question, guess):
    """jieba's HMM tags characters it does not know as names (松才 in "鸡毛松才可以"); such a guess, looked
    up in the collection, called present names missing (DRCD, session 20)."""
    from core.names import chinese_proper_nouns

    assert guess not in chinese_proper_nouns(question)
    assert chinese_proper_nouns("珠穆朗玛峰和法国") == ["珠穆朗玛峰", "法国"]


ZH_NAME_CORPUS = [
    ("pingtung", "屏東縣", "坂里村界於東源村與旭海村之間，地形屬於平原。"),
    ("everest", "珠峰", "珠穆朗瑪峰是世界最高峰。"),
    ("private", "内部", "宏碁的內部文件提到浩漢設計。"),
]


def test_a_chinese_name_the_postings_miss_is_found_where_a_readable_passage_writes_it(settings, embedder):
    """jieba cuts "坂里村界於" into 坂里 / 村界于, so the posting of 坂里村 is empty though the passage writes
    it; the text is read (as written or in the other script) before the name is called unmentioned.
    Chunks the caller may not read, or the fit removes (``without``), do not count."""
    from core.chunks import Filters
    from tests.test_entity_graph import index_corpus

    store, retrievers = index_corpus(ZH_NAME_CORPUS, settings, embedder, "zh")
    keyword = retrievers.keyword
    assert len(store.holders("坂里村", 1)) == 0  # the posting lookup alone would call it missing
    assert keyword.unmentioned(["坂里村", "珠穆朗玛峰", "喜马拉雅"]) == ["喜马拉雅"]
    assert keyword.unmentioned(["坂里村"], without={"pingtung"}) == ["坂里村"]
    assert keyword.unmentioned(["浩汉"], Filters(source="pingtung.md")) == ["浩汉"]
    assert keyword.unmentioned(["浩汉"]) == []


def test_a_term_in_half_the_documents_is_still_held_by_them():
    """BM25's idf of a term in exactly half the documents is 0, so a search never returns them; the
    posting lookup must (the first version of this probe asked the search and called "keyword"
    unmentioned in a six-chunk index that says "keyword search" three times)."""
    from retrievers.bm25 import BM25Index

    index = BM25Index.build([["keyword", "a"], ["keyword", "b"], ["keyword", "c"], ["d"], ["e"], ["f"]])
    assert index.top_k(["keyword"], 5)[0].tolist() == []  # idf 0: no positive score
    assert index.holders("keyword", 5).tolist() == [0, 1, 2]
    assert index.holders("keyword", 5, allowed=np.array([False, True] + [False] * 4)).tolist() == [1]
    assert index.holders("django", 5).tolist() == []


@pytest.mark.parametrize(
    ("name", "question_language", "passages", "counts"),
    [
        ("Django", "zh", "zh", True),  # Chinese docs write names in Latin script
        ("Django", "en", "en", True),
        ("Harvard", "en", "zh", False),  # Chinese passages may write it in Chinese (哈佛)
        ("珠穆朗玛峰", "zh", "zh", True),
        ("珠穆朗玛峰", "zh", "en", False),  # English passages would say "Everest"
    ],
)
def test_a_missing_name_counts_only_where_the_passages_could_have_written_it(
    name, question_language, passages, counts
):
    from providers.brain.answerability.signals import countable

    assert countable(name, question_language, passages) is counts


def test_the_vocabulary_signals_read_latin_and_chinese_absences_apart():
    from providers.brain.answerability.signals import unmentioned_signals
    from providers.offline_brain.profile import as_profile

    django = as_profile("如何在 Django 中定义数据库模型？")
    assert unmentioned_signals(["Django"], django, "zh") == {"unmentioned_latin": 1.0, "unmentioned_cjk": 0.0}
    everest = as_profile("珠穆朗玛峰有多高？")
    assert unmentioned_signals(["珠穆朗玛峰"], everest, "zh") == {
        "unmentioned_latin": 0.0,
        "unmentioned_cjk": 1.0,
    }
    # over English passages the Chinese name's absence says nothing
    assert set(unmentioned_signals(["珠穆朗玛峰"], everest, "en").values()) == {0.0}
    assert set(unmentioned_signals([], django, "zh").values()) == {0.0}


@pytest.mark.parametrize(
    "question", ["Which algorithm rolls a release back?", "回滚一个发布大约需要多长时间？"]
)
def test_words_the_documents_do_not_use_are_no_missing_names(docs_context, question):
    """A reader's own words ("algorithm", 多长时间) are not the documents'; only names count as silence."""
    result = ask(build_graph(), question, context=docs_context)
    assert result.analysis.unmentioned == []


@pytest.mark.parametrize(("question", "name"), NAMES_THE_UNKNOWN)
def test_a_question_naming_what_no_page_mentions_is_refused_and_the_refusal_says_so(asked, question, name):
    result = asked[question]
    assert result.insufficient and result.evaluation is not None and result.evaluation.answerable is False
    assert name in result.analysis.unmentioned
    assert name in result.answer.split("：" if "：" in result.answer else ":")[-1], result.answer
    analyzed = next(e for e in result.trace if e.node == "analyze_query")
    assert analyzed.counts.get("unmentioned") == len(result.analysis.unmentioned)


def test_the_analysis_looks_names_up_in_what_this_caller_may_read(docs_context):
    """A caller limited to the Vue pages asks how to roll back a Helm release: for them the collection never
    mentions Helm (the Helm pages' words are not theirs to see), and the refusal says so."""
    from core.chunks import Filters

    result = ask(build_graph(), ANSWERABLE[0][0], context=docs_context, filters=Filters(source="vue/*"))
    assert "Helm" in result.analysis.unmentioned
    assert result.insufficient and "“Helm”" in result.answer, result.answer


@pytest.mark.parametrize(("question", "name"), NAMES_THE_UNKNOWN)
def test_the_missing_name_is_what_turns_the_gate(docs_context, question, name):
    """The other words match the Helm pages: read without the collection's silence on the name, the
    same evidence passes as answerable; with it, it does not."""
    gate = AnswerabilityGate(docs_context.brain.judge.judge.meaning)
    chunks = docs_context.reranker.rerank(question, docs_context.retrievers.hybrid.search(question, 30))[:10]
    assert gate.assess(question, chunks).answerable
    assert not gate.assess(question, chunks, [name]).answerable


def test_the_refusal_names_the_missing_names():
    from providers.brain.answerability.gate import refusal

    assert refusal("How do I use React's useEffect hook?", ["useEffect"]).endswith(
        "The documents never mention “useEffect”."
    )
    assert refusal("珠穆朗玛峰有多高？", ["珠穆朗玛峰"], "zh").endswith("资料中没有出现：珠穆朗玛峰。")
    # an English question over Chinese passages: a missing English name is no news
    assert "never mention" not in refusal("Where did Harvard start?", ["Harvard"], "zh")
    assert refusal("法国的首都是哪里？", []).endswith("没有回答这个问题。")


# --- refusal and answers through the graph ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("question", "name"), [("法国的首都是哪里？", "法国"), ("珠穆朗玛峰有多高？", "珠穆朗玛峰")]
)
def test_a_chinese_name_no_page_mentions_is_looked_up_and_named_in_the_refusal(asked, question, name):
    result = asked[question]
    assert name in result.analysis.unmentioned
    assert result.answer.endswith(f"资料中没有出现：{name}。"), result.answer


@pytest.mark.parametrize(("question", "phrase"), OFF_DOMAIN)
def test_off_domain_questions_are_refused_in_their_language(asked, question, phrase):
    result = asked[question]
    assert result.insufficient and phrase in result.answer, result.answer
    assert result.evaluation is not None and result.evaluation.answerable is False
    generated = [e for e in result.trace if e.node == "generate"][-1]
    assert generated.decision is Decision.INSUFFICIENT and "answerability" in generated.detail
    # the judge's "sufficient" is overruled: the loop retries or stops, it never ends as sufficient
    judged = [e.decision for e in result.trace if e.node == "evaluate"]
    assert judged and Decision.SUFFICIENT not in judged and result.stop_reason != "sufficient"


@pytest.mark.parametrize(("question", "key"), ANSWERABLE)
def test_answerable_questions_are_answered_with_the_thing_that_does_it(asked, question, key):
    result = asked[question]
    assert not result.insufficient and key in result.answer, result.answer
    assert result.evaluation is not None and result.evaluation.answerable is True
    assert result.citations


# --- small talk and empty input --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "kind", "language_word"),
    [
        ("hi", "greeting", "documents"),
        ("你好", "greeting", "文档"),
        ("thanks", "thanks", "documents"),
        ("谢谢", "thanks", "文档"),
    ],
)
def test_small_talk_gets_a_short_reply_without_a_search(asked, text, kind, language_word):
    assert small_talk_kind(text) == kind
    result = asked[text]
    assert result.answer == small_talk_reply(text) and language_word in result.answer
    assert result.stop_reason == "small_talk" and not result.citations
    nodes = [e.node for e in result.trace]
    assert not any(n.startswith("retrieve") or n in ("rerank", "evaluate", "generate") for n in nodes), nodes
    assert result.trace[0].decision is Decision.SMALL_TALK
    assert result.confidence == 1.0 and not result.needs_review


def test_a_question_that_merely_starts_with_a_greeting_is_searched():
    assert small_talk_kind("Hello World example in Vue?") == ""
    assert small_talk_kind("谢谢你的帮助，怎么安装 Helm？") == ""


@pytest.mark.parametrize("text", ["???", "\u200b\u200b", "？！。", "\ufeff \u200d"])
def test_input_empty_after_normalising_is_refused_as_empty(asked, text):
    assert not has_content(text)
    if text in asked:
        result = asked[text]
        assert (
            result.stop_reason == "invalid_input" and "invisible characters and punctuation" in result.answer
        )
        assert [e.node for e in result.trace] == ["contextualize"]


# --- confidence and the review queue -----------------------------------------------------------------------------


def test_confidence_is_the_weaker_check():
    assert answer_confidence(0.9, 2, 2) == 0.9
    assert answer_confidence(0.9, 1, 2) == 0.5
    assert answer_confidence(None, 3, 4) == 0.75
    assert answer_confidence(0.1, 0, 0, refused=True) == 0.9
    assert answer_confidence(None, 0, 0, fixed_reply=True) == 1.0
    assert needs_review(0.69) and not needs_review(0.7) and needs_review(0.8, threshold=0.9)


def test_every_answer_carries_a_confidence_in_the_result_and_the_trace(asked, docs_context):
    threshold = docs_context.settings.review_threshold
    for question, result in asked.items():
        if result.stop_reason == "invalid_input":
            continue
        assert result.confidence is not None and 0.0 <= result.confidence <= 1.0, question
        assert result.needs_review == (result.confidence < threshold), question
        dumped = json.loads(result.model_dump_json())  # what `ask --json` prints
        assert dumped["confidence"] == result.confidence and "needs_review" in dumped
        verified = [e for e in result.trace if e.node == "verify"]
        if verified:
            assert f"confidence {result.confidence:.2f}" in verified[-1].detail


def test_the_review_queue_lists_answers_below_the_threshold(docs_context, tmp_path):
    """At a strict threshold (0.999) answers fall in the queue; the greeting never does. The queue is
    what ``feedback report`` shows (JSON and table)."""
    from rich.console import Console

    from app.feedback import feedback_report
    from cli.feedback import print_report
    from memory.feedback import open_feedback_store

    strict = dataclasses.replace(
        docs_context, settings=docs_context.settings.model_copy(update={"review_threshold": 0.999})
    )
    db = tmp_path / "c.sqlite"
    with (
        open_checkpointer(sqlite_path=db, allowed_types=CHECKPOINT_TYPES) as saver,
        open_feedback_store(checkpoint_db=db) as store,
    ):
        app = build_graph(checkpointer=saver)
        kept = ask(app, "hi", context=strict, thread_id="greet")
        low = ask(app, ANSWERABLE[0][0], context=strict, thread_id="en")
        refused = ask(app, OFF_DOMAIN[2][0], context=strict, thread_id="zh")
        queue = review_queue(saver)
        report = feedback_report(store, app, strict)
    assert not kept.needs_review
    expected = {(t, r.confidence) for t, r in (("en", low), ("zh", refused)) if r.needs_review}
    assert expected, f"at 0.999 some answer needs review: {low.confidence}, {refused.confidence}"
    assert {(i.thread_id, i.confidence) for i in queue} == expected
    assert all(i.turn == 1 and i.question for i in queue)
    assert [i.confidence for i in queue] == sorted(i.confidence for i in queue)
    assert report.review == queue
    console = Console(record=True, width=200)
    print_report(console, report)
    shown = console.export_text()
    assert f"review queue: {len(queue)} answers" in shown and queue[0].thread_id in shown


# --- the gate after an LLM judge ------------------------------------------------------------------------------------


@pytest.mark.parametrize(("question", "phrase"), [OFF_DOMAIN[0], OFF_DOMAIN[3]])
def test_an_llm_judge_calling_off_domain_evidence_sufficient_is_overruled(
    docs_context, openai_server, embedder, question, phrase
):
    """The scripted model judges every passage relevant and sufficient; the fitted model still refuses,
    and the model is never asked to write an answer from passages that do not answer."""
    from providers.brain import make_brain

    settings = docs_context.settings.model_copy(
        update={"openai_base_url": openai_server.base_url, "openai_api_key": "sk-test", "llm_timeout_s": 5.0}
    )
    brain = make_brain(settings, embedder=embedder)
    assert brain.name.startswith("llm:")
    openai_server.responder = plausible_reply
    context = dataclasses.replace(docs_context, settings=settings, brain=brain)
    result = ask(build_graph(), question, context=context)
    assert "judge" in openai_server.steps() and "answer" not in openai_server.steps()
    assert result.insufficient and phrase in result.answer, result.answer
    assert result.evaluation is not None and result.evaluation.answerable is False
