"""A real ``redis-server`` on a loopback port.

``redis_server``: one server for the whole session, emptied (``FLUSHALL``)
before each test, so a test sees a fresh, empty Redis without paying for a
process start. ``redis_process``: a server of the test's own, for the tests
that stop and restart it.

No persistence (``--save '' --appendonly no``), bound to 127.0.0.1 only. A
missing ``redis-server`` fails the test with the install line rather than
skipping it: a skipped test would hide the whole shared-store feature.
"""

from __future__ import annotations

import contextlib
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

START_TIMEOUT = 10.0
STOP_TIMEOUT = 5.0
INSTALL_HINT = "apt-get install -y redis-server (CI's .ci/run installs it)"


def free_port() -> int:
    """A port nobody listens on right now (redis-server cannot take port 0)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def ping(port: int, timeout: float = 0.5) -> bool:
    """True if a Redis server answers PING on ``port``."""
    return _command(port, b"PING", b"+PONG", timeout)


def _command(port: int, command: bytes, answer: bytes, timeout: float) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
            s.sendall(command + b"\r\n")
            return s.recv(64).startswith(answer)
    except OSError:
        return False


class RedisServer:
    """One redis-server process; ``stop()`` and ``start()`` again keep the port (a restart)."""

    def __init__(self, workdir: Path, port: int | None = None) -> None:
        exe = shutil.which("redis-server")
        if exe is None:
            pytest.fail(f"redis-server is not installed: {INSTALL_HINT}", pytrace=False)
        self.exe = exe
        self.workdir = workdir
        self.port = port or free_port()
        self.process: subprocess.Popen[bytes] | None = None
        self.starts = 0

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> RedisServer:
        """Start and wait (bounded) until PING answers; a lost port race picks another port.

        A restart keeps its port (that is the point of it) and has one attempt.
        """
        restart = self.starts > 0
        for _attempt in range(1 if restart else 3):
            self.starts += 1
            log = open(self.workdir / f"redis-{self.port}-{self.starts}.log", "wb")  # noqa: SIM115
            options = {
                "port": str(self.port),
                "bind": "127.0.0.1",
                "save": "",
                "appendonly": "no",
                "dir": str(self.workdir),
                "daemonize": "no",
            }
            args = [a for name, value in options.items() for a in (f"--{name}", value)]
            self.process = subprocess.Popen(
                [self.exe, *args],
                stdout=log,
                stderr=subprocess.STDOUT,
            )
            log.close()
            deadline = time.monotonic() + START_TIMEOUT
            while time.monotonic() < deadline and self.process.poll() is None:
                if ping(self.port):
                    return self
                time.sleep(0.02)
            self.stop()
            if not restart:
                self.port = free_port()
        pytest.fail(f"redis-server did not answer PING on 127.0.0.1 (see {self.workdir})")

    def stop(self) -> None:
        """Terminate (then kill, bounded) the server; connected clients see it go away."""
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        process.terminate()
        try:
            process.wait(STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            process.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(STOP_TIMEOUT)

    def restart(self) -> None:
        self.stop()
        self.start()

    def emptied(self) -> RedisServer:
        """Running (started again if it died) and empty: every key of every database gone."""
        if self.process is None or self.process.poll() is not None:
            self.start()
        if not _command(self.port, b"FLUSHALL", b"+OK", START_TIMEOUT):
            pytest.fail(f"redis-server on 127.0.0.1:{self.port} did not answer FLUSHALL")
        return self


@pytest.fixture(scope="session")
def _session_redis(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    """One redis-server for the session (started on first use)."""
    server = RedisServer(tmp_path_factory.mktemp("redis")).start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def redis_process(tmp_path: Path) -> Iterator[RedisServer]:
    """A running :class:`RedisServer` that a test may stop and restart."""
    workdir = tmp_path / "redis"
    workdir.mkdir()
    server = RedisServer(workdir).start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def redis_server(_session_redis: RedisServer) -> str:
    """The URL of an empty redis-server on 127.0.0.1 (the session's, flushed for this test)."""
    return _session_redis.emptied().url
