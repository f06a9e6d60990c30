"""Milvus for tests: Milvus Lite in process (a .db file), or its gRPC server on 127.0.0.1 for the remote path.

``python -m milvus_lite server`` serves the same engine over the Milvus gRPC protocol, so
``http://127.0.0.1:PORT`` exercises exactly the client code a Milvus server or cluster gets, and several
processes can share it (Milvus Lite's file mode allows one process per file). One server runs per test
session; tests keep apart by collection name.
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
