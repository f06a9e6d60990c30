"""How-to answers for technical documentation (issue 21): a "How do I / 怎么 / 如何" question prefers the
sentence naming the API, parameter or command; a chosen sentence that introduces a code block, command or
table brings it along, bounded; the verifier accepts the block only as a copy. English and Chinese side by side."""

from __future__ import annotations

import re

import pytest

from core.schemas import Passage
from providers.offline_brain.answer import extractive_answer
from providers.offline_brain.features import introduces_block, names_code
from providers.offline_brain.profile import profile
from providers.offline_brain.support import check_answer_support
from providers.offline_brain.weights import params


@pytest.mark.parametrize(
    ("question", "sentence", "expected"),
    [
        ("How do I bind a text input to state?", "Use the `v-model` directive on the input.", 1.0),
        ("怎么把输入框绑定到状态？", "在输入框上使用 `v-model` 指令。", 1.0),
        ("How do I roll back a release?", "Run helm rollback --wait to go back.", 1.0),
        ("如何回滚一个发布？", "回滚发布时 Helm 会保留历史。", 0.0),  # names nothing as code
        ("How do I use `defineProps`?", "Call `defineProps` in script setup.", 0.0),  # the question names it
        ("What is a release?", "A release is an instance of a chart; see `helm list`.", 0.0),  # not how-to
    ],
)
def test_names_code_fires_for_how_to_questions_and_new_code_names_only(question, sentence, expected):
    assert names_code(sentence, profile(question)) == expected


def test_the_packaged_writer_weighs_names_code():
    assert "names_code" in params().writer.terms


class TestIntroducesBlock:
    """A how-to question meeting a sentence that introduces a block: the block shows how."""

    @pytest.mark.parametrize(
        ("question", "block", "expected"),
        [
            ("How do I create the root store?", "```js\nconst pinia = createPinia()\n```", 1.0),
            ("如何创建根 store？", "```js\nconst pinia = createPinia()\n```", 1.0),
            ("How do I create the root store?", "", 0.0),  # the sentence introduces nothing
            ("What is the root store?", "```js\nconst pinia = createPinia()\n```", 0.0),  # not how-to
            ("根 store 是什么？", "```js\nconst pinia = createPinia()\n```", 0.0),
        ],
    )
    def test_fires_for_how_to_questions_with_a_block(self, question, block, expected):
        assert introduces_block(block, profile(question)) == expected

    @pytest.mark.parametrize(
        ("question", "text"),
        [
            (
                "How do I create the root store and install it in my app?",
                "Create a pinia instance (the root store) and pass it to the app as a plugin:\n\n"
                "```js\nimport { createPinia } from 'pinia'\napp.use(createPinia())\n```\n",
            ),
            (
                "如何创建一个 pinia 实例并把它传递给应用？",
                "创建一个 pinia 实例（根 store）并将其传递给应用：\n\n"
                "```js\nimport { createPinia } from 'pinia'\napp.use(createPinia())\n```\n",
            ),
        ],
    )
    def test_the_writer_reads_the_block_of_each_candidate(self, question, text):
        from providers.offline_brain.answer import candidates

        passage = Passage(number=1, chunk_id="p", source="start.md", heading="Start", text=text)
        (lead,) = [c for c in candidates(question, [passage], None) if c.sentence.endswith((":", "："))]
        assert lead.features["introduces_block"] == 1.0 and "createPinia()" in lead.block


PAGES = {
    "en": (
        "Forms",
        "Binding form input by hand is tedious. To bind a text input to state, use the `v-model` "
        "directive as follows:\n\n"
        '```vue-html\n<input v-model="message" placeholder="edit me" />\n```\n',
        "How do I bind a text input to a piece of state in a template?",
    ),
    "zh": (
        "表单",
        "手动绑定表单输入很繁琐。要把文本输入框绑定到状态，在模板里使用 `v-model` 指令，写法如下：\n\n"
        '```vue-html\n<input v-model="message" placeholder="edit me" />\n```\n',
        "怎么在模板里把文本输入框绑定到状态？",
    ),
}


