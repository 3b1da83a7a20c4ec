"""What every shared policy store promises, run against each: Redis and SQLite.

A real redis-server and real SQLite files; each case runs once per store. The
in-memory ``PolicyCache`` is no shared store (it has no lock, no second
reader, nothing to forget for another process), so the contract does not
apply to it: it is tested in ``tests/test_policy_cache.py``. What only one
store does (Redis keys and their TTL, the cluster's send times; SQLite's
schema migration, refused files, its clock-driven leases and processes) is in
``test_redis_store.py`` and ``test_sqlite_store.py``.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import time
import zlib
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import fields, replace
from pathlib import Path
from typing import Any

import pytest
import pytest_twisted
import redis

from scrapy_rep.core.policy import FetchResult, Policy, PolicyConfig, Status
from scrapy_rep.runtime.resolver import Resolver
from scrapy_rep.runtime.store.memory import PolicyCache
from scrapy_rep.runtime.store.redis import RedisStore
from scrapy_rep.runtime.store.sqlite import SqliteStore
from tests.support.policies import BODY, bare_policy, full_policy
from tests.support.rig import in_loop

ORIGIN = "https://example.com:443"
#: how long a case polls for something another store did (bounded)
EVENTUALLY = 5.0


class Backend:
    """One kind of store on one backing (a redis-server, a file): opens stores, closes them."""

    def __init__(self, kind: str, where: str) -> None:
        self.kind = kind
        self.where = where  # the Redis URL or the SQLite file's path
        self._opened: list[Any] = []

    def open(self, *, listening: bool = False, **options: Any) -> Any:
        """A store of this kind on the shared backing, as another crawl would open it.

        ``listening``: it will hear invalidations quickly (SQLite polls its file);
        ``options``: what both kinds take (``retention``).
        """
        if self.kind == "redis":
            store: Any = RedisStore.from_url(self.where, **options)
        else:
            poll = 0.05 if listening else 1.0
            store = SqliteStore(self.where, poll_interval=poll, **options)
        self._opened.append(store)
        return store

    def set_raw(self, origin: str, name: str, value: bytes) -> None:
        """Write one stored field of ``origin`` behind the store's back."""
        if self.kind == "redis":
            redis.Redis.from_url(self.where).hset(f"scrapy-rep:v1:policy:{origin}", name, value)
            return
        db = sqlite3.connect(self.where, isolation_level=None)
        try:
            db.execute(f'UPDATE rep_policy SET "{name}" = ? WHERE origin = ?', (value, origin))
        finally:
            db.close()

    def stored_fields(self, origin: str) -> set[str]:
        """The names of the fields stored for ``origin`` with a value (absent or NULL: not)."""
        if self.kind == "redis":
            raw = redis.Redis.from_url(self.where).hgetall(f"scrapy-rep:v1:policy:{origin}")
            return {key.decode() for key in raw}
        db = sqlite3.connect(self.where)
        try:
            cursor = db.execute("SELECT * FROM rep_policy WHERE origin = ?", (origin,))
            row = cursor.fetchone()
            names = [column[0] for column in cursor.description]
        finally:
            db.close()
        if row is None:
            return set()
        return {name for name, value in zip(names, row, strict=True) if value is not None}

    def stored_pauses(self) -> set[str]:
        """The origins whose record holds a page pause, ended or not (behind the store's
        back)."""
        if self.kind == "redis":
            client = redis.Redis.from_url(self.where)
            prefix = "scrapy-rep:v1:policy:"
            return {
                key.decode()[len(prefix) :]
                for key in client.scan_iter(match=f"{prefix}*")
                if client.hexists(key, "pause")
            }
        db = sqlite3.connect(self.where)
        try:
            return {r[0] for r in db.execute("SELECT origin FROM rep_policy WHERE pause NOT NULL")}
        finally:
            db.close()

    async def run(self, scenario: Callable[[], Awaitable[None]]) -> None:
        """Run the case, then close every store it opened."""
        try:
            await scenario()
        finally:
            for store in self._opened:
                await store.close()


