"""More active origins than the cache holds: no robots.txt is fetched again within its TTL.

2,000 origins over a cache of 500, visited round-robin twice: each robots.txt
is fetched once, whether the store answers for an evicted origin (SQLite,
Redis) or the cache keeps it compact (no shared store); and the close report
counts 2,000 origins. Driven in-process through the fetch seam, then once as
a real crawl of loopback origins at a smaller scale.

And what a cache of hostile files holds, traced (tracemalloc makes it ~15 times
slower than the cache itself, so it is here, out of the quick loop): within its
byte budgets.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import random
import tracemalloc
from collections import Counter
from collections.abc import Awaitable
from pathlib import Path
from typing import TypeVar

import pytest
import pytest_twisted
from twisted.internet.defer import Deferred

from scrapy_rep.core.decision import judge_record
from scrapy_rep.core.policy import (
    Conditional,
    FetchResult,
    PolicyConfig,
    Status,
    next_policy,
)
from scrapy_rep.core.report import CrawlCounts, report_lines
from scrapy_rep.runtime.resolver import Resolver
from scrapy_rep.runtime.settings import TUNE
from scrapy_rep.runtime.store.base import SharedStore
from scrapy_rep.runtime.store.memory import EVICTED_PER_CACHED, PolicyCache
from scrapy_rep.runtime.store.redis import RedisStore
from scrapy_rep.runtime.store.sqlite import SqliteStore
from tests.support.clock import ManualClock
from tests.support.crawl import crawl
from tests.support.fakesite import FakeSite, Reply
from tests.support.steps import StepSpider

T = TypeVar("T")
ORIGINS = [f"http://o{n}.example:80" for n in range(2_000)]
BOUND = 500


def aio(coro: Awaitable[T]) -> Deferred[T]:
    return Deferred.fromFuture(asyncio.ensure_future(coro))


class CountingFetch:
    """Every origin serves its own file (a rule naming it); counts fetches per origin."""

    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()

    async def __call__(self, origin: str, validators: Conditional | None = None) -> FetchResult:
        self.calls[origin] += 1
        url = f"{origin}/robots.txt"
        body = f"User-agent: *\nDisallow: /{origin.split('//')[1].split('.')[0]}/\n".encode()
        return FetchResult(url, url, status=200, body=body)


async def round_robin_twice(resolver: Resolver, fetch: CountingFetch, counts: CrawlCounts) -> None:
    """As the middleware does: the cached policy if fresh, else the resolver's; then judge."""
    for _ in range(2):
        for origin in ORIGINS:
            policy = resolver.current(origin)
            if policy is None or not policy.fresh(resolver.clock()):
                policy = await resolver.resolve(origin, fetch)
            assert policy.status is Status.OK
            name = origin.split("//")[1].split(".")[0]
            robots = resolver.cache.robots(policy)
            record = judge_record(origin, "testbot", f"{origin}/{name}/x", policy, robots)
            assert record["rep_decision"] == "disallow"  # the origin's own rules, parsed again
            counts.fetched(origin, policy.status.value)


def each_fetched_once(fetch: CountingFetch) -> None:
    assert len(fetch.calls) == len(ORIGINS)
    assert set(fetch.calls.values()) == {1}, "an evicted origin's robots.txt was fetched again"


@pytest_twisted.ensureDeferred
async def test_without_a_store_evicted_origins_are_kept_compact() -> None:
    cache = PolicyCache(BOUND, evicted_max=EVICTED_PER_CACHED * BOUND)
    resolver = Resolver(cache, PolicyConfig(), ManualClock().now)
    fetch, counts = CountingFetch(), CrawlCounts(BOUND)
    await aio(round_robin_twice(resolver, fetch, counts))
    each_fetched_once(fetch)
    assert len(cache) == BOUND and cache.restored == len(ORIGINS)
    assert counts.seen == len(ORIGINS) and counts.evicted > len(ORIGINS)
    assert report_lines(counts)[0].startswith("scrapy-rep report: 2000 origins")


async def _with_store(store: SharedStore) -> None:
    cache = PolicyCache(BOUND)  # nothing kept past the bound: the store answers
    resolver = Resolver(cache, PolicyConfig(), ManualClock().now, shared=store)
    fetch, counts = CountingFetch(), CrawlCounts(BOUND)
    try:
        await round_robin_twice(resolver, fetch, counts)
    finally:
        await store.close()
    each_fetched_once(fetch)
    assert cache.evicted == 0 and cache.restored == 0
    assert counts.seen == len(ORIGINS)