@pytest.mark.parametrize("language", ["en", "zh"])
def test_an_introduced_code_block_is_part_of_the_answer_and_verified_as_a_copy(language):
    heading, text, question = PAGES[language]
    passage = Passage(number=1, chunk_id="p", source="forms.md", heading=heading, text=text)
    answer = extractive_answer(question, [passage]).answer
    assert '<input v-model="message" placeholder="edit me" />' in answer
    assert "```vue-html" in answer and "[1]" in answer
    verdicts = check_answer_support(answer, [passage])
    assert verdicts and all(v.supported for v in verdicts)
    forged = answer.replace('"message"', '"password"')
    assert not all(v.supported for v in check_answer_support(forged, [passage]))


@pytest.mark.parametrize("language", ["en", "zh"])
def test_an_introduced_block_is_bounded(language):
    heading, text, question = PAGES[language]
    long_block = (
        "```bash\n" + "\n".join(f"helm install release-{i} bitnami/nginx" for i in range(40)) + "\n```\n"
    )
    text = text.split("```")[0] + long_block
    passage = Passage(number=1, chunk_id="p", source="forms.md", heading=heading, text=text)
    limits = params().selection
    answer = extractive_answer(question, [passage]).answer
    shown = [line for line in answer.split("\n") if line.startswith("helm install")]
    assert 0 < len(shown) <= limits.block_lines and "…" in answer


@pytest.mark.parametrize(
    ("question", "text", "line"),
    [
        (
            "怎么创建一个命名模板？",
            "`define` 操作允许我们在模板文件中创建一个命名模板，语法如下：```yaml\n"
            '{{- define "MY.NAME" }}\n  # body of template here\n',
            '{{- define "MY.NAME" }}',
        ),
        (
            "How do I create a named template?",
            "The `define` action allows us to create a named template inside of a template file, "
            "with this syntax:```yaml\n"
            '{{- define "MY.NAME" }}\n  # body of template here\n',
            '{{- define "MY.NAME" }}',
        ),
    ],
)
def test_a_block_the_chunk_cut_open_follows_its_introduction(question, text, line):
    passage = Passage(number=1, chunk_id="p", source="named_templates.md", heading="Named", text=text)
    answer = extractive_answer(question, [passage]).answer
    assert line in answer and "syntax:```" not in answer and "如下：```" not in answer


COMPRESSIBLE = {
    "en": (
        "How do I keep leaving items out of the layout during a list transition?",
        "Lists jump when items leave. Add a few CSS rules to fix it:\n\n"
        "```css\n.list-move { transition: all 0.5s ease; }\n/* keep leaving items out of the layout flow\n"
        "   so that moves are computed correctly. */\n.list-leave-active { position: absolute; }\n```\n\n"
        "Now it looks much better. The weather was pleasant that day. Nothing else happened.",
    ),
    "zh": (
        "列表过渡时怎么让离开的元素不占据布局？",
        "元素离开时列表会跳动。我们可以添加一些额外的 CSS 规则来解决这个问题：\n\n"
        "```css\n.list-move { transition: all 0.5s ease; }\n/* 确保将离开的元素从布局流中删除\n"
        "   以便能够正确地计算移动的动画。 */\n.list-leave-active { position: absolute; }\n```\n\n"
        "现在它看起来好多了。那天天气很好。别的什么也没发生。",
    ),
}


@pytest.mark.parametrize("language", ["en", "zh"])
def test_compression_keeps_a_code_block_on_lines_of_its_own(language):
    """Compressed passages join their kept sentences; a block glued into a line would be read as prose
    and its comment quoted as an answer sentence ("以便能够正确地计算移动的动画。 */")."""
    from core.text import split_sentences
    from providers.offline_brain.extractive import compress_passages

    question, text = COMPRESSIBLE[language]
    passage = Passage(number=1, chunk_id="p", source="list.md", heading="Lists", text=text)
    from providers.tokens import count_tokens

    # room for all but the last filler sentences: the kept ones are joined anew
    (kept,) = compress_passages(question, [passage], token_budget=count_tokens(text) - 8)
    assert kept.text != text  # something was dropped, so the kept sentences were joined anew
    units = split_sentences(kept.text)
    (block,) = [u for u in units if "list-move" in u]
    assert block.startswith("```css") and block.endswith("```")
    prose = re.sub(r"(?s)```.*?```", "", extractive_answer(question, [kept]).answer)
    assert "*/" not in prose and "/*" not in prose  # the comment is shown only inside its block


