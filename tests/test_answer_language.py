"""One language per answer (issue 21): sentence language read on words, labels only before sentences in
another language naming it, and the reader's own copy of a translated page quoted rather than the other.

The offline brain gets the real multilingual embedder (``embedder`` fixture), as in use."""

from __future__ import annotations

import pytest

from core.schemas import Passage
from providers.offline_brain.answer_language import sentence_language, source_label
from tests.test_offline_answers import brain, passage

__all__ = ["brain"]  # the module-scoped offline brain with the real embedder, used by name

# one fact, as Vue's docs state it in English and in their Chinese translation
SHOW_EN = (
    "`v-show` only toggles the `display` CSS property of the element. Use `v-if` to render it conditionally."
)
SHOW_ZH = "`v-show` 仅切换了该元素上名为 `display` 的 CSS 属性。要按条件渲染，请使用 `v-if`。"
PULL_EN = "`helm create` sets the `imagePullPolicy` to `IfNotPresent` by default."
PULL_ZH = "`helm create` 默认会把 `imagePullPolicy` 设置为 `IfNotPresent`。"


@pytest.mark.parametrize(
    ("sentence", "language"),
    [
        ("使用 `helm install --namespace kube-system` 安装 chart。", "zh"),  # Latin-heavy, still Chinese
        ("v-show 只会切换元素的 display CSS 属性。", "zh"),
        ("`v-show` only toggles the `display` CSS property of the element.", "en"),
        ("Hybrid search merges the rankings with reciprocal rank fusion (倒数排名融合).", "en"),
    ],
)
def test_a_sentence_language_is_read_on_its_words_not_its_letters(sentence, language):
    assert sentence_language(sentence) == language


@pytest.mark.parametrize(
    ("reader", "language", "label"),
    [
        ("zh", "en", "（以下引自英文资料原文）"),
        ("en", "zh", "(Quoted from a Chinese source.) "),
        ("zh", "zh", ""),
    ],
)
def test_the_label_names_the_other_language_and_only_the_other(reader, language, label):
    assert source_label(reader, language) == label


@pytest.mark.parametrize(
    ("question", "evidence", "own"),
    [
        ("v-show 是怎么切换元素显示的？", [SHOW_EN, SHOW_ZH], "[2]"),
        ("How does v-show toggle whether an element is shown?", [SHOW_ZH, SHOW_EN], "[2]"),
        ("helm create 默认把 imagePullPolicy 设成什么？", [PULL_EN, PULL_ZH], "[2]"),
        ("What does helm create set imagePullPolicy to by default?", [PULL_ZH, PULL_EN], "[2]"),
    ],
)
def test_translated_pages_are_quoted_in_the_question_language_only(brain, question, evidence, own):
    draft = brain.write(question, [passage(n, t) for n, t in enumerate(evidence, start=1)])
    assert not draft.insufficient and own in draft.answer and "[1]" not in draft.answer
    assert "引自" not in draft.answer and "Quoted from" not in draft.answer


@pytest.mark.parametrize(
    ("question", "evidence", "label", "wrong"),
    [
        # a Chinese passage full of identifiers quoted for an English question is a Chinese source
        (
            "How do I install a chart into kube-system?",
            PULL_ZH.replace("默认会把", "用 `helm install --namespace kube-system` 安装时会把"),
            "Chinese source",
            "English source",
        ),
        (
            "怎么在 kube-system 里安装 chart？",
            "Install a chart with `helm install --namespace kube-system`.",
            "以下引自英文资料原文",
            "中文",
        ),
    ],
)
def test_a_quote_from_the_other_language_is_labelled_with_that_language(
    brain, question, evidence, label, wrong
):
    draft = brain.write(question, [passage(1, evidence)])
    assert label in draft.answer and wrong not in draft.answer
    assert draft.answer.index(label) < draft.answer.index("[1]")


