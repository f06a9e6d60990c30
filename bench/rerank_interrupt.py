"""How long Ctrl-C takes to stop `python main.py ask` while the e5 reranker embeds, in a real terminal.

Not a test (tests/test_rerank_interrupt.py checks the clean exit): builds a small index of SciFact
abstracts (one file each, real ingest), then ``--runs`` times starts ``ask`` in a pseudo-terminal with
defaults and a fresh reranker cache, sends SIGINT once the rerank progress line shows a first batch
done (so the signal lands while a native e5 call runs), and times the wait until the "interrupted"
line and until the process has exited.

    python bench/rerank_interrupt.py --runs 10
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path

import pexpect

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from config import load_settings  # noqa: E402
from ingestion.pipeline import ingest_paths  # noqa: E402
from retrievers.factory import embedder_for  # noqa: E402


def default_sigint() -> None:
    """A shell's background job inherits SIGINT ignored, and Python then never installs its Ctrl-C
    handler; give the child the terminal default back, as an interactive shell would."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


QUESTIONS = [
    "Does vitamin D supplementation reduce the risk of fractures?",
    "What is the effect of statins on cardiovascular mortality?",
    "How does insulin resistance relate to obesity?",
    "Which genes are associated with breast cancer risk?",
    "Does exercise improve memory in older adults?",
]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--runs", type=int, default=10)
    p.add_argument("--docs", type=int, default=300, help="SciFact abstracts to index")
    p.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "agentic_rag_bench_interrupt")
    args = p.parse_args(argv)
    docs, index = args.work / "docs", args.work / "index"
    if not index.exists():
        docs.mkdir(parents=True, exist_ok=True)
        corpus = Path("/work/shared/data/scifact_train/corpus.jsonl")
        for line in corpus.read_text(encoding="utf-8").splitlines()[: args.docs]:
            doc = json.loads(line)
            (docs / f"{doc['id']}.md").write_text(f"# {doc['title']}\n\n{doc['text']}\n", encoding="utf-8")
        settings = load_settings(index_dir=index)
        ingest_paths([docs], settings, embedder_for(settings), index_dir=index, progress=False)
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTIC_RAG_")}
    env.update(
        AGENTIC_RAG_INDEX_DIR=str(index), AGENTIC_RAG_BRAIN="offline", AGENTIC_RAG_ANSWER_CACHE="false"
    )
    print(f"load average at start: {os.getloadavg()}", file=sys.stderr)
    to_line, to_exit, codes, missed = [], [], [], []
    for run in range(args.runs):
        shutil.rmtree(index / "cache", ignore_errors=True)
        question = QUESTIONS[run % len(QUESTIONS)]
        child = pexpect.spawn(
            sys.executable,
            [str(ROOT / "main.py"), "ask", question],
            cwd=str(args.work),
            env=env,
            encoding="utf-8",
            codec_errors="replace",
            timeout=300,
            preexec_fn=default_sigint,
        )
        child.expect(r"reranking: embedding passage windows [1-9]\d*/")  # one batch done, the next running
        sent = time.perf_counter()
        child.kill(signal.SIGINT)
        if child.expect_exact(["interrupted", pexpect.EOF]) == 1:
            missed.append(child.before[-2000:])
            print(f"run {run + 1}: not interrupted:\n{missed[-1]}", file=sys.stderr)
            continue
        to_line.append(time.perf_counter() - sent)
        child.expect(pexpect.EOF)
        to_exit.append(time.perf_counter() - sent)
        child.close()
        codes.append(child.exitstatus)
        print(
            f"run {run + 1}: {to_line[-1]:.2f} s to the message, {to_exit[-1]:.2f} s to exit", file=sys.stderr
        )
    print(f"load average at end: {os.getloadavg()}", file=sys.stderr)
    print(
        f"{args.runs} runs, {len(missed)} not interrupted, exit codes {sorted(set(codes))}: SIGINT -> 'interrupted' median "
        f"{statistics.median(to_line):.2f} s, max {max(to_line):.2f} s; -> process exit median "
        f"{statistics.median(to_exit):.2f} s, max {max(to_exit):.2f} s"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
