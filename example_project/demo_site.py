"""A small web of demo origins on 127.0.0.1, each showing one robots.txt behaviour.

Run it on its own (standard library only)::

    python example_project/demo_site.py --ports-file ports.json [--hits-file hits.json]

It writes the origins' URLs to the ports file, serves until SIGTERM/SIGINT,
and then writes every request it saw to the hits file. While it runs,
``GET <hub>/__stats`` returns the same hit log as JSON.

Every origin is a port of its own (robots.txt is per scheme, host and
port). Pages link to each other across origins. The site also polices its
visitors the way a server-side robots enforcer does: each readable
robots.txt disallows ``/trap/``, pages link there, and a client that
follows such a link is recorded and refused (403) for a while. Each hit is
also checked against the site's own list of what a compliant crawler must
not fetch (written by hand, independent of any robots.txt parser), and
page requests made while the origin's robots.txt could not be read are
flagged: RFC 9309 gives no consent then.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

TRAP = "/trap/"
BAN_SECONDS = 20.0  # how long a client that hit the trap gets 403s
SLOW_SECONDS = 3.0  # the slow robots.txt takes this long
FLAKY_SECONDS = 2.5  # the flaky origin answers 503 for this long after its first robots.txt hit
RETRY_AFTER = 2  # seconds the rate-limited origin asks for
CRAWL_DELAY = 1
BIG_BYTES = 700 * 1024


@dataclass
class Reply:
    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0


@dataclass
class Origin:
    """One demo origin: what it shows, how its robots.txt answers, what its pages link to."""

    name: str
    what: str
    robots: Callable[[Origin, float], Reply]
    #: path -> links, as "name:/path" (another origin) or "/path" (this one)
    pages: dict[str, list[str]]
    #: product token (or "*") -> regexes over the request target a compliant crawler avoids
    forbidden: dict[str, list[str]] = field(default_factory=dict)
    #: extra paths that are part of a robots.txt fetch (redirect chains)
    robots_paths: tuple[str, ...] = ()
    #: robots.txt that fails (401/403/429/5xx) until it first answers 2xx
    failing: bool = False
    #: path -> what the page says to crawlers: a ``<meta>`` for its head, response headers
    says: dict[str, tuple[str, dict[str, str]]] = field(default_factory=dict)
    port: int = 0
    # live state, guarded by the site lock
    robots_ok: bool = False  # a readable robots.txt has been served
    first_robots_at: float | None = None
    not_before: float = 0.0  # Retry-After deadline

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


def static(status: int, text: str = "", **headers: str) -> Callable[[Origin, float], Reply]:
    return lambda origin, now: Reply(status, text.encode(), dict(headers))


def rules(*lines: str) -> str:
    return "\n".join(lines) + "\n"


HUB_ROBOTS = rules(
    "# hub: the ordinary case, with wildcards",
    "User-agent: *",
    "Disallow: /private/",
    "Allow: /private/open/",
    "Disallow: /*.pdf$",
    "Disallow: /search?q=",
    f"Disallow: {TRAP}",
    "Disallow: /__stats",
)
MERGED_ROBOTS = rules(
    "# merged: two groups name demobot; RFC 9309 merges them",
    "User-agent: demobot",
    "Disallow: /members/",
    "",
    "User-agent: *",
    "Disallow: /",
    "",
    "User-agent: demobot",
    "Allow: /members/welcome",
    f"Disallow: {TRAP}",
)
AFTER_RECOVERY = rules("User-agent: *", f"Disallow: {TRAP}", "Disallow: /private/")
DELAY_ROBOTS = rules("User-agent: *", f"Crawl-delay: {CRAWL_DELAY}", f"Disallow: {TRAP}")


def big_robots() -> bytes:
    head = rules(
        "# big: 700 KiB; crawlers must read at least the first 500 KiB",
        *AFTER_RECOVERY.splitlines(),
    )
    filler = "".join(f"Disallow: /filler/{i:06d}/\n" for i in range(BIG_BYTES // 24))
    return (head + filler).encode()[:BIG_BYTES]


def rate_limited(origin: Origin, now: float) -> Reply:
    """429 with Retry-After until that time has passed; asking early earns another 429."""
    if origin.first_robots_at is None or now < origin.not_before:
        if origin.first_robots_at is None:
            origin.not_before = now + RETRY_AFTER
        return Reply(429, b"slow down\n", {"Retry-After": str(RETRY_AFTER)})
    return Reply(200, AFTER_RECOVERY.encode())


def flaky(origin: Origin, now: float) -> Reply:
    started = origin.first_robots_at if origin.first_robots_at is not None else now
    if now - started < FLAKY_SECONDS:
        return Reply(503, b"<html>maintenance</html>", {"Content-Type": "text/html"})
    return Reply(200, AFTER_RECOVERY.encode())


def slow(origin: Origin, now: float) -> Reply:
    return Reply(200, AFTER_RECOVERY.encode(), delay=SLOW_SECONDS)


def moved(origin: Origin, now: float) -> Reply:
    return Reply(301, headers={"Location": "/robots-old.txt"})


_BIG: list[bytes] = []


def big(origin: Origin, now: float) -> Reply:
    if not _BIG:
        _BIG.append(big_robots())
    return Reply(200, _BIG[0])


def build_origins() -> list[Origin]:
    """The demo web. Order matters only for the summary."""
    everyone = ["hub:/"]
    return [
        Origin(
            "hub",
            "rules: Allow/Disallow, * and $",
            static(200, HUB_ROBOTS),
            {
                "/news": ["/news/story"],
                "/": [
                    "/about",
                    "/news",
                    "/report",
                    "/private/secret",
                    "/private/open/readme",
                    "/docs/manual.pdf",
                    "/docs/manual.pdf?download=1",
                    "/search?q=robots",
                    "/search",
                    "/trap/do-not-follow",
                    "merged:/",
                    "merged:/members/welcome",
                    "merged:/members/list",
                    "notfound:/",
                    "forbidden:/",
                    "forbidden:/a",
                    "ratelimited:/",
                    "flaky:/",
                    "moved:/",
                    "big:/",
                    "slow:/",
                    "slow:/a",
                    "slow:/private/x",
                    "slow:/trap/x",
                    "slow:/b",
                    "delay:/",
                ],
            },
            # /news/story: linked only from a page that says nofollow (not a robots.txt rule)
            {
                "*": [
                    r"^/private/(?!open/)",
                    r"\.pdf$",
                    r"^/search\?q=",
                    f"^{TRAP}",
                    r"^/__stats",
                    r"^/news/story",
                ]
            },
            robots_paths=("/shared/moved-robots.txt",),
            says={
                "/news": ('<meta name="robots" content="nofollow">', {}),
                "/report": ("", {"X-Robots-Tag": "demobot: noindex"}),
            },
        ),
        Origin(
            "merged",
            "two groups for demobot, merged",
            static(200, MERGED_ROBOTS),
            {"/": ["/members/welcome", "/members/list", "/trap/x", "/public", *everyone]},
            {"demobot": [r"^/members/(?!welcome)", f"^{TRAP}"], "*": [r"^/"]},
        ),
        Origin(
            "notfound",
            "robots.txt 404: all allowed",
            static(404, "not here"),
            {"/": ["/a", "/private/ok", *everyone]},
        ),
        Origin(
            "forbidden",
            "robots.txt 403, always",
            static(403, "<html>forbidden</html>", **{"Content-Type": "text/html"}),
            {"/": ["/a", "/b", *everyone]},
            failing=True,
        ),
        Origin(
            "ratelimited",
            f"429, Retry-After: {RETRY_AFTER}",
            rate_limited,
            {"/": ["/a", "/trap/x", *everyone]},
            {"*": [f"^{TRAP}", r"^/private/"]},
            failing=True,
        ),
        Origin(
            "flaky",
            f"503 for {FLAKY_SECONDS:g} s, then 200",
            flaky,
            {"/": ["/a", "/trap/x", *everyone]},
            {"*": [f"^{TRAP}", r"^/private/"]},
            failing=True,
        ),
        Origin(
            "moved",
            "301 -> 302 -> robots.txt on hub",
            moved,
            {"/": ["/new", "/private/old", "/trap/x", *everyone]},
            {"*": [f"^{TRAP}", r"^/private/"]},
            robots_paths=("/robots-old.txt",),
        ),
        Origin(
            "big",
            "700 KiB robots.txt",
            big,
            {"/": ["/public", "/private/x", "/trap/x", *everyone]},
            {"*": [f"^{TRAP}", r"^/private/"]},
        ),
        Origin(
            "slow",
            f"robots.txt takes {SLOW_SECONDS:g} s",
            slow,
            {"/": ["/c", *everyone]},
            {"*": [f"^{TRAP}", r"^/private/"]},
        ),
        Origin(
            "delay",
            f"Crawl-delay: {CRAWL_DELAY}",
            static(200, DELAY_ROBOTS),
            {"/": ["/p1", "/p2", "/p3", "/trap/x", *everyone]},
            {"*": [f"^{TRAP}"]},
        ),
    ]


_TOKEN = re.compile(r"[a-zA-Z_-]+")


class DemoSite:
    """All origins, their servers, the hit log and the trap's ban list."""

    def __init__(self) -> None:
        self.origins = build_origins()
        self.by_name = {o.name: o for o in self.origins}
        self.lock = threading.Lock()
        self.hits: list[dict[str, Any]] = []
        self.banned_until: dict[str, float] = {}  # product token -> time
        self.stop = threading.Event()
        self.servers: list[ThreadingHTTPServer] = []

    def start(self) -> None:
        for origin in self.origins:
            server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self, origin))
            server.daemon_threads = True
            origin.port = server.server_address[1]
            self.servers.append(server)
        for server in self.servers:
            threading.Thread(target=server.serve_forever, args=(0.1,), daemon=True).start()

    def shutdown(self) -> None:
        self.stop.set()
        closers = [threading.Thread(target=server.shutdown) for server in self.servers]
        for closer in closers:  # in parallel: each waits up to one poll interval
            closer.start()
        for closer in closers:
            closer.join(5)
        for server in self.servers:
            server.server_close()

    def describe(self) -> dict[str, Any]:
        return {
            "origins": {o.name: {"url": o.url, "what": o.what} for o in self.origins},
            "stats": self.by_name["hub"].url + "/__stats",
            "pid": os.getpid(),
        }

    def link(self, origin: Origin, ref: str) -> str:
        name, _, path = ref.partition(":") if ":" in ref else (origin.name, "", ref)
        return self.by_name[name].url + path

    # -- one request ----------------------------------------------------------------------

    def answer(self, origin: Origin, target: str, ua: str) -> tuple[Reply, dict[str, Any]]:
        """The reply for ``target`` and the hit record, decided under the site lock."""
        now = time.time()
        path = target.split("?", 1)[0]
        found = _TOKEN.match(ua)
        token = found.group(0).lower() if found else "unknown"
        hit: dict[str, Any] = {"origin": origin.name, "target": target, "ua": ua, "t": now}
        with self.lock:
            if target == "/__stats" and origin.name == "hub":
                hit["kind"] = "stats"
                return Reply(
                    200,
                    json.dumps({**self.describe(), "hits": self.hits}).encode(),
                    {"Content-Type": "application/json"},
                ), hit
            if path == "/robots.txt" or path in origin.robots_paths:
                hit["kind"] = "robots"
                if path == "/robots.txt":
                    hit["early"] = now < origin.not_before  # before Retry-After ran out
                    reply = origin.robots(origin, now)
                    if origin.first_robots_at is None:
                        origin.first_robots_at = now
                elif path == "/robots-old.txt":
                    reply = Reply(
                        302, headers={"Location": self.link(origin, "hub:/shared/moved-robots.txt")}
                    )
                else:
                    reply = Reply(200, AFTER_RECOVERY.encode())
                if 200 <= reply.status < 300 or reply.status == 404:
                    origin.robots_ok = True
                hit["status"] = reply.status
                self.hits.append(hit)
                return reply, hit
            patterns = origin.forbidden.get(token, origin.forbidden.get("*", []))
            hit["kind"] = "trap" if path.startswith(TRAP) and patterns else "page"
            hit["forbidden"] = any(re.search(p, target) for p in patterns)
            hit["while_failing"] = origin.failing and not origin.robots_ok
            banned = self.banned_until.get(token, 0.0) > now
            if hit["kind"] == "trap":
                self.banned_until[token] = now + BAN_SECONDS
                reply = Reply(403, b"<html>caught in the trap; come back later</html>")
            elif banned:
                reply = Reply(403, b"<html>you followed a disallowed link; banned</html>")
            else:
                head, headers = origin.says.get(path, ("", {}))
                reply = Reply(200, self.page(origin, path, head), dict(headers))
            hit["banned"] = banned
            hit["status"] = reply.status
            self.hits.append(hit)
            return reply, hit

    def page(self, origin: Origin, path: str, head: str = "") -> bytes:
        links = origin.pages.get(path, [])
        items = "".join(f'<li><a href="{self.link(origin, ref)}">{ref}</a></li>' for ref in links)
        title = f"{origin.name}{path} ({origin.what})"
        return (
            f"<html><head>{head}</head><body><h1>{title}</h1><ul>{items}</ul></body></html>"
        ).encode()


