"""Bounded load test of `python main.py serve`: N concurrent clients each ask Q questions over HTTP.

    python bench/serve_load.py [--clients 8] [--questions 25] [--mode agentic] [--reranker lexical]

Ingests the bundled guide (docs/guide) into a temporary index, starts the real server on a free
127.0.0.1 port with the offline brain, and has every client post to /v1/ask (half of them through
the OpenAI-compatible /v1/chat/completions) one question after another. Prints latency p50/p95/max,
throughput and the error count (which must be 0), plus the machine load, since timings on a shared
machine mean little without it.
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
QUESTIONS = [
    "How does hybrid search merge vector and keyword results?",
    "What is the default RRF constant k?",
    "When does the index switch to HNSW?",
    "Which file types can be ingested?",
    "How do I rebuild the index?",
    "What does the reranker do?",
    "How are follow-up questions handled?",
    "What happens when retrieval is insufficient?",
    "How do I use PostgreSQL for checkpoints?",
    "What is the default chunk size?",
    "混合检索如何合并结果？",
    "什么时候切换到 HNSW 索引？",
    "如何重建索引？",
    "重排序器的作用是什么？",
    "默认的分块大小是多少？",
    "如何配置 OpenAI 兼容的接口？",
    "检索不到答案时会怎样？",
    "关键词检索使用什么算法？",
    "How can I see the agent's trace?",
    "What does AGENTIC_RAG_TOP_K control?",
    "How are Chinese documents tokenised?",
    "What is the self_query mode?",
    "如何查看对话线程？",
    "向量检索用的是什么索引？",
    "Why is my answer marked as insufficient?",
]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def start_server(tmp: Path, reranker: str) -> tuple[subprocess.Popen, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTIC_RAG_")}
    env.update(
        PYTHONPATH=str(ROOT),
        AGENTIC_RAG_INDEX_DIR=str(tmp / "index"),
        AGENTIC_RAG_CHECKPOINT_DB=str(tmp / "checkpoints.sqlite"),
        AGENTIC_RAG_RERANKER=reranker,
        AGENTIC_RAG_BRAIN="offline",
    )
    main = str(ROOT / "main.py")
    subprocess.run(
        [sys.executable, main, "ingest", str(ROOT / "docs" / "guide"), "--json"],
        env=env,
        check=True,
        stdout=subprocess.DEVNULL,
    )
    port = free_port()
    proc = subprocess.Popen([sys.executable, main, "serve", "--port", str(port)], env=env, cwd=tmp)
    url = f"http://127.0.0.1:{port}"
    for _ in range(600):
        try:
            if httpx.get(url + "/readyz", timeout=1).status_code == 200:
                return proc, url
        except httpx.HTTPError:
            time.sleep(0.2)
    proc.terminate()
    raise SystemExit("the server did not become ready")


def client(url: str, number: int, questions: int, mode: str, out: list, errors: list) -> None:
    with httpx.Client(base_url=url, timeout=120) as http:
        for i in range(questions):
            question = QUESTIONS[(number * 7 + i) % len(QUESTIONS)]
            started = time.perf_counter()
            try:
                if (number + i) % 2:
                    body = {
                        "model": f"agentic-rag-{mode}",
                        "messages": [{"role": "user", "content": question}],
                    }
                    response = http.post("/v1/chat/completions", json=body)
                    ok = response.status_code == 200 and response.json()["choices"][0]["message"]["content"]
                else:
                    response = http.post("/v1/ask", json={"question": question, "mode": mode})
                    ok = response.status_code == 200 and response.json()["answer"]
            except httpx.HTTPError as exc:
                errors.append(f"{question}: {exc}")
                continue
            if not ok:
                errors.append(f"{question}: HTTP {response.status_code} {response.text[:200]}")
                continue
            out.append(time.perf_counter() - started)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=8, help="concurrent clients")
    parser.add_argument("--questions", type=int, default=25, help="questions per client")
    parser.add_argument("--mode", default="agentic", help="retrieval mode asked for")
    parser.add_argument("--reranker", default="lexical", help="reranker the server uses")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        proc, url = start_server(Path(tmp), args.reranker)
        try:
            latencies: list[float] = []
            errors: list[str] = []
            load_before = os.getloadavg()[0]
            started = time.perf_counter()
            threads = [
                threading.Thread(target=client, args=(url, n, args.questions, args.mode, latencies, errors))
                for n in range(args.clients)
            ]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            wall = time.perf_counter() - started
            load_after = os.getloadavg()[0]
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    total = args.clients * args.questions
    print(
        f"{args.clients} clients x {args.questions} questions = {total} requests, mode {args.mode}, "
        f"reranker {args.reranker}, offline brain"
    )
    if latencies:
        print(
            f"latency p50 {percentile(latencies, 0.5) * 1000:.0f} ms, p95 {percentile(latencies, 0.95) * 1000:.0f} ms, "
            f"max {max(latencies) * 1000:.0f} ms, mean {statistics.mean(latencies) * 1000:.0f} ms"
        )
    print(f"throughput {len(latencies) / wall:.1f} answers/s over {wall:.1f} s wall")
    print(f"errors {len(errors)}")
    for error in errors[:10]:
        print("  " + error)
    print(
        f"machine: {os.cpu_count()} cores, 1-min load average {load_before:.2f} before, {load_after:.2f} after"
    )
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
