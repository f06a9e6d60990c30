"""Milvus for tests: Milvus Lite in process (a .db file), or its gRPC server on 127.0.0.1 for the remote path.

Milvus Lite's gRPC server (what ``python -m milvus_lite server`` runs) serves the same engine over the
Milvus protocol, so ``http://127.0.0.1:PORT`` exercises exactly the client code a Milvus server or cluster
gets, and several processes can share it (Milvus Lite's file mode allows one process per file). One
server runs per test session; tests keep apart by collection name.

Run as a script (``python tests/milvus_server.py DATA_DIR PORT``) it starts that server with the
keepalive policy of a real Milvus server (client pings every 5 s or more allowed, also between calls):
pymilvus pings every 10 s, and the stock Lite server answers with GOAWAY "too many pings" after a few
minutes, which drops every client's connection. Nothing else differs.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

START_TIMEOUT_S = 60


def milvus_available() -> bool:
    return all(importlib.util.find_spec(name) for name in ("milvus_lite", "pymilvus"))


def with_store(settings, store: str, tmp_path: Path, *, uri: str | None = None):
    """The same settings pointed at the local index or at a Milvus collection private to this test."""
    if store == "local":
        return settings.model_copy(update={"store": "local"})
    if not milvus_available():
        pytest.skip("pymilvus/milvus-lite not installed (pip install -e '.[milvus]')")
    return settings.model_copy(
        update={
            "store": "milvus",
            "milvus_uri": uri or str(tmp_path / "milvus.db"),
            "milvus_collection": f"t_{uuid.uuid4().hex[:12]}",
        }
    )


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _serving(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(0.5)
        return sock.connect_ex(("127.0.0.1", port)) == 0


@contextlib.contextmanager
def run_server() -> Iterator[str]:
    """Start a Milvus Lite gRPC server on a free 127.0.0.1 port; yield its URI; stop it."""
    root = Path(tempfile.mkdtemp(prefix="agentic-rag-milvus-"))
    port = _free_port()
    with open(root / "server.log", "wb") as log:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "milvus_lite",
                "server",
                "--data-dir",
                str(root / "data"),
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while not _serving(port):
            if process.poll() is not None or time.monotonic() > deadline:
                detail = (root / "server.log").read_text(errors="replace")[-2000:]
                raise RuntimeError(f"the Milvus Lite server did not start:\n{detail}")
            time.sleep(0.2)
        yield f"http://127.0.0.1:{port}"
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="session")
def milvus_server_uri() -> Iterator[str]:
    """URI of a Milvus Lite gRPC server on 127.0.0.1 (skips when milvus-lite is not installed)."""
    if not milvus_available():
        pytest.skip("pymilvus/milvus-lite not installed (pip install -e '.[milvus]')")
    with run_server() as uri:
        yield uri


def serve(data_dir: str, port: int) -> None:
    """The Milvus Lite gRPC server on 127.0.0.1 with Milvus's own keepalive enforcement."""
    from concurrent import futures

    import grpc
    from milvus_lite.adapter.grpc.servicer import MilvusServicer
    from milvus_lite.db import MilvusLite
    from pymilvus.grpc_gen import milvus_pb2_grpc

    db = MilvusLite(data_dir)
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=16),
        options=[
            ("grpc.max_receive_message_length", 256 * 1024 * 1024),
            ("grpc.max_send_message_length", 256 * 1024 * 1024),
            ("grpc.http2.min_recv_ping_interval_without_data_ms", 5000),
            ("grpc.keepalive_permit_without_calls", 1),
            ("grpc.http2.max_ping_strikes", 0),
        ],
    )
    milvus_pb2_grpc.add_MilvusServiceServicer_to_server(MilvusServicer(db), server)
    server.add_insecure_port(f"127.0.0.1:{port}")
    server.start()
    try:
        server.wait_for_termination()
    finally:
        server.stop(grace=2)
        db.close()


if __name__ == "__main__":
    serve(sys.argv[1], int(sys.argv[2]))
