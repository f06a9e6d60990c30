"""Several serving replicas on shared state: N processes answer at once against one Milvus server and one
PostgreSQL checkpoint store (offline brain), each client on its own conversation thread.

    python bench/replicas.py --clients 4 --questions 50            # starts Milvus Lite + PostgreSQL here
    python bench/replicas.py --milvus-uri http://host:19530 --postgres-url postgresql://... --clients 8

Prints p50/p95 latency per turn, throughput and the error count (must be 0), then checks every thread
in PostgreSQL: all its questions present, in order, each followed by an answer, none from another
client. Each replica builds its graph, store connection and checkpointer once, like a server process.
``replica`` is the per-process entry point (also used by tests/test_replicas.py).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

QUESTIONS = [
    "How does hybrid search combine vector and keyword results?",
    "混合检索是怎么合并结果的？",
    "What happens when a file fails to load during ingest?",
    "默认使用哪个嵌入模型？",
    "How many times does the agent retry retrieval?",
    "如何重建索引？",
    "Which settings control chunk size and overlap?",
    "会话线程保存在哪里？",
    "What does the reranker do?",
    "关键词检索如何处理中文？",
]


def replica(client: int, n_questions: int, thread_prefix: str, shared: bool = False) -> dict:
    """One replica process: answer ``n_questions`` on thread ``{prefix}-{client}`` (or ``{prefix}-shared``,
    the same thread for every replica); each turn holds the thread's lock, as the CLI and server do."""
    from app.wiring import build_context
    from config import load_settings
    from graph.builder import build_graph
    from graph.run import ask
    from memory.checkpointer import open_checkpointer
    from memory.thread_lock import thread_lock

    settings = load_settings()
    context = build_context(settings)
    thread = f"{thread_prefix}-shared" if shared else f"{thread_prefix}-{client}"
    latencies, errors, asked = [], [], []
    with open_checkpointer(sqlite_path=settings.checkpoint_db, postgres_url=settings.postgres_url) as saver:
        app = build_graph(checkpointer=saver)
        for n in range(n_questions):
            question = f"[c{client} q{n}] {QUESTIONS[(client + n) % len(QUESTIONS)]}"
            started = time.perf_counter()
            try:
                with thread_lock(
                    thread, sqlite_path=settings.checkpoint_db, postgres_url=settings.postgres_url
                ):
                    result = ask(app, question, context=context, thread_id=thread)
                if result.error or not result.answer:
                    errors.append(f"{question}: {result.error or 'empty answer'}")
            except Exception as exc:  # a load test counts failures instead of stopping at the first
                errors.append(f"{question}: {type(exc).__name__}: {exc}")
            latencies.append((time.perf_counter() - started) * 1000)
            asked.append(question)
    context.retrievers.index.close()
    return {"client": client, "thread": thread, "asked": asked, "latencies_ms": latencies, "errors": errors}


def thread_problems(postgres_url: str, results: list[dict]) -> list[str]:
    """What is wrong with each client's thread in PostgreSQL: lost, reordered or foreign turns.

    Replicas sharing one thread: every question of every replica once, each replica's in its own order,
    and each question directly followed by its answer (turns never interleave)."""
    from core import chunks, schemas, trace
    from memory.checkpointer import open_checkpointer
    from memory.threads import show_thread

    state_types = [
        chunks.Chunk,
        chunks.ScoredChunk,
        chunks.Filters,
        schemas.QueryAnalysis,
        schemas.ChunkJudgement,
        schemas.RetrievalEvaluation,
        schemas.Passage,
        schemas.Citation,
        schemas.SentenceSupport,
        trace.TraceEvent,
        trace.Decision,
    ]
    problems = []
    with open_checkpointer(
        sqlite_path=Path("unused"), postgres_url=postgres_url, allowed_types=state_types
    ) as saver:
        by_thread: dict[str, list[list[str]]] = {}
        for result in results:
            by_thread.setdefault(result["thread"], []).append(result["asked"])
        for thread, asked in by_thread.items():
            turns = show_thread(saver, thread).turns
            users = [text for role, text in turns if role == "user"]
            own_order = all([u for u in users if u in set(a)] == a for a in asked)
            if sorted(users) != sorted(q for a in asked for q in a) or not own_order:
                problems.append(f"{thread}: questions {len(users)} stored vs {sum(map(len, asked))} asked")
            roles = [role for role, _ in turns]
            if roles != ["user", "assistant"] * len(users):
                problems.append(f"{result['thread']}: turns do not alternate question/answer")
    return problems


