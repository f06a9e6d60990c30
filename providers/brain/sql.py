"""Text-to-SQL and HTTP-API tool choice by the model: the two LLM roles of the routes beyond passages.

The model only proposes: its SQL is checked by ``retrievers.sql.check_select`` and run read-only by the
node, its API calls are run by ``tools.http`` against configured hosts only. When the model fails or
proposes nothing, the backup returns None and the node applies the offline rules.
"""

from __future__ import annotations

from typing import Any

from core.schemas import SqlQuery
from providers.brain.chat import Chat, messages

SQL_SYSTEM = """You translate a question into one SQL query over the database schema below.
- Reply with one read-only SELECT statement (WITH ... SELECT is fine): never INSERT, UPDATE, DELETE,
  DROP, CREATE, ALTER, PRAGMA, ATTACH, and never more than one statement.
- Use only the tables and columns listed; quote identifiers with double quotes.
- Use values as the sample values write them (same spelling, same language).
- Aggregate in SQL (COUNT, SUM, AVG, MIN, MAX, GROUP BY, ORDER BY ... LIMIT) rather than listing rows.
- When the schema cannot answer the question, reply with an empty sql."""

API_SYSTEM = """You decide whether a configured API answers the question. Call the one tool that
answers it, with arguments taken from the question; when none does, reply with the single word NONE."""


def sql_user(question: str, schema: str, dialect: str) -> str:
    return f"Dialect: {dialect}\nSchema:\n{schema}\n\nQuestion:\n{question}"


class LLMSqlWriter:
    def __init__(self, chat: Chat) -> None:
        self.chat = chat

    def __call__(self, question: str, schema: str, dialect: str) -> SqlQuery | None:
        asked = messages(SQL_SYSTEM, sql_user(question, schema, dialect))
        query = self.chat.structured("sql", SqlQuery, asked)
        return query if query.sql.strip() else None


class LLMApiChooser:
    def __init__(self, chat: Chat) -> None:
        self.chat = chat

    def __call__(self, question: str, tools: list[Any]) -> list[dict[str, Any]]:
        return self.chat.tool_calls("api", messages(API_SYSTEM, question), tools)


def no_sql(question: str, schema: str, dialect: str) -> SqlQuery | None:
    """The offline backup: no SQL from the model; the node plans by rules over the schema."""
    return None


def no_api_calls(question: str, tools: list[Any]) -> list[dict[str, Any]]:
    """The offline backup: no calls from the model; the node applies each tool's trigger words."""
    return []
