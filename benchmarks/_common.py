"""Helpers shared by the crawl benchmarks (``bench_crawl.py``, ``bench_scale.py``).

- :class:`HttpConn`: the lean keep-alive HTTP/1.1 server protocol (asyncio)
  a benchmark's server subclasses with its own ``_serve(target)``;
- :func:`serve_commands`: the server process's command loop (JSON lines on
  stdin, answers on stdout), and :class:`ServerProcess`, its driver;
- :func:`run_crawler`: one Scrapy crawl in the current (fresh) process, with
  CPU and peak RSS; :func:`run_child`: a benchmark script's child mode in a
  fresh process, given JSON on stdin and answering one JSON line;
- the three robots.txt variants every crawl is run with.
"""

from __future__ import annotations

import asyncio
import json
import logging
import resource
import statistics
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # benchmark this checkout's scrapy_rep, in children too
    sys.path.insert(1, str(ROOT))
TOKEN = "benchbot"
USER_AGENT = f"{TOKEN}/1.0 (+http://127.0.0.1/)"

#: the three ways every crawl is run; a benchmark adds its own settings
VARIANTS: dict[str, dict[str, Any]] = {
    "a": {"ROBOTSTXT_OBEY": False},
    "b": {"ROBOTSTXT_OBEY": True},
    "c": {"ROBOTSTXT_OBEY": False, "ADDONS": {"scrapy_rep.Addon": 100}},
}
LABELS = {
    "a": "(a) ROBOTSTXT_OBEY=False",
    "b": "(b) built-in RobotsTxtMiddleware",
    "c": "(c) scrapy-rep",
}


def say(line: str = "") -> None:
    print(line, flush=True)


def med(runs: Iterable[Any], get: Callable[[Any], float]) -> float:
    return float(statistics.median(get(r) for r in runs))


# --------------------------------------------------------------------------- server side


class HttpConn(asyncio.Protocol):
    """One keep-alive connection; requests are answered in order (no pipelining needed).

    Subclasses answer in ``_serve(target)`` with ``_send``; one that answers
    later sets ``busy`` and calls ``_next()`` once it has.
    """

    def __init__(self) -> None:
        self.buf = b""
        self.busy = False
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.buf += data
        self._next()

    def _next(self) -> None:
        while not self.busy and self.transport is not None and not self.transport.is_closing():
            end = self.buf.find(b"\r\n\r\n")
            if end < 0:
                return
            head, self.buf = self.buf[:end], self.buf[end + 4 :]
            parts = head.split(b"\r\n", 1)[0].split(b" ")
            target = parts[1].decode("latin-1") if len(parts) > 1 else "/"
            self._serve(target)

    def _serve(self, target: str) -> None:
        raise NotImplementedError

    def _send(self, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
        if self.transport is None or self.transport.is_closing():
            return
        lines = [f"HTTP/1.1 {status} X", f"Content-Length: {len(body)}"]
        lines += [f"{k}: {v}" for k, v in (headers or {"Content-Type": "text/html"}).items()]
        self.transport.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body)


async def serve_commands(
    hello: dict[str, Any], handle: Callable[[dict[str, Any]], dict[str, Any] | None]
) -> None:
    """Print ``hello``, then answer JSON commands from stdin until EOF or ``handle`` says None."""
    loop = asyncio.get_running_loop()
    commands: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()

    def read_stdin() -> None:
        for line in sys.stdin:
            loop.call_soon_threadsafe(commands.put_nowait, json.loads(line))
        loop.call_soon_threadsafe(commands.put_nowait, None)

    threading.Thread(target=read_stdin, daemon=True).start()
    print(json.dumps(hello), flush=True)
    while (command := await commands.get()) is not None:
        answer = handle(command)
        if answer is None:
            break
        print(json.dumps(answer), flush=True)


class ServerProcess:
    """A server subprocess (``python script *args``) driven over its stdin/stdout."""

    def __init__(self, script: str, *args: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, script, *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        self.hello = self._read()

    def _read(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError("the server process died")
        result: dict[str, Any] = json.loads(line)
        return result

    def ask(self, **command: Any) -> dict[str, Any]:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(command) + "\n")
        self.proc.stdin.flush()
        return self._read()

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)


# --------------------------------------------------------------------------- crawler side


def run_child(
    script: str, mode: str, config: dict[str, Any], *, timeout: float = 600
) -> dict[str, Any]:
    """``python script mode`` in a fresh process, ``config`` as JSON on stdin; its last JSON line.

    Config goes on stdin, not argv: a broad crawl's seeds pass the 128 KiB
    limit of one argument.
    """
    done = subprocess.run(
        [sys.executable, script, mode],
        input=json.dumps(config),
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=ROOT,
        check=False,
    )
    lines = [ln for ln in done.stdout.splitlines() if ln.startswith("{")]
    if done.returncode or not lines:
        raise RuntimeError(f"{mode} failed (exit {done.returncode}):\n{done.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(lines[-1])
    return result


def read_child_config() -> dict[str, Any]:
    config: dict[str, Any] = json.loads(sys.stdin.read())
    return config


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def run_crawler(
    spider_cls: type,
    settings: dict[str, Any],
    errors: Counter[str],
    keep: tuple[str, ...] = ("rep/", "robotstxt/", "downloader/request_count", "dupefilter/"),
) -> dict[str, Any]:
    """One crawl in this process: wall and CPU time (getrusage) from open to close, peak RSS.

    ``errors`` is the spider's own errback counter, reported with the rest.
    """
    from scrapy import signals
    from scrapy.crawler import CrawlerProcess

    error_logs: Counter[str] = Counter()
    marks: dict[str, tuple[float, float]] = {}

    class Counting(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if record.levelno >= logging.ERROR:
                error_logs[f"{record.name}: {record.getMessage()[:100]}"] += 1

    def mark(name: str) -> Callable[..., None]:
        def handler(**_: Any) -> None:
            marks[name] = (time.monotonic(), _cpu())

        return handler

    process = CrawlerProcess(settings)
    logging.getLogger().addHandler(Counting())
    crawler = process.create_crawler(spider_cls)
    opened, closed = mark("opened"), mark("closed")  # signals hold weak references
    crawler.signals.connect(opened, signal=signals.spider_opened)
    crawler.signals.connect(closed, signal=signals.spider_closed)
    process.crawl(crawler)
    process.start()
    assert crawler.stats is not None
    stats = crawler.stats.get_stats()
    return {
        "elapsed": marks["closed"][0] - marks["opened"][0],
        "cpu": marks["closed"][1] - marks["opened"][1],
        "maxrss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
        "errors": dict(errors),
        "error_logs": dict(error_logs),
        "stats": {k: v for k, v in stats.items() if k.startswith((*keep, "finish_reason"))},
    }
