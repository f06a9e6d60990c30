"""retrieve_sql: answer a question over table records with one checked, read-only SQL query.

analyze_query routes here when the schema explains the question and it asks for a count, a sum, an
average, a largest/smallest value, a filter or a comparison over records (``sql_route_reason``). With
an LLM the model writes the SQL over the schema (tables, columns, sample values); offline, or when the
model proposes nothing usable, the rules of retrievers/sql_plan.py do. Whoever wrote it, the statement
is checked (one SELECT over the listed tables) and run read-only with row and time limits. The answer
quotes the result and cites the SQL; an error or an empty result is said plainly. A question no rule
can plan goes on to passage search.
"""

from __future__ import annotations

import hashlib
import time
from typing import Any

from langgraph.runtime import Runtime

from core.schemas import Citation, QueryAnalysis
from core.text import detect_language
from core.trace import Decision
from nodes.common import ctx, event, question_of
from nodes.context import AgentContext
from nodes.state import AgentState
from retrievers.sql import SqlError, SqlResult, SqlSources, describe
from retrievers.sql_plan import plan_sql, table_question

SHOWN_ROWS = 20


def sql_route_reason(question: str, analysis: QueryAnalysis | None, sources: SqlSources | None) -> str:
    """Why the question goes to the SQL route, or "" when it should search passages.

    The offline reading must find the table (its schema explains most of the question) and a
    statement the rules can build; with an LLM, the analysis recommending ``sql`` over a table the
    schema matches is enough (the model then writes the statement)."""
    if sources is None:
        return ""
    tables = sources.tables()
    if not tables:
        return ""
    plan = plan_sql(question, tables)
    if plan is not None:
        return f"table question: {plan.reason}"
    reading = table_question(question, tables)
    if reading is not None and analysis is not None and analysis.recommended_strategy == "sql":
        return f"table question (the analysis recommends sql; {reading.table.name} matches)"
    return ""


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() else f"{value:.6g}"
    return "NULL" if value is None else str(value)


def _row(columns: list[str], row: tuple[Any, ...]) -> str:
    if len(row) == 1:
        return _cell(row[0])
    rest = ", ".join(f"{c} {_cell(v)}" for c, v in zip(columns[1:], row[1:], strict=False))
    return f"{_cell(row[0])} ({rest})"


def sql_answer(question: str, result: SqlResult, table: str) -> str:
    """The result in words, with [1] citing the query."""
    zh = detect_language(question) == "zh"
    if not result.rows:
        return (
            f"查询没有返回任何记录[1]：数据表 {table} 中没有符合条件的记录。"
            if zh
            else f"The query returned no rows [1]: no record of the table {table} matches."
        )
    shown = [_row(result.columns, r) for r in result.rows[:SHOWN_ROWS]]
    more = len(result.rows) > SHOWN_ROWS or result.truncated
    listed = ("；" if zh else "; ").join(shown)
    if more:
        count = f"{len(result.rows)}+" if result.truncated else str(len(result.rows))
        listed += (
            f"（共 {count} 行，仅列出前 {len(shown)} 行）"
            if zh
            else f" ({count} rows; first {len(shown)} shown)"
        )
    return f"根据数据表 {table} 的查询结果：{listed}[1]。" if zh else f"From the table {table}: {listed} [1]."


def _citation(result: SqlResult, table: str) -> Citation:
    digest = hashlib.sha256(f"{result.database}\n{result.sql}".encode()).hexdigest()[:12]
    return Citation(
        number=1,
        chunk_id=f"sql:{digest}",
        source=f"{result.database} ({table})",
        heading="SQL",
        snippet=result.sql,
    )


def _failure(question: str, reason: str) -> str:
    zh = detect_language(question) == "zh"
    return f"无法从数据表回答：{reason}。" if zh else f"The tables could not answer this: {reason}."


def retrieve_sql(state: AgentState, runtime: Runtime[AgentContext]) -> dict[str, Any]:
    started = time.perf_counter()
    context = ctx(runtime)
    question = question_of(state)
    sources = context.sql
    tables = sources.tables() if sources else []
    sql, writer, table = "", "", ""
    if sources is not None and context.brain.write_sql is not None:
        proposed = context.brain.write_sql(question, describe(tables), sources.databases[0].dialect)
        if proposed is not None:
            sql, writer = proposed.sql, "model"
    if not sql and tables:
        plan = plan_sql(question, tables)
        if plan is not None:
            sql, writer, table = plan.sql, "rules", plan.table
    if not sql or sources is None:  # nothing to run: search the passages instead
        return {
            "strategy": "hybrid",
            "trace": [
                event("retrieve_sql", started, context, Decision.SKIPPED, "no SQL plan: searching passages")
            ],
        }
    database = sources.database_of(table) if table else None
    if database is None:
        named = [
            t.name for t in tables if f'"{t.name}"'.lower() in sql.lower() or t.name.lower() in sql.lower()
        ]
        database = sources.database_of(named[0]) if named else sources.databases[0]
        table = named[0] if named else table
    refused = ""
    try:
        try:
            result = database.run(sql)
        except SqlError as exc:
            plan = plan_sql(question, tables) if writer == "model" else None
            if plan is None or plan.sql == sql:
                raise
            # the model's SQL was refused or failed: the rules' statement answers, the trace says why
            refused, sql, writer, table = f"model SQL refused ({exc}); ", plan.sql, "rules", plan.table
            database = sources.database_of(plan.table) or database
            result = database.run(sql)
    except SqlError as exc:
        answer = _failure(question, str(exc))
        citation = Citation(
            number=1, chunk_id="sql:refused", source=database.label, heading="SQL", snippet=sql
        )
        return {
            "answer": answer,
            "citations": [citation],
            "passages": [],
            "insufficient": True,
            "stop_reason": "sql_error",
            "trace": [
                event(
                    "retrieve_sql",
                    started,
                    context,
                    Decision.INSUFFICIENT,
                    f"{writer} SQL refused/failed: {exc}",
                )
            ],
        }
    answer = sql_answer(question, result, table or "?")
    return {
        "answer": answer,
        "citations": [_citation(result, table or "?")],
        "passages": [],
        "insufficient": not result.rows,
        "stop_reason": "sql",
        "trace": [
            event(
                "retrieve_sql",
                started,
                context,
                Decision.ANSWERED if result.rows else Decision.INSUFFICIENT,
                f"{refused}{writer} SQL on {result.database}: {result.sql}",
                query=result.sql,
                rows=len(result.rows),
            )
        ],
    }


def route_after_sql(state: AgentState) -> str:
    """An answer from the tables goes to the final message; no plan goes on to passage search."""
    return "verify" if state.get("answer") else "retrieve_hybrid"
