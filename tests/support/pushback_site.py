"""A loopback site that pushes back while it is crawled: 429, 503 windows, a 403 wall.

For the pushback tests and ``benchmarks/bench_pushback.py``. Each origin is a
``ThreadingHTTPServer`` on its own loopback address (``127.0.N.M``), all on one
port when that port is free there (another address is another host, hence
another Scrapy download slot). Every handler runs in its own daemon thread, so
a page's ``latency`` makes requests overlap and ``in_flight`` means something.

Per origin (:class:`OriginSpec`):

- ``robots``: the robots.txt body (allow all by default), served outside
  every rule below (no token, never 429/503/403);
- ``rate`` / ``burst``: a token bucket; a page request finding no token is
  answered ``429`` with ``Retry-After: retry_after`` (not sent when None);
  a refused request takes no token;
- ``unavailable``: ``(start, end)`` seconds after the origin's first page
  request, answering ``503`` (``Retry-After: unavailable_retry_after`` when
  given); checked before the bucket;
- ``wall_after``: after that many pages were served ``200``, every page is
  ``403`` (checked first);
- ``pages`` / ``fanout``: ``/`` links to ``/p/0`` ... ``/p/{fanout-1}``;
  ``/p/i`` links to ``/p/{fanout*(i+1)}`` ... ``/p/{fanout*(i+1)+fanout-1}``
  below ``pages``: a tree, so every page is linked exactly once and the
  frontier grows;
- ``latency``: seconds every page takes before its answer;
- ``capacity``: a server that slows down under load: with ``r`` page
  requests arrived in the last second, a page takes ``latency`` up to
  ``capacity`` per second, rising linearly to ``slow_latency`` at three
  times it, and beyond that it is answered ``503`` (no ``Retry-After``).

The server-side log (:class:`Entry`, :meth:`PushbackSite.log`) holds every
request, in arrival order, with its time, origin, path, the status sent, the
``User-Agent``, the ``Via`` a proxy added, and how many requests of that origin
were in flight when it arrived (itself included). Times are
``time.monotonic()`` (one clock for every process on the machine).

Only the standard library is used, so benchmark processes can import it.
"""

from __future__ import annotations

import collections
import contextlib
import email.utils
import socket
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, cast

from tests.support.fakesite import ServedOrigin, Sites

__all__ = ["Entry", "OriginSpec", "PushbackOrigin", "PushbackSite", "page_paths"]

ROBOTS_PATH = "/robots.txt"
ALLOW_ALL = b"User-agent: *\nAllow: /\n"


def page_paths(pages: int) -> list[str]:
    """Every page path of an origin with ``pages`` pages: ``/`` and ``/p/0`` .. ``/p/{pages-1}``."""
    return ["/", *(f"/p/{i}" for i in range(pages))]


@dataclass
class OriginSpec:
    """How one origin behaves; see the module docstring. Change fields any time (under
    :meth:`PushbackOrigin.configure`) to switch behaviour mid-crawl."""

    robots: bytes = ALLOW_ALL
    robots_status: int = 200
    rate: float | None = None
    burst: float = 1.0
    retry_after: str | int | None = 1
    unavailable: tuple[float, float] | None = None
    unavailable_retry_after: str | int | None = None
    wall_after: int | None = None
    pages: int = 20
    fanout: int = 3
    latency: float = 0.0
    capacity: float | None = None
    slow_latency: float = 0.6


@dataclass(frozen=True)
class Entry:
    """One request as the server saw it, logged when its answer was chosen."""

    at: float
    origin: str
    path: str
    status: int
    user_agent: str
    in_flight: int
    via: str = ""
    headers: dict[str, str] = field(default_factory=dict, compare=False, repr=False)
    #: seconds the answer was held back (its latency as the site chose it)
    delay: float = 0.0


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128
    origin: PushbackOrigin

    def handle_error(self, request: Any, client_address: Any) -> None:
        self.origin.errors += 1
        self.origin.last_error = sys.exc_info()[1]


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "pushbacksite/1"

    def log_message(self, format: str, *args: Any) -> None:
        """No access log on stderr."""

    def setup(self) -> None:
        super().setup()
        with contextlib.suppress(OSError):
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        cast(_Server, self.server).origin._register(self.connection)

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            cast(_Server, self.server).origin._unregister(self.connection)

    def do_GET(self) -> None:
        self._serve(True)

    def do_HEAD(self) -> None:
        self._serve(False)

    def _serve(self, with_body: bool) -> None:
        origin = cast(_Server, self.server).origin
        length = self.headers.get("Content-Length")
        if length and length.isdigit():
            self.rfile.read(int(length))
        status, headers, body, delay = origin._answer(self.path, dict(self.headers.items()))
        try:
            if delay > 0 and origin._stop.wait(delay):
                self.close_connection = True
                return
            try:
                reason = HTTPStatus(status).phrase
            except ValueError:
                reason = ""
            lines = [f"HTTP/1.1 {status} {reason}".rstrip(), f"Server: {self.server_version}"]
            lines.append(f"Date: {email.utils.formatdate(usegmt=True)}")
            lines += [f"{k}: {v}" for k, v in headers.items()]
            lines.append(f"Content-Length: {len(body)}")
            head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
            self.wfile.write(head + body if with_body else head)
        finally:
            origin._done()