OPTIONS = (
    "### Options\n\n```\n"
    "      --app-version string         set the appVersion on the chart to this version\n"
    '  -d, --destination string         location to write the chart. (default ".")\n'
    "  -h, --help                       help for package\n"
    "      --sign                       use a PGP private key to sign this package\n"
    "```\n"
)


class TestOptionLines:
    """A command reference lists its flags in a code block; a how-to question can be answered by a
    flag's own help line, which the writer reads as a candidate (never the block's other lines)."""

    def test_each_flag_help_line_of_a_block_is_read(self):
        from core.blocks import option_lines
        from core.text import split_sentences
        from providers.offline_brain.answer import block_shape

        block, shape = (
            next(u for u in split_sentences(OPTIONS) if u.startswith("```")),
            block_shape(params().selection),
        )
        assert option_lines(block, shape) == [
            "--app-version string set the appVersion on the chart to this version",
            '-d, --destination string location to write the chart. (default ".")',
            "-h, --help help for package",
            "--sign use a PGP private key to sign this package",
        ]
        assert option_lines("Use --sign to sign it.", shape) == []  # prose is not a block

    @pytest.mark.parametrize(
        "question", ["How do I sign the package with my PGP key?", "打包时如何用 PGP 私钥签名？"]
    )
    def test_a_how_to_question_can_be_answered_by_a_flag_line(self, question):
        from providers.offline_brain.answer import candidates

        passage = Passage(
            number=1, chunk_id="p", source="helm_package.md", heading="helm package", text=OPTIONS
        )
        found = {c.sentence for c in candidates(question, [passage], None)}
        assert "--sign use a PGP private key to sign this package" in found

    def test_other_questions_do_not_read_inside_blocks(self):
        from providers.offline_brain.answer import candidates

        passage = Passage(
            number=1, chunk_id="p", source="helm_package.md", heading="helm package", text=OPTIONS
        )
        assert not any(
            "--sign" in c.sentence for c in candidates("What does the sign flag use?", [passage], None)
        )

    def test_the_answer_names_the_flag(self):
        passage = Passage(
            number=1, chunk_id="p", source="helm_package.md", heading="helm package", text=OPTIONS
        )
        answer = extractive_answer("How do I sign the package with my PGP key?", [passage]).answer
        assert "--sign" in answer and "[1]" in answer


@pytest.mark.parametrize(
    ("question", "ours", "theirs"),
    [
        (
            "How do I install the tool?",
            "To install the tool, run the command as follows:\n\n```sh\npip install tool==3.2\n```\n",
            "To install the tool, run the installer as follows:\n\n```sh\nbrew install tool\n```\n",
        ),
        (
            "如何安装这个工具？",
            "安装这个工具时，运行如下命令：\n\n```sh\npip install tool==3.2\n```\n",
            "安装这个工具时，运行如下脚本：\n\n```sh\nbrew install tool\n```\n",
        ),
    ],
)
def test_a_note_on_another_version_after_a_block_opens_a_line_of_its_own(question, ours, theirs):
    """The note naming what a near copy says instead ("Another source says …") follows the answer; after
    a block's closing fence it was glued to it ("```另有资料作…")."""
    passages = [
        Passage(number=1, chunk_id="a", source="a.md", heading="Install", text=ours),
        Passage(number=2, chunk_id="b", source="b.md", heading="Install", text=theirs),
    ]
    answer = extractive_answer(question, passages).answer
    block, note = answer.rsplit("```", 1)
    assert "pip install tool==3.2" in block and note.startswith("\n\n") and "[2]" in note


