"""RedisStore against a real redis-server: its hashes and keys, retention as a TTL, outages,
the cluster's send times and held requests (what every store promises: test_store_contract.py).

These run in the test process on the asyncio reactor; coroutines of
``redis.asyncio`` are awaited through :func:`aio`.
"""

from __future__ import annotations

import asyncio
import logging
import subprocess
import time
import zlib
from collections.abc import Awaitable, Callable
from dataclasses import replace
from pathlib import Path
from typing import TypeVar

import pytest
import pytest_twisted
import redis
from twisted.internet.defer import Deferred

from scrapy_rep.core.origin import origin_of
from scrapy_rep.core.pace import Spacing
from scrapy_rep.core.policy import FetchResult, PolicyConfig, Status
from scrapy_rep.runtime.resolver import Resolver
from scrapy_rep.runtime.store.memory import PolicyCache
from scrapy_rep.runtime.store.redis import SCHEMA, RedisStore, encode
from tests.support import processes
from tests.support.crawl import crawl
from tests.support.fakesite import FakeSite, Reply
from tests.support.policies import BODY, bare_policy, full_policy
from tests.support.redis_fixture import RedisServer

T = TypeVar("T")
ORIGIN = "https://example.com:443"


def aio(coro: Awaitable[T]) -> Deferred[T]:
    """Await an asyncio coroutine from a pytest-twisted test."""
    return Deferred.fromFuture(asyncio.ensure_future(coro))


