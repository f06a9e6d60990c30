"""Embed the agent in your own application: your documents, your checkpointer, your thread ids.

    python examples/embed_app.py            # offline; uses an LLM if OPENAI_API_KEY/OPENAI_BASE_URL is set

What it shows:
1. index documents your app already holds in memory (no files): ``index_chunks`` with ``Chunk``s;
2. compile the graph with a checkpointer the app owns (a SQLite file here; InMemorySaver or
   PostgresSaver work the same), so each of the app's thread ids is one remembered conversation;
3. ask with ``graph.run.ask`` and use the typed ``AskResult``: answer, numbered citations, trace.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # run from a checkout without installing the package

from langgraph.checkpoint.sqlite import SqliteSaver  # noqa: E402

from app.wiring import build_context  # noqa: E402
from config import load_settings  # noqa: E402
from core.chunks import Chunk  # noqa: E402
from graph.builder import build_graph  # noqa: E402
from graph.run import AskResult, ask  # noqa: E402
from ingestion.indexing import index_chunks  # noqa: E402
from retrievers.factory import embedder_for  # noqa: E402

# The app's own knowledge base: (id, source, title, text). Chinese and English side by side.
DOCUMENTS = [
    (
        "refund-policy",
        "kb/policies/refunds.md",
        "Refund policy",
        "Customers can request a full refund within 30 days of purchase. Refunds are paid back to the "
        "original payment method within 5 business days.",
    ),
    (
        "refund-digital",
        "kb/policies/refunds.md",
        "Refund policy > Digital downloads",
        "Digital downloads can be refunded only if the file has not been downloaded yet.",
    ),
    (
        "leave-zh",
        "kb/hr/年假制度.md",
        "年假制度",
        "正式员工每年享有 15 天带薪年假，未休完的年假最多可以顺延 5 天到下一年。",
    ),
    (
        "vpn-en",
        "kb/it/vpn.md",
        "VPN access",
        "Remote staff connect to the office network through the VPN client; passwords expire every 90 days.",
    ),
]

CONVERSATIONS = [
    ("customer-42", "How long do customers have to request a refund?"),
    ("customer-42", "Does that also apply to digital downloads?"),  # a follow-up: needs the thread's history
    ("employee-7", "员工每年有多少天带薪年假？"),
]


def to_chunks() -> list[Chunk]:
    return [
        Chunk(id=cid, text=text, source=source, title=title, heading_path=title.split(" > "), chunk_index=n)
        for n, (cid, source, title, text) in enumerate(DOCUMENTS)
    ]


def show(thread_id: str, result: AskResult) -> None:
    print(f"[{thread_id}] Q: {result.question}")
    if result.standalone_question and result.standalone_question != result.question:
        print(f"[{thread_id}]    (read as: {result.standalone_question})")
    print(f"[{thread_id}] A: {result.answer}")
    for cite in result.citations:
        print(f"[{thread_id}]    [{cite.number}] {cite.source} ({cite.chunk_id})")
    print(f"[{thread_id}]    steps: {' > '.join(e.node for e in result.trace)}\n")


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="embed-app-") as tmp:
        # Settings come from AGENTIC_RAG_* like everywhere else; the app only chooses where data lives.
        settings = load_settings(index_dir=Path(tmp) / "index")
        index_chunks(
            to_chunks(), settings, embedder_for(settings), index_dir=settings.index_dir, progress=False
        )
        context = build_context(settings)  # index, embedder, reranker and brain (LLM or offline)

        with SqliteSaver.from_conn_string(str(Path(tmp) / "conversations.sqlite")) as checkpointer:
            graph = build_graph(checkpointer=checkpointer)
            for thread_id, question in CONVERSATIONS:
                show(thread_id, ask(graph, question, context=context, thread_id=thread_id))

            # Each thread id is its own conversation, kept by the app's checkpointer.
            for thread_id in dict.fromkeys(t for t, _ in CONVERSATIONS):
                messages = graph.get_state({"configurable": {"thread_id": thread_id}}).values["messages"]
                print(f"thread {thread_id}: {len(messages)} messages")
        context.retrievers.index.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
