"""The crawler's identity after a refusal, end to end: what the site received, from its log.

A rotated User-Agent without the product token is warned about (or not sent
when asked); after a 403 or a 429 no request leaves under another User-Agent
or through another proxy, not even a retry or one already waiting in its slot.

Real crawls (RetryMiddleware on, at Scrapy's defaults) against the pushback
site, with a User-Agent rotating downloader middleware and a proxy switching
one, both ordered after scrapy-rep (100) as such middlewares usually are.
"""

from __future__ import annotations

import base64
import itertools
import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import pytest_twisted
import scrapy

from scrapy_rep.report.story import story_of
from tests.support.crawl import crawl
from tests.support.proxy import VIA, RecordingProxy
from tests.support.pushback_site import PushbackSite, pages

TOKEN_UA = "testbot/1.0 (+http://127.0.0.1/)"
BROWSERS = (
    "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0",
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:121.0) Gecko/20100101 Firefox/121.0",
)
ONE_AT_A_TIME = {
    "CONCURRENT_REQUESTS": 1,
    "CONCURRENT_REQUESTS_PER_DOMAIN": 1,
    "RETRY_ENABLED": True,  # Scrapy's defaults: 2 retries of 429/5xx/...
}


class BrowserAgents:
    """Rotates browser User-Agents (no product token) over every request."""

    agents: Iterator[str] = itertools.cycle(BROWSERS)

    def process_request(self, request: scrapy.Request, spider: Any = None) -> None:
        request.headers["User-Agent"] = next(type(self).agents)


class TokenAgents:
    """Rotates User-Agents that all carry the token: only the version comment changes."""

    count = itertools.count()

    def process_request(self, request: scrapy.Request, spider: Any = None) -> None:
        request.headers["User-Agent"] = f"testbot/1.0 (rotation {next(type(self).count)})"


class SwitchProxy:
    """Every other request through the proxy in ``PROXY``, the others straight."""

    proxy = ""
    count = itertools.count()

    def process_request(self, request: scrapy.Request, spider: Any = None) -> None:
        if request.url.endswith("/robots.txt"):
            return
        if next(type(self).count) % 2:
            request.meta["proxy"] = type(self).proxy
        else:
            request.meta.pop("proxy", None)


@pytest.fixture
def site() -> Iterator[PushbackSite]:
    with PushbackSite() as s:
        yield s


def warnings(caplog: pytest.LogCaptureFixture, reason: str) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.levelno == logging.WARNING and f": {reason}," in r.getMessage()
    ]


# -- 8. the token is sent -------------------------------------------------------------------


@pytest_twisted.ensureDeferred
async def test_a_rotated_user_agent_without_the_token_is_warned_once_per_origin(
    site: PushbackSite, caplog: pytest.LogCaptureFixture
) -> None:
    a, b = site.add("a", pages=4), site.add("b", pages=4)
    settings = {"DOWNLOADER_MIDDLEWARES": {BrowserAgents: 600}}
    with caplog.at_level(logging.WARNING, logger="scrapy_rep"):
        result = await crawl([a.url_for("/"), b.url_for("/")], settings, follow=True)
    sent = pages(site.log())
    assert len(sent) == 10 and {e.user_agent for e in sent} <= set(BROWSERS)  # all sent
    assert result.stat("rep/identity/token-missing") == 10
    said = warnings(caplog, "token-missing")
    assert len(said) == 2 and {a.url in said[0], b.url in said[0]} == {True, False}
    assert (
        "ordered after scrapy-rep: tests.integration.test_identity.BrowserAgents (600)" in (said[0])
    )
    assert "sent anyway" in said[0]
    assert result.stat("rep/downloaded") == 10


@pytest_twisted.ensureDeferred
async def test_a_user_agent_without_the_token_is_not_sent_when_asked(
    site: PushbackSite, caplog: pytest.LogCaptureFixture, tmp_path: Path
) -> None:
    a = site.add("a", pages=4)
    log = tmp_path / "audit.jsonl"
    settings = {
        "DOWNLOADER_MIDDLEWARES": {BrowserAgents: 600},
        "REP_IDENTITY_ACTION": {"token-missing": "drop"},
        "REP_DECISION_LOG": str(log),
    }
    with caplog.at_level(logging.WARNING, logger="scrapy_rep"):
        result = await crawl([a.url_for("/")], settings, follow=True)
    assert pages(site.log()) == []  # robots.txt went (warned); no page did
    assert result.dropped == {a.url_for("/"): "token-missing"}
    assert (
        "does not carry the product token 'testbot'" in result.decisions[a.url_for("/")]["detail"]
    )
    assert result.stat("rep/dropped/token-missing") == 1
    assert result.stat("rep/downloaded") == 0  # its download answer was overruled
    assert len(warnings(caplog, "token-missing")) == 1
    records = [json.loads(line) for line in log.read_text().splitlines()]
    said = [r for r in records if r["type"] == "identity"]
    assert [(r["reason"], r["action"]) for r in said] == [("token-missing", "drop")]
    story = story_of(records)
    (counts,) = [o for o in story.origins.values() if o.dropped]
    assert counts.downloaded == 0 and dict(counts.dropped) == {"token-missing": 1}
    assert story.unknown == 0


