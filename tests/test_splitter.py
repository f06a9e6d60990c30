"""Splitter: sections by headings, whole blocks packed into chunks, exact spans, bounded overlap."""

from __future__ import annotations

import itertools
import re
import zlib
from pathlib import Path

import numpy as np
import pytest
from pydantic import ValidationError

from ingestion.documents import Block, LoadedDocument, TextPiece
from ingestion.loaders import load_document
from ingestion.splitter import SplitConfig, split_document, split_sentences

FIXTURES = Path(__file__).parent / "fixtures" / "ingest"


def make_doc(*blocks: Block) -> LoadedDocument:
    return LoadedDocument(
        source="/tmp/doc.md", title="t", blocks=list(blocks), mtime=0.0, file_hash="0", size=0
    )


def markdown_doc(tmp_path: Path, text: str, name: str = "doc.md") -> LoadedDocument:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return load_document(path, max_bytes=10_000_000)


def para(text: str) -> Block:
    return Block(kind="paragraph", text=text)


def heading(text: str, level: int) -> Block:
    return Block(kind="heading", text=text, level=level)


def assert_exact_spans(doc: LoadedDocument, pieces: list[TextPiece]) -> None:
    full = doc.full_text()
    for piece in pieces:
        assert piece.text.strip(), "no empty or whitespace-only piece"
        assert full[piece.char_start : piece.char_end] == piece.text


ZH_SENTENCES = [
    "混合检索把向量检索和关键词检索的结果合并在一起。",
    "倒数排名融合只看名次，不看分数，所以不需要对分数做归一化。",
    "常数 k 取 60 时，排在前面的文档不会压倒一切。",
    "中文文本先用结巴分词，再交给 BM25 打分！",
    "像 gpt-4o 这样的标识符会保持完整吗？",
    "会的；分词器会把它当作一个整体。",
]
EN_SENTENCES = [
    "Hybrid retrieval merges the vector and keyword result lists.",
    "Reciprocal rank fusion looks only at ranks, so scores need no normalisation.",
    "With k = 60 the top documents do not dominate everything.",
    "Chinese text is segmented with jieba before BM25 scoring!",
    "Are identifiers such as gpt-4o kept whole?",
    "Yes; the tokenizer treats them as one token, e.g. in version 2.3 of the index.",
]


# --------------------------------------------------------------------------------------------------
# sentences
# --------------------------------------------------------------------------------------------------


def test_chinese_sentences_end_at_chinese_punctuation() -> None:
    text = "今天下雨了。你带伞了吗？带了！那就好；我们走吧……明天见"
    assert split_sentences(text) == [
        "今天下雨了。",
        "你带伞了吗？",
        "带了！",
        "那就好；",
        "我们走吧……",
        "明天见",
    ]


def test_closing_quotes_and_brackets_stay_with_their_sentence() -> None:
    assert split_sentences("他说：“走吧。”我们就出发了。（这是真的。）然后呢") == [
        "他说：“走吧。”",
        "我们就出发了。",
        "（这是真的。）",
        "然后呢",
    ]
    assert split_sentences('She said "stop." Then it ended. (See above.) Done.') == [
        'She said "stop."',
        "Then it ended.",
        "(See above.)",
        "Done.",
    ]


def test_english_abbreviations_versions_and_decimals_do_not_split() -> None:
    text = (
        "Version v2.3 costs 3.50 dollars, e.g. for small teams. The U.S. office opened in 2024! "
        "Did Dr. Li agree? Yes; see Fig. 2 and example.com for details. J. Smith wrote it."
    )
    assert split_sentences(text) == [
        "Version v2.3 costs 3.50 dollars, e.g. for small teams.",
        "The U.S. office opened in 2024!",
        "Did Dr. Li agree?",
        "Yes;",
        "see Fig. 2 and example.com for details.",
        "J. Smith wrote it.",
    ]


def test_newlines_and_numbered_lists_are_boundaries_but_list_numbers_are_not() -> None:
    assert split_sentences("1. 安装依赖\n2. Build the index.\n3. Ask") == [
        "1. 安装依赖",
        "2. Build the index.",
        "3. Ask",
    ]


def test_mixed_chinese_and_english_sentences() -> None:
    assert split_sentences("索引使用 FAISS。It is fast. 对吧？") == [
        "索引使用 FAISS。",
        "It is fast.",
        "对吧？",
    ]


# --------------------------------------------------------------------------------------------------
# structure
# --------------------------------------------------------------------------------------------------


