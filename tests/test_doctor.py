"""`python main.py doctor`: one line per check saying what is wrong and how to fix it; exit 1 on failure."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from cli.doctor import diagnose
from ingestion.indexing import index_chunks
from tests.graph_fixtures import graph_corpus
from tests.openai_server import openai_server, refused_base_url

__all__ = ["openai_server"]  # the fixture is used by name

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def indexed(settings, embedder):
    index_chunks(graph_corpus(), settings, embedder, index_dir=settings.index_dir, progress=False)
    return settings


def by_name(checks) -> dict[str, tuple[bool, str]]:
    return {c.name: (c.ok, c.detail) for c in checks}


def test_everything_fine_offline(indexed):
    found = by_name(diagnose(indexed))
    assert all(ok for ok, _ in found.values()), found
    assert set(found) == {"endpoint", "embedder", "index", "checkpoints"}
    assert "offline brain" in found["endpoint"][1]


def test_endpoint_and_model_of_a_real_server(indexed, openai_server):
    settings = indexed.model_copy(update={"openai_base_url": openai_server.base_url, "openai_api_key": "k"})
    served = by_name(diagnose(settings.model_copy(update={"llm_model": openai_server.model})))
    assert served["endpoint"][0] and served["model"][0]
    wrong = by_name(diagnose(settings.model_copy(update={"llm_model": "no-such-model"})))
    ok, detail = wrong["model"]
    assert not ok and "AGENTIC_RAG_LLM_MODEL" in detail and openai_server.model in detail


def test_each_broken_part_is_named_with_its_fix(indexed, tmp_path):
    broken = indexed.model_copy(
        update={
            "openai_base_url": refused_base_url(),
            "index_dir": tmp_path / "nothing-here",
            "checkpoint_db": tmp_path,  # a directory, not a file
        }
    )
    found = by_name(diagnose(broken))
    assert not found["endpoint"][0] and "AGENTIC_RAG_BRAIN=offline" in found["endpoint"][1]
    assert not found["index"][0] and "python main.py ingest" in found["index"][1]
    assert not found["checkpoints"][0] and "AGENTIC_RAG_CHECKPOINT_DB" in found["checkpoints"][1]
    assert found["embedder"][0]


@pytest.mark.parametrize(("broken", "code"), [(False, 0), (True, 1)])
def test_doctor_command_exit_code_and_one_line_per_check(indexed, tmp_path, broken, code):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENTIC_RAG_", "OPENAI_"))}
    env.update(
        AGENTIC_RAG_INDEX_DIR=str(indexed.index_dir),
        AGENTIC_RAG_CHECKPOINT_DB=str(tmp_path / "cp.sqlite"),
        AGENTIC_RAG_EMBEDDER="use-multilingual",
        PYTHONPATH=str(ROOT),
    )
    if broken:
        env["OPENAI_BASE_URL"] = refused_base_url()
    done = subprocess.run(
        [sys.executable, str(ROOT / "main.py"), "doctor"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == code, done.stdout + done.stderr
    lines = done.stdout.strip().splitlines()
    assert len(lines) == 4 and all(line.startswith(("ok", "FAIL")) for line in lines)
    assert any(line.startswith("FAIL") and "endpoint" in line for line in lines) is broken
