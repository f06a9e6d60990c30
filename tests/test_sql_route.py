"""The SQL route: CSV/TSV tables ingested into the index's SQLite database, table questions answered
by one checked read-only SELECT (offline rules or a model's SQL), hostile SQL never executed, and the
same on a real PostgreSQL server."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import pytest

from core.chunks import Chunk
from graph.builder import build_graph
from graph.run import ask
from ingestion.indexing import index_chunks
from ingestion.tables import sync_tables, tables_path
from nodes.context import AgentContext
from providers.brain import make_brain, offline_brain
from providers.brain.sql import SQL_SYSTEM
from retrievers.factory import build_retrievers
from retrievers.index import open_index
from retrievers.sql import SqlDatabase, SqlError, SqlSources, check_select, open_sql_sources
from retrievers.sql_plan import plan_sql
from tests.graph_fixtures import one_passage_context
from tests.openai_server import openai_server, plausible_reply, reply_json, system_text
from tests.postgres_server import postgres_url

TABLES = Path(__file__).parent / "data" / "tables"

HOSTILE = [
    "DROP TABLE employees",
    "SELECT COUNT(*) FROM employees; DROP TABLE employees",
    "SELECT name FROM employees UNION SELECT sql FROM sqlite_master",
    "PRAGMA table_info(employees)",
    "ATTACH DATABASE '/tmp/x.db' AS x",
    "DELETE FROM employees",
    "UPDATE employees SET salary = 0",
    "INSERT INTO employees (name) VALUES ('x')",
    "CREATE TABLE x AS SELECT * FROM employees",
    "SELECT * INTO copy FROM employees",
    "WITH gone AS (DELETE FROM employees RETURNING *) SELECT * FROM gone",
    "SELECT load_extension('/tmp/evil')",
    "SELECT * FROM main.sqlite_master",
    "SELECT 1 /* harmless */; DROP TABLE employees --",
]


def files_of(folder: Path) -> dict[str, str]:
    return {str(p): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.glob("*.csv"))}


@pytest.fixture
def database(tmp_path) -> SqlDatabase:
    sync_tables(tmp_path, files_of(TABLES))
    return SqlDatabase(f"sqlite:///{tables_path(tmp_path)}")


def answer_of(database: SqlDatabase, question: str) -> list[tuple]:
    plan = plan_sql(question, database.tables())
    assert plan is not None, question
    return database.run(plan.sql).rows


def test_ingested_csv_files_become_typed_tables(database):
    tables = {t.name: t for t in database.tables()}
    assert set(tables) == {"employees", "销售"}
    assert tables["employees"].rows == 10 and tables["销售"].rows == 10
    kinds = {c.name: c.kind for c in tables["employees"].columns}
    assert kinds == {
        "name": "text",
        "department": "text",
        "city": "text",
        "salary": "number",
        "hired": "text",
        "age": "number",
    }
    assert "北京" in tables["销售"].column("城市").samples


def test_table_sync_is_incremental(tmp_path):
    folder = tmp_path / "docs"
    shutil.copytree(TABLES, folder)
    index = tmp_path / "index"
    assert set(sync_tables(index, files_of(folder)).values()) == {"employees", "销售"}
    sales = folder / "销售.csv"
    sales.write_text(sales.read_text(encoding="utf-8") + "杭州,手机,四季度,10,30000\n", encoding="utf-8")
    sync_tables(index, files_of(folder))
    db = SqlDatabase(f"sqlite:///{tables_path(index)}")
    assert db.run('SELECT COUNT(*) FROM "销售"').rows == [(11,)]
    (folder / "employees.csv").unlink()
    assert set(sync_tables(index, files_of(folder)).values()) == {"销售"}
    db.refresh()
    assert [t.name for t in db.tables()] == ["销售"]


def test_ingest_loads_csv_files_into_the_index_tables(tmp_path, settings, embedder):
    from ingestion.pipeline import ingest_paths

    folder = tmp_path / "docs"
    shutil.copytree(TABLES, folder)
    ingest_paths([folder], settings, embedder, index_dir=settings.index_dir, progress=False)
    db = SqlDatabase(f"sqlite:///{tables_path(settings.index_dir)}")
    assert {t.name for t in db.tables()} == {"employees", "销售"}
    (folder / "销售.csv").unlink()
    report = ingest_paths([folder], settings, embedder, index_dir=settings.index_dir, progress=False)
    assert report.removed and [t.name for t in SqlDatabase(db.url).tables()] == ["employees"]


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        # phrasings not in tests/data/sql_questions.jsonl
        ("How many employees work in Madrid?", [(3,)]),
        ("What is the average salary in Berlin?", [(72600.0,)]),
        ("What is the maximum age in the Sales department?", [(45,)]),
        ("How many employees are younger than 30?", [(3,)]),
        ("上海的总金额是多少？", [(1140000,)]),
        ("北京有几条记录？", [(3,)]),
        ("深圳手机的销量是多少？", [(200,)]),
        ("金额低于200000的记录有多少条？", [(2,)]),
    ],
)
def test_offline_rules_answer_simple_table_questions(database, question, expected):
    assert answer_of(database, question) == expected


@pytest.mark.parametrize(
    "question",
    [
        "Who wrote On the Origin of Species?",
        "混合检索是如何合并结果的？",
        "How many employees did Google have in 2010?",
    ],
)
def test_questions_the_schema_does_not_explain_get_no_plan(database, question):
    assert plan_sql(question, database.tables()) is None


@pytest.mark.parametrize("sql", HOSTILE)
def test_hostile_sql_never_executes(database, sql):
    before = hashlib.sha256(database.path.read_bytes()).hexdigest()
    with pytest.raises(SqlError):
        database.run(sql)
    assert hashlib.sha256(database.path.read_bytes()).hexdigest() == before
    assert database.run("SELECT COUNT(*) FROM employees").rows == [(10,)]


@pytest.mark.parametrize("sql", HOSTILE)
def test_the_check_refuses_hostile_sql_before_any_connection(sql):
    with pytest.raises(SqlError):
        check_select(sql, "sqlite", ["employees", "销售"])


def test_the_connection_itself_is_read_only(database):
    """Even a statement that got past the check could not write: mode=ro, query_only, an authorizer."""
    for sql in ("DELETE FROM employees", "PRAGMA writable_schema = ON", "ATTACH DATABASE ':memory:' AS x"):
        with pytest.raises(SqlError):
            database._execute(sql)
    assert database.run("SELECT COUNT(*) FROM employees").rows == [(10,)]


def test_row_limit_and_time_limit(database):
    limited = SqlDatabase(database.url, max_rows=3)
    result = limited.run("SELECT name FROM employees")
    assert len(result.rows) == 3 and result.truncated
    slow = SqlDatabase(database.url, timeout_s=0.2)
    with pytest.raises(SqlError, match="longer than"):
        slow.run("WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT COUNT(*) FROM n")


def test_check_select_names_the_reason():
    with pytest.raises(SqlError, match="one statement"):
        check_select("SELECT 1; SELECT 2", "sqlite", [])
    with pytest.raises(SqlError, match="unknown table"):
        check_select("SELECT * FROM secrets", "sqlite", ["employees"])
    assert check_select('SELECT COUNT(*) FROM "销售";', "sqlite", ["销售"]) == 'SELECT COUNT(*) FROM "销售"'


# --- the route in the graph ---------------------------------------------------------------------------


@pytest.fixture
def graph_context(one_passage_context, database):
    return lambda brain=None, current=None: one_passage_context(brain, current, sql=SqlSources([database]))


def nodes_of(result) -> list[str]:
    return [e.node for e in result.trace]


@pytest.mark.parametrize(
    ("question", "shown"),
    [
        ("How many employees work in Berlin?", "From the table employees: 5 [1]."),
        ("北京手机的总销量是多少？", "250[1]"),
    ],
)
def test_table_questions_take_the_sql_route(graph_context, question, shown):
    result = ask(build_graph(), question, context=graph_context())
    assert "retrieve_sql" in nodes_of(result) and "retrieve_hybrid" not in nodes_of(result)
    assert shown in result.answer
    (citation,) = result.citations
    assert citation.heading == "SQL" and citation.snippet.startswith("SELECT")
    routed = next(e for e in result.trace if e.node == "analyze_query")
    assert "-> sql (table question" in routed.detail


def test_answers_from_live_tables_are_not_cached(graph_context, settings, tmp_path):
    from memory.answer_cache import AnswerCache

    context = graph_context()
    context.cache = AnswerCache(tmp_path / "answers.sqlite", generation="g1")
    for _ in range(2):
        result = ask(build_graph(), "How many employees work in Berlin?", context=context)
        assert "retrieve_sql" in nodes_of(result)  # asked again, not answered from the cache


def test_empty_results_are_said_plainly(graph_context):
    result = ask(build_graph(), "Which employees in Paris work in Marketing?", context=graph_context())
    assert "returned no rows" in result.answer and result.insufficient


def test_passage_questions_do_not_take_the_sql_route(graph_context):
    result = ask(build_graph(), "How does hybrid search fuse results?", context=graph_context())
    assert "retrieve_sql" not in nodes_of(result)


def test_build_context_opens_the_index_tables_and_configured_urls(tmp_path, database):
    sources = open_sql_sources([database.url], tmp_path / "missing.sqlite")
    assert sources is not None and [d.url for d in sources.databases] == [database.url]
    assert open_sql_sources([], tmp_path / "missing.sqlite") is None


# --- a model's SQL ------------------------------------------------------------------------------------


def sql_responder(sql: str, seen: list[str]):
    def respond(body):
        if system_text(body).strip() == SQL_SYSTEM:
            seen.append(body["messages"][-1]["content"])
            return reply_json({"sql": sql, "reasoning": "scripted"})
        if "analy" in system_text(body).lower()[:200]:
            return reply_json({"query_type": "factual", "recommended_strategy": "sql", "sub_queries": []})
        return plausible_reply(body)

    return respond


@pytest.fixture
def llm_settings(settings, openai_server):
    return settings.model_copy(
        update={"openai_base_url": openai_server.base_url, "openai_api_key": "sk-test", "llm_max_retries": 0}
    )


def test_the_model_writes_sql_over_the_schema(graph_context, llm_settings, openai_server, database):
    seen: list[str] = []
    openai_server.responder = sql_responder(
        'SELECT "department", AVG("salary") AS a FROM employees GROUP BY "department" ORDER BY a DESC LIMIT 1',
        seen,
    )
    context = graph_context(make_brain(llm_settings), llm_settings)
    result = ask(build_graph(), "Which department has the highest average salary?", context=context)
    assert "Engineering" in result.answer and result.citations[0].snippet.startswith('SELECT "department"')
    assert 'TABLE "employees" (10 rows)' in seen[0] and "'Berlin'" in seen[0]  # schema with sample values


@pytest.mark.parametrize("sql", HOSTILE[:5])
def test_hostile_sql_from_the_model_is_refused_plainly(
    graph_context, llm_settings, openai_server, database, sql
):
    openai_server.responder = sql_responder(sql, [])
    context = graph_context(make_brain(llm_settings), llm_settings)
    result = ask(build_graph(), "How many employees work in Berlin?", context=context)
    step = next(e for e in result.trace if e.node == "retrieve_sql")
    assert step.detail.startswith("model SQL refused (")  # the rules' statement answered instead
    assert result.answer == "From the table employees: 5 [1]."
    assert database.run("SELECT COUNT(*) FROM employees").rows == [(10,)]


# --- PostgreSQL ------------------------------------------------------------------------------------------


@pytest.fixture
def postgres_database(postgres_url, database):
    import psycopg

    rows = database.run('SELECT * FROM "销售"').rows
    # a database of its own: the suite's server also holds the checkpoint tests' tables
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = 'sql_route_test'").fetchone():
            conn.execute("CREATE DATABASE sql_route_test")
    postgres_url = postgres_url.rsplit("/", 1)[0] + "/sql_route_test"
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute('DROP TABLE IF EXISTS "销售"')
        conn.execute(
            'CREATE TABLE "销售" ("城市" text, "产品" text, "季度" text, "销量" integer, "金额" integer)'
        )
        with conn.cursor() as cursor:
            cursor.executemany('INSERT INTO "销售" VALUES (%s, %s, %s, %s, %s)', rows)
    yield SqlDatabase(postgres_url)


def test_postgres_tables_answer_the_same_questions(postgres_database):
    table = postgres_database.tables()[0]
    assert table.name == "销售" and table.column("销量").kind == "number" and table.rows == 10
    assert answer_of(postgres_database, "手机的总销量是多少？") == [(600,)]
    assert answer_of(postgres_database, "销量最高的是哪个城市？")[0][0] == "深圳"


@pytest.mark.parametrize(
    "sql", ['DROP TABLE "销售"', 'SELECT 1; DELETE FROM "销售"', "SELECT * FROM pg_catalog.pg_user"]
)
def test_postgres_hostile_sql_never_executes(postgres_database, sql):
    with pytest.raises(SqlError):
        postgres_database.run(sql)
    with pytest.raises(SqlError, match="read-only"):
        postgres_database._execute('DELETE FROM "销售"')  # past the check, the transaction refuses
    assert postgres_database.run('SELECT COUNT(*) FROM "销售"').rows == [(10,)]


def test_a_refused_model_sql_without_a_rule_plan_is_said_plainly(
    graph_context, llm_settings, openai_server, database
):
    openai_server.responder = sql_responder("DROP TABLE employees", [])
    context = graph_context(make_brain(llm_settings), llm_settings)
    result = ask(build_graph(), "List the employees by name and city", context=context)
    assert result.answer == "The tables could not answer this: SELECT only, got DROP."
    assert database.run("SELECT COUNT(*) FROM employees").rows == [(10,)]
