"""A tiny forwarding HTTP proxy on loopback that records what passed through it.

Plain HTTP only (absolute-URI ``GET``; no ``CONNECT``): enough to see which
requests a crawler sends through a proxy, with which ``Proxy-Authorization``.
It adds ``Via: 1.1 testproxy`` (or the ``via`` it is given) to what it
forwards, so the origin can tell proxied requests from direct ones, and one
proxy from another.
"""

from __future__ import annotations

import http.client
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from urllib.parse import urlsplit

VIA = "1.1 testproxy"
#: headers that are the proxy's, not the origin's (RFC 9110 §7.6.1)
_HOP = frozenset({"proxy-authorization", "proxy-connection", "connection", "keep-alive"})


@dataclass(frozen=True)
class Passed:
    """One request the proxy forwarded."""

    url: str
    proxy_authorization: str | None


class RecordingProxy:
    """``with RecordingProxy() as proxy``: ``proxy.url``; ``proxy.passed``: what went through."""

    def __init__(self, via: str = VIA) -> None:
        self.via = via
        self.passed: list[Passed] = []
        self._lock = threading.Lock()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:
                auth = self.headers.get("Proxy-Authorization")
                with owner._lock:
                    owner.passed.append(Passed(self.path, auth))
                target = urlsplit(self.path)
                headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP}
                headers["Via"] = owner.via
                path = target.path + (f"?{target.query}" if target.query else "")
                upstream = http.client.HTTPConnection(target.netloc, timeout=10)
                try:
                    upstream.request("GET", path or "/", headers=headers)
                    answer = upstream.getresponse()
                    body = answer.read()
                except OSError:
                    self.send_error(502)
                    return
                finally:
                    upstream.close()
                self.send_response(answer.status)
                for key, value in answer.getheaders():
                    if key.lower() not in ("transfer-encoding", "connection", "content-length"):
                        self.send_header(key, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def urls(self) -> list[str]:
        with self._lock:
            return [p.url for p in self.passed]

    def __enter__(self) -> RecordingProxy:
        self._thread.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=2)
