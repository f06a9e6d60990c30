"""A throwaway PostgreSQL server for tests: Debian's initdb + pg_ctl on 127.0.0.1, data in a temp dir.

Use it by importing the fixture into a test module (``from tests.postgres_server import postgres_url``)
or with ``pytest_plugins = ["tests.postgres_server"]`` in a conftest. However many modules ask, one
server runs per test session; it starts in about a second and is stopped when the session ends.
PostgreSQL refuses to run as root, so under root the server runs as the ``postgres`` system user
(created by Debian's package), or ``nobody`` when that user is missing.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

DATABASE = "agentic_rag_test"
START_TIMEOUT_S = 60


@dataclass
class PostgresServer:
    bin_dir: Path
    root: Path
    port: int
    run_as: str | None

    @property
    def data_dir(self) -> Path:
        return self.root / "data"

    @property
    def url(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{DATABASE}"

    def run(self, tool: str, *args: str) -> subprocess.CompletedProcess[str]:
        command = [str(self.bin_dir / tool), *args]
        if self.run_as:
            command = ["runuser", "-u", self.run_as, "--", *command]
        result = subprocess.run(command, capture_output=True, text=True, timeout=START_TIMEOUT_S, check=False)
        if result.returncode != 0:
            raise RuntimeError(
                f"{tool} failed ({result.returncode}): {result.stderr.strip() or result.stdout}"
            )
        return result

    def start(self) -> None:
        self.run(
            "initdb", "-D", str(self.data_dir), "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync"
        )
        options = (
            f"-c listen_addresses=127.0.0.1 -p {self.port} -k {self.root} "
            "-c fsync=off -c synchronous_commit=off -c full_page_writes=off"
        )
        self.run(
            "pg_ctl",
            "-D",
            str(self.data_dir),
            "-l",
            str(self.root / "server.log"),
            "-o",
            options,
            "-w",
            "start",
        )
        self.run("createdb", "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres", DATABASE)

    def stop(self) -> None:
        if (self.data_dir / "postmaster.pid").exists():
            with contextlib.suppress(RuntimeError, subprocess.TimeoutExpired):
                self.run("pg_ctl", "-D", str(self.data_dir), "-m", "immediate", "-w", "stop")
        shutil.rmtree(self.root, ignore_errors=True)


def find_postgres_bin() -> Path | None:
    """The newest Debian PostgreSQL ``bin`` folder that has initdb and pg_ctl."""

    def major(initdb: str) -> int:
        version = Path(initdb).parts[-3].split(".")[0]
        return int(version) if version.isdigit() else -1

    candidates = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=major)
    for initdb in reversed(candidates):
        bin_dir = Path(initdb).parent
        if (bin_dir / "pg_ctl").exists():
            return bin_dir
    found = shutil.which("initdb")
    if found and shutil.which("pg_ctl"):
        return Path(found).parent
    return None


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _server_user() -> str | None:
    """None when we are not root; otherwise an unprivileged user to run the server as."""
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "nobody"):
        try:
            pwd.getpwnam(name)
            return name
        except KeyError:
            continue
    raise RuntimeError("running as root and neither the 'postgres' nor the 'nobody' user exists")


def start_server(bin_dir: Path) -> PostgresServer:
    run_as = _server_user()
    # Not pytest's tmp_path: it lives under a 0700 root-owned folder the server user cannot enter.
    root = Path(tempfile.mkdtemp(prefix="agentic-rag-pg-"))
    if run_as:
        entry = pwd.getpwnam(run_as)
        os.chown(root, entry.pw_uid, entry.pw_gid)
    root.chmod(0o700)
    server = PostgresServer(bin_dir=bin_dir, root=root, port=_free_port(), run_as=run_as)
    try:
        server.start()
    except BaseException:
        log = root / "server.log"
        detail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
        server.stop()
        if detail:
            raise RuntimeError(f"PostgreSQL did not start; server log:\n{detail}") from None
        raise
    return server


_RUNNING: dict[str, PostgresServer] = {}


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """URL of a fresh database on a private server; skips when PostgreSQL is not installed."""
    bin_dir = find_postgres_bin()
    if bin_dir is None:
        pytest.skip("PostgreSQL server binaries not found (run .ci/install-postgres.sh)")
    server = _RUNNING.get("server")
    if server is None:
        server = _RUNNING["server"] = start_server(bin_dir)
    try:
        yield server.url
    finally:
        if _RUNNING.pop("server", None) is not None:
            server.stop()