def test_markdown_heading_paths_follow_the_heading_stack(tmp_path: Path) -> None:
    doc = markdown_doc(
        tmp_path,
        "# 安装指南\n\n简介。\n\n## 依赖\n\n需要 Python 3.11。\n\n### 可选\n\nRay 可选。\n\n"
        "## 步骤\n\n运行 pip install。\n\n# Usage\n\nAsk a question.\n\n### Deep\n\nSkipped level.",
    )
    pieces = split_document(doc, SplitConfig(chunk_size=200, chunk_overlap=0))
    assert [(p.heading_path, p.text) for p in pieces] == [
        (["安装指南"], "简介。"),
        (["安装指南", "依赖"], "需要 Python 3.11。"),
        (["安装指南", "依赖", "可选"], "Ray 可选。"),
        (["安装指南", "步骤"], "运行 pip install。"),
        (["Usage"], "Ask a question."),
        (["Usage", "Deep"], "Skipped level."),
    ]
    assert_exact_spans(doc, pieces)


def test_small_blocks_of_one_section_are_packed_together_with_exact_spans() -> None:
    doc = make_doc(heading("Intro", 1), para(EN_SENTENCES[0]), para(EN_SENTENCES[1]), para(ZH_SENTENCES[0]))
    (piece,) = split_document(doc, SplitConfig(chunk_size=400, chunk_overlap=50))
    assert piece.text == "\n\n".join([EN_SENTENCES[0], EN_SENTENCES[1], ZH_SENTENCES[0]])
    assert piece.heading_path == ["Intro"]
    assert_exact_spans(doc, [piece])


def test_blocks_are_not_cut_when_they_fit_a_chunk() -> None:
    paragraphs = [" ".join(EN_SENTENCES[i : i + 2]) for i in range(0, 6, 2)]
    doc = make_doc(*(para(p) for p in paragraphs))
    pieces = split_document(doc, SplitConfig(chunk_size=160, chunk_overlap=0))
    assert [p.text for p in pieces] == paragraphs


def test_document_of_only_headings_still_yields_a_piece() -> None:
    doc = make_doc(heading("只有标题", 1), heading("Only headings", 2))
    pieces = split_document(doc, SplitConfig())
    assert [p.text for p in pieces] == ["只有标题\n\nOnly headings"]


# --------------------------------------------------------------------------------------------------
# size and overlap
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("sentences", [ZH_SENTENCES, EN_SENTENCES], ids=["zh", "en"])
def test_chunk_size_and_sentence_overlap_are_respected(sentences: list[str]) -> None:
    joiner = "" if sentences is ZH_SENTENCES else " "
    text = joiner.join(sentences * 8)
    doc = make_doc(heading("Section", 1), para(text))
    config = SplitConfig(chunk_size=150, chunk_overlap=60)
    pieces = split_document(doc, config)
    full = doc.full_text()
    assert len(pieces) > 3
    assert all(len(p.text) <= config.chunk_size for p in pieces)
    assert_exact_spans(doc, pieces)
    overlaps = 0
    for previous, current in itertools.pairwise(pieces):
        assert previous.char_start < current.char_start and previous.char_end < current.char_end
        shared = previous.char_end - current.char_start
        assert shared <= config.chunk_overlap
        if shared > 0:
            overlaps += 1
            overlap_text = full[current.char_start : previous.char_end]
            assert previous.text.endswith(overlap_text) and current.text.startswith(overlap_text)
            assert split_sentences(overlap_text)[0] in sentences  # starts on a whole sentence
        else:
            assert not full[previous.char_end : current.char_start].strip()  # nothing skipped
    assert overlaps >= len(pieces) // 2


def test_without_overlap_pieces_tile_the_text() -> None:
    text = " ".join(EN_SENTENCES * 5)
    doc = make_doc(para(text))
    pieces = split_document(doc, SplitConfig(chunk_size=120, chunk_overlap=0))
    assert " ".join(p.text for p in pieces) == text
    assert all(a.char_end <= b.char_start for a, b in itertools.pairwise(pieces))


def test_a_sentence_longer_than_a_chunk_is_cut_hard() -> None:
    chinese = "向量检索" * 300  # 1200 characters, no punctuation at all
    english = " ".join(f"token{i}" for i in range(300))
    for text, joiner in ((chinese, ""), (english, " ")):
        doc = make_doc(para(text))
        pieces = split_document(doc, SplitConfig(chunk_size=100, chunk_overlap=20))
        assert all(0 < len(p.text) <= 100 for p in pieces)
        assert joiner.join(p.text for p in pieces) == text
        assert_exact_spans(doc, pieces)


def test_overlap_must_be_smaller_than_chunk_size() -> None:
    with pytest.raises(ValidationError, match="chunk_overlap"):
        SplitConfig(chunk_size=100, chunk_overlap=100)


# --------------------------------------------------------------------------------------------------
# tables and code
# --------------------------------------------------------------------------------------------------


