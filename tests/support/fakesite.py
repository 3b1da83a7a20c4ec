"""A programmable multi-origin HTTP server for tests and benchmarks.

Each origin is its own ``ThreadingHTTPServer`` on ``127.0.0.1`` with a free port, so distinct
origins look distinct to a crawler (robots.txt rules are per scheme+host+port). Servers run in
background threads so that Scrapy can keep the reactor in the main thread, and every handler
runs in its own daemon thread so a sleeping or hanging reply never blocks other requests.

Only the standard library is used, so the module can be imported from anywhere (tests,
scripts, benchmark processes) without installing anything.
"""

from __future__ import annotations

import contextlib
import email.utils
import gzip
import html
import io
import socket
import struct
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Generic, TypeVar, cast

__all__ = ["FakeSite", "Hit", "Origin", "Reply"]

ROBOTS_PATH = "/robots.txt"
STREAM_PATTERN = b"Disallow: /x\n"
HANG_LIMIT = 60.0  # a hanging reply gives up after this long even if nobody calls stop()
JOIN_TIMEOUT = 2.0  # stop() never waits longer than this for threads, in total
_STREAM_CHUNK = 64 * 1024
_ZERO_CHUNK = bytes(1 << 20)


@dataclass
class Reply:
    """One programmed response for robots.txt (or any path).

    Modes are checked in this order: ``delay`` (always first), ``hang``, ``redirect_to``,
    ``gzip_bomb``, ``reset``, ``stream_bytes``, then a plain reply. ``headers`` are sent as
    given and win over defaults; a header with an empty value suppresses the default one
    (useful for ``{"Content-Type": ""}``). A ``Content-Length`` given here replaces the real one,
    which lets tests lie about the body size.
    """

    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    redirect_to: str | None = None
    reset: bool = False
    hang: bool = False
    stream_bytes: int = 0
    gzip_bomb: int = 0
    #: header lines sent after ``headers``, repeats allowed (several ``X-Robots-Tag``)
    extra_headers: list[tuple[str, str]] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.gzip_bomb > 0:
            # built now, before the crawl: built in the server thread when asked for (0.4 s
            # for 64 MiB, seconds on a loaded machine) it outlasted a short REP_FETCH_TIMEOUT
            gzip_zeros(self.gzip_bomb)


@dataclass(frozen=True)
class Hit:
    """One received request, recorded before the reply is chosen, so hangs and resets count."""

    origin: str
    method: str
    path: str
    headers: dict[str, str]
    at: float


_gzip_cache: dict[int, bytes] = {}
_gzip_lock = threading.Lock()


def gzip_zeros(size: int) -> bytes:
    """Gzip of ``size`` zero bytes, built in 1 MiB steps and cached: bombs are reused a lot."""
    with _gzip_lock:
        cached = _gzip_cache.get(size)
        if cached is None:
            buf = io.BytesIO()
            with gzip.GzipFile(fileobj=buf, mode="wb", compresslevel=9, mtime=0) as gz:
                left = size
                while left > 0:
                    step = min(left, len(_ZERO_CHUNK))
                    gz.write(memoryview(_ZERO_CHUNK)[:step])
                    left -= step
            cached = _gzip_cache[size] = buf.getvalue()
        return cached


class _Program:
    """Successive replies for one path: each fetch takes the next one, the last one repeats."""

    def __init__(self, replies: tuple[Reply, ...]) -> None:
        self.replies = replies
        self.served = 0

    def next(self) -> Reply:
        reply = self.replies[min(self.served, len(self.replies) - 1)]
        self.served += 1
        return reply


