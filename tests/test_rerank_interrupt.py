"""Ctrl-C while the e5 reranker embeds: a real `python main.py ask` in a terminal stops cleanly.

The signal lands while a native e5 call runs; Python raises KeyboardInterrupt as soon as that call
returns (one small batch of windows), and the CLI turns it into one line and exit code 130.
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

import pexpect
import pytest

from providers.embeddings import make_embedder
from tests.corpus import index_of_files

ROOT = Path(__file__).resolve().parent.parent
MAIN = str(ROOT / "main.py")


def default_sigint() -> None:
    """A shell's background job inherits SIGINT ignored, and Python then never installs its Ctrl-C
    handler; give the child the terminal default back, as an interactive shell would."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


EN = (
    "Hybrid search merges dense vector search with BM25 keyword search. Reciprocal rank fusion adds "
    "one over sixty plus the rank from each list. Topic {i}: the fusion weights decide which side wins "
    "when the two lists disagree, and the reranker then reads every candidate again."
)
ZH = "混合检索把向量检索和关键词检索的结果合并。第{i}节：倒数排名融合的常数取六十，重排序模型再读一遍每个候选段落。"


@pytest.fixture(scope="module")
def index_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    files = {f"en_{i}.md": f"# Fusion {i}\n\n" + EN.format(i=i) * 4 for i in range(24)}
    files |= {f"zh_{i}.md": f"# 融合 {i}\n\n" + ZH.format(i=i) * 6 for i in range(24)}
    return index_of_files(tmp_path_factory, make_embedder("use-multilingual"), files)


@pytest.mark.slow
@pytest.mark.parametrize(
    "question",
    ["How does hybrid search merge the two lists?", "混合检索怎样合并两个结果列表？"],
    ids=["en", "zh"],
)
def test_ctrl_c_during_rerank_exits_with_one_line_and_no_traceback(
    index_dir: Path, tmp_path: Path, question: str
) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTIC_RAG_")}
    env.update(
        AGENTIC_RAG_INDEX_DIR=str(index_dir),
        AGENTIC_RAG_RERANKER="e5",
        AGENTIC_RAG_RERANK_WINDOW_TOKENS="0",  # whole passages: long enough a rerank to interrupt
        AGENTIC_RAG_BRAIN="offline",
        AGENTIC_RAG_ANSWER_CACHE="false",
        AGENTIC_RAG_MODEL_CACHE=str(tmp_path / "models"),
        LANG="C.UTF-8",
        PYTHONUNBUFFERED="1",
    )
    child = pexpect.spawn(
        sys.executable,
        [MAIN, "ask", question, "--mode", "hybrid_rerank"],
        cwd=str(tmp_path),
        env=env,
        encoding="utf-8",
        codec_errors="replace",
        timeout=120,
        preexec_fn=default_sigint,
    )
    child.expect_exact("reranking: embedding passage windows")
    child.kill(signal.SIGINT)
    child.expect(pexpect.EOF)
    child.close()
    after = child.before
    assert child.exitstatus == 130, after
    assert "interrupted" in after and "Traceback" not in after