def test_markdown_table_is_kept_whole_with_its_header(tmp_path: Path) -> None:
    table = "| 参数 | 默认值 | Meaning |\n| --- | --- | --- |\n" + "\n".join(
        f"| param_{i} | {i * 10} | value number {i} |" for i in range(6)
    )
    text = f"# 配置\n\n{' '.join(EN_SENTENCES[:3])}\n\n{table}\n\n{''.join(ZH_SENTENCES[:3])}"
    doc = markdown_doc(tmp_path, text)
    pieces = split_document(doc, SplitConfig(chunk_size=250, chunk_overlap=40))
    holders = [p for p in pieces if "| param_0 |" in p.text]
    assert len(holders) == 1 and table in holders[0].text
    assert holders[0].kind == "table"
    assert sum(p.text.count("| param_") for p in pieces) == 6  # no row repeated or lost
    assert_exact_spans(doc, pieces)


def test_html_table_is_kept_whole_with_its_header() -> None:
    doc = load_document(FIXTURES / "page.html", max_bytes=1_000_000)
    pieces = split_document(doc, SplitConfig(chunk_size=200, chunk_overlap=30))
    (holder,) = [p for p in pieces if p.kind == "table"]
    lines = holder.text.splitlines()
    start = lines.index("| Strategy | Index | Best for |")
    assert lines[start + 1] == "| --- | --- | --- |"
    assert lines[start + 2 : start + 5] == [
        "| vector | FAISS | paraphrases |",
        "| keyword | BM25 | identifiers like gpt-4o |",
        "| hybrid | both | mixed questions |",
    ]
    assert holder.heading_path == ["检索模式", "Modes"]


def test_huge_table_is_split_by_rows_and_every_part_repeats_the_header() -> None:
    header = "| 编号 | Name | 说明 |\n| --- | --- | --- |"
    rows = [f"| {i} | item-{i} | 第 {i} 行的说明文字 |" for i in range(80)]
    doc = make_doc(
        heading("大表", 1), para("下表列出所有条目。"), Block(kind="table", text="\n".join([header, *rows]))
    )
    config = SplitConfig(chunk_size=300, chunk_overlap=50)
    pieces = [p for p in split_document(doc, config) if p.kind == "table"]
    assert len(pieces) >= 5
    seen: list[str] = []
    full = doc.full_text()
    for piece in pieces:
        assert piece.text.startswith(header + "\n")
        assert len(piece.text) <= config.chunk_size
        body = piece.text[len(header) + 1 :]
        assert full[piece.char_end - len(body) : piece.char_end] == body  # span ends at its rows
        seen.extend(body.splitlines())
    assert seen == rows
    assert full[pieces[0].char_start : pieces[0].char_end] == pieces[0].text


def test_code_block_is_kept_whole_when_it_fits_and_split_on_lines_otherwise() -> None:
    code = "```python\n" + "\n".join(f"value_{i} = compute({i})" for i in range(8)) + "\n```"
    doc = make_doc(para("Intro sentence."), Block(kind="code", text=code), para("Outro."))
    pieces = split_document(doc, SplitConfig(chunk_size=260, chunk_overlap=20))
    assert sum(code in p.text for p in pieces) == 1
    big = "\n".join(f"line_{i:03d} = {i} * 2" for i in range(100))
    doc = make_doc(Block(kind="code", text=big))
    pieces = split_document(doc, SplitConfig(chunk_size=200, chunk_overlap=20))
    assert all(len(p.text) <= 200 for p in pieces)
    assert "\n".join(p.text for p in pieces) == big  # cut only between lines, nothing repeated


@pytest.mark.parametrize(
    ("lead", "comment"),
    [
        ("Add these rules:", "/* keep the leaving item out of the layout flow. */"),
        ("添加这些规则：", "/* 确保离开的元素从布局流中删除。 */"),
    ],
)
def test_a_fenced_block_cut_by_lines_is_fenced_again_in_every_piece(lead: str, comment: str) -> None:
    lines = [f".item-{i} {{ margin: {i}px; }}" for i in range(30)]
    lines.insert(15, comment)
    code = "```css\n" + "\n".join(lines) + "\n```"
    doc = make_doc(para(lead), Block(kind="code", text=code), para("Done." if lead.isascii() else "完成。"))
    pieces = split_document(doc, SplitConfig(chunk_size=300, chunk_overlap=0))
    coded = [p.text for p in pieces if ".item-" in p.text]
    assert len(coded) > 2
    for text in coded:  # each piece holds a whole block: opened by the block's own fence, closed
        fences = re.findall(r"(?m)^```.*$", text)
        assert len(fences) % 2 == 0 and fences[0] == "```css", text
        first, *rest = split_sentences_of_passage(text[text.index("```css") :])
        # the block is one unit, fences and all: its comment is never read as a sentence
        assert first.startswith("```css") and first.endswith("```")
        assert not any(".item-" in x or "/*" in x for x in rest)
    assert [x for t in coded for x in t.split("\n") if x.startswith((".item-", "/*"))] == lines