@pytest_twisted.ensureDeferred
async def test_with_sqlite_the_store_answers_for_evicted_origins(tmp_path: Path) -> None:
    await aio(_with_store(SqliteStore(tmp_path / "policies.sqlite")))


@pytest_twisted.ensureDeferred
async def test_with_redis_the_store_answers_for_evicted_origins(redis_server: str) -> None:
    await aio(_with_store(RedisStore.from_url(redis_server)))


@pytest_twisted.ensureDeferred
async def test_a_crawl_past_the_bound_fetches_each_robots_txt_once(
    site: FakeSite, caplog: pytest.LogCaptureFixture
) -> None:
    """A real crawl: 24 loopback origins, a cache of 6, two pages each, one after another."""
    origins = [
        site.add(f"o{n}").robots(Reply(body=b"User-agent: *\nDisallow: /x\n")) for n in range(24)
    ]
    pages = [o.url_for(f"/round{r}") for r in (1, 2) for o in origins]
    clock = ManualClock()
    with caplog.at_level(logging.INFO, logger="scrapy_rep"):
        result = await crawl(
            pages,
            {"REP_CLOCK": clock.now, TUNE: {"cache_max_origins": 6}},
            spider=StepSpider,
            advances=[1.0] * (len(pages) - 1),
            clock=clock,
        )
    assert sorted(result.downloaded) == sorted(pages)
    assert [o.hits("/robots.txt") for o in origins] == [1] * len(origins)
    assert result.stat("rep/fetch/count") == len(origins)
    report = next(r.getMessage() for r in caplog.records if "scrapy-rep report:" in r.getMessage())
    assert report.startswith(f"scrapy-rep report: {len(origins)} origins, {len(pages)} requests")


# -- the bytes a cache of hostile files holds ---------------------------------------------


def _hostile(n: int, size: int) -> bytes:
    """A distinct hostile file of about ``size`` octets, by shape: incompressible text,
    root wildcards × keys, plain rules, anchored wildcards."""
    rng = random.Random(n)
    shape = n % 4
    lines = ["User-agent: *"]
    total = 0
    k = 0
    if shape == 0:  # incompressible: random octets after a comment sign
        noise = rng.randbytes(size).replace(b"\n", b"#").replace(b"\r", b"#")
        return b"User-agent: *\nDisallow: /private\n# " + noise
    while total < size:
        if shape == 1:
            line = f"Allow: /*a{n}x{k}" if k % 2 else f"Allow: /a{n}x{k}*"
        elif shape == 2:
            line = f"Disallow: /{n}p{k}"
        else:
            line = f"Allow: /*{n}x{k}$"
        lines.append(line)
        total += len(line) + 1
        k += 1
    return ("\n".join(lines) + "\n").encode()


def test_a_cache_of_hostile_files_stays_within_its_bytes() -> None:
    # 32 distinct ~100 KB hostile files, each compiled and judged: what the cache holds
    # (tracemalloc) stays within what it counts, which stays within its budgets.
    max_bytes, compiled_bytes = 512 * 1024, 4 * 2**20
    gc.collect()
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        cache = PolicyCache(
            max_origins=1_000_000,
            evicted_max=3_000_000,
            max_bytes=max_bytes,
            compiled_bytes=compiled_bytes,
        )
        largest = 0
        for n in range(32):
            origin = f"http://h{n}.example"
            url = f"{origin}/robots.txt"
            fetch = FetchResult(url, url, 200, _hostile(n, 100_000))
            cache.put(origin, next_policy(None, fetch, 0.0, PolicyConfig()))
            policy = cache.get(origin)
            assert policy is not None
            robots = cache.robots(policy)
            assert robots is not None
            robots.prepare("mybot")
            for k in range(0, 4000, 97):
                robots.allowed("mybot", f"{origin}/a{n}x{k}/" + "y" * 300)
            largest = max(largest, robots.footprint)
        gc.collect()
        held = tracemalloc.get_traced_memory()[0] - base
    finally:
        tracemalloc.stop()
    assert cache.evictions > 0  # the bytes evicted origins, not the count
    assert cache._bytes <= max_bytes
    assert cache._evicted_bytes <= max_bytes
    assert cache.window_bytes <= compiled_bytes + largest
    # the documented bound: cache + evicted keep + window (+ the file judged last)
    bound = max_bytes + max_bytes + compiled_bytes + largest
    assert held <= bound, (held, bound)
    assert held <= cache.size + largest + 256 * 1024, (held, cache.size)
