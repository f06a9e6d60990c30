"""Everyday papercuts (issue 25): `main.py --index DIR` opens the session, whose first screen suggests
questions from the documents' headings; a filter key no chunk holds is refused with the keys it holds;
messages name the command typed; a settings file below flags, environment and .env; extras' errors say
how to install them."""

from __future__ import annotations

import logging
import subprocess
import sys
from pathlib import Path

import pexpect
import pytest

import main
from cli.suggestions import as_question, suggest_questions
from config import SettingsError, load_settings, setting_sources
from core.chunks import Chunk
from core.command import cli_name
from tests.corpus import index_of_files
from tests.test_session import ANSI, MAIN, PROMPT, session_env

ROOT = Path(__file__).resolve().parent.parent
DOCS = {
    "retrieval_en.md": (
        "# Retrieval\n\n## Hybrid search\n\nHybrid search merges vector and keyword hits with reciprocal "
        "rank fusion; the fusion constant k is 60.\n\n## Why was a file skipped?\n\nFiles over "
        "AGENTIC_RAG_MAX_FILE_MB are skipped.\n"
    ),
    "索引_zh.md": "# 向量索引\n\n## 没有网络能用吗？\n\n可以。默认模型都随软件包一起安装，完全离线运行。\n",
    "teams.jsonl": '{"id": "t1", "title": "Teams", "team": "search", "text": "The search team owns BM25."}\n',
}


@pytest.fixture(scope="module")
def index_dir(tmp_path_factory, embedder) -> Path:
    return index_of_files(tmp_path_factory, embedder, DOCS)


def chunk(source: str, language: str, *headings: str) -> Chunk:
    return Chunk(
        id=f"{source}{headings}", text="x", source=source, language=language, heading_path=list(headings)
    )


# --- the session's first screen ------------------------------------------------------------------------


def test_headings_become_questions_in_their_own_language():
    assert as_question("Why was a file skipped?", "en") == "Why was a file skipped?"
    assert as_question("没有网络能用吗", "zh") == "没有网络能用吗？"
    assert as_question("Hybrid search", "en") == "What does the documentation say about hybrid search?"
    assert as_question("增量导入", "zh") == "关于“增量导入”，文档里是怎么说的？"


def test_suggestions_take_languages_in_turn_one_per_document_questions_first():
    chunks = [
        *[chunk("a_en.md", "en", "Guide", "Keyword search") for _ in range(3)],
        chunk("a_en.md", "en", "Guide", "Does it work offline?"),
        chunk("b_en.md", "en", "Install", "Installing on Linux"),
        chunk("c_zh.md", "zh", "检索", "混合检索"),
        chunk("d_zh.md", "zh", "配置", "`AGENTIC_RAG_TOP_K=5`"),  # code: never offered
    ]
    assert suggest_questions(chunks) == [
        "Does it work offline?",
        "关于“混合检索”，文档里是怎么说的？",
        "What does the documentation say about installing on Linux?",
    ]
    assert suggest_questions([]) == []


@pytest.mark.slow
def test_main_py_index_dir_opens_the_session_whose_first_screen_suggests_questions(index_dir, tmp_path):
    env = session_env(tmp_path / "not-this-one", tmp_path / "checkpoints.sqlite")
    child = pexpect.spawn(
        sys.executable,
        [MAIN, "--index", str(index_dir)],
        cwd=str(tmp_path),
        env=env,
        encoding="utf-8",
        dimensions=(50, 250),
        timeout=90,
    )
    child.expect_exact(PROMPT)
    banner = ANSI.sub("", child.before)
    assert str(index_dir) in banner and "new thread" in banner
    assert "Try:" in banner and "Why was a file skipped?" in banner and "没有网络能用吗？" in banner
    child.sendline("/quit")
    child.expect(pexpect.EOF)