@pytest.fixture(params=["redis", "sqlite"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    if request.param == "redis":
        yield Backend("redis", request.getfixturevalue("redis_server"))
    else:
        yield Backend("sqlite", str(tmp_path / "jobdir" / "rep-policies.sqlite"))


async def eventually(check: Callable[[], Awaitable[bool]]) -> bool:
    """Poll ``check`` every 20 ms until it is true or EVENTUALLY passes (bounded)."""
    deadline = time.monotonic() + EVENTUALLY
    while time.monotonic() < deadline:
        if await check():
            return True
        await asyncio.sleep(0.02)
    return False


# -- what is stored ------------------------------------------------------------------------------


@pytest_twisted.ensureDeferred
async def test_every_policy_field_round_trips(backend: Backend) -> None:
    cases = (
        (ORIGIN, full_policy()),
        ("http://h:80", bare_policy()),
        ("http://empty:80", replace(bare_policy(), status=Status.OK, body=b"", digest=None)),
        ("http://ws:80", replace(bare_policy(), reason="surrogate \udcff kept", failures=0)),
    )

    async def scenario() -> None:
        writer, reader = backend.open(), backend.open()  # two connections, as two workers
        for origin, policy in cases:
            await writer.save(origin, policy)
            loaded = await reader.load(origin)
            assert loaded == policy
            for f in fields(Policy):
                assert getattr(loaded, f.name) == getattr(policy, f.name), f.name
        assert (await reader.load("http://empty:80")).body == b""
        assert await reader.load("http://never-saved:80") is None
        again = backend.open()  # a resumed crawl: everything is still there
        for origin, policy in cases:
            assert await again.load(origin) == policy

    await in_loop(backend.run(scenario))


@pytest_twisted.ensureDeferred
async def test_a_save_replaces_every_field(backend: Backend) -> None:
    """A field that became None (the body of a now-paused origin) does not survive."""

    async def scenario() -> None:
        store = backend.open()
        await store.save(ORIGIN, full_policy())
        await store.save(ORIGIN, bare_policy())
        assert await store.load(ORIGIN) == bare_policy()
        assert "body" not in backend.stored_fields(ORIGIN)
        assert store.counts["save"] == 2 and store.counts["found"] == 1

    await in_loop(backend.run(scenario))


@pytest_twisted.ensureDeferred
async def test_an_unreadable_entry_counts_as_missing(
    backend: Backend, caplog: pytest.LogCaptureFixture
) -> None:
    async def scenario() -> None:
        store = backend.open()
        await store.save(ORIGIN, full_policy())
        # an entry written by a future schema is not misread: it counts as missing
        backend.set_raw(ORIGIN, "schema", b"2")
        with caplog.at_level(logging.WARNING, logger="scrapy_rep.runtime.store"):
            assert await store.load(ORIGIN) is None
        assert "schema" in caplog.text
        if backend.kind == "sqlite":
            assert backend.where in caplog.text  # which file, of the project's several
        # a body that does not match its digest is not trusted either
        await store.save(ORIGIN, full_policy())
        backend.set_raw(ORIGIN, "body", zlib.compress(b"Disallow:"))
        assert await store.load(ORIGIN) is None
        assert store.counts["unreadable"] == 2

    await in_loop(backend.run(scenario))


# -- the fetch lock ------------------------------------------------------------------------------


@pytest_twisted.ensureDeferred
async def test_only_the_owner_releases_or_renews_the_lock(backend: Backend) -> None:
    async def scenario() -> None:
        one, two = backend.open(), backend.open()
        token = await one.acquire(ORIGIN, 30)
        assert token is not None
        assert await two.acquire(ORIGIN, 30) is None  # held
        assert await one.acquire(ORIGIN, 30) is None  # held, by this store too
        assert await one.acquire("http://other:80", 30) is not None  # per origin
        await two.unlock(ORIGIN, "someone-else")
        assert await two.renew(ORIGIN, "someone-else", 30) is False
        assert await two.acquire(ORIGIN, 30) is None  # still held
        await one.unlock(ORIGIN, token)
        again = await two.acquire(ORIGIN, 30)
        assert again is not None and again != token
        assert one.counts["lock_lost"] == 0

    await in_loop(backend.run(scenario))


@pytest_twisted.ensureDeferred
async def test_an_expired_lock_goes_to_the_next_worker(backend: Backend) -> None:
    async def scenario() -> None:
        dead, alive = backend.open(), backend.open()
        old = await dead.acquire(ORIGIN, 0.3)
        assert old is not None
        assert await alive.acquire(ORIGIN, 30) is None
        started = time.monotonic()
        new: list[str] = []

        async def take() -> bool:
            token = await alive.acquire(ORIGIN, 30)
            if token:
                new.append(token)
            return token is not None

        assert await eventually(take)
        waited = time.monotonic() - started
        assert 0.2 < waited < 1.5  # held for its lease, then free
        # the first owner coming back late must not free the new owner's lock
        await dead.unlock(ORIGIN, old)
        assert (await alive.show(ORIGIN))["lock"]["owner"] == new[0]
        assert await dead.acquire(ORIGIN, 30) is None
        assert dead.counts["lock_lost"] == 1

    await in_loop(backend.run(scenario))


# -- forget, flush, show -------------------------------------------------------------------------


@pytest_twisted.ensureDeferred
async def test_forget_and_flush(backend: Backend) -> None:
    async def scenario() -> None:
        store = backend.open()
        for origin in (ORIGIN, "http://h:80", "http://i:80"):
            await store.save(origin, bare_policy())
        await store.acquire("http://i:80", 30)
        assert await store.forget(ORIGIN) == 1  # True for Redis: one origin forgotten
        assert await store.forget(ORIGIN) == 0
        assert await store.load(ORIGIN) is None
        assert await store.load("http://h:80") == bare_policy()
        assert await store.flush() == 3  # two policies and a lock
        assert await store.load("http://h:80") is None
        assert await store.acquire("http://i:80", 30) is not None  # the lock went too

    await in_loop(backend.run(scenario))


@pytest_twisted.ensureDeferred
async def test_forget_and_flush_reach_every_listening_store(backend: Backend) -> None:
    async def scenario() -> None:
        worker, operator = backend.open(listening=True), backend.open()
        heard: list[str | None] = []
        worker.on_invalidate(heard.append)
        await operator.save(ORIGIN, full_policy())
        await worker.load(ORIGIN)  # the first load starts listening

        async def heard_count(n: int) -> bool:
            return len(heard) >= n

        await operator.forget(ORIGIN)
        assert await eventually(lambda: heard_count(1))
        await operator.flush()
        assert await eventually(lambda: heard_count(2))
        assert heard == [ORIGIN, None]  # None: everything

    await in_loop(backend.run(scenario))


@pytest_twisted.ensureDeferred
async def test_show(backend: Backend) -> None:
    async def scenario() -> None:
        store = backend.open()
        assert (await store.show(ORIGIN))["stored"] is False
        await store.save(ORIGIN, full_policy())
        token = await store.acquire(ORIGIN, 30)
        info = await store.show(ORIGIN)
        assert info["stored"] is True
        assert info["fields"]["body"] == BODY.decode()
        assert info["fields"]["body_bytes"] == len(BODY)
        assert info["fields"]["http_status"] == "503"
        assert info["fresh"] is False  # expired in 2023
        assert info["lock"]["owner"] == token

    await in_loop(backend.run(scenario))


# -- the resolver on top of the store: what a worker does ----------------------------------------


def ok_result(origin: str) -> FetchResult:
    return FetchResult(f"{origin}/robots.txt", f"{origin}/robots.txt", 200, b"Disallow: /x\n")


@pytest_twisted.ensureDeferred
async def test_two_resolvers_share_one_fetch(backend: Backend) -> None:
    """Workers (a resolver and a store each) asking at once: one fetch, one policy."""
    fetched: list[str] = []

    async def slow_fetch(origin: str, validators: object = None) -> FetchResult:
        fetched.append(origin)
        await asyncio.sleep(0.3)
        return ok_result(origin)

    async def scenario() -> None:
        stores = [backend.open() for _ in range(3)]
        resolvers = [
            Resolver(PolicyCache(), PolicyConfig(), time.time, shared=s, poll_interval=0.02)
            for s in stores
        ]
        policies = await asyncio.gather(*(r.resolve(ORIGIN, slow_fetch) for r in resolvers))
        assert fetched == [ORIGIN]
        assert len({p.digest for p in policies}) == 1
        assert all(p.status is Status.OK for p in policies)
        assert sum(s.counts["lock_busy"] for s in stores) >= 1  # the others did wait
        # a resumed crawl (a new store, an empty cache) does not refetch a fresh file
        later = Resolver(PolicyCache(), PolicyConfig(), time.time, shared=backend.open())
        assert (await later.resolve(ORIGIN, slow_fetch)).digest == policies[0].digest
        assert fetched == [ORIGIN]

    await in_loop(backend.run(scenario))


@pytest_twisted.ensureDeferred
async def test_a_paused_origin_is_paused_for_every_worker(backend: Backend) -> None:
    """Worker A sees a 503; worker B, asking during the pause, fetches nothing and pauses too."""
    fetched: list[str] = []

    async def fetch_503(origin: str, validators: object = None) -> FetchResult:
        fetched.append(origin)
        return FetchResult(f"{origin}/robots.txt", f"{origin}/robots.txt", 503)

    async def scenario() -> None:
        config = PolicyConfig(pause_initial=300)
        worker_a = Resolver(PolicyCache(), config, time.time, shared=backend.open())
        worker_b = Resolver(PolicyCache(), config, time.time, shared=backend.open())
        first = await worker_a.resolve(ORIGIN, fetch_503)
        second = await worker_b.resolve(ORIGIN, fetch_503)
        assert fetched == [ORIGIN]
        assert first.status is second.status is Status.PAUSED
        assert second.expires_at == first.expires_at and second.failures == 1

    await in_loop(backend.run(scenario))


# -- page pauses (429, 503, a wall of 403s: core/pushback.py) ----------------------------------


@pytest_twisted.ensureDeferred
async def test_a_page_pause_is_kept_until_it_ends_and_read_by_another_store(
    backend: Backend,
) -> None:
    from scrapy_rep.core.pushback import PauseState

    async def scenario() -> None:
        now = time.time()
        first, second = backend.open(), backend.open()
        live = PauseState(now + 60, "rate-limited", 429, f"{ORIGIN}/x", 60.0, 1, now)
        over = PauseState(now - 1, "service-unavailable", 503, "http://h:80/", None, 1, now - 9)
        await first.save_pause(ORIGIN, live)
        await first.save_pause("http://h:80", over)
        assert await second.load_pauses() == {ORIGIN: live}  # an ended one is not
        longer = PauseState(now + 120, "blocked", 403, f"{ORIGIN}/y", None, 2, now)
        await second.save_pause(ORIGIN, longer)
        assert await first.load_pauses() == {ORIGIN: longer}  # one pause per origin

    await in_loop(backend.run(scenario))


@pytest_twisted.ensureDeferred
async def test_forget_and_flush_clear_page_pauses_too(backend: Backend) -> None:
    from scrapy_rep.core.pushback import PauseState

    async def scenario() -> None:
        now = time.time()
        store = backend.open()
        for origin in (ORIGIN, "http://h:80"):
            await store.save_pause(
                origin, PauseState(now + 60, "blocked", 403, origin, None, 1, now)
            )
        assert await store.forget(ORIGIN)  # the operator lifts the pause with the policy
        assert set(await store.load_pauses()) == {"http://h:80"}
        await store.flush()
        assert await store.load_pauses() == {}

    await in_loop(backend.run(scenario))


@pytest_twisted.ensureDeferred
async def test_a_saved_page_pause_reaches_the_listening_stores(backend: Backend) -> None:
    from scrapy_rep.core.pushback import PauseState

    async def scenario() -> None:
        worker = backend.open(listening=True)
        # Redis: every store of the cluster; SQLite: the store that saved it (this process)
        saver = backend.open() if backend.kind == "redis" else worker
        heard: list[tuple[str, PauseState]] = []
        worker.on_pause(lambda origin, state: heard.append((origin, state)))
        await worker.load_pauses()  # listening from the start, as a crawl does
        now = time.time()
        state = PauseState(now + 30, "rate-limited", 429, f"{ORIGIN}/", 30.0, 1, now)
        await saver.save_pause(ORIGIN, state)

        async def heard_it() -> bool:
            return bool(heard)

        assert await eventually(heard_it)
        assert heard == [(ORIGIN, state)]

    await in_loop(backend.run(scenario))


@pytest_twisted.ensureDeferred
async def test_an_origins_page_pause_is_read_with_its_policy_not_all_at_once(
    backend: Backend,
) -> None:
    from scrapy_rep.core.pushback import PauseState

    async def scenario() -> None:
        now = time.time()
        saver, worker = backend.open(), backend.open()
        states = {
            f"http://h{i}:80": PauseState(now + 60, "rate-limited", 429, "u", 60.0, 1, now)
            for i in range(3)
        }
        for origin, state in states.items():
            await saver.save_pause(origin, state)
        heard: list[tuple[str, PauseState]] = []
        worker.on_pause(lambda origin, state: heard.append((origin, state)))
        await worker.load("http://elsewhere:80")
        assert heard == []  # nothing read for origins the crawl has not asked about
        await worker.load("http://h1:80")  # an origin's first request: its pause with it
        assert heard == [("http://h1:80", states["http://h1:80"])]

    await in_loop(backend.run(scenario))


@pytest_twisted.ensureDeferred
async def test_ended_page_pauses_are_not_kept(backend: Backend) -> None:
    from scrapy_rep.core.pushback import PauseState

    async def scenario() -> None:
        now = time.time()
        store = backend.open()
        for i in range(3):  # ended: a crawl long gone saved them
            ended = PauseState(now - 10 + i, "blocked", 403, "u", None, 1, now - 3600)
            await store.save_pause(f"http://over{i}:80", ended)
        live = PauseState(now + 60, "rate-limited", 429, "u", 60.0, 1, now)
        await store.save_pause(ORIGIN, live)
        if backend.kind == "sqlite":
            backend.open()  # a crawl opening the file tidies it
        assert backend.stored_pauses() == {ORIGIN}

    await in_loop(backend.run(scenario))


@pytest_twisted.ensureDeferred
async def test_an_origins_policy_and_page_pause_are_one_record(backend: Backend) -> None:
    """One record per origin: a page pause lives in the origin's entry (the Redis hash, the
    SQLite row) beside its policy, comes back with it, and goes with it."""
    from scrapy_rep.core.pushback import PauseState

    async def scenario() -> None:
        now = time.time()
        saver, worker = backend.open(), backend.open()
        state = PauseState(now + 60, "rate-limited", 429, f"{ORIGIN}/x", 60.0, 1, now)
        await saver.save_pause(ORIGIN, state)  # before any policy: a record of its own
        assert "pause" in backend.stored_fields(ORIGIN)
        heard: list[tuple[str, PauseState]] = []
        worker.on_pause(lambda origin, state: heard.append((origin, state)))
        assert await worker.load(ORIGIN) is None  # a pause alone is no (unreadable) policy
        assert worker.counts["unreadable"] == 0 and heard == [(ORIGIN, state)]
        shown = await worker.show(ORIGIN)
        assert not shown["stored"] and shown["page_pause"]["cause"] == "rate-limited"
        await saver.save(ORIGIN, full_policy())
        assert {"pause", "body"} <= backend.stored_fields(ORIGIN)  # the same record
        assert await worker.load(ORIGIN) == full_policy()
        assert heard == [(ORIGIN, state)] * 2
        assert await worker.forget(ORIGIN)
        assert backend.stored_fields(ORIGIN) == set() and await worker.load_pauses() == {}

    await in_loop(backend.run(scenario))


@pytest_twisted.ensureDeferred
async def test_a_new_policy_saved_by_one_worker_keeps_anothers_page_pause(
    backend: Backend,
) -> None:
    """A save replaces the policy's every field (one that became None goes) but not the page
    pause another worker saved, and the record lives at least as long as that pause."""
    from scrapy_rep.core.pushback import PauseState

    async def scenario() -> None:
        now = time.time()
        # a retention much shorter than the pause
        a, b, c = (backend.open(retention=600) for _ in range(3))
        await a.save(ORIGIN, full_policy())
        state = PauseState(now + 7200, "blocked", 403, f"{ORIGIN}/x", None, 2, now)
        await b.save_pause(ORIGIN, state)
        await a.save(ORIGIN, bare_policy())  # the robots.txt fetched again, by a
        assert "body" not in backend.stored_fields(ORIGIN)
        assert "pause" in backend.stored_fields(ORIGIN)
        heard: list[tuple[str, PauseState]] = []
        c.on_pause(lambda origin, state: heard.append((origin, state)))
        assert await c.load(ORIGIN) == bare_policy()
        assert heard == [(ORIGIN, state)]
        assert await c.load_pauses() == {ORIGIN: state}
        assert (await c.show(ORIGIN))["retained_for_s"] > 7000  # kept until the pause ends

    await in_loop(backend.run(scenario))