class _OriginServer(ThreadingHTTPServer):
    """Threaded server that knows its origin and never prints tracebacks to stderr."""

    daemon_threads = True
    request_queue_size = 128  # benchmarks open many connections at once
    origin: Origin

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Keep test output clean (clients hanging up is expected), but keep the error."""
        self.origin._note_error(sys.exc_info()[1])


class _Handler(BaseHTTPRequestHandler):
    """Serves whatever the origin has programmed for the requested path."""

    protocol_version = "HTTP/1.1"  # keep-alive, as Scrapy uses it
    server_version = "fakesite/1"

    @property
    def _origin(self) -> Origin:
        return cast(_OriginServer, self.server).origin

    def log_message(self, format: str, *args: Any) -> None:
        """Silence the per-request access log."""

    def setup(self) -> None:
        super().setup()
        with contextlib.suppress(OSError):  # small replies must not wait for delayed ACKs
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._origin._register(self.connection)

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            self._origin._unregister(self.connection)

    def do_GET(self) -> None:
        self._serve(with_body=True)

    def do_HEAD(self) -> None:
        self._serve(with_body=False)

    # -- dispatch -------------------------------------------------------------------------------

    def _serve(self, *, with_body: bool) -> None:
        origin = self._origin
        self._drain_request_body()
        reply = origin._record_and_pick(self.command, self.path, dict(self.headers.items()))
        stop = origin._stop
        if reply is None:
            self._default(with_body)
            return
        if reply.delay > 0 and stop.wait(reply.delay):
            self.close_connection = True  # stopping: abandon the reply
            return
        if reply.hang:
            self.close_connection = True
            stop.wait(HANG_LIMIT)
            return
        if reply.redirect_to is not None:
            status = 301 if reply.status == 200 else reply.status
            headers = {"Location": reply.redirect_to, **reply.headers}
            self._send(status, headers, reply.body, with_body)
        elif reply.gzip_bomb > 0:
            headers = {"Content-Encoding": "gzip", **reply.headers}
            self._send(reply.status, headers, gzip_zeros(reply.gzip_bomb), with_body)
        elif reply.reset:
            self._reset(reply, with_body)
        elif reply.stream_bytes > 0:
            self._stream(reply, with_body)
        else:
            self._send(reply.status, reply.headers, reply.body, with_body, reply.extra_headers)

    def _drain_request_body(self) -> None:
        """Read and drop a request body so the next keep-alive request parses correctly."""
        length = self.headers.get("Content-Length")
        if length and length.isdigit():
            self.rfile.read(int(length))

    def _default_type(self) -> str:
        if self.path.split("?", 1)[0] == ROBOTS_PATH:
            return "text/plain"
        return "text/html; charset=utf-8"

    def _default(self, with_body: bool) -> None:
        if self.path.split("?", 1)[0] == ROBOTS_PATH:
            self._send(404, {}, b"", with_body)
            return
        links = "".join(
            f'\n<a href="{html.escape(u)}">{html.escape(u)}</a>'
            for u in self._origin._links_for(self.path)
        )
        page = f"<html><body>{html.escape(self.path)}{links}</body></html>"
        self._send(200, {}, page.encode(), with_body)

    # -- writers --------------------------------------------------------------------------------

    def _head(
        self,
        status: int,
        headers: dict[str, str],
        length: int | None,
        close: bool,
        extra: list[tuple[str, str]] | None = None,
    ) -> bytes:
        """Status line and headers as bytes, so they go out in the same send as the body.

        One send per reply avoids Nagle/delayed-ACK stalls of ~40 ms on keep-alive connections.
        """
        try:
            reason = HTTPStatus(status).phrase
        except ValueError:
            reason = ""
        lines = [f"{self.protocol_version} {status} {reason}".rstrip()]
        lines.append(f"Server: {self.version_string()}")
        lines.append(f"Date: {email.utils.formatdate(usegmt=True)}")
        given = {k.lower(): v for k, v in headers.items()}
        if "content-type" not in given:
            lines.append(f"Content-Type: {self._default_type()}")
        lines.extend(f"{k}: {v}" for k, v in headers.items() if v != "")
        lines.extend(f"{k}: {v}" for k, v in extra or ())
        no_body_status = status in (204, 304) or 100 <= status < 200
        if length is not None and "content-length" not in given and not no_body_status:
            lines.append(f"Content-Length: {length}")
        if close:
            lines.append("Connection: close")
        if close or given.get("connection", "").lower() == "close":
            self.close_connection = True
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")

    def _send(
        self,
        status: int,
        headers: dict[str, str],
        body: bytes,
        with_body: bool,
        extra: list[tuple[str, str]] | None = None,
    ) -> None:
        head = self._head(status, headers, len(body), close=False, extra=extra)
        self.wfile.write(head + body if with_body else head)

    def _reset(self, reply: Reply, with_body: bool) -> None:
        """Promise a full body, send half of it, then close with RST (SO_LINGER 0)."""
        payload = reply.body or STREAM_PATTERN * 64
        head = self._head(reply.status, reply.headers, len(payload), close=True)
        part = payload[: max(1, len(payload) // 2)] if with_body else b""
        conn = self.connection
        with contextlib.suppress(OSError):
            self.wfile.write(head + part)
            conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        # rfile holds a reference to the socket; the fd only closes (sending RST) once both go.
        self.rfile.close()
        conn.close()

    def _stream(self, reply: Reply, with_body: bool) -> None:
        """Send ``stream_bytes`` of body, chunked, until done, stopped or the client leaves."""
        headers = {"Transfer-Encoding": "chunked", **reply.headers}
        head = self._head(reply.status, headers, None, close=True)
        if not with_body:
            self.wfile.write(head)
            return
        pattern = reply.body or STREAM_PATTERN
        # A whole number of patterns per chunk keeps the pattern intact across chunk borders.
        chunk = pattern * max(1, _STREAM_CHUNK // len(pattern))
        left = reply.stream_bytes
        stop = self._origin._stop
        try:
            self.wfile.write(head)
            while left > 0 and not stop.is_set():
                piece = chunk[: min(left, len(chunk))]
                self.wfile.write(b"%x\r\n%b\r\n" % (len(piece), piece))
                left -= len(piece)
            if left == 0:
                self.wfile.write(b"0\r\n\r\n")
        except OSError:
            pass  # the client went away: that is what early stopping looks like


class ServedOrigin:
    """One origin's server thread and its live connections, stopped within a deadline.

    Shared by this site's :class:`Origin` and ``pushback_site.PushbackOrigin``:
    subclasses set ``_stop``, ``_lock`` (a Condition: handlers may wait on it),
    ``_live``, ``_server`` and ``_thread`` (target :meth:`_serve_loop`).
    """

    _stop: threading.Event
    _lock: threading.Condition
    _live: dict[socket.socket, threading.Thread]
    _server: ThreadingHTTPServer
    _thread: threading.Thread

    def _register(self, conn: socket.socket) -> None:
        with self._lock:
            self._live[conn] = threading.current_thread()
            stopping = self._stop.is_set()
        if stopping:  # stop() may have taken its snapshot already; do its job here
            _shut(conn)

    def _unregister(self, conn: socket.socket) -> None:
        with self._lock:
            self._live.pop(conn, None)

    def _serve_loop(self) -> None:
        # Own loop instead of serve_forever(): stopping never depends on shutdown() handshakes.
        while not self._stop.is_set():
            try:
                self._server.handle_request()
            except (OSError, ValueError):  # ValueError: selecting on a socket closed under us
                if self._stop.is_set():
                    break

    def _close(self, deadline: float) -> None:
        """Second half of stop(): the stop event is already set."""
        if self._thread.ident is not None:  # add() may have lost a race with stop()
            self._thread.join(max(0.0, deadline - time.monotonic()))
        self._server.server_close()
        with self._lock:
            live = list(self._live.items())
            self._lock.notify_all()
        for conn, _ in live:
            _shut(conn)
        for _, thread in live:
            if thread is not threading.current_thread():
                thread.join(max(0.0, deadline - time.monotonic()))


OriginT = TypeVar("OriginT", bound=ServedOrigin)
SitesT = TypeVar("SitesT", bound="Sites[Any]")


class Sites(Generic[OriginT]):
    """Named origins sharing one stop switch; stopped once, within a deadline; a context
    manager. Shared by :class:`FakeSite` and ``pushback_site.PushbackSite``."""

    def __init__(self) -> None:
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._origins: dict[str, OriginT] = {}
        self._stopped = False

    def start(self: SitesT) -> SitesT:
        """Origins serve from ``add()`` on; this only checks the site is still usable."""
        if self._stopped:
            raise RuntimeError(f"{type(self).__name__} cannot be restarted after stop()")
        return self

    def stop(self) -> None:
        """Release sleeping/hanging handlers, close every socket, join threads (bounded)."""
        with self._lock:
            if self._stopped:
                return
            self._stopped = True
            origins = list(self._origins.values())
        self._stop.set()
        deadline = time.monotonic() + JOIN_TIMEOUT
        for origin in origins:
            origin._close(deadline)

    def __enter__(self: SitesT) -> SitesT:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


class Origin(ServedOrigin):
    """One fake origin (its own port). Program it with ``robots()``, ``page()``, ``links()``."""

    def __init__(
        self,
        name: str,
        stop: threading.Event,
        site_lock: threading.Lock,
        site_log: list[tuple[str, str]],
        host: str = "127.0.0.1",
    ) -> None:
        self.name = name
        self._stop = stop
        self._site_lock = site_lock
        self._site_log = site_log
        self._lock = threading.Condition()
        self._programs: dict[str, _Program] = {}
        self._links: dict[str, list[str]] = {}
        self._hits: list[Hit] = []
        self._live: dict[socket.socket, threading.Thread] = {}
        self.errors = 0  # exceptions that escaped a handler; see last_error
        self.last_error: BaseException | None = None
        self._server = _OriginServer((host, 0), _Handler)
        self._server.origin = self
        self._server.timeout = 0.05
        self.host: str = host
        self.port: int = self._server.server_address[1]
        self.url: str = f"http://{self.host}:{self.port}"
        self._thread = threading.Thread(
            target=self._serve_loop, name=f"fakesite-{name}", daemon=True
        )

    def __repr__(self) -> str:
        return f"<Origin {self.name} {self.url}>"

    # -- programming ----------------------------------------------------------------------------

    def robots(self, *replies: Reply) -> Origin:
        """Program /robots.txt; no replies restores the default 404."""
        return self.page(ROBOTS_PATH, *replies)

    def page(self, path: str, *replies: Reply) -> Origin:
        """Program ``path`` (exact target incl. query wins over the bare path); resets the order."""
        with self._lock:
            if replies:
                self._programs[path] = _Program(replies)
            else:
                self._programs.pop(path, None)
        return self

    def links(self, path: str, urls: list[str]) -> Origin:
        """Make the default page at ``path`` link to ``urls`` (hrefs kept exactly as given)."""
        with self._lock:
            self._links[path] = list(urls)
        return self

    def url_for(self, path: str) -> str:
        """Absolute URL of ``path`` on this origin."""
        return self.url + path

    @property
    def robots_url(self) -> str:
        return self.url + ROBOTS_PATH

    # -- observation ----------------------------------------------------------------------------

    def hits(self, path: str | None = None) -> int:
        """Requests received, for ``path`` (exact, incl. query) or all of them."""
        with self._lock:
            return sum(1 for h in self._hits if path is None or h.path == path)

    def hit_paths(self) -> list[str]:
        """Every request target (with query) in arrival order."""
        with self._lock:
            return [h.path for h in self._hits]

    def requests(self, path: str | None = None) -> list[Hit]:
        """Full records (method, headers, time) for assertions on e.g. the User-Agent."""
        with self._lock:
            return [h for h in self._hits if path is None or h.path == path]

    def wait_for_hits(self, count: int, path: str | None = None, timeout: float = 5.0) -> bool:
        """Block until ``count`` matching requests arrived; False on timeout or stop."""
        deadline = time.monotonic() + timeout
        with self._lock:
            while True:
                got = sum(1 for h in self._hits if path is None or h.path == path)
                left = deadline - time.monotonic()
                if got >= count:
                    return True
                if left <= 0 or self._stop.is_set():
                    return False
                self._lock.wait(min(left, 0.05))

    def clear_hits(self) -> None:
        """Forget this origin's hits (programs and their positions are kept)."""
        with self._lock:
            self._hits.clear()

    def active_connections(self) -> int:
        """Connections currently open, to check that clients and streams let go."""
        with self._lock:
            return len(self._live)

    # -- internals used by the handler and FakeSite ---------------------------------------------

    def _record_and_pick(self, method: str, path: str, headers: dict[str, str]) -> Reply | None:
        hit = Hit(self.name, method, path, headers, time.monotonic())
        with self._site_lock:  # one lock for the cross-origin log keeps its order true
            self._site_log.append((self.name, path))
            with self._lock:
                self._hits.append(hit)
                self._lock.notify_all()
                program = self._programs.get(path) or self._programs.get(path.split("?", 1)[0])
                return program.next() if program else None

    def _links_for(self, path: str) -> list[str]:
        with self._lock:
            found = self._links.get(path)
            if found is None:
                found = self._links.get(path.split("?", 1)[0], [])
            return list(found)

    def _note_error(self, error: BaseException | None) -> None:
        with self._lock:
            self.errors += 1
            self.last_error = error

    def _start(self) -> None:
        self._thread.start()