@pytest_twisted.ensureDeferred
async def test_the_token_in_user_agent_passes_silently(
    site: PushbackSite, caplog: pytest.LogCaptureFixture
) -> None:
    a = site.add("a", pages=4)
    with caplog.at_level(logging.WARNING, logger="scrapy_rep"):
        result = await crawl([a.url_for("/")], {}, follow=True)
    assert {e.user_agent for e in site.log()} == {TOKEN_UA}
    assert result.stat("rep/identity/token-missing") == 0
    assert warnings(caplog, "token-missing") == []


# -- 9. no change of identity after a refusal -------------------------------------------------


@pytest_twisted.ensureDeferred
async def test_no_new_user_agent_after_a_403(
    site: PushbackSite, caplog: pytest.LogCaptureFixture
) -> None:
    a = site.add("a", pages=12, wall_after=3)
    settings = {**ONE_AT_A_TIME, "DOWNLOADER_MIDDLEWARES": {TokenAgents: 600}}
    with caplog.at_level(logging.WARNING, logger="scrapy_rep"):
        result = await crawl([a.url_for("/")], settings, follow=True)
    sent = pages(site.log())
    refused = [e for e in sent if e.status == 403]
    assert [e.status for e in sent[:3]] == [200, 200, 200] and refused
    after = sent[sent.index(refused[0]) :]
    assert {e.user_agent for e in after} == {refused[0].user_agent}  # never another identity
    assert len(refused) == 1
    changed = [u for u, why in result.dropped.items() if why == "identity-changed"]
    assert changed and result.stat("rep/dropped/identity-changed") == len(changed)
    detail = result.decisions[changed[0]]["detail"]
    assert "answered 403" in detail and "User-Agent" in detail
    assert len(warnings(caplog, "identity-changed")) == 1


@pytest_twisted.ensureDeferred
async def test_user_agent_changes_after_a_403_are_only_warned_when_relaxed(
    site: PushbackSite, caplog: pytest.LogCaptureFixture
) -> None:
    a = site.add("a", pages=12, wall_after=3)
    settings = {
        **ONE_AT_A_TIME,
        "DOWNLOADER_MIDDLEWARES": {TokenAgents: 600},
        "REP_IDENTITY_ACTION": {"identity-changed": "warn"},
    }
    with caplog.at_level(logging.WARNING, logger="scrapy_rep"):
        result = await crawl([a.url_for("/")], settings, follow=True)
    sent = pages(site.log())
    refused = [e for e in sent if e.status == 403]
    assert len({e.user_agent for e in refused}) == len(refused) > 1  # what happens without it
    assert result.stat("rep/identity/identity-changed") == len(refused) - 1
    assert "identity-changed" not in result.dropped.values()
    assert len(warnings(caplog, "identity-changed")) == 1


@pytest_twisted.ensureDeferred
async def test_no_other_proxy_after_a_429_not_even_for_its_retry(
    site: PushbackSite, caplog: pytest.LogCaptureFixture
) -> None:
    # 1 request per 2 s: the second page is refused (Retry-After 1), its retry goes
    # through the other route
    a = site.add("a", pages=6, rate=0.5, burst=1, retry_after=1)
    with RecordingProxy() as proxy, caplog.at_level(logging.WARNING, logger="scrapy_rep"):
        SwitchProxy.proxy, SwitchProxy.count = proxy.url, itertools.count()
        settings = {**ONE_AT_A_TIME, "DOWNLOADER_MIDDLEWARES": {SwitchProxy: 700}}
        result = await crawl([a.url_for("/")], settings, follow=True)
    sent = pages(site.log())
    first = next(e for e in sent if e.status == 429)
    after = sent[sent.index(first) :]
    assert {e.via for e in after} == {first.via}  # the refused route, and only it
    assert {e.via for e in sent[: sent.index(first) + 1]} == {"", VIA}  # it switched before
    changed = [u for u, why in result.dropped.items() if why == "identity-changed"]
    assert first.path in {u.split(str(a.port), 1)[1] for u in changed}  # the retry: stopped
    assert "proxy" in result.decisions[changed[0]]["detail"]
    said = warnings(caplog, "identity-changed")
    assert len(said) == 1 and "secret" not in said[0]


