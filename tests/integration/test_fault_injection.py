"""Crawls against origins whose robots.txt misbehaves in every way we could think of.

Each case programs one *faulty* origin and crawls it beside a healthy one.
Whatever the fault, every crawl must:

- finish by itself, with no ERROR log record and no traceback anywhere;
- give the faulty origin the policy the status table says;
- download nothing its rules disallow, and nothing while it is held
  (the server's own hit log: no page before the robots.txt reply that
  allowed it);
- account for every request the spider yielded: downloaded, or dropped with
  a reason, and the stats (``rep/downloaded`` + ``rep/dropped/*``), the
  spider's callbacks and errbacks, and the audit log all agree, URL by URL;
- leave the healthy origin alone: its robots.txt fetched once, its pages
  crawled by its own rules.

Pauses are shortened (0.2 s, doubling, 3 tries) so the module stays quick.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import random
import socket
import threading
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import pytest_twisted
from scrapy.exceptions import CloseSpider

from scrapy_rep import parse
from scrapy_rep.core.origin import origin_of
from scrapy_rep.core.policy import digest_of
from scrapy_rep.crawl import graph
from scrapy_rep.robotstxt import MAX_BYTES
from scrapy_rep.runtime.settings import TUNE
from tests.support.audit import records
from tests.support.crawl import CrawlResult, ListSpider, crawl
from tests.support.fakesite import FakeSite, Origin, Reply

TOKEN = "testbot"
RULES = b"User-agent: *\nDisallow: /private\n"
PATHS = ("/", "/a/1", "/private/1", "/b/2")
#: what the healthy origin (and a faulty one, once readable) must come to
BY_RULES = {"/": None, "/a/1": None, "/private/1": "disallow-rule", "/b/2": None}
ALL_ALLOWED = dict.fromkeys(PATHS)
ALL_UNRESOLVED = dict.fromkeys(PATHS, "policy-unresolved")
PAUSE_INITIAL, PAUSE_MAX, TRIES, RETRY_AFTER_MAX = 0.2, 1.0, 3, 0.5
FAST: dict[str, Any] = {
    "REP_PAUSE_INITIAL": PAUSE_INITIAL,
    "REP_PAUSE_MAX": PAUSE_MAX,
    TUNE: {"policy.pause_max_tries": TRIES, "policy.retry_after_max": RETRY_AFTER_MAX},
    "REP_FETCH_TIMEOUT": 1,
    "REP_PENDING_WAIT": 0.5,
    "DOWNLOAD_TIMEOUT": 5,
    "CLOSESPIDER_TIMEOUT": 30,
}
GARBAGE = random.Random(9309).randbytes(4096)
#: rules, then a Request-rate of 5,000 digits (int() refuses more than 4,300)
RATE_BOMB = RULES + b"Request-rate: " + b"9" * 5000 + b"/1s\n"
#: a long file whose last line matters, and the same file cut before it
LONG = b"User-agent: *\n" + b"".join(b"Allow: /page-%d\n" % n for n in range(800)) + RULES[14:]
CUT = LONG[: -len(b"Disallow: /private\n")]
HTML = (
    b"<!DOCTYPE html>\n<html><head><title>Welcome</title></head>\n<body>\n"
    b"<h1>Our shop</h1><p>User agents of all kinds welcome: see <a href='/private'>here</a>"
    b"</p>\n<script>var disallow = '/';</script>\n</body></html>\n"
)


# -- one crawl, and the checks every crawl must pass ------------------------------------------


@dataclass
class Outcome:
    result: CrawlResult
    audit: list[dict[str, Any]]

    def fetches(self, origin: Origin) -> list[dict[str, Any]]:
        key = f"http://127.0.0.1:{origin.port}"
        return [r for r in self.audit if r["type"] == "fetch" and r["origin"] == key]

    def statuses(self, origin: Origin) -> set[str]:
        """The policy status of every final decision on ``origin``'s URLs."""
        return {
            d["policy_status"]
            for url, d in self.result.decisions.items()
            if url.startswith(origin.url)
        }


