"""Fit a conversation into a token budget, and give the recent turns to the follow-up contextualizer.

A thread's ``messages`` grow without bound while a model's context does not. We drop whole turns from the
oldest end (a turn is a user message with every reply and tool exchange after it), so the model never
sees half a turn or a tool result whose call was cut; only a single latest message that alone exceeds
the budget is shortened.
"""

from __future__ import annotations

import json
from typing import Literal

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from providers.tokens import count_tokens, truncate_to_tokens

# Chat formats spend a few tokens per message on role and separators (OpenAI documents ~3-4).
MESSAGE_OVERHEAD_TOKENS = 4

Role = Literal["user", "assistant"]
# The exchanges a follow-up question is read against; checkpoints keep this many turns of messages
# (the whole conversation is in memory/conversation_log.py).
CONTEXT_TURNS = 6


def message_text(message: BaseMessage) -> str:
    """The message's plain text (text blocks of multimodal content joined), never the raw block list."""
    return message.text


def message_tokens(message: BaseMessage) -> int:
    """Tokens the message costs in a prompt: its text, its tool calls, and the per-message overhead."""
    tokens = count_tokens(message_text(message)) + MESSAGE_OVERHEAD_TOKENS
    if isinstance(message, AIMessage) and message.tool_calls:
        calls = [{"name": c["name"], "args": c["args"]} for c in message.tool_calls]
        tokens += count_tokens(json.dumps(calls, ensure_ascii=False))
    return tokens


def _turns(messages: list[BaseMessage]) -> list[list[BaseMessage]]:
    """Group messages into turns, each starting at a user message (leading non-user messages form one)."""
    turns: list[list[BaseMessage]] = []
    for message in messages:
        if isinstance(message, HumanMessage) or not turns:
            turns.append([message])
        else:
            turns[-1].append(message)
    return turns


def recent_messages(messages: list[BaseMessage], turns: int) -> list[BaseMessage]:
    """The messages of the last ``turns`` turns (each from a user message to the next), oldest first."""
    if turns < 1:
        raise ValueError(f"turns must be at least 1, got {turns}")
    return [message for turn in _turns(list(messages))[-turns:] for message in turn]


def _truncated(message: BaseMessage, budget: int) -> BaseMessage:
    """The same message (type, id, name kept) with its text cut to fit ``budget`` tokens in total."""
    room = max(budget - MESSAGE_OVERHEAD_TOKENS, 0)
    update: dict[str, object] = {"content": truncate_to_tokens(message_text(message), room)}
    if isinstance(message, AIMessage):
        # Tool calls cannot be half-kept; a cut answer is text only.
        update["tool_calls"] = []
    return message.model_copy(update=update)


def _suffix_that_fits(turn: list[BaseMessage], budget: int) -> list[BaseMessage]:
    """The latest messages of an over-budget turn that fit, without a tool result whose call is gone."""
    kept: list[BaseMessage] = []
    used = 0
    for message in reversed(turn):
        cost = message_tokens(message)
        if used + cost > budget:
            break
        kept.insert(0, message)
        used += cost
    while len(kept) > 1 and isinstance(kept[0], ToolMessage):
        kept.pop(0)
    return kept


def trim_history(messages: list[BaseMessage], token_budget: int) -> list[BaseMessage]:
    """The most recent whole turns whose tokens fit ``token_budget``, oldest first.

    A leading SystemMessage is kept when it fits next to the latest message. The latest message is
    always kept: if it alone exceeds the budget it comes back truncated (and alone).
    """
    if token_budget < 0:
        raise ValueError(f"token_budget must be >= 0, got {token_budget}")
    if not messages:
        return []
    system = messages[0] if isinstance(messages[0], SystemMessage) else None
    rest = messages[1:] if system is not None else list(messages)
    if not rest:
        return [system] if system is not None and message_tokens(system) <= token_budget else []

    latest = rest[-1]
    latest_cost = message_tokens(latest)
    if latest_cost > token_budget:
        return [_truncated(latest, token_budget)]

    budget = token_budget
    head: list[BaseMessage] = []
    if system is not None and message_tokens(system) + latest_cost <= budget:
        head = [system]
        budget -= message_tokens(system)

    turns = _turns(rest)
    newest = turns[-1]
    newest_cost = sum(message_tokens(m) for m in newest)
    if newest_cost > budget:
        return head + _suffix_that_fits(newest, budget)

    kept = list(newest)
    budget -= newest_cost
    for turn in reversed(turns[:-1]):
        cost = sum(message_tokens(m) for m in turn)
        if cost > budget:
            break
        kept[:0] = turn
        budget -= cost
    while kept and isinstance(kept[0], ToolMessage):
        kept.pop(0)
    return head + kept


def history_turns(messages: list[BaseMessage], max_turns: int) -> list[tuple[Role, str]]:
    """The last ``max_turns`` exchanges as (role, text) pairs, for rewriting a follow-up question.

    An exchange is a user message and the assistant replies after it. System prompts, tool traffic and
    assistant messages with no text (pure tool calls) carry nothing a reader of the conversation saw,
    so they are left out. Pass the messages before the question being contextualized.
    """
    if max_turns < 0:
        raise ValueError(f"max_turns must be >= 0, got {max_turns}")
    if max_turns == 0:
        return []
    pairs: list[tuple[Role, str]] = []
    for message in messages:
        text = message_text(message).strip()
        if not text:
            continue
        if isinstance(message, HumanMessage):
            pairs.append(("user", text))
        elif isinstance(message, AIMessage):
            pairs.append(("assistant", text))
    user_positions = [i for i, (role, _) in enumerate(pairs) if role == "user"]
    if len(user_positions) <= max_turns:
        return pairs
    return pairs[user_positions[-max_turns] :]
