"""Everyday use of the command line: the installed command, logging flags anywhere, `config`, misspelled
settings, output that is piped rather than shown on a terminal."""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from config import load_settings, unknown_env_names
from ingestion.pipeline import ingest_paths
from main import split_global_options
from tests.corpus import index_of_files

ROOT = Path(__file__).resolve().parent.parent

DOCS = {
    "fusion_en.md": (
        "# Fusion\n\nReciprocal rank fusion adds one over the sum of the constant sixty and the rank of the "
        "chunk in every result list that contains it, so chunks that both retrievers rank highly win.\n"
    ),
    "tuning_zh.md": (
        "# 性能调优\n\nHNSW 索引的性能问题可以通过调大 ef_search 参数来解决，代价是每次查询都会变慢一些，"
        "而且内存占用也会随之增加，所以需要在召回率和速度之间权衡。\n"
    ),
}


@pytest.fixture(scope="module")
def index_dir(tmp_path_factory, embedder) -> Path:
    return index_of_files(tmp_path_factory, embedder, DOCS)


def cli(*args: str, cwd: Path = ROOT, **env: str) -> subprocess.CompletedProcess:
    full = {k: v for k, v in os.environ.items() if not k.startswith("AGENTIC_RAG_")}
    full.update(
        {
            "PYTHONPATH": str(ROOT),
            "AGENTIC_RAG_RERANKER": "lexical",
            "AGENTIC_RAG_BRAIN": "offline",
            "LANG": "C.UTF-8",
            **env,
        }
    )
    return subprocess.run(
        [sys.executable, str(ROOT / "main.py"), *args],
        cwd=cwd,
        env=full,
        capture_output=True,
        text=True,
        timeout=300,
    )


# --- the installed command ---------------------------------------------------------------------------------


def test_the_agentic_rag_command_is_declared_and_runs():
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    module, _, function = scripts["agentic-rag"].partition(":")
    code = f"import sys; sys.argv = ['agentic-rag', '--help']; import {module}; {module}.{function}()"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0
    assert out.stdout.startswith("usage: agentic-rag")
    assert "serve" in out.stdout and "config" in out.stdout