@pytest_twisted.ensureDeferred
async def test_dont_obey_requests_and_rep_disabled_are_not_checked(site: PushbackSite) -> None:
    a = site.add("a", pages=2)
    strict = {
        "DOWNLOADER_MIDDLEWARES": {BrowserAgents: 600},
        "REP_IDENTITY_ACTION": {"token-missing": "drop"},
    }
    free = scrapy.Request(a.url_for("/"), meta={"dont_obey_robotstxt": True})
    result = await crawl([free], strict)
    assert result.downloaded == [a.url_for("/")]
    result = await crawl([a.url_for("/p/0")], {**strict, "REP_ENABLED": False})
    assert result.downloaded == [a.url_for("/p/0")]
    assert result.stat("rep/identity/token-missing") == 0


class Late:
    def process_request(self, request: scrapy.Request, spider: Any = None) -> None:
        return None


@pytest_twisted.ensureDeferred
async def test_a_middleware_ordered_after_the_guard_is_named_at_start(
    site: PushbackSite, caplog: pytest.LogCaptureFixture
) -> None:
    a = site.add("a", pages=1)
    with caplog.at_level(logging.WARNING, logger="scrapy_rep"):
        await crawl([a.url_for("/")], {"DOWNLOADER_MIDDLEWARES": {Late: 2_000_000}})
    said = [r.getMessage() for r in caplog.records if "IdentityGuard" in r.getMessage()]
    assert len(said) == 1 and "tests.integration.test_identity.Late" in said[0]


class TwoProxies:
    """Every other page through proxy A, the others through proxy B, each with its own
    credentials: in the proxy URL (``http://user:pw@host:port``, which Scrapy's
    HttpProxyMiddleware (750) moves into ``Proxy-Authorization``) when ordered before it,
    in a ``Proxy-Authorization`` header of its own when ordered after it (credentials left
    in the URL there make Scrapy's download handler fail: nothing is sent)."""

    proxies: tuple[tuple[str, str], ...] = ()
    in_url = True
    count = itertools.count()

    def process_request(self, request: scrapy.Request, spider: Any = None) -> None:
        if request.url.endswith("/robots.txt"):
            return
        url, user = type(self).proxies[next(type(self).count) % 2]
        if type(self).in_url:
            request.meta["proxy"] = url.replace("http://", f"http://{user}:pw-{user}@")
        else:
            request.meta["proxy"] = url
            request.headers["Proxy-Authorization"] = basic(user)


def basic(user: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:pw-{user}".encode()).decode()


@pytest.mark.parametrize(
    ("priority", "in_url"),
    [
        pytest.param(600, True, id="url-credentials-before-httpproxy"),
        pytest.param(800, False, id="header-after-httpproxy"),
    ],
)
@pytest_twisted.ensureDeferred
async def test_no_other_proxy_after_a_403_even_for_requests_waiting_in_the_slot(
    site: PushbackSite, caplog: pytest.LogCaptureFixture, priority: int, in_url: bool
) -> None:
    """One request at a time per origin, many at once in the crawl: the requests Scrapy
    queues in the origin's download slot passed every downloader middleware (the guard
    too) before the 403 came back; none may leave through the other proxy after it."""
    a = site.add("a", pages=40, fanout=8, wall_after=3)
    with (
        RecordingProxy(via="1.1 proxy-a") as one,
        RecordingProxy(via="1.1 proxy-b") as two,
        caplog.at_level(logging.WARNING, logger="scrapy_rep"),
    ):
        TwoProxies.proxies = ((one.url, "alice"), (two.url, "bob"))
        TwoProxies.in_url, TwoProxies.count = in_url, itertools.count()
        settings = {
            **ONE_AT_A_TIME,
            "CONCURRENT_REQUESTS": 16,
            "DOWNLOAD_DELAY": 0.2,  # the origin's requests wait in its slot, checked already
            "DOWNLOADER_MIDDLEWARES": {TwoProxies: priority},
        }
        result = await crawl([a.url_for("/")], settings, follow=True)
        auth = {"1.1 proxy-a": {p.proxy_authorization for p in one.passed}}
        auth["1.1 proxy-b"] = {p.proxy_authorization for p in two.passed}
    sent = pages(site.log())
    print("site saw:", [(e.path, e.status, e.via) for e in sent])
    assert auth == {"1.1 proxy-a": {basic("alice")}, "1.1 proxy-b": {basic("bob")}}
    assert {e.via for e in sent[:3]} == {"1.1 proxy-a", "1.1 proxy-b"}  # it alternated
    refused = next(e for e in sent if e.status == 403)
    after = sent[sent.index(refused) :]
    assert [e.via for e in after if e.via != refused.via] == []  # the refused proxy only
    changed = [u for u, why in result.dropped.items() if why == "identity-changed"]
    assert changed and result.stat("rep/dropped/identity-changed") == len(changed)
    assert "proxy" in result.decisions[changed[0]]["detail"]
    said = warnings(caplog, "identity-changed")
    assert len(said) == 1 and "pw-" not in said[0]
