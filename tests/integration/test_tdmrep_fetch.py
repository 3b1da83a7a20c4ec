"""Fetching tdmrep.json: once per origin, its own status table, the shared store (real crawls)."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from pathlib import Path
from typing import Any

import pytest
import pytest_twisted
from scrapy.http import Response

from scrapy_rep.core.origin import origin_of
from scrapy_rep.core.policy import FetchResult
from scrapy_rep.crawl import graph
from scrapy_rep.crawl.tdmrep import TdmRep
from tests.support.crawl import CrawlResult, ListSpider, crawl
from tests.support.fakesite import FakeSite, Origin, Reply
from tests.support.store_cli import store_cli

#: how long a running crawl may take to hear of a forgotten origin (it polls every second)
WAIT = 10.0
TDMREP = "/.well-known/tdmrep.json"
RESERVED = json.dumps([{"location": "/reserved/*", "tdm-reservation": 1}]).encode()
PAGES = [f"/reserved/{n}" for n in range(6)] + [f"/open/{n}" for n in range(6)]


def origin_with(site: FakeSite, *tdmrep: Reply) -> Origin:
    origin = site.add("press").robots(Reply(body=b"User-agent: *\nAllow: /\n"))
    if tdmrep:
        origin.page(TDMREP, *tdmrep)
    return origin


async def crawl_pages(origin: Origin, **settings: Any) -> CrawlResult:
    return await crawl(
        [origin.url_for(p) for p in PAGES],
        {"REP_USES": ["train-ai"], "REP_USE_ACTION": "drop", **settings},
    )


def train_ai(result: CrawlResult, path: str, origin: Origin) -> dict[str, str] | None:
    decision = result.decisions[origin.url_for(path)]
    uses: dict[str, dict[str, str]] = decision.get("uses") or {}
    return uses.get("train-ai")


@pytest_twisted.ensureDeferred
async def test_a_2xx_file_is_fetched_once_for_all_pages_and_reserved_paths_are_not(
    site: FakeSite,
) -> None:
    origin = origin_with(site, Reply(body=RESERVED))
    result = await crawl_pages(origin)
    assert origin.hits(TDMREP) == 1
    assert sorted(p for p in origin.hit_paths() if p.startswith(("/open", "/reserved"))) == sorted(
        p for p in PAGES if p.startswith("/open")
    )
    assert result.stat("rep/tdmrep/fetch/outcome/2xx") == 1
    assert result.stat("rep/tdmrep/with_rules") == 1
    assert result.stat("rep/dropped/use-refused") == 6


@pytest.mark.parametrize(
    "reply",
    [Reply(status=404), Reply(status=403), Reply(status=429), Reply(status=401)],
    ids=["404", "403", "429", "401"],
)
@pytest_twisted.ensureDeferred
async def test_a_4xx_means_no_reservation(site: FakeSite, reply: Reply) -> None:
    origin = origin_with(site, reply)
    result = await crawl_pages(origin)
    assert all(origin.hits(p) == 1 for p in PAGES)
    assert origin.hits(TDMREP) == 1
    said = train_ai(result, "/reserved/1", origin)
    assert said is not None and said["answer"] == "unknown"  # the file says nothing
    assert not said["source"].startswith("tdmrep.json")
    assert not any(key.startswith("rep/pauses") for key in result.stats)


@pytest.mark.parametrize("reply", [Reply(status=503), Reply(reset=True)], ids=["503", "network"])
@pytest_twisted.ensureDeferred
async def test_a_5xx_or_network_error_leaves_train_ai_unknown_and_never_pauses(
    site: FakeSite, reply: Reply
) -> None:
    origin = origin_with(site, reply)
    result = await crawl_pages(origin)
    assert all(origin.hits(p) == 1 for p in PAGES)  # nothing held, nothing dropped
    assert origin.hits(TDMREP) == 1  # and not refetched before the next TTL
    said = train_ai(result, "/reserved/1", origin)
    assert said is not None and said["answer"] == "unknown"
    assert said["source"].startswith("tdmrep.json ") and "unknown until refetched" in said["source"]
    assert result.stat("rep/tdmrep/unknown") == 1
    # (requests beyond half of CONCURRENT_REQUESTS park while robots.txt is on its way:
    # origin-pending, not a pause)
    assert not any(
        key.startswith(("rep/pauses", "rep/parked/origin-paused")) for key in result.stats
    )


@pytest_twisted.ensureDeferred
async def test_a_broken_file_says_nothing_and_is_reported_once(
    site: FakeSite, caplog: pytest.LogCaptureFixture
) -> None:
    # served as JSON: an HTML page (a soft 404) is no file, said once at close (test_quiet_logs)
    origin = origin_with(
        site, Reply(body=b"<html>not json</html>", headers={"Content-Type": "application/json"})
    )
    with caplog.at_level(logging.WARNING, logger="scrapy_rep"):
        result = await crawl_pages(origin)
    assert all(origin.hits(p) == 1 for p in PAGES)
    assert result.stat("rep/tdmrep/with_diagnostics") == 1
    said = [r.getMessage() for r in caplog.records if "tdmrep.json" in r.getMessage()]
    assert len(said) == 1 and "tdmrep.json not JSON" in said[0]


@pytest_twisted.ensureDeferred
async def test_a_redirected_file_is_followed(site: FakeSite) -> None:
    origin = origin_with(site, Reply(status=301, redirect_to="/tdm/rules.json"))
    origin.page("/tdm/rules.json", Reply(body=RESERVED))
    result = await crawl_pages(origin)
    assert origin.hits("/tdm/rules.json") == 1
    assert train_ai(result, "/reserved/2", origin) == {
        "answer": "refused",
        "source": "tdmrep.json location /reserved/*",
    }


def sqlite_store(path: Path) -> dict[str, Any]:
    """Settings for a crawl on the SQLite policy file at ``path``."""
    return {"REP_STORE": f"sqlite:{path}"}


@pytest_twisted.ensureDeferred
async def test_a_shared_store_keeps_the_file_for_the_next_crawl(
    site: FakeSite, tmp_path: Path
) -> None:
    origin = origin_with(site, Reply(body=RESERVED))
    store = sqlite_store(tmp_path / "policies.sqlite")
    await crawl_pages(origin, **store)
    second = await crawl_pages(origin, **store)
    assert origin.hits(TDMREP) == 1 and origin.hits("/robots.txt") == 1
    assert second.stat("rep/dropped/use-refused") == 6
    assert second.stat("rep/tdmrep/fetch/count") == 0


def forget(origin: Origin, path: Path) -> None:
    """``scrapy-rep store forget ORIGIN --sqlite PATH``, as an operator runs it."""
    done = store_cli("forget", origin.url, "--sqlite", str(path))
    assert done.returncode == 0 and f"forgot {origin.url}" in done.stdout, done.stderr


@pytest_twisted.ensureDeferred
async def test_an_origin_forgotten_in_the_store_has_its_tdmrep_json_fetched_again(
    site: FakeSite, tmp_path: Path
) -> None:
    origin, path = origin_with(site, Reply(body=RESERVED)), tmp_path / "policies.sqlite"
    await crawl_pages(origin, **sqlite_store(path))
    forget(origin, path)
    second = await crawl_pages(origin, **sqlite_store(path))
    assert origin.hits(TDMREP) == 2 and origin.hits("/robots.txt") == 2
    assert second.stat("rep/tdmrep/fetch/count") == 1
    assert second.stat("rep/dropped/use-refused") == 6


class ForgettingSpider(ListSpider):
    """Crawls the first page, has the operator forget its origin, then the others."""

    async def start(self) -> Any:
        yield self.request(self.urls[0])

    async def parse(self, response: Response) -> Any:  # type: ignore[override]
        for output in super().parse(response):
            yield output
        if response.url != self.urls[0]:
            return
        origin = origin_of(response.url)
        await asyncio.to_thread(forget, self.site_origin, self.store_path)
        service = graph.of(self.crawler)
        assert service.tdmrep is not None
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline and (
            service.resolver.current(origin) is not None
            or service.tdmrep.resolver.current(origin) is not None
        ):
            await asyncio.sleep(0.05)  # the crawl's store reads the file's invalidations
        for url in self.urls[1:]:
            yield self.request(url)


@pytest_twisted.ensureDeferred
async def test_a_running_crawl_told_to_forget_an_origin_fetches_its_tdmrep_json_again(
    site: FakeSite, tmp_path: Path
) -> None:
    origin, path = origin_with(site, Reply(body=RESERVED)), tmp_path / "policies.sqlite"
    result = await crawl(
        [origin.url_for(p) for p in ["/open/first", *PAGES]],
        {"REP_USES": ["train-ai"], "REP_USE_ACTION": "drop", **sqlite_store(path)},
        spider=ForgettingSpider,
        site_origin=origin,
        store_path=path,
    )
    assert origin.hits(TDMREP) == 2 and origin.hits("/robots.txt") == 2
    assert result.stat("rep/tdmrep/fetch/count") == 2
    assert result.stat("rep/dropped/use-refused") == 6


@pytest_twisted.ensureDeferred
async def test_a_fetch_that_fails_unexpectedly_leaves_train_ai_unknown_and_is_said(
    site: FakeSite, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    async def broken(self: Any, origin: str, validators: Any = None) -> FetchResult:
        raise RuntimeError("a bug, not the site")

    monkeypatch.setattr(TdmRep, "_fetch", broken)
    origin = origin_with(site, Reply(body=RESERVED))
    with caplog.at_level(logging.WARNING, logger="scrapy_rep"):
        result = await crawl_pages(origin)
    assert all(origin.hits(p) == 1 for p in PAGES)
    said = train_ai(result, "/reserved/1", origin)  # a network error, named after the exception
    assert said == {
        "answer": "unknown",
        "source": "tdmrep.json network: unknown until refetched",
    }
    assert any("tdmrep.json failed with RuntimeError" in r.getMessage() for r in caplog.records)