def test_a_gbk_chinese_page_is_quoted_as_chinese(brain, tmp_path):
    from ingestion.loaders import load_document

    text = (
        "后置渲染器可以与 `install`、`upgrade` 和 `template` 命令一起使用，通过 `--post-renderer` 参数指定。"
    )
    path = tmp_path / "advanced.md"
    path.write_bytes(text.encode("gbk"))
    loaded = load_document(path, max_bytes=1 << 20).full_text()
    draft = brain.write("Which commands can a post renderer be used with?", [passage(1, loaded)])
    assert "Quoted from a Chinese source" in draft.answer and "install" in draft.answer


@pytest.mark.parametrize(
    ("reader", "sentences", "expected"),
    [
        (
            "zh",
            [
                "混合检索用倒数排名融合合并两份排名。",
                "Each chunk receives the sum of 1 / (k + rank), with k = 60.",
            ],
            "混合检索用倒数排名融合合并两份排名[1]。（以下引自英文资料原文）Each chunk receives the sum of 1 / (k + rank), with k = 60 [2].",
        ),
        (
            "en",
            [
                "Hybrid search merges the two rankings with reciprocal rank fusion.",
                "每个片段的得分是 1/(k+排名) 之和，k 取 60。",
            ],
            "Hybrid search merges the two rankings with reciprocal rank fusion [1]. (Quoted from a Chinese source.) 每个片段的得分是 1/(k+排名) 之和，k 取 60 [2]。",
        ),
        # a code line is in no language: no label before it
        (
            "zh",
            ["用 `defineAsyncComponent` 定义异步组件：", "import { defineAsyncComponent } from 'vue'"],
            "用 `defineAsyncComponent` 定义异步组件[1]。 import { defineAsyncComponent } from 'vue' [2].",
        ),
        (
            "en",
            [
                "Define an async component with `defineAsyncComponent`:",
                "const AsyncComp = defineAsyncComponent(() => {})",
            ],
            "Define an async component with `defineAsyncComponent` [1]. const AsyncComp = defineAsyncComponent(() => {}) [2].",
        ),
    ],
)
def test_the_label_goes_before_other_language_sentences_only_never_before_code(reader, sentences, expected):
    from providers.offline_brain.answer import Candidate, _cite

    items = [Candidate(i, 0, s, 1.0, 1.0) for i, s in enumerate(sentences)]
    assert _cite(items, [passage(1, sentences[0]), passage(2, sentences[1])], reader) == expected


@pytest.mark.parametrize(
    "sentence",
    ["2018-2019赛季欧冠决赛利物浦2比0热刺.", "修改之前的说法winner-take.", "默认值见 values.yaml 文件。"],
)
def test_chinese_around_hyphens_and_dots_stays_chinese(sentence):
    assert sentence_language(sentence) == "zh"


@pytest.mark.parametrize(
    ("question", "sections"),
    [
        (
            "KeepAlive 用哪个属性限制缓存的组件实例数量？",
            [
                (
                    "KeepAlive > Basic Usage",
                    "By default, `<KeepAlive>` will cache any component instance inside.",
                ),
                (
                    "KeepAlive > Max Cached Instances",
                    "We can limit the number of cached instances via the `max` prop.",
                ),
            ],
        ),
        (
            "Which KeepAlive prop limits how many component instances are cached?",
            [
                ("KeepAlive > 基本使用", "默认情况下，`<KeepAlive>` 会缓存内部的任何组件实例。"),
                (
                    "KeepAlive > 最大缓存实例数",
                    "我们可以通过传入 `max` prop 来限制可被缓存的最大组件实例数。",
                ),
            ],
        ),
    ],
)
def test_across_languages_the_section_heading_speaks_for_its_sentences(brain, embedder, question, sections):
    from providers.meaning import Meaning
    from providers.offline_brain.answer import candidates

    passages = [
        Passage(number=n, chunk_id=f"c{n}", source="docs/keep-alive.md", heading=h, text=t)
        for n, (h, t) in enumerate(sections, start=1)
    ]
    found = {c.passage_index: c for c in candidates(question, passages, Meaning(embedder))}
    assert found[1].features["heading_meaning"] > found[0].features["heading_meaning"] > 0
    assert found[1].score > found[0].score
    assert "max" in brain.write(question, passages).answer
