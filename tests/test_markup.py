"""Doc-site markup is cleaned at ingest (issue 21): headings, citations and answers show what the rendered
page shows; code blocks stay with the sentence that introduces them. English and Chinese pages side by side."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ingestion.documents import LoadedDocument
from ingestion.loaders import load_document
from ingestion.markup import clean_doc_markup
from ingestion.splitter import SplitConfig, split_document

MKDOCS_EN = """# Query Parameters { #query-parameters }

<!-- translated from the English page -->
Declare other function parameters that are not part of the path <!-- keep short --> parameters.

!!! tip "Pro tip"
    Use `Query` to add validation.

    ```python
    q: str | None = Query(default=None, max_length=50)
    ```

/// note | Technical Details

Starlette parses the query string.

///

{* ../../docs_src/query_params/tutorial001.py hl[9] *}

{* ../../docs_src/query_params/missing.py *}

--8<-- "missing_snippet.md"
"""

DOCUSAURUS_ZH = """---
title: 安装 Helm
---

## 用脚本安装 {#from-script}

### Web 无障碍倡议 (WAI-ARIA) {#web-accessibility-initiative-–-accessible-rich-internet-applications-wai-aria}

:::tip 注意
Helm 现在有一个安装脚本。
:::

{{< note >}}
Hugo 短代码里的文字。
{{< /note >}}

{{% alert title="警告" %}}
不要在生产环境使用。
{{% /alert %}}

```bash
# {{< 这是代码，不是短代码 >}} <!-- 也不是注释 -->
helm version
```
"""


@pytest.fixture
def site(tmp_path: Path) -> Path:
    (tmp_path / "docs_src" / "query_params").mkdir(parents=True)
    (tmp_path / "docs_src" / "query_params" / "tutorial001.py").write_text(
        "from fastapi import FastAPI\n\napp = FastAPI()\n", encoding="utf-8"
    )
    pages = tmp_path / "docs" / "en"
    pages.mkdir(parents=True)
    (pages / "query.md").write_text(MKDOCS_EN, encoding="utf-8")
    (pages / "helm_zh.md").write_text(DOCUSAURUS_ZH, encoding="utf-8")
    return pages


def test_mkdocs_anchors_admonitions_includes_and_comments_are_cleaned(site):
    doc = load_document(site / "query.md", max_bytes=1_000_000)
    text = doc.full_text()
    assert doc.title == "Query Parameters" and doc.blocks[0].text == "Query Parameters"
    for leaked in ("{ #", "!!!", "///", "{*", "--8<--", "<!--", "keep short"):
        assert leaked not in text
    assert "Pro tip" in text and "Use `Query` to add validation." in text  # admonition text kept
    assert "Starlette parses the query string." in text
    assert "app = FastAPI()" in text  # the include beside the docs, resolved
    code = [b for b in doc.blocks if b.kind == "code"]
    assert any("max_length=50" in b.text for b in code)  # dedented admonition code is still code
    assert any(b.text.startswith("```python") and "FastAPI" in b.text for b in code)


def test_docusaurus_admonitions_and_hugo_shortcodes_are_cleaned_code_untouched(site):
    doc = load_document(site / "helm_zh.md", max_bytes=1_000_000)
    text = doc.full_text()
    headings = [b.text for b in doc.blocks if b.kind == "heading"]
    assert doc.title == "安装 Helm" and headings[:2] == ["用脚本安装", "Web 无障碍倡议 (WAI-ARIA)"]
    for leaked in ("{#", ":::", "{{< note", "{{% alert", "{{< /note"):
        assert leaked not in text
    assert "注意" in text and "Helm 现在有一个安装脚本。" in text
    assert "Hugo 短代码里的文字。" in text and "不要在生产环境使用。" in text
    assert "# {{< 这是代码，不是短代码 >}} <!-- 也不是注释 -->" in text  # fenced code is left as written


@pytest.mark.parametrize(
    ("heading", "shown"),
    [
        ("## Query Parameters { #query-parameters }", "## Query Parameters"),  # MkDocs
        ("## Subscribing to actions {#subscribing-to-actions}", "## Subscribing to actions"),  # VitePress
        ("## 订阅 action %{#subscribing-to-actions}%", "## 订阅 action"),  # a translated VitePress page
        ("### 查询参数 {: #query .class }", "### 查询参数"),  # attr_list
        ("## 100% {#coverage} of the API", "## 100% {#coverage} of the API"),  # not at the end: text
    ],
)
def test_a_heading_anchor_is_cleaned_in_each_sites_spelling(heading, shown):
    assert clean_doc_markup(f"{heading}\n\nText.") == f"{shown}\n\nText."


@pytest.mark.parametrize(
    ("page", "kept"),
    [
        (
            '## Default props <sup class="vt-badge ts" />\n\n<VueSchoolLink\n  href="https://vueschool.io/x"\n'
            '  title="Free Lesson"\n/>\n\nUse `<input />` here.',
            "## Default props\n\nUse `<input />` here.",
        ),
        (
            '## 默认 props 值 <sup class="vt-badge ts" />\n\n<MasteringPiniaLink href="https://m.com/x" '
            'title="插件"/>\n\n插件通过 `pinia.use()` 添加。<ScrimbaLink href="x" title="y" />',
            "## 默认 props 值\n\n插件通过 `pinia.use()` 添加。",
        ),
        ("<Foo bar\nis text, not a tag: it never closes.", "<Foo bar\nis text, not a tag: it never closes."),
    ],
)
def test_an_empty_element_of_a_doc_site_leaves_no_trace_code_spans_untouched(page, kept):
    """VitePress pages place lesson cards and badges as components (``<VueSchoolLink … />``); they are
    site chrome, and answers quoted them ("<MasteringPiniaLink href=… /> - 为 store 添加新的属性")."""
    assert re.sub(r"\n{3,}", "\n\n", clean_doc_markup(page)).strip() == kept


def test_an_include_outside_the_docs_tree_or_absolute_is_dropped(tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP SECRET", encoding="utf-8")
    deep = tmp_path / "a" / "b" / "c" / "d" / "e"
    deep.mkdir(parents=True)
    text = f'{{* {secret} *}}\n\n--8<-- "../../../../../secret.txt"\n\nAfter.'
    cleaned = clean_doc_markup(text, deep)
    assert "TOP SECRET" not in cleaned and "After." in cleaned


@pytest.mark.parametrize(
    ("intro", "code"),
    [
        ("To install the chart, run the following command:", "helm install my-release bitnami/nginx"),
        ("安装 chart 的命令如下：", "helm install my-release bitnami/nginx"),
        ("Create the app as follows", "const app = createApp(App)"),
    ],
)
def test_a_code_block_is_kept_with_the_sentence_that_introduces_it(intro, code):
    from ingestion.loaders import parse_markdown

    filler = "Helm is the package manager for Kubernetes. " * 5  # 220 characters: the intro still fits
    block = f"```bash\n{code}\n{code}\n```"  # the block does not: it starts the next chunk
    markdown = f"# Install\n\n{filler}{intro}\n\n{block}\n"
    title, blocks = parse_markdown(markdown.encode())
    doc = LoadedDocument(source="x.md", title=title or "", blocks=blocks, mtime=0, file_hash="x", size=1)
    pieces = split_document(doc, SplitConfig(chunk_size=300, chunk_overlap=0))
    holding = [p.text for p in pieces if code in p.text]
    assert len(pieces) >= 2 and holding and all(intro in text for text in holding)