async def run(
    site: FakeSite,
    faulty: Origin,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    capfd: pytest.CaptureFixture[str],
    bodies: tuple[bytes, ...] = (RULES,),
    **settings: Any,
) -> Outcome:
    """Crawl PATHS on ``faulty`` and on a healthy origin, and check the invariants."""
    healthy = site.add("healthy").robots(Reply(body=RULES))
    log = tmp_path / "audit.jsonl"
    urls = [o.url_for(p) for o in (faulty, healthy) for p in PATHS]
    with caplog.at_level(logging.INFO):
        result = await crawl(
            urls,
            {
                **FAST,
                "REP_DECISION_LOG": str(log),
                "REP_POLICY_ARCHIVE": str(tmp_path / "archive"),
                **settings,
            },
        )
    audit = records(log)
    outcome = Outcome(result, audit)

    # finished by itself, quietly
    assert result.stat("finish_reason") == "finished"
    loud = [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]
    assert not loud, [r.getMessage() for r in loud]
    captured = capfd.readouterr()
    for text in (caplog.text, captured.out, captured.err):
        assert "Traceback" not in text
        assert "Unhandled error" not in text

    check_accounting(result, audit, set(urls))
    check_rules_obeyed(result, bodies, tmp_path / "archive")
    assert paths(result.downloaded, healthy) == {p for p, why in BY_RULES.items() if not why}
    assert healthy.hits("/robots.txt") == 1
    return outcome


def check_accounting(result: CrawlResult, audit: list[dict[str, Any]], urls: set[str]) -> None:
    """Every yielded request: downloaded or dropped with a reason, counted alike everywhere."""
    downloaded, dropped = set(result.downloaded), dict(result.dropped)
    assert set(result.yielded) == urls
    assert not result.errors
    assert len(downloaded) == len(result.downloaded)  # nothing downloaded twice
    assert downloaded.isdisjoint(dropped)
    assert downloaded | set(dropped) == urls
    # the stats
    by_reason = {
        key.removeprefix("rep/dropped/"): n
        for key, n in result.stats.items()
        if key.startswith("rep/dropped/")
    }
    assert result.stat("rep/downloaded") == len(downloaded)
    assert by_reason == dict(Counter(dropped.values()))
    assert result.stat("rep/downloaded") + sum(by_reason.values()) == len(urls)
    # the audit log: the last word on each URL
    final: dict[str, tuple[str, str]] = {}
    for record in audit:
        if record["type"] == "decision" and record["action"] in ("download", "drop"):
            final[record["url"]] = (record["action"], record["reason"])
    assert {url for url, (action, _) in final.items() if action == "download"} == downloaded
    assert {url: why for url, (action, why) in final.items() if action == "drop"} == dropped
    # and the decision record each request carried
    for url in urls:
        decision = result.decisions[url]
        assert decision["action"] == ("download" if url in downloaded else "drop")
        if url in dropped:
            assert decision["reason"] == dropped[url]


def check_rules_obeyed(result: CrawlResult, bodies: tuple[bytes, ...], archive: Path) -> None:
    """A downloaded URL was allowed by the very file its decision names.

    Files are found by digest among the bodies served, or (cut at 500 KiB) in
    the policy archive, whose copy must have that digest.
    """
    files = {digest_of(body): parse(body) for body in bodies}
    for url in result.downloaded:
        decision = result.decisions[url]
        assert decision["policy_status"] in ("ok", "unavailable")
        if decision["policy_status"] != "ok":
            continue
        digest = decision["policy_digest"]
        if digest not in files:
            kept = (archive / f"{digest}.txt").read_bytes()
            assert digest_of(kept) == digest and len(kept) <= MAX_BYTES
            files[digest] = parse(kept)
        assert files[digest].allowed(TOKEN, url)


def paths(urls: list[str] | set[str] | dict[str, str], origin: Origin) -> set[str]:
    return {u.removeprefix(origin.url) for u in urls if u.startswith(origin.url + "/")}