def _handler_for(site: DemoSite, origin: Origin) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        server_version = "demo-site/1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            reply, _ = site.answer(origin, self.path, self.headers.get("User-Agent", ""))
            if reply.delay and site.stop.wait(reply.delay):
                self.close_connection = True
                return
            headers = {"Content-Type": "text/plain" if "robots" in self.path else "text/html"}
            headers.update(reply.headers)
            head = [f"HTTP/1.1 {reply.status} {self.responses.get(reply.status, ('',))[0]}"]
            head += [f"{k}: {v}" for k, v in headers.items()]
            head.append(f"Content-Length: {len(reply.body)}")
            data = ("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + reply.body
            try:
                self.wfile.write(data)  # one send: no Nagle stalls on keep-alive
            except OSError:
                self.close_connection = True

    return Handler


def _write_json(path: str, data: Any) -> None:
    partial = f"{path}.part"
    with open(partial, "w", encoding="utf-8") as f:
        json.dump(data, f, indent=1)
    os.replace(partial, path)  # readers never see half a file


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ports-file", required=True, help="write the origins' URLs here (JSON)")
    parser.add_argument("--hits-file", help="write the hit log here on exit (JSON)")
    parser.add_argument("--max-seconds", type=float, default=600.0, help="stop by itself after")
    args = parser.parse_args(argv)
    site = DemoSite()
    site.start()
    done = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: done.set())
    _write_json(args.ports_file, site.describe())
    done.wait(args.max_seconds)  # never outlives a forgotten parent for long
    site.shutdown()
    if args.hits_file:
        with site.lock:
            _write_json(args.hits_file, {**site.describe(), "hits": site.hits})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
