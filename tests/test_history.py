"""History trimming keeps the newest whole turns within a token budget; history_turns feeds follow-ups."""

from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from memory.history import history_turns, message_tokens, trim_history
from providers.tokens import count_tokens


def total(messages: list[BaseMessage]) -> int:
    return sum(message_tokens(m) for m in messages)


def conversation(n_turns: int) -> list[BaseMessage]:
    """Alternating Chinese and English turns, each a question and an answer of a few dozen tokens."""
    messages: list[BaseMessage] = []
    for i in range(n_turns):
        if i % 2:
            messages.append(HumanMessage(f"Question {i}: how does hybrid retrieval fuse BM25 and vectors?"))
            messages.append(AIMessage(f"Answer {i}: reciprocal rank fusion adds 1/(60+rank) per list."))
        else:
            messages.append(HumanMessage(f"问题{i}：向量检索和关键词检索有什么区别？"))
            messages.append(AIMessage(f"回答{i}：向量检索看语义，关键词检索看词面匹配。"))
    return messages


def test_a_200_turn_conversation_is_cut_to_the_budget_keeping_the_newest_turns() -> None:
    messages = conversation(200)
    assert total(messages) > 9_000

    kept = trim_history(messages, token_budget=1_000)

    assert 0 < total(kept) <= 1_000
    assert kept[-2:] == messages[-2:]  # the most recent turn, question and answer
    assert kept == messages[-len(kept) :]  # a contiguous tail: nothing skipped in the middle
    assert isinstance(kept[0], HumanMessage)  # starts on a whole turn
    # Greedy: one more turn would not have fit.
    assert total(messages[-len(kept) - 2 :]) > 1_000


def test_messages_are_never_split_or_rewritten() -> None:
    messages = conversation(30)
    kept = trim_history(messages, token_budget=300)
    assert all(any(k is m for m in messages) for k in kept)


def test_everything_fits_when_the_budget_is_large() -> None:
    messages = [SystemMessage("你是一个有帮助的助手。"), *conversation(5)]
    assert trim_history(messages, token_budget=100_000) == messages


def test_a_leading_system_message_is_kept_when_it_fits() -> None:
    system = SystemMessage("Answer only from the retrieved passages and cite them.")
    messages = [system, *conversation(50)]

    kept = trim_history(messages, token_budget=400)

    assert kept[0] is system
    assert isinstance(kept[1], HumanMessage)
    assert kept[-1] is messages[-1]
    assert total(kept) <= 400


def test_a_system_message_that_does_not_fit_beside_the_latest_message_is_dropped() -> None:
    system = SystemMessage("规则 " * 300)
    question = HumanMessage("What changed in version 2?")
    kept = trim_history([system, *conversation(3), question], token_budget=60)
    assert kept == [question]


def test_a_single_latest_message_over_the_budget_is_truncated() -> None:
    huge = HumanMessage("请总结这份很长的文档。" * 400, id="q-1")
    kept = trim_history([*conversation(3), huge], token_budget=100)

    assert len(kept) == 1
    (cut,) = kept
    assert isinstance(cut, HumanMessage) and cut.id == "q-1"
    assert huge.text.startswith(cut.text) and len(cut.text) < len(huge.text)
    assert message_tokens(cut) <= 100
    assert count_tokens(cut.text) > 50


def test_an_over_budget_latest_turn_keeps_its_newest_messages() -> None:
    question = HumanMessage("Explain BM25 " * 200)
    answer = AIMessage("BM25 scores a term by its frequency, damped, times its rarity.")
    kept = trim_history([*conversation(2), question, answer], token_budget=100)
    assert kept == [answer]


def test_a_tool_result_is_never_kept_without_its_call() -> None:
    call = AIMessage("", tool_calls=[{"name": "search", "args": {"q": "RRF " * 200}, "id": "c1"}])
    result = ToolMessage("RRF fuses ranked lists.", tool_call_id="c1")
    final = AIMessage("RRF fuses ranked lists by reciprocal rank.")
    messages = [HumanMessage("What is RRF?"), call, result, final]
    assert message_tokens(call) > 100

    kept = trim_history(messages, token_budget=100)

    assert kept == [final]


def test_bad_budget_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="token_budget must be >= 0"):
        trim_history(conversation(1), token_budget=-1)


def test_empty_history_stays_empty() -> None:
    assert trim_history([], token_budget=100) == []


def test_history_turns_gives_the_last_exchanges_as_roles_and_text() -> None:
    messages = [
        SystemMessage("system prompt"),
        HumanMessage("RAG 是什么？"),
        AIMessage("检索增强生成。"),
        HumanMessage("What about its latency?"),
        AIMessage("", tool_calls=[{"name": "search", "args": {"q": "latency"}, "id": "c1"}]),
        ToolMessage("p95 300 ms", tool_call_id="c1"),
        AIMessage("About 300 ms at p95."),
        HumanMessage("那个性能问题怎么解决的？"),
        AIMessage("加缓存。"),
    ]

    assert history_turns(messages, max_turns=2) == [
        ("user", "What about its latency?"),
        ("assistant", "About 300 ms at p95."),
        ("user", "那个性能问题怎么解决的？"),
        ("assistant", "加缓存。"),
    ]
    assert history_turns(messages, max_turns=10)[0] == ("user", "RAG 是什么？")
    assert history_turns(messages, max_turns=0) == []


def test_history_turns_reads_text_out_of_content_blocks() -> None:
    message = HumanMessage(
        content=[{"type": "text", "text": "看这张图"}, {"type": "image_url", "image_url": {"url": "x"}}]
    )
    assert history_turns([message], max_turns=1) == [("user", "看这张图")]


def test_history_turns_rejects_negative_turns() -> None:
    with pytest.raises(ValueError, match="max_turns must be >= 0"):
        history_turns([], max_turns=-1)