# --- filter keys ---------------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("command", ["search", "ask"])
def test_a_filter_key_no_chunk_holds_is_refused_with_the_keys_it_holds(index_dir, command, capsys):
    code = main.main([command, "向量索引", "--index", str(index_dir), "--filter", "langauge=zh"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1
    assert "'langauge'" in err and "did you mean 'language'" in err
    assert "team" in err and "source" in err and "heading_path" in err  # custom metadata listed too


@pytest.mark.slow
def test_custom_metadata_keys_and_the_named_filters_keep_working(index_dir, capsys):
    assert main.main(["search", "owns", "--index", str(index_dir), "--filter", "team=search", "--json"]) == 0
    out = capsys.readouterr().out
    assert "The search team owns BM25." in out and "retrieval_en.md" not in out
    assert main.main(["search", "网络", "--index", str(index_dir), "--filter", "lang=zh", "--json"]) == 0
    assert "索引_zh.md" in capsys.readouterr().out


# --- the command the user typed ---------------------------------------------------------------------------


def test_messages_name_the_command_the_user_typed(tmp_path, monkeypatch, capsys):
    assert cli_name("/home/me/.venv/bin/agentic-rag") == "agentic-rag"
    assert cli_name("main.py") == cli_name("/src/agentic-rag/main.py") == "python main.py"
    monkeypatch.setattr(sys, "argv", ["/home/me/.venv/bin/agentic-rag"])
    assert main.main(["index", "stats", "--index", str(tmp_path / "none")]) == 2
    err = capsys.readouterr().err
    assert f"agentic-rag ingest --index {tmp_path / 'none'} PATH" in err and "main.py" not in err
    monkeypatch.setattr(sys, "argv", [str(ROOT / "main.py")])
    assert main.main(["index", "stats", "--index", str(tmp_path / "none")]) == 2
    assert "python main.py ingest" in capsys.readouterr().err


# --- the settings file ---------------------------------------------------------------------------------


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    for name in ("AGENTIC_RAG_TOP_K", "AGENTIC_RAG_CHUNK_SIZE", "AGENTIC_RAG_CONFIG", "OPENAI_MODEL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_the_settings_file_sits_below_flags_environment_and_dotenv(workdir, monkeypatch):
    (workdir / "agentic-rag.toml").write_text(
        'AGENTIC_RAG_TOP_K = 7\nchunk_size = 900\nOPENAI_MODEL = "qwen2.5"\nmode = "hybrid"\n'
        'index_dir = "索引/主库"\nhnsw_m = 48\n',
        encoding="utf-8",
    )
    settings = load_settings()
    assert (settings.top_k, settings.chunk_size, settings.llm_model) == (7, 900, "qwen2.5")
    assert settings.index_dir == Path("索引/主库") and settings.hnsw_m == 48
    (workdir / ".env").write_text("AGENTIC_RAG_HNSW_M=64\n", encoding="utf-8")
    monkeypatch.setenv("AGENTIC_RAG_CHUNK_SIZE", "1000")
    settings = load_settings(top_k=3)
    assert (settings.top_k, settings.chunk_size, settings.hnsw_m, settings.mode) == (3, 1000, 64, "hybrid")
    sources = setting_sources({"top_k": 3})
    assert sources["top_k"] == "command line" and sources["chunk_size"].startswith("environment")
    assert sources["hnsw_m"].startswith(".env") and sources["mode"] == "file agentic-rag.toml mode"
    assert sources["llm_model"] == "file agentic-rag.toml OPENAI_MODEL" and sources["rrf_k"] == "default"


def test_a_misspelt_key_in_the_settings_file_is_warned_about_with_the_closest_name(workdir, caplog):
    (workdir / "agentic-rag.toml").write_text("AGENTIC_RAG_TOPK = 5\n", encoding="utf-8")
    with caplog.at_level(logging.WARNING, logger="config"):
        assert load_settings().top_k == 10
    assert "AGENTIC_RAG_TOPK" in caplog.text and "did you mean AGENTIC_RAG_TOP_K" in caplog.text


def test_bad_settings_files_are_one_clear_error(workdir, monkeypatch):
    (workdir / "agentic-rag.toml").write_text("top_k = [\n", encoding="utf-8")
    with pytest.raises(SettingsError, match=r"cannot read the settings file agentic-rag\.toml"):
        load_settings()
    (workdir / "agentic-rag.toml").write_text("top_k = 0\n", encoding="utf-8")
    with pytest.raises(SettingsError, match="top_k"):
        load_settings()
    monkeypatch.setenv("AGENTIC_RAG_CONFIG", str(workdir / "missing.toml"))
    with pytest.raises(SettingsError, match=r"missing\.toml does not exist"):
        load_settings()


def test_config_file_given_anywhere_on_the_command_line_is_read_and_shown(workdir, tmp_path):
    other = tmp_path / "team.toml"
    other.write_text("AGENTIC_RAG_TOP_K = 4\n", encoding="utf-8")
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "HOME": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, MAIN, "config", "--config", str(other)],
        cwd=workdir,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert f"settings file: {other}" in done.stdout
    [row] = [line for line in done.stdout.splitlines() if line.split()[:1] == ["top_k"]]
    assert row.replace("│", " ").split()[1] == "4" and f"file {other} AGENTIC_RAG_TOP_K" in row


# --- extras --------------------------------------------------------------------------------------------


def test_a_missing_extra_names_the_setup_command(monkeypatch):
    from ingestion.ray_ingest import start_ray
    from retrievers.milvus_store import MilvusStoreError, MilvusTarget, connect

    monkeypatch.setitem(sys.modules, "pymilvus", None)
    with pytest.raises(MilvusStoreError, match=r"bash scripts/setup\.sh milvus"):
        connect(MilvusTarget(uri="x.db", collection="c"))
    monkeypatch.setitem(sys.modules, "ray", None)
    with pytest.raises(ValueError, match=r"bash scripts/setup\.sh ray"):
        start_ray(None, 1)


# --- eval output ---------------------------------------------------------------------------------------


def test_the_eval_chart_labels_each_metric_with_its_direction():
    from evaluators.report import direction_label

    assert (
        direction_label("recall@5") == "recall@5 ↑"
        and direction_label("answer_has_gold") == "answer_has_gold ↑"
    )
    assert direction_label("hallucination_rate") == "hallucination_rate ↓"
    assert direction_label("counterfactual_above_gold@10") == "counterfactual_above_gold@10 ↓"