def check_held_until(site: FakeSite, origin: Origin, robots_requests: int | None) -> None:
    """No page of ``origin`` was asked for before its ``robots_requests``-th robots.txt request.

    ``None``: no page at all. The server logs requests as they arrive, and every
    robots.txt reply in these cases is immediate (or never comes).
    """
    order = [path for name, path in site.hits_log() if name == origin.name]
    pages = [i for i, path in enumerate(order) if not is_robots(path)]
    if robots_requests is None:
        assert not pages, order
        return
    if pages:
        assert sum(1 for path in order[: pages[0]] if is_robots(path)) >= robots_requests, order


def is_robots(path: str) -> bool:
    return path == "/robots.txt" or path.startswith("/r")


def expect(result: CrawlResult, origin: Origin, wanted: Mapping[str, str | None]) -> None:
    """``origin``'s PATHS: downloaded where ``wanted`` says None, else dropped for that reason."""
    assert paths(result.downloaded, origin) == {p for p, why in wanted.items() if why is None}
    dropped = {
        url.removeprefix(origin.url): why
        for url, why in result.dropped.items()
        if url.startswith(origin.url + "/")
    }
    assert dropped == {p: why for p, why in wanted.items() if why}


# -- the cases that fakesite can serve --------------------------------------------------------


@dataclass
class Case:
    name: str
    program: Callable[[Origin], Any]
    status: str  # the faulty origin's policy status in the final decisions
    wanted: Mapping[str, str | None]
    outcomes: dict[str, int]  # rep/fetch/outcome/* of the whole crawl, healthy origin included
    #: robots.txt requests (redirect hops included) that must precede any page; None: no page
    held_until: int | None = 1
    bodies: tuple[bytes, ...] = (RULES,)
    truncated: bool = False
    extra: dict[str, Any] = field(default_factory=dict)


def chain(origin: Origin, hops: int, body: bytes = RULES) -> None:
    """/robots.txt -> /r1 -> ... -> /r<hops> -> body."""
    targets = ["/robots.txt", *(f"/r{n}" for n in range(1, hops + 1))]
    for here, there in itertools.pairwise(targets):
        origin.page(here, Reply(redirect_to=origin.url_for(there)))
    origin.page(targets[-1], Reply(body=body))


def retry_after(name: str, value: str) -> Case:
    """A 429 whose ``Retry-After`` is ``value``, then the rules: no page before the refetch,
    then the rules obeyed."""
    answers = (Reply(429, headers={"Retry-After": value}), Reply(body=RULES))
    return Case(
        name, lambda o: o.robots(*answers), "ok", BY_RULES, {"429": 1, "2xx": 2}, held_until=2
    )