class PushbackOrigin(ServedOrigin):
    """One origin of a :class:`PushbackSite`: its spec, its bucket, its part of the log."""

    def __init__(self, site: PushbackSite, name: str, host: str, port: int, spec: OriginSpec):
        self.site = site
        self.name = name
        self.spec = spec
        self._stop = site._stop
        self._lock = threading.Condition()
        self._tokens = spec.burst
        self._refilled = time.monotonic()
        self._first_page: float | None = None
        self._served_ok = 0
        self._arrivals: collections.deque[float] = collections.deque()
        self._in_flight = 0
        self._live: dict[socket.socket, threading.Thread] = {}
        self.errors = 0
        self.last_error: BaseException | None = None
        try:
            self._server = _Server((host, port), _Handler)
        except OSError:
            if port == 0:
                raise
            self._server = _Server((host, 0), _Handler)
        self._server.origin = self
        self._server.timeout = 0.05
        self.host = host
        self.port: int = self._server.server_address[1]
        self.url = f"http://{host}:{self.port}"
        self._thread = threading.Thread(
            target=self._serve_loop, name=f"pushback-{name}", daemon=True
        )

    def __repr__(self) -> str:
        return f"<PushbackOrigin {self.name} {self.url}>"

    def url_for(self, path: str) -> str:
        return self.url + path

    @property
    def robots_url(self) -> str:
        return self.url + ROBOTS_PATH

    def page_urls(self) -> list[str]:
        """Every page URL of this origin (what a complete crawl fetches)."""
        return [self.url + p for p in page_paths(self.spec.pages)]

    def configure(self, **changes: Any) -> None:
        """Change spec fields now (e.g. ``wall_after=0``); the bucket keeps its tokens."""
        with self._lock:
            for key, value in changes.items():
                if not hasattr(self.spec, key):
                    raise AttributeError(key)
                setattr(self.spec, key, value)

    def log(self) -> list[Entry]:
        return [e for e in self.site.log() if e.origin == self.name]

    # -- serving --------------------------------------------------------------------------------

    def _answer(
        self, path: str, headers: dict[str, str]
    ) -> tuple[int, dict[str, str], bytes, float]:
        """Choose the reply and log the request (one lock: the log's order is the truth)."""
        spec = self.spec
        bare = path.split("?", 1)[0]
        reply: dict[str, str] = {}
        with self.site._lock, self._lock:
            now = time.monotonic()
            self._in_flight += 1
            delay = 0.0
            if bare == ROBOTS_PATH:
                status, body = spec.robots_status, spec.robots
                reply["Content-Type"] = "text/plain"
            else:
                status, body, delay = self._page(bare, now, reply)
            self.site._log.append(
                Entry(
                    at=now,
                    origin=self.name,
                    path=path,
                    status=status,
                    user_agent=_header(headers, "User-Agent"),
                    in_flight=self._in_flight,
                    via=_header(headers, "Via"),
                    headers=headers,
                    delay=delay,
                )
            )
        return status, reply, body, delay

    def _page(self, bare: str, now: float, reply: dict[str, str]) -> tuple[int, bytes, float]:
        spec = self.spec
        if self._first_page is None:
            self._first_page = now
        if spec.wall_after is not None and self._served_ok >= spec.wall_after:
            return 403, b"<html>forbidden</html>", spec.latency
        if spec.unavailable is not None:
            start, end = spec.unavailable
            if start <= now - self._first_page < end:
                if spec.unavailable_retry_after is not None:
                    reply["Retry-After"] = str(spec.unavailable_retry_after)
                return 503, b"<html>maintenance</html>", spec.latency
        latency = spec.latency
        if spec.capacity is not None:
            arrivals = self._arrivals
            arrivals.append(now)
            while arrivals[0] <= now - 1.0:
                arrivals.popleft()
            load = (len(arrivals) - spec.capacity) / (2 * spec.capacity)
            if load > 1.0:
                return 503, b"<html>overloaded</html>", latency
            latency += (spec.slow_latency - latency) * max(load, 0.0)
        if spec.rate is not None:
            self._tokens = min(spec.burst, self._tokens + (now - self._refilled) * spec.rate)
            self._refilled = now
            if self._tokens < 1.0:
                if spec.retry_after is not None:
                    reply["Retry-After"] = str(spec.retry_after)
                return 429, b"<html>too many requests</html>", 0.0
            self._tokens -= 1.0
        links = self._links(bare)
        if links is None:
            return 404, b"<html>not found</html>", spec.latency
        self._served_ok += 1
        reply["Content-Type"] = "text/html; charset=utf-8"
        anchors = "".join(f'<a href="{href}">{href}</a>\n' for href in links)
        body = f"<html><body><h1>{self.name} {bare}</h1>\n{anchors}</body></html>"
        return 200, body.encode(), latency

    def _links(self, bare: str) -> list[str] | None:
        pages, fanout = self.spec.pages, self.spec.fanout
        if bare == "/":
            first = 0
        elif bare.startswith("/p/") and bare[3:].isdigit() and int(bare[3:]) < pages:
            first = fanout * (int(bare[3:]) + 1)
        else:
            return None
        return [f"/p/{i}" for i in range(first, min(first + fanout, pages))]

    def _done(self) -> None:
        with self._lock:
            self._in_flight -= 1


