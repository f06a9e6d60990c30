"""examples/embed_app.py runs as documented: its own index, checkpointer and thread ids."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.slow
def test_the_embedding_example_answers_on_separate_threads_with_citations(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTIC_RAG_")}
    env.update(AGENTIC_RAG_RERANKER="lexical", AGENTIC_RAG_BRAIN="offline", PYTHONIOENCODING="utf-8")
    done = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "embed_app.py")],
        cwd=tmp_path,  # runs from anywhere, and leaves nothing behind
        env=env,
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout

    refund, follow_up, leave = out.split("\n\n")[:3]
    assert "30 days" in refund and "[1] kb/policies/refunds.md (refund-policy)" in refund
    assert "Q: Does that also apply to digital downloads?" in follow_up
    assert "(read as:" in follow_up  # resolved with the thread's history
    assert "not been downloaded" in follow_up and "(refund-digital)" in follow_up
    assert re.search(r"15 天带薪年假.*\[1\]", leave) and "[1] kb/hr/年假制度.md (leave-zh)" in leave
    assert "thread customer-42: 4 messages" in out and "thread employee-7: 2 messages" in out
    assert list(tmp_path.iterdir()) == []