CASES = [
    Case(
        "reset-mid-file-forever",
        lambda o: o.robots(Reply(reset=True, body=RULES * 50)),
        "unresolved",
        ALL_UNRESOLVED,
        {"network": TRIES, "2xx": 1},
        held_until=None,
    ),
    Case(
        "reset-mid-file-then-readable",
        lambda o: o.robots(Reply(reset=True, body=RULES * 50), Reply(body=RULES)),
        "ok",
        BY_RULES,
        {"network": 1, "2xx": 2},
        held_until=2,
    ),
    Case(
        "never-answers-then-readable",
        lambda o: o.robots(Reply(hang=True), Reply(body=RULES)),
        "ok",
        BY_RULES,
        {"network": 1, "2xx": 2},
        held_until=2,
    ),
    Case(
        "garbage-bytes",
        lambda o: o.robots(Reply(body=GARBAGE)),
        "ok",
        ALL_ALLOWED,
        {"2xx": 2},
        bodies=(RULES, GARBAGE),
    ),
    Case(
        "html-page",
        lambda o: o.robots(Reply(body=HTML, headers={"Content-Type": "text/html"})),
        "ok",
        ALL_ALLOWED,
        {"2xx": 2},
        bodies=(RULES, HTML),
    ),
    Case(
        "ten-megabytes",
        lambda o: o.robots(Reply(body=RULES, stream_bytes=10_000_000)),
        "ok",
        BY_RULES,
        {"2xx": 2},
        truncated=True,
    ),
    Case(
        "endless",
        lambda o: o.robots(Reply(body=RULES, stream_bytes=1 << 40)),
        "ok",
        BY_RULES,
        {"2xx": 2},
        truncated=True,
    ),
    Case(
        "gzip-bomb",
        lambda o: o.robots(Reply(gzip_bomb=64 << 20)),
        "ok",
        ALL_ALLOWED,
        {"2xx": 2},
        truncated=True,
    ),
    Case(
        "redirect-loop",
        lambda o: (
            o.robots(Reply(redirect_to=o.url_for("/r-loop"))),
            o.page("/r-loop", Reply(redirect_to=o.robots_url)),
        ),
        "unavailable",
        ALL_ALLOWED,
        {"redirect-limit": 1, "2xx": 1},
        held_until=6,
    ),
    Case(
        "ten-redirects",
        lambda o: chain(o, 10),
        "unavailable",
        ALL_ALLOWED,
        {"redirect-limit": 1, "2xx": 1},
        held_until=6,
    ),
    Case("five-redirects", lambda o: chain(o, 5), "ok", BY_RULES, {"2xx": 2}, held_until=6),
    retry_after("retry-after-a-day", "86400"),
    retry_after("retry-after-year-2100", "Fri, 31 Dec 2100 23:59:59 GMT"),
    retry_after("retry-after-malformed", "soon, 31 Foo 99:99"),
    # A Latin-1 superscript two: "²".isdigit() is true, float("²") refuses it.
    retry_after("retry-after-superscript-429", "\u00b2"),
    # ... and on the refetch of an origin whose requests are parked: they must be released
    Case(
        "503-then-retry-after-superscript",
        lambda o: o.robots(
            Reply(503), Reply(429, headers={"Retry-After": "\u00b2"}), Reply(body=RULES)
        ),
        "ok",
        BY_RULES,
        {"5xx": 1, "429": 1, "2xx": 2},
        held_until=3,
    ),
    Case(
        "max-age-of-400-digits",
        lambda o: o.robots(Reply(body=RULES, headers={"Cache-Control": "max-age=" + "9" * 400})),
        "ok",
        BY_RULES,
        {"2xx": 2},
    ),
    Case(
        "request-rate-of-5000-digits",
        lambda o: o.robots(Reply(body=RATE_BOMB)),
        "ok",
        BY_RULES,
        {"2xx": 2},
        bodies=(RULES, RATE_BOMB),
    ),
    # Redirects to nowhere a crawler may go are network errors (RFC 9309 §2.3.1.4).
    *(
        Case(
            f"redirect-to-{name}",
            lambda o, target=target: o.robots(Reply(redirect_to=target), Reply(body=RULES)),
            "ok",
            BY_RULES,
            {"network": 1, "2xx": 2},
            held_until=2,
        )
        for name, target in (
            ("mailto", "mailto:webmaster@example.com"),
            ("javascript", "javascript:alert(1)"),
            ("unparsable-location", "http://[::1"),
        )
    ),
    # Content-Length promises the whole file, the server closes early: not the file.
    Case(
        "cut-short-without-fail-on-dataloss",
        lambda o: o.robots(
            Reply(body=CUT, headers={"Content-Length": str(len(LONG)), "Connection": "close"}),
            Reply(body=LONG),
        ),
        "ok",
        BY_RULES,
        {"network": 1, "2xx": 2},
        held_until=2,
        bodies=(RULES, LONG),
        extra={"DOWNLOAD_FAIL_ON_DATALOSS": False},
    ),
    Case(
        "503-then-recovers",
        lambda o: o.robots(Reply(503, b"busy"), Reply(body=RULES)),
        "ok",
        BY_RULES,
        {"5xx": 1, "2xx": 2},
        held_until=2,
    ),
    Case(
        "403-forever",
        lambda o: o.robots(Reply(403, b"<h1>Forbidden</h1>")),
        "unresolved",
        ALL_UNRESOLVED,
        {"403": TRIES, "2xx": 1},
        held_until=None,
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
@pytest_twisted.ensureDeferred
async def test_fault(
    case: Case,
    site: FakeSite,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    capfd: pytest.CaptureFixture[str],
) -> None:
    faulty = site.add("faulty")
    case.program(faulty)
    outcome = await run(site, faulty, tmp_path, caplog, capfd, case.bodies, **case.extra)
    result = outcome.result

    assert outcome.statuses(faulty) == {case.status}
    expect(result, faulty, case.wanted)
    found = {
        key.removeprefix("rep/fetch/outcome/"): n
        for key, n in result.stats.items()
        if key.startswith("rep/fetch/outcome/")
    }
    assert found == case.outcomes
    check_held_until(site, faulty, case.held_until)

    fetches = outcome.fetches(faulty)
    assert len(fetches) == sum(case.outcomes.values()) - 1  # the healthy origin's is not here
    if case.truncated:
        assert result.stat("rep/fetch/truncated") == 1
        assert fetches[-1]["truncated"] is True
        assert fetches[-1]["size"] <= MAX_BYTES
    else:
        assert result.stat("rep/fetch/truncated") == 0


# -- what each case shows beyond the common checks --------------------------------------------


@pytest_twisted.ensureDeferred
async def test_retry_after_is_capped(
    site: FakeSite, tmp_path: Path, caplog: pytest.LogCaptureFixture, capfd: Any
) -> None:
    faulty = site.add("faulty").robots(
        Reply(429, headers={"Retry-After": "86400"}), Reply(body=RULES)
    )
    outcome = await run(site, faulty, tmp_path, caplog, capfd)
    first, second = outcome.fetches(faulty)
    assert first["status"] == "paused" and first["http_status"] == 429
    # a day asked for, RETRY_AFTER_MAX (0.5 s) given
    assert first["expires_at"] - first["fetched_at"] == pytest.approx(RETRY_AFTER_MAX)
    assert second["status"] == "ok"


@pytest_twisted.ensureDeferred
async def test_malformed_retry_after_falls_back_to_back_off(
    site: FakeSite, tmp_path: Path, caplog: pytest.LogCaptureFixture, capfd: Any
) -> None:
    faulty = site.add("faulty").robots(Reply(429, headers={"Retry-After": "-5"}), Reply(body=RULES))
    outcome = await run(site, faulty, tmp_path, caplog, capfd)
    first = outcome.fetches(faulty)[0]
    assert first["expires_at"] - first["fetched_at"] == pytest.approx(PAUSE_INITIAL)


@pytest_twisted.ensureDeferred
async def test_endless_file_is_cut_and_the_connection_let_go(
    site: FakeSite, tmp_path: Path, caplog: pytest.LogCaptureFixture, capfd: Any
) -> None:
    # A terabyte would take minutes to read on loopback: the crawl finishing at
    # all, with the file's rules, shows it stopped at 500 KiB.
    faulty = site.add("faulty").robots(Reply(body=RULES, stream_bytes=1 << 40))
    outcome = await run(site, faulty, tmp_path, caplog, capfd)
    fetch = outcome.fetches(faulty)[0]
    assert fetch["status"] == "ok" and fetch["truncated"] is True
    assert MAX_BYTES - len(RULES) < fetch["size"] <= MAX_BYTES
    assert faulty.wait_for_hits(1, "/robots.txt")
    # the server's streaming thread saw the client leave
    for _ in range(100):
        if faulty.active_connections() == 0:
            break
        threading.Event().wait(0.05)
    assert faulty.active_connections() == 0


@pytest_twisted.ensureDeferred
async def test_a_file_that_changes_between_fetches(
    site: FakeSite, tmp_path: Path, caplog: pytest.LogCaptureFixture, capfd: Any
) -> None:
    """Each request is judged by the file current when it leaves, named by its digest."""
    first = b"User-agent: *\nDisallow: /a/\n"
    second = b"User-agent: *\nDisallow: /b/\n"
    # the first copy may not be kept (max-age=0); the second is kept for the day
    faulty = site.add("faulty").robots(
        Reply(body=first, headers={"Cache-Control": "max-age=0"}), Reply(body=second)
    )
    outcome = await run(
        site,
        faulty,
        tmp_path,
        caplog,
        capfd,
        bodies=(RULES, first, second),
        **{TUNE: {**FAST[TUNE], "policy.min_ttl": 0}},
        CONCURRENT_REQUESTS=1,
    )
    result = outcome.result
    assert [f["digest"] for f in outcome.fetches(faulty)] == [digest_of(first), digest_of(second)]
    used = {d["policy_digest"] for u, d in result.decisions.items() if u.startswith(faulty.url)}
    assert used == {digest_of(first), digest_of(second)}  # both files decided something
    assert faulty.hits("/robots.txt") == 2


# -- a server that answers robots.txt with bytes that are not HTTP ----------------------------


class GarbageServer:
    """One loopback port: robots.txt gets raw garbage (no status line), pages a tiny 200."""

    def __init__(self) -> None:
        self._sock = socket.socket()
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(16)
        self._sock.settimeout(0.05)
        self.port = self._sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.paths: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except OSError:  # timeout: look at the stop switch again
                continue
            with contextlib.closing(conn):
                self._answer(conn)

    def _answer(self, conn: socket.socket) -> None:
        conn.settimeout(2)
        data = b""
        with contextlib.suppress(OSError):
            while b"\r\n\r\n" not in data and len(data) < 65536:
                chunk = conn.recv(4096)
                if not chunk:
                    return
                data += chunk
            path = data.split(b" ", 2)[1].decode("latin-1") if data.count(b" ") >= 2 else "?"
            self.paths.append(path)
            if path == "/robots.txt":
                conn.sendall(GARBAGE)
            else:
                body = b"<html>ok</html>"
                conn.sendall(
                    b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nConnection: close\r\n"
                    b"Content-Length: %d\r\n\r\n%b" % (len(body), body)
                )

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(2)
        self._sock.close()


@pytest.fixture
def garbage_server() -> Iterator[GarbageServer]:
    server = GarbageServer()
    yield server
    server.stop()


@pytest_twisted.ensureDeferred
async def test_garbage_instead_of_http(
    site: FakeSite,
    garbage_server: GarbageServer,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    capfd: Any,
) -> None:
    """Bytes that are no HTTP response are a network error: paused, then given up."""
    healthy = site.add("healthy").robots(Reply(body=RULES))
    log = tmp_path / "audit.jsonl"
    urls = [u + p for u in (garbage_server.url, healthy.url) for p in PATHS]
    with caplog.at_level(logging.INFO):
        result = await crawl(urls, {**FAST, "REP_DECISION_LOG": str(log)})
    audit = records(log)
    assert result.stat("finish_reason") == "finished"
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]
    assert "Traceback" not in capfd.readouterr().err
    check_accounting(result, audit, set(urls))
    check_rules_obeyed(result, (RULES,), tmp_path / "archive")
    assert garbage_server.paths == ["/robots.txt"] * TRIES  # and no page, ever
    assert result.stat("rep/fetch/outcome/network") == TRIES
    assert {result.dropped[garbage_server.url + p] for p in PATHS} == {"policy-unresolved"}


# -- origins whose robots.txt hangs, beside a healthy one -------------------------------------

HUNG, HEALTHY_PAGES = 30, 40


@pytest.mark.parametrize("pending_wait", [2, 30])
@pytest_twisted.ensureDeferred
async def test_hung_robots_txt_fetches_leave_a_healthy_origin_its_pace(
    site: FakeSite, pending_wait: float
) -> None:
    """30 origins whose robots.txt hangs take no concurrency from a healthy one.

    Each on its own address (its own download slot). The healthy origin's
    pages must all be downloaded while every hung fetch is still hanging:
    neither the hung downloads nor the requests waiting for them (even for
    a REP_PENDING_WAIT longer than the fetch timeout) may fill CONCURRENT_REQUESTS.
    """
    hung = [
        site.add(f"hung{n}", host=f"127.0.0.{n + 2}").robots(Reply(hang=True)) for n in range(HUNG)
    ]
    healthy = site.add("healthy").robots(Reply(body=RULES))
    urls = [o.url_for(f"/h/{n}") for n in range(2) for o in hung]  # the hung ones first
    urls += [healthy.url_for(f"/page/{n}") for n in range(HEALTHY_PAGES)]
    still_hanging: list[int] = []

    class Spider(ListSpider):
        def parse(self, response: Any) -> Any:
            yield from super().parse(response)
            done = [u for u in self.result.downloaded if u.startswith(healthy.url)]
            if len(done) == HEALTHY_PAGES:
                robots = graph.running(self.crawler)
                assert robots is not None
                pending = [robots.resolver.pending_since(origin_of(o.url)) for o in hung]
                still_hanging.append(sum(since is not None for since in pending))
                raise CloseSpider("healthy-done")

    result = await crawl(
        urls,
        {
            # long enough that a loaded machine downloads the 40 healthy pages first
            "REP_FETCH_TIMEOUT": 12,
            "REP_PENDING_WAIT": pending_wait,
            "CONCURRENT_REQUESTS": 16,
            "CONCURRENT_REQUESTS_PER_DOMAIN": 8,
        },
        spider=Spider,
    )
    assert result.stat("finish_reason") == "healthy-done"
    assert still_hanging == [HUNG]  # done before any hung fetch timed out
    assert all(o.hits("/robots.txt") == 1 for o in hung)
    assert not [u for u in result.downloaded if not u.startswith(healthy.url)]


QUICK_ORIGINS = 24


@pytest_twisted.ensureDeferred
async def test_quick_robots_txt_fetches_park_nothing_at_a_broad_crawls_start(
    site: FakeSite,
) -> None:
    """Every origin new at once, every robots.txt answered at once: requests wait, none parks.

    Past half of CONCURRENT_REQUESTS a request may still wait a moment while the
    fetches under way are quick, so a broad crawl's start does not park (and give
    back to the scheduler) its first requests, nor start every origin's fetch at once.
    """
    origins = [
        site.add(f"quick{n}", host=f"127.0.0.{n + 2}").robots(Reply(body=RULES))
        for n in range(QUICK_ORIGINS)
    ]
    urls = [o.url_for(f"/page/{n}") for n in range(2) for o in origins]
    result = await crawl(urls, {"CONCURRENT_REQUESTS": 4, "CONCURRENT_REQUESTS_PER_DOMAIN": 2})
    assert sorted(result.downloaded) == sorted(urls)
    assert all(o.hits("/robots.txt") == 1 for o in origins)
    # a loaded machine may make a fetch slow now and then: a few parks, not most requests
    assert result.stat("rep/parked") <= QUICK_ORIGINS // 6, result.stat("rep/parked")


#: how long each robots.txt takes in the slow test below: longer than QUICK_FETCH
SLOW_ROBOTS_TXT = 0.4


@pytest_twisted.ensureDeferred
async def test_robots_txt_fetches_as_slow_as_the_first_one_park_nothing(site: FakeSite) -> None:
    """Every robots.txt takes 0.4 s: past the waiting bound requests still wait, none parks.

    What counts as a quick fetch follows how long fetches lately took (here
    the first origin's, before the others are asked for), so a crawl whose
    robots.txt files all come slowly, as on a busy machine, waits for them
    instead of parking its requests (with a fixed 0.25 s, most would park).
    """
    origins = [
        site.add(f"slow{n}", host=f"127.0.0.{n + 2}").robots(
            Reply(body=RULES, delay=SLOW_ROBOTS_TXT)
        )
        for n in range(QUICK_ORIGINS + 1)
    ]
    first = origins[0].url_for("/page/0")
    later = [o.url_for(f"/page/{n}") for n in range(2) for o in origins[1:]]

    class Spider(ListSpider):
        def parse(self, response: Any) -> Any:
            yield from super().parse(response)
            if response.url == first:
                yield from map(self.request, later)

    result = await crawl(
        [first], {"CONCURRENT_REQUESTS": 4, "CONCURRENT_REQUESTS_PER_DOMAIN": 2}, spider=Spider
    )
    assert sorted(result.downloaded) == sorted([first, *later])
    assert all(o.hits("/robots.txt") == 1 for o in origins)
    # a loaded machine may make a fetch slower now and then: a few parks, not most requests
    assert result.stat("rep/parked") <= QUICK_ORIGINS // 6, result.stat("rep/parked")