def _shut(conn: socket.socket) -> None:
    """Wake a thread blocked reading or writing ``conn`` by shutting the socket down."""
    with contextlib.suppress(OSError):
        conn.shutdown(socket.SHUT_RDWR)


class FakeSite(Sites[Origin]):
    """A set of named origins sharing one stop switch; use as a context manager."""

    def __init__(self) -> None:
        super().__init__()
        self._log: list[tuple[str, str]] = []

    def add(self, name: str, host: str = "127.0.0.1") -> Origin:
        """Bind a new origin to a free port on ``host`` and start serving it at once.

        Another loopback address (``127.0.0.2``...) is another host, hence another
        Scrapy download slot.
        """
        with self._lock:
            if self._stopped:
                raise RuntimeError("FakeSite already stopped")
            if name in self._origins:
                raise ValueError(f"origin {name!r} already exists")
            origin = self._origins[name] = Origin(name, self._stop, self._lock, self._log, host)
        origin._start()
        return origin

    def __getitem__(self, name: str) -> Origin:
        return self._origins[name]

    def __contains__(self, name: object) -> bool:
        return name in self._origins

    def __iter__(self) -> Iterator[Origin]:
        return iter(list(self._origins.values()))

    def hits_log(self) -> list[tuple[str, str]]:
        """(origin name, path) of every request on every origin, in arrival order."""
        with self._lock:
            return list(self._log)
