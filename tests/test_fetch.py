"""RobotsFetcher in-process against the fake fetch seam: what one robots.txt fetch returns.

Redirects, bad redirects, bodies cut short, timeouts and other failures as the
fetch sees them, the request it sends. The whole-crawl versions (real servers,
Scrapy's downloader middlewares) are in ``tests/integration/test_status_table.py``
and ``tests/integration/test_fault_injection.py``.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import Any

import pytest
import pytest_twisted
from scrapy import Request, signals
from scrapy.exceptions import IgnoreRequest, StopDownload
from scrapy.http import Response
from twisted.internet.error import ConnectionRefusedError, TimeoutError
from twisted.python.failure import Failure

from scrapy_rep.core.policy import Conditional, FetchResult
from scrapy_rep.crawl import meta as M
from scrapy_rep.crawl.fetch import PRIORITY, RobotsFetcher
from scrapy_rep.robotstxt import MAX_BYTES
from scrapy_rep.runtime.resolver import ROBOTS_TXT
from tests.support.rig import Answer, Reply, Rig, in_loop

A = "http://a.example:80"
B = "http://b.example:80"
RULES = b"User-agent: *\nDisallow: /private\n"


def fetcher(rig: Rig, max_redirects: int = 5, timeout: float = 30.0) -> RobotsFetcher:
    return RobotsFetcher(rig.crawler, timeout, max_redirects, token="testbot")


async def fetch(
    rig: Rig, answers: dict[str, Reply | list[Reply]], origin: str = A, **kwargs: Any
) -> FetchResult:
    rig.transport.answers.update(answers)
    result: FetchResult = await in_loop(fetcher(rig, **kwargs)(origin))
    return result


@pytest_twisted.ensureDeferred
async def test_a_file_comes_back_with_its_status_body_and_lowercased_headers(rig: Rig) -> None:
    result = await fetch(rig, {A: (200, {"Content-Type": "text/plain", "ETag": '"v1"'}, RULES)})
    assert result.url == result.final_url == "http://a.example/robots.txt"
    assert (result.status, result.body, result.error, result.redirects) == (200, RULES, None, 0)
    assert result.headers["content-type"] == "text/plain"
    assert result.headers["etag"] == '"v1"'
    assert not result.truncated and not result.conditional


@pytest_twisted.ensureDeferred
async def test_the_request_skips_scrapys_redirect_retry_and_cache(rig: Rig) -> None:
    await fetch(rig, {A: (200, {}, RULES)}, timeout=7.5)
    (sent,) = rig.transport.sent
    meta = sent.meta
    assert meta[M.ROBOTS_REQUEST] and meta["dont_obey_robotstxt"]
    assert meta["dont_redirect"] and meta["dont_retry"] and meta["dont_cache"]
    assert meta["handle_httpstatus_all"] and meta["download_fail_on_dataloss"]
    assert meta["download_timeout"] == 7.5
    assert sent.priority == PRIORITY and sent.dont_filter
    assert sent.headers[b"Accept-Encoding"] == b"gzip, deflate"
    assert "download_slot" not in meta  # the host's own slot


@pytest_twisted.ensureDeferred
async def test_with_its_own_slot_robots_txt_waits_behind_no_render(rig: Rig) -> None:
    robots = fetcher(rig)
    robots.own_slot = True
    rig.transport.answers[A] = (200, {}, RULES)
    await in_loop(robots(A))
    assert rig.transport.sent[0].meta["download_slot"] == "rep-robots:a.example"


@pytest_twisted.ensureDeferred
async def test_redirects_are_followed_to_other_origins(rig: Rig) -> None:
    result = await fetch(
        rig,
        {
            A: (301, {"Location": "http://b.example/one"}, b""),
            "http://b.example/one": (302, {"Location": "/two"}, b""),
            "http://b.example/two": (200, {}, RULES),
        },
    )
    assert rig.transport.urls() == [
        "http://a.example/robots.txt",
        "http://b.example/one",
        "http://b.example/two",
    ]
    assert (result.url, result.final_url) == ("http://a.example/robots.txt", "http://b.example/two")
    assert (result.status, result.body, result.redirects) == (200, RULES, 2)


@pytest_twisted.ensureDeferred
async def test_one_hop_more_than_allowed_is_the_redirect_limit(rig: Rig) -> None:
    result = await fetch(
        rig,
        {
            A: (307, {"Location": "/one"}, b""),
            "http://a.example/one": (308, {"Location": "/two"}, b""),
            "http://a.example/two": (200, {}, RULES),
        },
        max_redirects=1,
    )
    assert len(rig.transport.sent) == 2  # the second Location is not followed
    assert result.redirect_limit and result.redirects == 2
    assert (result.status, result.final_url, result.body) == (308, "http://a.example/one", b"")


@pytest.mark.parametrize(
    "location", ["mailto:webmaster@a.example", "javascript:void(0)", "http://[::1"]
)
@pytest_twisted.ensureDeferred
async def test_a_redirect_nowhere_a_crawler_may_go_is_a_network_error(
    rig: Rig, location: str
) -> None:
    result = await fetch(rig, {A: (302, {"Location": location}, b"")})
    assert len(rig.transport.sent) == 1
    assert (result.error, result.status, result.redirects) == ("BadRedirect", None, 0)


@pytest_twisted.ensureDeferred
async def test_a_redirect_status_without_a_location_is_that_status(rig: Rig) -> None:
    result = await fetch(rig, {A: (301, {}, b"moved")})
    assert (result.status, result.error, result.redirects) == (301, None, 0)


@pytest_twisted.ensureDeferred
async def test_a_body_cut_short_is_no_file(rig: Rig) -> None:
    result = await fetch(rig, {A: Answer(200, {}, RULES[:10], flags=("dataloss",))})
    assert (result.error, result.status, result.body) == ("ResponseDataLossError", None, b"")


@pytest_twisted.ensureDeferred
async def test_a_body_cut_short_after_a_redirect_counts_the_hop(rig: Rig) -> None:
    result = await fetch(
        rig,
        {
            A: (301, {"Location": "http://b.example/robots.txt"}, b""),
            B: Answer(200, {}, RULES[:10], flags=("dataloss",)),
        },
    )
    assert (result.error, result.redirects) == ("ResponseDataLossError", 1)
    assert result.final_url == "http://b.example/robots.txt"


@pytest.mark.parametrize(
    ("failure", "name"),
    [
        (
            TimeoutError("Getting http://a.example/robots.txt took longer than 30.0 seconds."),
            "TimeoutError",
        ),
        (ConnectionRefusedError(), "ConnectionRefusedError"),
        (IgnoreRequest("a project middleware said no"), "IgnoreRequest"),
    ],
)
@pytest_twisted.ensureDeferred
async def test_a_failed_download_is_a_network_error_named_by_its_exception(
    rig: Rig, failure: Exception, name: str
) -> None:
    result = await fetch(rig, {A: failure})
    assert (result.error, result.status, result.final_url) == (
        name,
        None,
        "http://a.example/robots.txt",
    )


@pytest_twisted.ensureDeferred
async def test_a_timeout_after_a_redirect_is_the_timeout_of_that_hop(rig: Rig) -> None:
    result = await fetch(
        rig,
        {A: (302, {"Location": "http://b.example/robots.txt"}, b""), B: TimeoutError()},
    )
    assert (result.error, result.redirects) == ("TimeoutError", 1)
    assert result.final_url == "http://b.example/robots.txt"


@pytest_twisted.ensureDeferred
async def test_an_unforeseen_failure_is_a_network_error_with_one_traceback(
    rig: Rig, caplog: pytest.LogCaptureFixture
) -> None:
    def broken(origin: str) -> str:
        raise LookupError("no URL for " + origin)

    file = replace(ROBOTS_TXT, url_of=broken)
    robots = RobotsFetcher(rig.crawler, 5.0, 5, token="testbot", file=file)
    with caplog.at_level(logging.DEBUG, logger="scrapy_rep"):
        first = await in_loop(robots(A))
        second = await in_loop(robots(B))
    assert first.error == second.error == "LookupError"
    assert first.url == "http://a.example/robots.txt"
    said = [r for r in caplog.records if "treated as a network error" in r.getMessage()]
    assert [r.levelno for r in said] == [logging.WARNING, logging.DEBUG]
    assert said[0].exc_info is not None


@pytest_twisted.ensureDeferred
async def test_a_file_over_the_cap_is_cut_there(rig: Rig) -> None:
    body = b"Disallow: /x\n" * (MAX_BYTES // 13 + 10)
    result = await fetch(rig, {A: (200, {}, body)})
    assert result.truncated
    assert result.body == body[:MAX_BYTES]


@pytest_twisted.ensureDeferred
async def test_a_refetch_asks_with_the_validators_of_its_url_only(rig: Rig) -> None:
    robots = fetcher(rig)
    rig.transport.answers.update(
        {A: (301, {"Location": "http://b.example/robots.txt"}, b""), B: (304, {}, b"")}
    )
    validators = Conditional("http://b.example/robots.txt", '"v1"', "Tue, 01 Dec 2026 08:00:00 GMT")
    result = await in_loop(robots(A, validators))
    first, second = rig.transport.sent
    assert b"If-None-Match" not in first.headers  # the validators belong to the last hop's URL
    assert second.headers[b"If-None-Match"] == b'"v1"'
    assert second.headers[b"If-Modified-Since"] == b"Tue, 01 Dec 2026 08:00:00 GMT"
    assert (result.status, result.conditional) == (304, True)


@pytest_twisted.ensureDeferred
async def test_robots_txt_goes_through_the_proxy_of_the_request_it_is_for(rig: Rig) -> None:
    robots = fetcher(rig)
    page = Request("http://a.example/page", meta={"proxy": "http://127.0.0.1:3128"})
    page.headers[b"Proxy-Authorization"] = b"Basic dXNlcjpwYXNz"
    robots.asked[A] = page
    rig.transport.answers[A] = (200, {}, RULES)
    await in_loop(robots(A))
    (sent,) = rig.transport.sent
    assert sent.meta["proxy"] == "http://127.0.0.1:3128"
    assert sent.headers[b"Proxy-Authorization"] == b"Basic dXNlcjpwYXNz"


@pytest_twisted.ensureDeferred
async def test_a_proxy_taken_from_the_environment_is_not_copied(rig: Rig) -> None:
    robots = fetcher(rig)
    robots.asked[A] = Request(
        "http://a.example/page", meta={"proxy": "http://127.0.0.1:3128", "_scheme_proxy": True}
    )
    rig.transport.answers[A] = (200, {}, RULES)
    await in_loop(robots(A))
    assert "proxy" not in rig.transport.sent[0].meta


class UserAgentTransport:
    """The fake seam, with the User-Agent header a project's middleware would have set."""

    def __init__(self, rig: Rig, user_agent: bytes) -> None:
        self.inner = rig.transport
        self.user_agent = user_agent

    async def __call__(self, request: Request) -> Response:
        request.headers[b"User-Agent"] = self.user_agent
        return await self.inner(request)


