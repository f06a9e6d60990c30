"""MCP round-trip latency of `search` and `ask` on the bundled guide (docs/guide), over both transports.

The official SDK client calls the tools of a real `python main.py mcp` subprocess (stdio) and of a real
`python main.py serve` (streamable HTTP at /mcp); each figure is client-side wall time per call, from
the request to the parsed result. The server starts once per transport (its start-up is reported on
its own); the answer cache is off so every `ask` runs the graph; questions are distinct, half English,
half Chinese.

    .venv/bin/python bench/mcp_latency.py [--repeat 2] [--reranker e5]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import httpx2
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

ROOT = Path(__file__).resolve().parent.parent
MAIN = str(ROOT / "main.py")
QUESTIONS = [
    "How does hybrid search merge vector and keyword results?",
    "Why does the agent loop always end?",
    "What happens when a file cannot be decoded?",
    "Does it work without internet?",
    "混合检索是怎么合并结果的？",
    "为什么循环一定会结束？",
    "增量导入时哪些文件会被重新处理？",
    "对话记忆是怎么工作的？",
]
QUERIES = ["reciprocal rank fusion", "BM25 keyword search", "HNSW 图索引", "编码 无法导入的文件"]


def env_for(index_dir: Path, tmp: Path, reranker: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTIC_RAG_")}
    env.update(
        PYTHONPATH=str(ROOT),
        AGENTIC_RAG_INDEX_DIR=str(index_dir),
        AGENTIC_RAG_CHECKPOINT_DB=str(tmp / "checkpoints.sqlite"),
        AGENTIC_RAG_RERANKER=reranker,
        AGENTIC_RAG_BRAIN="offline",
        AGENTIC_RAG_ANSWER_CACHE="false",
    )
    return env


async def timed_calls(client: Client, repeat: int) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {"search": [], "ask": []}
    for _ in range(repeat):
        for tool, key, items in (("search", "query", QUERIES), ("ask", "question", QUESTIONS)):
            for item in items:
                started = time.perf_counter()
                result = await client.call_tool(tool, {key: item})
                times[tool].append((time.perf_counter() - started) * 1000)
                if result.is_error:
                    raise RuntimeError(f"{tool}({item!r}) failed: {result.content}")
    return times


async def over_stdio(env: dict[str, str], repeat: int) -> tuple[float, dict[str, list[float]]]:
    started = time.perf_counter()
    params = StdioServerParameters(command=sys.executable, args=[MAIN, "mcp"], env=env)
    async with Client(params, read_timeout_seconds=600) as client:
        await client.list_tools()
        ready = time.perf_counter() - started
        return ready, await timed_calls(client, repeat)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


async def over_http(env: dict[str, str], repeat: int, tmp: Path) -> tuple[float, dict[str, list[float]]]:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    started = time.perf_counter()
    log = (tmp / "serve.log").open("w")
    proc = subprocess.Popen(
        [sys.executable, MAIN, "serve", "--port", str(port)], env=env, stdout=log, stderr=log
    )
    try:
        while True:
            if proc.poll() is not None:
                raise RuntimeError((tmp / "serve.log").read_text())
            try:
                if httpx.get(url + "/healthz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                await asyncio.sleep(0.2)
        transport = streamable_http_client(url + "/mcp", http_client=httpx2.AsyncClient(timeout=600))
        async with Client(transport, read_timeout_seconds=600) as client:
            await client.list_tools()
            ready = time.perf_counter() - started
            return ready, await timed_calls(client, repeat)
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def summary(values: list[float]) -> str:
    """The first call on its own (lazy model work), then the warm calls after it."""
    warm = sorted(values[1:])
    p95 = warm[min(len(warm) - 1, round(0.95 * (len(warm) - 1)))]
    return (
        f"first {values[0]:6.0f} ms | warm n={len(warm):2d}  p50 {statistics.median(warm):6.0f} ms  "
        f"p95 {p95:6.0f} ms  max {warm[-1]:6.0f} ms  mean {statistics.fmean(warm):6.0f} ms"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=2, help="rounds over the questions and queries")
    parser.add_argument("--reranker", default="e5", help="the server's reranker (default: e5, as shipped)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder)
        index_dir = tmp / "index"
        env = env_for(index_dir, tmp, args.reranker)
        subprocess.run(
            [sys.executable, MAIN, "ingest", str(ROOT / "docs/guide"), "--json"],
            env=env,
            check=True,
            capture_output=True,
        )
        print(f"bundled guide (docs/guide), reranker {args.reranker}, offline brain, answer cache off")
        for name, run in (
            ("stdio", over_stdio(env, args.repeat)),
            ("http", over_http(env, args.repeat, tmp)),
        ):
            ready, times = asyncio.run(run)
            print(f"{name:5s} server ready (start + models + first list_tools): {ready:.1f} s")
            for tool, values in times.items():
                print(f"{name:5s} {tool:6s} {summary(values)}")


if __name__ == "__main__":
    main()