async def eventually(check: Callable[[], Awaitable[bool]], timeout: float = 5.0) -> bool:
    """Poll ``check`` every 20 ms until it is true or ``timeout`` passes (bounded)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if await check():
            return True
        await asyncio.sleep(0.02)
    return False


@pytest.fixture
def store(redis_server: str) -> RedisStore:
    return RedisStore.from_url(redis_server)


@pytest.fixture
def sync(redis_server: str) -> redis.Redis:
    """A plain client for looking at the raw keys."""
    return redis.Redis.from_url(redis_server)


# What every shared store does is in test_store_contract.py; here, how Redis keeps it.


@pytest_twisted.ensureDeferred
async def test_a_policy_is_one_hash_with_its_body_compressed(
    store: RedisStore, sync: redis.Redis
) -> None:
    try:
        await aio(store.save(ORIGIN, full_policy()))
        await aio(store.save("http://h:80", bare_policy()))
        raw = sync.hgetall(f"scrapy-rep:v1:policy:{ORIGIN}")
        assert raw[b"schema"] == str(SCHEMA).encode()
        assert zlib.decompress(raw[b"body"]) == BODY
        assert len(raw[b"body"]) < len(BODY) / 5  # stored compressed
        assert b"body" not in sync.hgetall("scrapy-rep:v1:policy:http://h:80")  # None, not b""
    finally:
        await aio(store.close())


@pytest_twisted.ensureDeferred
async def test_keys_are_versioned_under_the_prefix(
    redis_server: str, sync: redis.Redis, caplog: pytest.LogCaptureFixture
) -> None:
    store = RedisStore.from_url(redis_server, prefix="crawl7")
    try:
        await aio(store.save(ORIGIN, full_policy()))
        await aio(store.acquire(ORIGIN, 10))
        keys = sorted(k.decode() for k in sync.keys("*"))
        assert keys == [f"crawl7:v1:lock:{ORIGIN}", f"crawl7:v1:policy:{ORIGIN}"]
        assert await aio(store.load(ORIGIN)) == full_policy()
        sync.hset(f"crawl7:v1:policy:{ORIGIN}", "schema", "2")  # read from the prefixed key
        with caplog.at_level(logging.WARNING, logger="scrapy_rep.runtime.store.redis"):
            assert await aio(store.load(ORIGIN)) is None
        assert "schema" in caplog.text
    finally:
        await aio(store.close())


@pytest_twisted.ensureDeferred
async def test_the_lock_is_a_key_holding_its_owners_token_with_a_ttl(
    store: RedisStore, sync: redis.Redis
) -> None:
    try:
        token = await aio(store.acquire(ORIGIN, 30))
        assert token is not None
        assert sync.get(f"scrapy-rep:v1:lock:{ORIGIN}") == token.encode()
        assert 0 < sync.pttl(f"scrapy-rep:v1:lock:{ORIGIN}") <= 30_000
        await aio(store.unlock(ORIGIN, "someone-else"))
        assert sync.get(f"scrapy-rep:v1:lock:{ORIGIN}") == token.encode()
        await aio(store.unlock(ORIGIN, token))
        assert sync.get(f"scrapy-rep:v1:lock:{ORIGIN}") is None
    finally:
        await aio(store.close())


@pytest_twisted.ensureDeferred
async def test_flush_deletes_only_this_layouts_keys(store: RedisStore, sync: redis.Redis) -> None:
    try:
        await aio(store.save(ORIGIN, bare_policy()))
        await aio(store.acquire("http://i:80", 30))
        sync.set("unrelated", "1")
        sync.set("scrapy-rep:v2:policy:x", "1")  # another layout version: not ours
        assert await aio(store.flush()) == 2  # a policy and a lock
        assert sorted(sync.keys("*")) == [b"scrapy-rep:v2:policy:x", b"unrelated"]
    finally:
        await aio(store.close())


@pytest_twisted.ensureDeferred
async def test_show_names_the_key(store: RedisStore) -> None:
    try:
        await aio(store.save(ORIGIN, full_policy()))
        assert (await aio(store.show(ORIGIN)))["key"] == f"scrapy-rep:v1:policy:{ORIGIN}"
    finally:
        await aio(store.close())


@pytest_twisted.ensureDeferred
async def test_retention_is_the_key_ttl_not_the_freshness(
    redis_server: str, sync: redis.Redis
) -> None:
    now = time.time()
    store = RedisStore.from_url(redis_server, retention=3600)
    try:
        fresh_for_a_minute = replace(full_policy(), fetched_at=now, expires_at=now + 60)
        await aio(store.save(ORIGIN, fresh_for_a_minute))
        ttl = sync.pttl(f"scrapy-rep:v1:policy:{ORIGIN}") / 1000
        assert 3000 < ttl <= 3600  # kept an hour, although stale after a minute
        # a pause longer than the retention keeps the entry at least until it ends
        paused_for_two_hours = replace(bare_policy(), fetched_at=now, expires_at=now + 7200)
        await aio(store.save("http://h:80", paused_for_two_hours))
        assert sync.pttl("scrapy-rep:v1:policy:http://h:80") / 1000 > 7200
        # the default retention is 30 days
        default = RedisStore.from_url(redis_server)
        await aio(default.save("http://d:80", fresh_for_a_minute))
        assert sync.pttl("scrapy-rep:v1:policy:http://d:80") / 1000 > 29 * 86_400
        await aio(default.close())
    finally:
        await aio(store.close())


def test_cli_show_forget_flush(redis_server: str) -> None:
    """``scrapy-rep store ...`` end to end, as an operator runs it."""
    sync = redis.Redis.from_url(redis_server)
    sync.hset(
        f"scrapy-rep:v1:policy:{ORIGIN}",
        mapping=encode(full_policy(), saved_at=0.0),  # type: ignore[arg-type]
    )

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return processes.run("scrapy_rep.cli", ["store", *args], cwd=Path.cwd(), timeout=30)

    shown = cli("show", "https://EXAMPLE.com/any/page", "--redis-url", redis_server)
    assert shown.returncode == 0, shown.stderr
    assert '"http_status": "503"' in shown.stdout
    assert cli("--redis-url", redis_server, "show", "http://nothing.here").returncode == 1
    forgot = cli("forget", ORIGIN, "--redis-url", redis_server)
    assert forgot.returncode == 0 and "forgot https://example.com:443" in forgot.stdout
    assert sync.exists(f"scrapy-rep:v1:policy:{ORIGIN}") == 0
    sync.set("scrapy-rep:v1:lock:x", "t")
    flushed = cli("flush", "--redis-url", redis_server)
    assert flushed.returncode == 0 and "deleted 1 keys" in flushed.stdout
    down = cli("flush", "--redis-url", "redis://127.0.0.1:1")
    assert down.returncode == 2 and "ConnectionError" in down.stderr
    assert "Traceback" not in down.stderr


# -- the resolver on top of the store: what a worker does --------------------------------


def ok_result(origin: str) -> FetchResult:
    return FetchResult(f"{origin}/robots.txt", f"{origin}/robots.txt", 200, b"Disallow: /x\n")


@pytest_twisted.ensureDeferred
async def test_store_down_falls_back_to_local(caplog: pytest.LogCaptureFixture) -> None:
    """No Redis at all: a WARNING, a local fetch, a policy; no exception."""
    fetched: list[str] = []

    async def fetch(origin: str, validators: object = None) -> FetchResult:
        fetched.append(origin)
        return ok_result(origin)

    store = RedisStore.from_url("redis://127.0.0.1:1/0", timeout=1.0)
    resolver = Resolver(PolicyCache(), PolicyConfig(), time.time, shared=store)
    try:
        with caplog.at_level(logging.WARNING):
            policy = await aio(resolver.resolve(ORIGIN, fetch))
        assert policy.status is Status.OK and fetched == [ORIGIN]
        assert "shared policy store failed" in caplog.text
    finally:
        await aio(store.close())


@pytest_twisted.ensureDeferred
async def test_an_outage_warns_once_and_recovery_is_noticed(
    redis_process: RedisServer, caplog: pytest.LogCaptureFixture
) -> None:
    fetched: list[str] = []

    async def fetch(origin: str, validators: object = None) -> FetchResult:
        fetched.append(origin)
        return ok_result(origin)

    store = RedisStore.from_url(redis_process.url, timeout=1.0)
    resolver = Resolver(PolicyCache(), PolicyConfig(), time.time, shared=store)
    try:
        with caplog.at_level(logging.INFO, logger="scrapy_rep"):
            await aio(resolver.resolve("http://before:80", fetch))
            redis_process.stop()
            for n in range(3):
                await aio(resolver.resolve(f"http://during{n}:80", fetch))
            warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
            assert len(warnings) == 1 and "shared policy store failed" in warnings[0].message
            redis_process.start()
            await aio(resolver.resolve("http://after:80", fetch))
        assert "the shared policy store answers again" in caplog.text
        assert len(fetched) == 5  # every origin was fetched; none was left unjudged
        assert await aio(store.load("http://after:80")) is not None  # saved again
    finally:
        await aio(store.close())


@pytest_twisted.ensureDeferred
async def test_requests_waiting_on_another_workers_lock_are_downloaded(
    site: FakeSite, redis_server: str
) -> None:
    """A real crawl that waits longer than REP_PENDING_WAIT for someone else's fetch.

    Its requests are parked ``origin-pending``; when the lock expires it fetches,
    and the parked requests must be released, not parked again.
    """
    a = site.add("a").robots(Reply(body=b"User-agent: *\nDisallow: /private\n"))
    other = RedisStore.from_url(redis_server)
    try:
        # "fetching" for longer than a loaded machine takes to start the crawl
        assert await aio(other.acquire(origin_of(a.url), 4.0)) is not None
    finally:
        await aio(other.close())
    settings = {
        "REP_STORE": redis_server,
        "REP_PENDING_WAIT": 0.2,
        "CLOSESPIDER_TIMEOUT": 20,
    }
    result = await crawl([a.url_for("/x"), a.url_for("/y"), a.url_for("/private/z")], settings)
    assert sorted(result.downloaded) == [a.url_for("/x"), a.url_for("/y")]
    assert result.dropped == {a.url_for("/private/z"): "disallow-rule"}
    assert result.stat("rep/parked/origin-pending") >= 1
    assert result.stat("rep/dropped/spider-closed") == 0
    assert a.hits("/robots.txt") == 1


# -- the cluster's Crawl-delay and held requests, on a real redis-server ---------------------------


@pytest_twisted.ensureDeferred
async def test_send_times_are_reserved_one_gap_apart_per_slot(store: RedisStore) -> None:
    pacing = store.pacing(remember=100)
    try:
        first = (await aio(pacing.reserve_spaced("a.example", Spacing(30.0)))).wait
        second = (await aio(pacing.reserve_spaced("a.example", Spacing(30.0)))).wait
        other = (await aio(pacing.reserve_spaced("b.example", Spacing(30.0)))).wait
    finally:
        await aio(store.close())
    assert first == 0.0 and other == 0.0  # nobody sent before: now
    assert 29.0 < second <= 30.0  # the next one waits (about) one gap, by Redis's clock
    assert store.counts["pace"] == 3 and store.counts["round_trips"] == 3


@pytest_twisted.ensureDeferred
async def test_a_worker_joining_keeps_the_gap_the_cluster_keeps(store: RedisStore) -> None:
    pacing, other = store.pacing(remember=100), store.pacing(remember=100)  # two workers
    assert pacing.first("a.example") and not pacing.first("a.example")  # asked once
    try:
        alone = await aio(pacing.reserve_spaced("a.example", Spacing(0.0, join=True)))
        paced = await aio(other.reserve_spaced("a.example", Spacing(20.0)))  # the other one's pace
        joined = await aio(pacing.reserve_spaced("a.example", Spacing(0.0, join=True)))
        after = await aio(pacing.reserve_spaced("a.example", Spacing(5.0)))
    finally:
        await aio(store.close())
    assert alone == (0.0, 0.0, 0, (), 0)  # nobody paces the origin: nothing reserved
    assert paced.wait == 0.0 and paced.gap == 20.0
    # joined: the moment one gap after the other worker's, and the gap kept after it
    assert 19.0 < joined.wait <= 20.0 and joined.gap == 20.0 and joined.others == (20.0,)
    assert 39.0 < after.wait <= 40.0 and after.others == ()  # none since its own


@pytest_twisted.ensureDeferred
async def test_each_send_steps_the_clusters_pace_down_as_a_page_served_steps_one_workers(
    store: RedisStore,
) -> None:
    # a worker learns the other workers' sends only from its own reservation, so it reserved
    # with the gap it had before them: the cluster's pace kept a lap behind one worker's
    # (after a pause, three workers: 1, 1, 1, 0.75 s... against 1, 0.75, 0.56 s...)
    a, b = store.pacing(remember=100), store.pacing(remember=100)  # two workers
    step = Spacing(20.0, faster=0.75, window=60.0)
    try:
        first = await aio(a.reserve_spaced("a.example", step))
        stale = await aio(b.reserve_spaced("a.example", step))  # its own gap, before a's send
        own = await aio(a.reserve_spaced("a.example", replace(step, gap=10.0)))  # smaller
        floored = await aio(b.reserve_spaced("a.example", replace(step, floor=9.0)))
        alone = await aio(a.reserve_spaced("b.example", replace(step, gap=0.05)))
        time.sleep(0.3)
        old = await aio(b.reserve_spaced("b.example", replace(step, gap=0.05, window=0.2)))
        new = await aio(a.reserve_spaced("b.example", replace(step, gap=0.05)))
    finally:
        await aio(store.close())
    assert [r.gap for r in (first, stale, own, floored)] == [20.0, 15.0, 10.0, 9.0]
    assert 19.0 < stale.wait <= 20.0 and 34.0 < own.wait <= 35.0  # each after the last gap
    assert alone.gap == 0.05  # nothing kept before it
    assert old.gap == 0.05  # the last send is older than the pace: not stepped from
    assert new.gap == 0.037  # stepped from the one before it (whole milliseconds)


@pytest_twisted.ensureDeferred
async def test_the_first_worker_to_meet_an_origin_leads_its_first_contact_alone(
    store: RedisStore,
) -> None:
    # three workers meeting an origin nobody paces each sent their first request at once:
    # three in flight before any answer, where one worker's ramp sends one
    lead, second, third = workers = [store.pacing(remember=100) for _ in range(3)]
    for pacing in workers:
        pacing.lead = 0.5
    join = Spacing(join=True)
    try:
        first = await aio(lead.reserve_spaced("a.example", join))
        led = [await aio(p.reserve_spaced("a.example", join)) for p in (second, third)]
        again = await aio(lead.reserve_spaced("a.example", join))
        elsewhere = await aio(second.reserve_spaced("b.example", join))
        time.sleep(0.6)  # the lead is over: the next to join goes at once
        after = await aio(third.reserve_spaced("a.example", join))
    finally:
        await aio(store.close())
    assert first.wait == 0.0 and again.wait == 0.0  # the lead's own sends go at once
    assert [(0.2 < r.wait <= 0.5, r.gap, r.at) for r in led] == [(True, 0.0, 0)] * 2
    assert elsewhere.wait == 0.0  # another origin: its own first contact
    assert after.wait == 0.0 and after.gap == 0.0


@pytest_twisted.ensureDeferred
async def test_a_reservation_says_when_the_other_workers_sent_since_this_ones_last(
    store: RedisStore,
) -> None:
    # a worker reads the site's rate from the sends of its window: in a cluster, every
    # worker's, or it reads its share of the rate
    pacing, others = store.pacing(remember=100), store.pacing(remember=100)  # two workers
    try:
        mine = await aio(pacing.reserve_spaced("a.example", Spacing(2.0)))
        theirs = [await aio(others.reserve_spaced("a.example", Spacing(2.0))) for _ in range(2)]
        again = await aio(pacing.reserve_spaced("a.example", Spacing(2.0)))
        later = await aio(pacing.reserve_spaced("a.example", Spacing(2.0)))
    finally:
        await aio(store.close())
    assert mine.others == ()  # nobody sent before it
    assert [t.at - mine.at for t in theirs] == [2000, 4000]
    assert again.others == (2.0, 4.0)  # the other two, newest first, before its own moment
    assert later.others == ()  # none since its own last


@pytest_twisted.ensureDeferred
async def test_a_reservation_sums_the_pages_each_worker_heard_before_its_first_pushback(
    store: RedisStore,
) -> None:
    # three workers meeting a burst together each were served a share of it before the
    # first pushback: a worker reading the bucket from its share reads it too small
    a, b, c = (store.pacing(remember=100) for _ in range(3))
    try:
        first = await aio(a.reserve_spaced("a.example", Spacing(0.01, heard=3)))
        second = await aio(b.reserve_spaced("a.example", Spacing(0.01, heard=2)))
        # told once, kept once
        again = await aio(a.reserve_spaced("a.example", Spacing(0.01, heard=3)))
        late = await aio(c.reserve_spaced("a.example", Spacing(0.01)))  # heard none: reads the sum
        elsewhere = await aio(c.reserve_spaced("b.example", Spacing(0.01)))
    finally:
        await aio(store.close())
    assert [r.told for r in (first, second, again, late)] == [3, 5, 5, 5]
    assert elsewhere.told == 0


@pytest_twisted.ensureDeferred
async def test_a_dead_workers_records_are_requeued_once(
    redis_server: str, sync: redis.Redis
) -> None:
    from scrapy_rep.runtime.store.held import ZSET, HeldLedger, twin

    moved: list[tuple[str, list[tuple[str, bytes]]]] = []

    def ledger(worker: str) -> HeldLedger:
        client = twin(redis.Redis.from_url(redis_server))
        return HeldLedger(
            client,
            "scrapy-rep:v1",
            worker,
            ("spider:requests", ZSET),
            lease=0.3,
            check_interval=60,
            on_requeued=lambda w, urls: moved.append((w, urls)),
        )

    dead, heirs = ledger("dead"), [ledger("heir1"), ledger("heir2")]
    try:
        dead.add("r1", "http://x/1", -5, b"request one", b'{"why": 1}')
        dead.add("r2", "http://x/2", 0, b"request two")  # as older versions record
        dead.add("r3", "http://x/3", 0, b"released", b'{"why": 3}')
        dead.forget("r3")  # its ~about field goes with it
        assert await aio(eventually(lambda: aio_hlen(sync, "scrapy-rep:v1:held:dead", 5)))
        assert await aio(heirs[0].requeue_dead()) == 0  # its lease still runs
        await aio(asyncio.sleep(0.4))  # no renewal: "dead" never started its lease keeper
        counts = await aio(asyncio.gather(*(h.requeue_dead() for h in heirs)))
    finally:
        for each in (dead, *heirs):
            await aio(each.client.aclose())
    assert sorted(counts) == [0, 2]  # moved once, by one of the two heirs
    # each URL with what its worker recorded about it, b"" where it recorded nothing
    assert [sorted(found) for _, found in moved] == [
        [("http://x/1", b'{"why": 1}'), ("http://x/2", b"")]
    ]
    assert sync.zrange("spider:requests", 0, -1, withscores=True) == [
        (b"request one", -5.0),
        (b"request two", 0.0),
    ]
    assert not sync.exists("scrapy-rep:v1:held:dead")
    assert sync.smembers("scrapy-rep:v1:holders") == set()


async def close_at_each_step(redis_server: str, steps: int) -> list[int]:
    """Start a ledger and close it after 0, 1, ... ``steps`` - 1 turns of the event loop; the
    turns after which its close had not ended within 5 s."""
    from scrapy_rep.runtime.store.held import ZSET, HeldLedger, twin

    stuck = []
    for turns in range(steps):
        ledger = HeldLedger(
            twin(redis.Redis.from_url(redis_server)),
            "scrapy-rep:v1",
            f"w{turns}",
            ("spider:requests", ZSET),
            lease=0.03,
            check_interval=0.01,
            on_requeued=lambda w, moved: None,
        )
        ledger.start()  # its lease, and a first look for dead workers: commands on their way
        for _ in range(turns):
            await asyncio.sleep(0)
        closing = asyncio.ensure_future(ledger.close())
        done, _ = await asyncio.wait([closing], timeout=5.0)
        if not done:
            stuck.append(turns)
    return stuck


@pytest_twisted.ensureDeferred
async def test_a_ledger_closes_whenever_its_close_comes(redis_server: str) -> None:
    """A spider's close stops the lease keeper and the requeuer whichever command they are
    in: on Python 3.11 a cancellation landing as a command is written is lost in redis-py's
    ``wait_for``, and a loop that relied on it ran on, and the close waited for ever."""
    assert await aio(close_at_each_step(redis_server, 40)) == []


async def aio_hlen(sync: redis.Redis, key: str, n: int) -> bool:
    """True once ``key`` has ``n`` fields (two of them ``~queue`` and ``~kind``, one per
    ``~about``)."""
    return int(sync.hlen(key)) == n  # type: ignore[arg-type]