@pytest.mark.parametrize(
    ("user_agent", "warned"), [(b"testbot/1.0 (+http://127.0.0.1/)", False), (b"Mozilla/5.0", True)]
)
@pytest_twisted.ensureDeferred
async def test_a_user_agent_without_the_product_token_is_said_once(
    rig: Rig, caplog: pytest.LogCaptureFixture, user_agent: bytes, warned: bool
) -> None:
    robots = fetcher(rig)
    rig.engine.transport = UserAgentTransport(rig, user_agent)  # type: ignore[assignment]
    rig.transport.answers.update({A: (200, {}, RULES), B: (404, {}, b"")})
    with caplog.at_level(logging.WARNING, logger="scrapy_rep"):
        await in_loop(robots(A))
        await in_loop(robots(B))
    said = [r for r in caplog.records if "product token" in r.getMessage()]
    assert len(said) == (1 if warned else 0)
    assert robots.user_agent_sent == user_agent.decode()


@pytest_twisted.ensureDeferred
async def test_the_size_cap_hears_robots_txt_chunks_only_while_a_fetch_runs(rig: Rig) -> None:
    robots = fetcher(rig)
    heard: list[list[Any]] = []
    page = Request("http://a.example/page")

    def chunk(request: Request, size: int) -> list[Any]:
        sent = rig.crawler.signals.send_catch_log(
            signal=signals.bytes_received, data=b"x" * size, request=request, spider=None
        )
        return [result for _receiver, result in sent]

    class Chunked:
        async def __call__(self, request: Request) -> Response:
            heard.append(chunk(request, 100))
            heard.append(chunk(page, 100))  # not robots.txt: not counted
            heard.append(chunk(request, MAX_BYTES))  # over the cap: the download stops
            return Response(request.url, status=404, request=request)

    rig.engine.transport = Chunked()  # type: ignore[assignment]
    await in_loop(robots(A))
    assert M.RECEIVED not in page.meta
    stopped = [r for r in heard[2] if isinstance(r, Failure)]
    assert [type(f.value) for f in stopped] == [StopDownload]
    assert heard[0] == [None]
    assert chunk(page, MAX_BYTES * 2) == []  # after the fetch nothing listens
