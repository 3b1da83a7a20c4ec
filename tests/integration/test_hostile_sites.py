"""Hostile sites, bounded: each attack of issue 36 as a real crawl of loopback origins.

Every bound is asserted from outside: what the site's server was asked for,
the sizes and longest lines of the files the crawl writes (audit log, crawl
log), what a CLI command prints, and the peak RSS of a child crawl where
memory is the claim. Each crawl is small and bounded in time.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any, ClassVar

import pytest
import pytest_twisted
import scrapy
from scrapy.http import Response

from tests.support.crawl import ListSpider, crawl
from tests.support.fakesite import FakeSite, Reply

TDMREP = "/.well-known/tdmrep.json"


def padded_robots(size: int, last: str) -> bytes:
    """A legal robots.txt of about ``size`` bytes: one group, comments, then ``last``."""
    head = b"User-agent: *\nAllow: /\n"
    line = b"# " + b"p" * 76 + b"\n"
    body = head + line * ((size - len(head)) // len(line))
    return body + last.encode() + b"\n"


def large_tdmrep(size: int) -> bytes:
    """A legal tdmrep.json of about ``size`` bytes (nothing reserved where the test looks)."""
    entry = {"location": "/nothing-here/" + "n" * 60, "tdm-reservation": 1}
    one = len(json.dumps(entry)) + 2
    return json.dumps([entry] * (size // one)).encode()


# -- the 500 KiB cap counts its own download's bytes ----------------------------------------------


@pytest_twisted.ensureDeferred
async def test_the_cap_counts_only_its_own_download_when_tdmrep_json_downloads_too(
    site: FakeSite,
) -> None:
    """A 459 KB robots.txt ending in ``Disallow: /private`` is read whole beside a large
    tdmrep.json (before: the two fetchers each counted every chunk, the cap fired at half,
    the last line was lost and /private was downloaded)."""
    robots = padded_robots(459_000, "Disallow: /private")
    assert 450_000 < len(robots) < 500 * 1024
    origin = site.add("big").robots(Reply(body=robots))
    # the tdmrep.json answers late, so its fetcher is listening while robots.txt arrives
    origin.page(TDMREP, Reply(body=large_tdmrep(450_000), delay=1.0))
    settings: dict[str, Any] = {"REP_USES": ["train-ai"]}
    result = await crawl([origin.url_for("/private"), origin.url_for("/open")], settings)
    assert origin.hits(TDMREP) == 1
    assert origin.hits("/open") == 1
    assert origin.hits("/private") == 0, "the last rule of a 459 KB robots.txt was lost"
    assert result.dropped[origin.url_for("/private")] == "disallow-rule"
    assert not result.stat("rep/fetch/truncated")


# -- Crawl-delay paces its origin, never a neighbour sharing its download slot --------------------


class SlotDelaySpider(ListSpider):
    """Notes, for each response, the download slot it came through and that slot's delay."""

    name = "slot-delays"

    def __init__(self, **kw: Any) -> None:
        super().__init__(**kw)
        self.slots: dict[str, tuple[str, float]] = {}

    def parse(self, response: Response) -> Iterator[scrapy.Request]:
        key = response.meta["download_slot"]
        slot = self.crawler.engine.downloader.slots[key]
        self.slots[response.url] = (key, slot.delay)
        yield from super().parse(response)


@pytest.mark.filterwarnings("ignore:The CONCURRENT_REQUESTS_PER_IP setting is deprecated")
@pytest.mark.parametrize("per_ip", [0, 4], ids=["per-host", "per-ip"])
@pytest_twisted.ensureDeferred
async def test_a_crawl_delay_never_paces_a_co_hosted_origin(site: FakeSite, per_ip: int) -> None:
    """Two origins on one IP address (one host, two ports) share Scrapy's download slot
    (by host, or by IP under CONCURRENT_REQUESTS_PER_IP): one's Crawl-delay paced both."""
    slow = site.add("slow").robots(Reply(body=b"User-agent: *\nCrawl-delay: 1\n"))
    quick = site.add("quick").robots(Reply(body=b"User-agent: *\nAllow: /\n"))
    assert slow.host == quick.host
    urls = [slow.url_for("/1"), slow.url_for("/2")] + [quick.url_for(f"/{n}") for n in range(4)]
    settings: dict[str, Any] = {"CONCURRENT_REQUESTS_PER_IP": per_ip}
    if per_ip:  # Scrapy's downloader-aware queue does not take per-IP slots
        settings["SCHEDULER_PRIORITY_QUEUE"] = "scrapy.pqueues.ScrapyPriorityQueue"
    result = await crawl(urls, settings, spider=SlotDelaySpider)
    assert sorted(result.downloaded) == sorted(urls)
    assert result.crawler is not None
    spider = result.crawler.spider
    assert isinstance(spider, SlotDelaySpider)
    slow_slots = {spider.slots[u] for u in urls[:2]}
    quick_slots = {spider.slots[u] for u in urls[2:]}
    assert all(delay >= 1 for _key, delay in slow_slots)
    assert all(delay == 0 for _key, delay in quick_slots), "paced by its neighbour's robots.txt"
    assert not {k for k, _ in slow_slots} & {k for k, _ in quick_slots}


# -- a robots.txt redirect off allowed_domains is filtered as offsite ------------------------------


class AllowedSpider(ListSpider):
    """A spider kept to 127.0.0.1 by ``allowed_domains`` (Scrapy's OffsiteMiddleware)."""

    name = "allowed"
    allowed_domains: ClassVar[list[str]] = ["127.0.0.1"]


@pytest_twisted.ensureDeferred
async def test_a_robots_txt_redirect_off_allowed_domains_is_not_followed(site: FakeSite) -> None:
    """A site redirects its robots.txt to an internal host the spider may not visit: the hop
    is filtered as Scrapy's OffsiteMiddleware filters it (before: it was requested)."""
    internal = site.add("internal", host="127.0.0.2").robots(
        Reply(body=b"User-agent: *\nDisallow: /\n")
    )
    public = site.add("public").robots(Reply(status=302, redirect_to=internal.robots_url))
    pages = [public.url_for("/a"), public.url_for("/b")]
    result = await crawl(pages, spider=AllowedSpider)
    assert internal.hits() == 0, "an offsite host was requested for robots.txt"
    assert public.hits("/robots.txt") == 1
    assert sorted(result.downloaded) == pages  # unavailable, as Scrapy's own middleware has it
    assert result.stat("rep/fetch/outcome/offsite") == 1
    record = result.decisions[pages[0]]
    assert record["policy_status"] == "unavailable"
    assert record["policy_http_status"] == 302
    assert "127.0.0.2" in record["detail"] and "offsite" in record["detail"]


@pytest_twisted.ensureDeferred
async def test_a_robots_txt_redirect_within_allowed_domains_is_followed(site: FakeSite) -> None:
    moved = site.add("moved").robots(Reply(body=b"User-agent: *\nDisallow: /b\n"))
    public = site.add("public").robots(Reply(status=301, redirect_to=moved.robots_url))
    pages = [public.url_for("/a"), public.url_for("/b")]
    result = await crawl(pages, spider=AllowedSpider)
    assert moved.hits("/robots.txt") == 1
    assert result.downloaded == [pages[0]]
    assert result.dropped[pages[1]] == "disallow-rule"