@pytest.mark.parametrize(
    ("question", "text"),
    [
        (
            "With the Options API, how do I map state properties as readonly computed properties?",
            "Stores hold state. You can use the `mapState()` helper to map state properties as readonly "
            "computed properties:",
        ),
        (
            "在选项式 API 中，如何把 state 属性映射为只读的计算属性？",
            "Store 保存状态。你可以使用 `mapState()` 辅助函数将 state 属性映射为只读的计算属性：",
        ),
    ],
)
def test_an_introduction_whose_block_is_not_in_the_evidence_ends_as_a_statement(question, text):
    """The chunk ends with the introduction and its block starts the next chunk: the answer quotes the
    sentence as a statement ("…properties [1].") instead of a dangling "…properties: [1].", and the check
    still finds it in the passage."""
    passage = Passage(number=1, chunk_id="a", source="state.md", heading="State", text=text)
    answer = extractive_answer(question, [passage]).answer
    assert "mapState()" in answer and not re.search(r"[:：]\s*\[1\]", answer), answer
    assert answer.endswith(("[1].", "[1]。"))
    assert all(v.supported for v in check_answer_support(answer, [passage]))


@pytest.mark.parametrize(
    ("question", "heading", "text", "entry"),
    [
        (
            "How do I render an element only once and skip it in later updates?",
            "Built-in Directives > v-once",
            "Render the element and component once only, and skip future updates. Later re-renders treat "
            "the element as static content.",
            "v-once",
        ),
        (
            "如何只渲染元素一次，并跳过之后的更新？",
            "内置指令 > v-once",
            "仅渲染元素和组件一次，并跳过之后的更新。在随后的重新渲染中，元素及其子元素会被当作静态内容。",
            "v-once",
        ),
        (
            "How do I stop attributes from falling through to the root element?",
            "Component Options > `inheritAttrs`",
            "Controls whether the default component attribute fallthrough behavior should be enabled. "
            "Set it to false to stop attributes falling through to the root element.",
            "inheritAttrs",
        ),
        (
            "如何添加一个 chart 仓库？",
            "Helm 命令 > helm repo add",
            "添加 chart 仓库。\n\n```\nhelm repo add [NAME] [URL] [flags]\n```",
            "helm repo add",
        ),
    ],
)
def test_a_sentence_under_an_api_entrys_heading_names_the_entry(question, heading, text, entry):
    """Reference pages name the entry in the heading and describe it in sentences that do not repeat the
    name: the answer opens with the name ("`v-once`: Render the element…"), once, and the support check
    still reads every sentence as the passage's."""
    passage = Passage(number=1, chunk_id="a", source="api.md", heading=heading, text=text)
    answer = extractive_answer(question, [passage]).answer
    assert answer.startswith((f"`{entry}`: ", f"`{entry}`：")) and answer.count(entry) == 1
    assert all(v.supported for v in check_answer_support(answer, [passage])), answer


@pytest.mark.parametrize(
    ("question", "heading", "text"),
    [
        ("How do I get started?", "Guide > Getting Started", "Install the package first, then get started."),
        ("如何安装？", "指南 > 安装", "先安装这个包，再创建一个 store。"),  # a heading in words
        ("What is Vue.js?", "Essentials > Vue.js", "Vue.js is a framework for building user interfaces."),
        ("How do I run the installer?", "Commands > getting started", "Run the installer first."),
        ("How do I define a store?", "API > defineStore()", "Use `defineStore()` to define a store."),
        # an option line names its own entry
        (
            "How do I run a watcher's callback only once?",
            "API > watch()",
            "`once`: run the callback only once.",
        ),
    ],
)
def test_a_heading_in_words_or_a_name_the_sentence_says_adds_nothing(question, heading, text):
    passage = Passage(number=1, chunk_id="a", source="guide.md", heading=heading, text=text)
    answer = extractive_answer(question, [passage]).answer
    assert answer.startswith(text[:12]), answer