def _header(headers: dict[str, str], name: str) -> str:
    low = name.lower()
    return next((v for k, v in headers.items() if k.lower() == low), "")


class PushbackSite(Sites[PushbackOrigin]):
    """Origins on 127.0.N.M sharing one port where they can; use as a context manager."""

    def __init__(self, first_host: int = 2) -> None:
        super().__init__()
        self._log: list[Entry] = []
        self._next = first_host
        self.port = 0

    def add(self, name: str, spec: OriginSpec | None = None, **fields: Any) -> PushbackOrigin:
        """A new origin on the next loopback address; ``fields`` build its :class:`OriginSpec`."""
        if spec is not None and fields:
            raise TypeError("give a spec or its fields, not both")
        with self._lock:
            if self._stopped:
                raise RuntimeError("PushbackSite already stopped")
            if name in self._origins:
                raise ValueError(f"origin {name!r} already exists")
            n = self._next
            self._next += 1
        host = f"127.0.{n // 250}.{1 + n % 250}" if n >= 250 else f"127.0.0.{n}"
        origin = PushbackOrigin(self, name, host, self.port, spec or OriginSpec(**fields))
        with self._lock:
            self._origins[name] = origin
            if self.port == 0:
                self.port = origin.port
        origin._thread.start()
        return origin

    def __getitem__(self, name: str) -> PushbackOrigin:
        return self._origins[name]

    def __iter__(self) -> Iterator[PushbackOrigin]:
        return iter(list(self._origins.values()))

    def log(self) -> list[Entry]:
        """Every request on every origin so far, in arrival order (a copy)."""
        with self._lock:
            return list(self._log)

    def clear_log(self) -> None:
        with self._lock:
            self._log.clear()


# -- reading the log --------------------------------------------------------------------------


def pages(entries: list[Entry]) -> list[Entry]:
    """The page requests (robots.txt left out)."""
    return [e for e in entries if e.path.split("?", 1)[0] != ROBOTS_PATH]


def retry_after_seconds(value: str | int | None) -> float | None:
    """A delta-seconds ``Retry-After`` as sent by this site (dates: None)."""
    if value is None:
        return None
    text = str(value).strip()
    return float(text) if text.isdigit() else None


def pause_ends(entries: list[Entry], spec: OriginSpec) -> list[float]:
    """When the pauses this origin asked for ended, as the server sees them.

    Each 429 (503) with a delta-seconds Retry-After asks for a pause until
    ``at + seconds``; overlapping asks merge into one episode; its end is the
    last of them.
    """
    asks: list[tuple[float, float]] = []
    for e in pages(entries):
        seconds = None
        if e.status == 429:
            seconds = retry_after_seconds(spec.retry_after)
        elif e.status == 503:
            seconds = retry_after_seconds(spec.unavailable_retry_after)
        if seconds is not None:
            asks.append((e.at, e.at + seconds))
    ends: list[float] = []
    for start, end in sorted(asks):
        if ends and start <= ends[-1]:
            ends[-1] = max(ends[-1], end)
        else:
            ends.append(end)
    return ends


def max_in_flight_after(entries: list[Entry], start: float, window: float = 1.0) -> int:
    """The most requests in flight at once among those arriving in ``[start, start+window)``."""
    return max(
        (e.in_flight for e in pages(entries) if start <= e.at < start + window),
        default=0,
    )