def split_sentences_of_passage(text: str) -> list[str]:
    from core.text import split_sentences as passage_sentences

    return passage_sentences(text)


# --------------------------------------------------------------------------------------------------
# semantic cuts
# --------------------------------------------------------------------------------------------------


def hashing_embed(texts: list[str]) -> np.ndarray:
    """Bag of words (Latin words of 4+ letters, Chinese character bigrams) hashed into 256 dims."""
    rows = np.zeros((len(texts), 256), dtype=np.float32)
    for row, text in enumerate(texts):
        words = re.findall(r"[a-z]{4,}", text.lower())
        for run in re.findall(r"[\u4e00-\u9fff]+", text):
            words += [run[i : i + 2] for i in range(len(run) - 1)]
        for word in words:
            rows[row, zlib.crc32(word.encode()) % 256] += 1.0
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    return rows / np.where(norms == 0, 1, norms)


COOKING_EN = [
    "Cooking pasta needs plenty of salted boiling water.",
    "Boiling water for pasta should taste salted like the sea.",
    "Stir the pasta while the water keeps boiling.",
]
ASTRONOMY_EN = [
    "Telescopes collect faint light from distant galaxies.",
    "Distant galaxies send light that telescopes gather for hours.",
    "Faint galaxies need telescopes with large mirrors.",
]
COOKING_ZH = [
    "番茄炒蛋需要新鲜番茄和鸡蛋。",
    "先把鸡蛋炒熟，再放入新鲜番茄。",
    "番茄炒蛋出锅前给鸡蛋和番茄加一点盐。",
]
ASTRONOMY_ZH = [
    "望远镜观测遥远的星系。",
    "遥远星系的光线很微弱，望远镜要长时间曝光。",
    "大口径望远镜能看到更暗的星系。",
]


@pytest.mark.parametrize(
    ("first", "second", "joiner"),
    [(COOKING_EN, ASTRONOMY_EN, " "), (COOKING_ZH, ASTRONOMY_ZH, "")],
    ids=["en", "zh"],
)
def test_semantic_mode_cuts_between_topics(first: list[str], second: list[str], joiner: str) -> None:
    doc = make_doc(para(joiner.join(first + second)))
    plain = split_document(doc, SplitConfig(chunk_size=800, chunk_overlap=100))
    assert len(plain) == 1
    config = SplitConfig(
        chunk_size=800, chunk_overlap=100, semantic=True, semantic_threshold=0.2, min_chunk_chars=10
    )
    pieces = split_document(doc, config, embed=hashing_embed)
    assert [p.text for p in pieces] == [joiner.join(first), joiner.join(second)]
    assert_exact_spans(doc, pieces)


def test_semantic_cut_never_leaves_a_chunk_below_min_chunk_chars() -> None:
    doc = make_doc(para(" ".join([COOKING_EN[0], *ASTRONOMY_EN])))
    config = SplitConfig(chunk_size=800, semantic=True, semantic_threshold=0.2, min_chunk_chars=100)
    assert len(split_document(doc, config, embed=hashing_embed)) == 1


def test_semantic_embed_with_wrong_shape_is_a_clear_error() -> None:
    doc = make_doc(para(" ".join(COOKING_EN)))
    config = SplitConfig(semantic=True)
    with pytest.raises(ValueError, match="embed returned shape"):
        split_document(doc, config, embed=lambda texts: np.zeros((1, 4)))


@pytest.mark.parametrize(
    ("units", "text"),
    [
        (["第一句。", "第二句。"], "第一句。第二句。"),
        (["First one.", "Second one."], "First one. Second one."),
        (["用 `v-model`", "绑定。"], "用 `v-model` 绑定。"),  # a space after Latin, none after Chinese
        (
            ["Run this:", "```sh\nhelm rollback\n```", "Done."],
            "Run this:\n\n```sh\nhelm rollback\n```\n\nDone.",
        ),
        (["运行：", "```sh\nhelm rollback\n```", "完成。"], "运行：\n\n```sh\nhelm rollback\n```\n\n完成。"),
    ],
)
def test_kept_sentences_join_into_text_that_splits_back_into_them(units: list[str], text: str) -> None:
    from core.text import join_sentences
    from core.text import split_sentences as passage_sentences

    assert join_sentences(units) == text
    if any(u.startswith("```") for u in units):  # a block stays one unit when read again
        assert passage_sentences(text) == units