def run_replicas(
    clients: int, questions: int, env: dict[str, str], thread_prefix: str, *, shared: bool = False
) -> tuple[list[dict], float]:
    """Start ``clients`` replica processes at once; their results and the wall time."""
    started = time.perf_counter()
    processes = [
        subprocess.Popen(
            [sys.executable, __file__, "replica", str(c), str(questions), thread_prefix, str(int(shared))],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=ROOT,
        )
        for c in range(clients)
    ]
    results = []
    for process in processes:
        out, err = process.communicate(timeout=3600)
        if process.returncode != 0:
            raise RuntimeError(f"replica failed ({process.returncode}):\n{err[-3000:]}")
        results.append(json.loads(out.strip().splitlines()[-1]))
    return results, time.perf_counter() - started


def percentile(values: list[float], q: float) -> float:
    return (
        statistics.quantiles(values, n=100, method="inclusive")[int(q) - 1] if len(values) > 1 else values[0]
    )


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "replica":
        result = replica(int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], shared=sys.argv[5] == "1")
        print(json.dumps(result, ensure_ascii=False))
        return 0
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--questions", type=int, default=50)
    parser.add_argument("--milvus-uri", help="default: start a Milvus Lite gRPC server on 127.0.0.1")
    parser.add_argument("--postgres-url", help="default: start a throwaway PostgreSQL on 127.0.0.1")
    args = parser.parse_args()
    from contextlib import ExitStack

    from config import load_settings
    from ingestion.pipeline import ingest_paths
    from retrievers.factory import embedder_for
    from tests.milvus_server import run_server
    from tests.postgres_server import find_postgres_bin, start_server

    with ExitStack() as stack:
        milvus_uri = args.milvus_uri or stack.enter_context(run_server())
        postgres_url = args.postgres_url
        if not postgres_url:
            server = start_server(find_postgres_bin())
            stack.callback(server.stop)
            postgres_url = server.url
        work = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        env = {
            **os.environ,
            "PYTHONPATH": str(ROOT),
            "AGENTIC_RAG_STORE": "milvus",
            "AGENTIC_RAG_MILVUS_URI": milvus_uri,
            "AGENTIC_RAG_MILVUS_COLLECTION": "replicas_bench",
            "AGENTIC_RAG_POSTGRES_URL": postgres_url,
            "AGENTIC_RAG_RERANKER": "none",
            "AGENTIC_RAG_BRAIN": "offline",
            "AGENTIC_RAG_INDEX_DIR": str(work / "index"),
        }
        os.environ.update(env)
        settings = load_settings()
        ingest_paths(
            [ROOT / "docs" / "guide"], settings, embedder_for(settings), rebuild=True, progress=False
        )
        results, wall = run_replicas(args.clients, args.questions, env, f"bench-{int(time.time())}")
        latencies = [ms for r in results for ms in r["latencies_ms"]]
        errors = [e for r in results for e in r["errors"]]
        problems = thread_problems(postgres_url, results)
        print(
            f"{args.clients} replicas x {args.questions} questions (Milvus {milvus_uri}, PostgreSQL "
            f"checkpoints, offline brain, load {os.getloadavg()[0]:.1f}): "
            f"p50 {percentile(latencies, 50):.0f} ms, p95 {percentile(latencies, 95):.0f} ms, "
            f"{len(latencies) / wall:.1f} turns/s, errors {len(errors)}, thread problems {len(problems)}"
        )
        for line in errors[:5] + problems[:5]:
            print("  " + line)
        return 1 if errors or problems else 0


if __name__ == "__main__":
    sys.exit(main())
