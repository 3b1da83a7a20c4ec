"""robots.txt goes through the proxy of the request it is fetched for, with its credentials.

A real crawl, a real (tiny) forwarding proxy on loopback that records what
passed through it, and origins that see whether a request came through it.
"""

from __future__ import annotations

import base64

import pytest_twisted
import scrapy

from tests.support.crawl import crawl
from tests.support.fakesite import FakeSite, Reply
from tests.support.proxy import VIA, RecordingProxy

RULES = b"User-agent: *\nDisallow: /private\n"
BASIC = "Basic " + base64.b64encode(b"user:secret").decode()


def via_proxy(site_hits: list[object]) -> list[bool]:
    return [getattr(h, "headers", {}).get("Via") == VIA for h in site_hits]


@pytest_twisted.ensureDeferred
async def test_robots_txt_takes_the_proxy_and_credentials_in_meta(site: FakeSite) -> None:
    a = site.add("a").robots(Reply(body=RULES))
    with RecordingProxy() as proxy:
        address = proxy.url.replace("http://", "http://user:secret@")
        pages = [
            scrapy.Request(a.url_for(path), meta={"proxy": address}) for path in ("/x", "/private")
        ]
        result = await crawl(pages)
        passed = list(proxy.passed)
    assert result.downloaded == [a.url_for("/x")]
    assert result.dropped == {a.url_for("/private"): "disallow-rule"}
    assert [(p.url, p.proxy_authorization) for p in passed] == [
        (a.robots_url, BASIC),
        (a.url_for("/x"), BASIC),
    ]
    assert via_proxy(a.requests("/robots.txt")) == [True]  # never straight from the crawler


@pytest_twisted.ensureDeferred
async def test_robots_txt_takes_a_proxy_authorization_header_set_by_hand(site: FakeSite) -> None:
    a = site.add("a").robots(Reply(body=RULES))
    with RecordingProxy() as proxy:
        page = scrapy.Request(
            a.url_for("/x"),
            meta={"proxy": proxy.url},
            headers={"Proxy-Authorization": BASIC},
        )
        result = await crawl([page])
        passed = list(proxy.passed)
    assert result.downloaded == [a.url_for("/x")]
    assert [(p.url, p.proxy_authorization) for p in passed] == [
        (a.robots_url, BASIC),
        (a.url_for("/x"), BASIC),
    ]


@pytest_twisted.ensureDeferred
async def test_a_refetch_for_held_requests_takes_their_proxy(site: FakeSite) -> None:
    """503, then the file: the refetch made for the parked request goes through its proxy too."""
    a = site.add("a").robots(Reply(status=503), Reply(body=RULES))
    with RecordingProxy() as proxy:
        page = scrapy.Request(a.url_for("/x"), meta={"proxy": proxy.url})
        result = await crawl([page], {"REP_PAUSE_INITIAL": 0.5})
        urls = proxy.urls()
    assert result.downloaded == [a.url_for("/x")]
    assert urls == [a.robots_url, a.robots_url, a.url_for("/x")]
    assert via_proxy(a.requests("/robots.txt")) == [True, True]


@pytest_twisted.ensureDeferred
async def test_without_a_proxy_robots_txt_is_fetched_directly(site: FakeSite) -> None:
    a = site.add("a").robots(Reply(body=RULES))
    result = await crawl([a.url_for("/x")])
    assert result.downloaded == [a.url_for("/x")]
    assert via_proxy(a.requests("/robots.txt")) == [False]
