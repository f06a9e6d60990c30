"""The block a sentence introduces, read off its passage (core/blocks.py): fenced code, a run of command
lines (fenced for the answer) or a table, bounded; nothing when the sentence introduces nothing.
English and Chinese side by side."""

from __future__ import annotations

import re

import pytest

from core.blocks import BlockShape, bounded_block, introduced_block

SHAPE = BlockShape(
    table_row=re.compile(r"^\s*\|.*\|\s*$|^\s*\|?\s*:?-{3,}"),
    command_line=re.compile(r"^\s*(?:\$ |>>> |(?:pip|git)\s)"),
    option_help=re.compile(r"^\s*--[a-z][\w-]*\s{2,}[A-Za-z]"),
    max_lines=3,
    max_chars=200,
    anchor_chars=40,
)


@pytest.mark.parametrize(
    ("sentence", "text"),
    [
        ("Install it with the following commands:", "Install it with the following commands:\n"),
        ("用以下命令安装：", "用以下命令安装：\n"),
    ],
)
def test_command_lines_are_fenced_and_end_at_the_first_other_line(sentence, text):
    passage = text + "pip install agentic-rag\ngit clone repo\nThen read the guide.\n"
    assert introduced_block(sentence, passage, SHAPE) == "```\npip install agentic-rag\ngit clone repo\n```"


@pytest.mark.parametrize(
    ("sentence", "lead"),
    [("The settings are as follows:", "The settings are as follows:\n"), ("参数如下：", "参数如下：\n")],
)
def test_a_table_is_cut_at_max_lines(sentence, lead):
    rows = "| name | default |\n|---|---|\n| top_k | 5 |\n| rrf_k | 60 |\n\nAfter the table."
    assert introduced_block(sentence, lead + rows, SHAPE).split("\n") == [
        "| name | default |",
        "|---|---|",
        "| top_k | 5 |",
        "…",
    ]


@pytest.mark.parametrize(
    ("sentence", "text"),
    [
        ("It is fast.", "It is fast.\npip install agentic-rag\n"),  # introduces nothing
        ("Run this:", "Run this:\nand then wait.\n"),  # no block follows
        ("运行以下命令：", "运行以下命令：\n然后等待。\n"),
        ("Run this:", "Something else entirely.\npip install x\n"),  # not in this passage
    ],
)
def test_nothing_when_no_block_is_introduced(sentence, text):
    assert introduced_block(sentence, text, SHAPE) == ""


def test_a_fenced_block_keeps_its_fences_and_is_bounded():
    block = "```bash\n" + "\n".join(f"helm install r{i}" for i in range(6)) + "\n```"
    assert bounded_block(block, SHAPE) == "```bash\nhelm install r0\nhelm install r1\nhelm install r2\n…\n```"
    assert bounded_block("```bash\nhelm install r0", SHAPE) == "```bash\nhelm install r0\n```"  # cut open