def test_the_installed_command_runs(tmp_path):
    """After the README's set-up (an editable install) the command sits beside the venv's python."""
    from importlib.metadata import entry_points

    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]["agentic-rag"]
    [installed] = [e for e in entry_points(group="console_scripts") if e.name == "agentic-rag"]
    assert installed.value == declared
    command = Path(sys.executable).parent / "agentic-rag"
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTIC_RAG_")}
    env.update(PYTHONPATH=str(ROOT), AGENTIC_RAG_TOP_K="7")
    out = subprocess.run(
        [str(command), "config", "--json"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["top_k"]["value"] == "7"


def test_setup_installs_the_project_with_its_scripts():
    """The quick start installs the core editable, quietly enough (pip -qq) that setuptools' warning block
    is not printed; extras by name; the test script asks for every extra."""
    setup = (ROOT / "scripts" / "setup.sh").read_text()
    assert "--disable-pip-version-check -q " in setup  # every pip call is -q ...
    assert re.search(r"^  pip install -q -e \.$", setup, flags=re.M)  # ... the editable ones -qq
    assert 'ALL_EXTRAS="dev st milvus ray local-llm"' in setup and 'pip install -q -e ".[$(' in setup
    assert "bash scripts/setup.sh all" in (ROOT / "scripts" / "test.sh").read_text()
    assert "bash scripts/setup.sh\n" in (ROOT / "scripts" / "quickstart.sh").read_text()  # the core only


# --- logging flags -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "verbose", "log_file", "rest"),
    [
        (["ask", "q", "-v"], 1, None, ["ask", "q"]),
        (["-vv", "search", "x", "--log-file", "a.log"], 2, "a.log", ["search", "x"]),
        (["ingest", "--log-file=b.log", "docs", "--verbose"], 1, "b.log", ["ingest", "docs"]),
        (["ask", "--", "-v"], 0, None, ["ask", "--", "-v"]),
    ],
)
def test_verbose_and_log_file_are_taken_from_anywhere(argv, verbose, log_file, rest):
    assert split_global_options(argv) == (verbose, log_file, rest)


def test_the_engine_logs_its_own_decisions_only_when_asked(index_dir, tmp_path):
    quiet = cli("ask", "What does reciprocal rank fusion add?", "--index", str(index_dir))
    assert quiet.returncode == 0
    assert quiet.stderr == ""

    log_file = tmp_path / "run.log"
    loud = cli(
        "ask", "HNSW 的性能问题怎么解决？", "--index", str(index_dir), "-v", "--log-file", str(log_file)
    )
    assert loud.returncode == 0
    assert "analyze_query:" in loud.stderr and "answered in" in loud.stderr
    assert "faiss" not in loud.stderr.lower() and "httpx" not in loud.stderr
    logged = log_file.read_text(encoding="utf-8")
    assert re.search(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d+ DEBUG nodes", logged, re.M)


def test_ingest_logs_each_file_outcome(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# A\n\nAlpha text about fusion.\n", encoding="utf-8")
    (docs / "b.md").write_text("", encoding="utf-8")
    out = cli("ingest", str(docs), "--index", str(tmp_path / "index"), "--json", "-v")
    assert out.returncode == 0
    assert f"added {docs / 'a.md'}" in out.stderr
    assert f"failed {docs / 'b.md'}" in out.stderr
    assert "ingested into" in out.stderr


# --- config ------------------------------------------------------------------------------------------------


def test_config_says_where_each_setting_came_from(tmp_path):
    (tmp_path / ".env").write_text("AGENTIC_RAG_CHUNK_SIZE=900\n", encoding="utf-8")
    out = cli(
        "config", "--json", "--index", "my-index", cwd=tmp_path, AGENTIC_RAG_TOP_K="7", OPENAI_API_KEY="sk-x"
    )
    assert out.returncode == 0, out.stderr
    shown = json.loads(out.stdout)
    assert shown["top_k"] == {
        "value": "7",
        "source": "environment AGENTIC_RAG_TOP_K",
        "env": "AGENTIC_RAG_TOP_K",
    }
    assert shown["chunk_size"]["source"] == ".env AGENTIC_RAG_CHUNK_SIZE"
    assert shown["index_dir"] == {
        "value": "my-index",
        "source": "command line",
        "env": "AGENTIC_RAG_INDEX_DIR",
    }
    assert shown["rrf_k"] == {"value": "60", "source": "default", "env": "AGENTIC_RAG_RRF_K"}
    assert shown["openai_api_key"]["value"] == "***"  # secrets never printed
    table = cli("config", cwd=tmp_path)
    assert re.search(r"chunk_size\s+.\s+900\s+.\s+\.env AGENTIC_RAG_CHUNK_SIZE", table.stdout)


def test_a_misspelled_setting_gets_a_warning_naming_the_right_one(tmp_path):
    assert unknown_env_names({"AGENTIC_RAG_TOPK": "5", "AGENTIC_RAG_TOP_K": "5", "HOME": "/"}) == [
        ("AGENTIC_RAG_TOPK", "AGENTIC_RAG_TOP_K")
    ]
    assert unknown_env_names({"AGENTIC_RAG_ZZZZZZZZZZZZ": "1"}) == [("AGENTIC_RAG_ZZZZZZZZZZZZ", None)]
    out = cli("config", cwd=tmp_path, AGENTIC_RAG_TOPK="5", AGENTIC_RAG_RERANKR="none")
    assert out.returncode == 0
    assert "AGENTIC_RAG_TOPK" in out.stderr and "did you mean AGENTIC_RAG_TOP_K?" in out.stderr
    assert "did you mean AGENTIC_RAG_RERANKER?" in out.stderr


# --- piped output ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("question", ["What does reciprocal rank fusion add?", "HNSW 的性能问题怎么解决？"])
def test_piped_output_is_never_hard_wrapped(index_dir, question):
    out = cli("ask", question, "--index", str(index_dir), "--mode", "hybrid")
    assert out.returncode == 0
    answer = out.stdout.splitlines()[0]
    assert len(answer) > 80 and re.search(r"\[\d+\]", answer)
    assert not re.search(r"\[\d*$", answer)  # no marker cut at the end of the line
    assert all(not re.match(r"^\d*\]", line) for line in out.stdout.splitlines())


# --- help, options, stats ----------------------------------------------------------------------------------


def all_actions(parser, path="main"):
    import argparse

    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from all_actions(sub, f"{path} {name}")
        elif not isinstance(action, argparse._HelpAction):
            yield path, action


def test_ingest_help_lists_every_format():
    out = cli("ingest", "--help")
    for suffix in (".md", ".pdf", ".html", ".jsonl", ".rst", ".docx", ".csv", ".tsv", ".ipynb", ".py"):
        assert suffix in out.stdout
    assert "--include" in out.stdout and "--exclude" in out.stdout


def test_every_option_and_argument_has_help_text():
    from main import build_parser

    missing = [
        f"{path} {a.option_strings or a.dest}" for path, a in all_actions(build_parser()) if not a.help
    ]
    assert missing == []


@pytest.mark.parametrize(
    "action", [["list"], ["show", "abc"], ["delete", "abc"], ["prune", "--older-than", "1d"]]
)
def test_threads_commands_take_no_index_or_embedder_options(action, tmp_path):
    out = cli("threads", *action, "--index", str(tmp_path))
    assert out.returncode == 2 and "unrecognized arguments: --index" in out.stderr


def test_index_stats_shows_iso_times(index_dir):
    out = cli("index", "stats", "--index", str(index_dir), "--json")
    created = json.loads(out.stdout)["created_at"]
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d\d:\d\d", created)
    table = cli("index", "stats", "--index", str(index_dir))
    assert created in table.stdout


def test_index_warm_embeds_every_reranker_window_once_and_resumes(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    for name, text in DOCS.items():
        (docs / name).write_text(text, encoding="utf-8")
    index = tmp_path / "index"
    assert cli("ingest", str(docs), "--index", str(index), "--json").returncode == 0
    first = cli("index", "warm", "--index", str(index), "--json", AGENTIC_RAG_RERANKER="e5")
    assert first.returncode == 0, first.stderr
    embedded = json.loads(first.stdout)["reranker_windows_embedded"]
    assert embedded >= len(DOCS)  # the English and the Chinese file, at least one window each
    with sqlite3.connect(index / "cache" / "embedding_cache.sqlite") as db:
        assert db.execute("SELECT COUNT(*) FROM embeddings").fetchone()[0] == embedded
    again = cli(
        "index", "warm", "--index", str(index), AGENTIC_RAG_RERANKER="e5"
    )  # a second run (or one after Ctrl-C) resumes
    assert again.returncode == 0 and "reranker_windows_embedded" in again.stdout
    assert (
        json.loads(cli("index", "warm", "--index", str(index), "--json", AGENTIC_RAG_RERANKER="e5").stdout)[
            "reranker_windows_embedded"
        ]
        == 0
    )
