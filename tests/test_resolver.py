"""The resolver alone, driven with a fake fetch (no crawl): single flight, sharing, abandoning."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import pytest
import pytest_twisted
from twisted.internet.defer import Deferred

from scrapy_rep.core.policy import FetchResult, Policy, PolicyConfig, Status
from scrapy_rep.runtime.resolver import (
    FetchAbandoned,
    Resolver,
    ResolverSpec,
    SharedResolvers,
    policy_within,
)
from scrapy_rep.runtime.settings import TUNE, RepSettings
from scrapy_rep.runtime.store.memory import PolicyCache
from scrapy_rep.runtime.store.sqlite import SqliteStore
from scrapy_rep.runtime.tdmrep import TDM_ACTIONS, TDMREP, TdmCache, tdm_key
from tests.support.clock import ManualClock

A = "https://a.example:443"
RULES = b"User-agent: *\nDisallow: /x\n"


def deferred(coro: Awaitable[Any]) -> Deferred[Any]:
    return Deferred.fromFuture(asyncio.ensure_future(coro))


@dataclass
class FakeFetch:
    """A fetch that answers what it is told, after ``gate`` is set; counts its calls."""

    results: list[FetchResult | Exception]
    calls: list[str] = field(default_factory=list)
    gate: asyncio.Event = field(default_factory=asyncio.Event)

    async def __call__(self, origin: str, validators: object = None) -> FetchResult:
        self.calls.append(origin)
        await self.gate.wait()
        answer = self.results.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer


@dataclass
class Heard:
    """A listener that notes what the resolver tells it."""

    policies: list[tuple[str, Status, Any]] = field(default_factory=list)
    abandoned: list[str] = field(default_factory=list)

    def on_policy(self, origin: str, old: Policy | None, new: Policy, fetched: Any) -> None:
        self.policies.append((origin, new.status, fetched))

    def on_abandoned(self, origin: str) -> None:
        self.abandoned.append(origin)


def ok(body: bytes = RULES) -> FetchResult:
    return FetchResult(f"{A}/robots.txt", f"{A}/robots.txt", status=200, body=body)


def resolver(clock: Callable[[], float] = lambda: 1000.0) -> Resolver:
    return Resolver(PolicyCache(), PolicyConfig(), clock)


@pytest_twisted.ensureDeferred
async def test_one_fetch_for_everyone_who_asks_at_once() -> None:
    async def scenario() -> None:
        r, heard = resolver(), Heard()
        r.listeners.append(heard)
        fetch = FakeFetch([ok()])
        tasks = [r.resolve(A, fetch) for _ in range(20)]
        assert len({id(t) for t in tasks}) == 1
        assert r.pending_since(A) == 1000.0
        fetch.gate.set()
        policies = await asyncio.gather(*tasks)
        assert fetch.calls == [A]
        assert {p.status for p in policies} == {Status.OK}
        assert heard.policies == [(A, Status.OK, fetch)]  # told once, with who fetched
        assert r.pending_since(A) is None
        cached = r.current(A)
        assert cached is not None and cached.digest == policies[0].digest
        assert cached.body is None  # the cache keeps the parsed file, not the body ...
        assert r.cache.with_body(A) == policies[0]  # ... but can give the body back
        assert r.cache.robots(cached) is r.cache.robots(policies[0])  # parsed once

    await deferred(scenario())


@pytest_twisted.ensureDeferred
async def test_an_abandoned_fetch_adopts_nothing_and_says_so() -> None:
    async def scenario() -> None:
        r, heard = resolver(), Heard()
        r.listeners.append(heard)
        fetch = FakeFetch([FetchAbandoned(A)])
        fetch.gate.set()
        task = r.resolve(A, fetch)
        try:
            await task
        except FetchAbandoned:
            pass
        else:
            raise AssertionError("the abandoned fetch returned a policy")
        assert r.current(A) is None
        assert heard.abandoned == [A] and heard.policies == []
        again = FakeFetch([ok()])
        again.gate.set()
        assert (await r.resolve(A, again)).status is Status.OK  # another crawler fetches

    await deferred(scenario())


@pytest_twisted.ensureDeferred
async def test_a_request_waits_for_the_shared_fetch_within_its_bound_and_no_longer() -> None:
    async def scenario() -> None:
        r = resolver()
        fetch = FakeFetch([ok()])
        task = r.resolve(A, fetch)
        assert await policy_within(task, 0.01) is None  # past its bound: not answered
        assert not task.done()  # ... and the fetch goes on for the others
        patient = asyncio.ensure_future(policy_within(task, 5.0))
        await asyncio.sleep(0)
        fetch.gate.set()
        policy = await patient
        assert policy is not None and policy.status is Status.OK
        assert await policy_within(task, 0.0) is policy  # an ended fetch answers at once

    await deferred(scenario())


@pytest_twisted.ensureDeferred
async def test_a_cancelled_waiter_leaves_the_shared_fetch_running() -> None:
    async def scenario() -> None:
        r = resolver()
        fetch = FakeFetch([ok()])
        task = r.resolve(A, fetch)
        waiter = asyncio.ensure_future(policy_within(task, 5.0))
        await asyncio.sleep(0)
        waiter.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiter
        assert not task.done()
        fetch.gate.set()
        assert (await task).status is Status.OK

    await deferred(scenario())


@pytest_twisted.ensureDeferred
async def test_a_fetch_that_ends_without_a_policy_answers_its_waiters_none() -> None:
    async def scenario() -> None:
        abandoned = FakeFetch([FetchAbandoned(A)])
        task = resolver().resolve(A, abandoned)
        waiter = asyncio.ensure_future(policy_within(task, 5.0))
        await asyncio.sleep(0)
        abandoned.gate.set()
        assert await waiter is None
        given_up = resolver().resolve(A, FakeFetch([ok()]))
        waiter = asyncio.ensure_future(policy_within(given_up, 5.0))
        await asyncio.sleep(0)
        given_up.cancel()
        assert await waiter is None

    await deferred(scenario())


@pytest_twisted.ensureDeferred
async def test_a_failed_fetch_pauses_and_the_next_keeps_counting_failures() -> None:
    async def scenario() -> None:
        r = resolver()
        fetch = FakeFetch([FetchResult("u", "u", status=503), FetchResult("u", "u", status=503)])
        fetch.gate.set()
        first = await r.resolve(A, fetch)
        second = await r.resolve(A, fetch)
        assert (first.status, first.failures) == (Status.PAUSED, 1)
        assert (second.status, second.failures) == (Status.PAUSED, 2)

    await deferred(scenario())


@pytest_twisted.ensureDeferred
async def test_a_fetch_that_raises_ends_in_a_network_policy_logged_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def scenario() -> None:
        r, heard = resolver(), Heard()
        r.listeners.append(heard)
        fetch = FakeFetch([ValueError("boom"), ValueError("boom again")])
        fetch.gate.set()
        with caplog.at_level(logging.DEBUG, logger="scrapy_rep"):
            first = await r.resolve(A, fetch)
            second = await r.resolve(A, fetch)
        for policy, failures in ((first, 1), (second, 2)):
            assert (policy.status, policy.outcome, policy.failures) == (
                Status.PAUSED,
                "network",
                failures,
            )
            assert policy.reason.startswith("robots.txt ValueError: paused for")
        assert heard.policies == [(A, Status.PAUSED, fetch), (A, Status.PAUSED, fetch)]
        assert r.current(A) == second and r.pending_since(A) is None
        said = [rec for rec in caplog.records if "failed with ValueError" in rec.getMessage()]
        assert [rec.levelno for rec in said] == [logging.WARNING, logging.DEBUG]
        assert said[0].exc_info is not None  # the traceback, once

    await deferred(scenario())


@pytest_twisted.ensureDeferred
async def test_a_status_table_that_raises_still_ends_in_a_policy(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import scrapy_rep.runtime.resolver as module

    def broken(*args: Any) -> Policy:
        raise OverflowError("int too large to convert to float")

    monkeypatch.setattr(module, "next_policy", broken)

    async def scenario() -> None:
        r, heard = resolver(), Heard()
        r.listeners.append(heard)
        fetch = FakeFetch([ok()])
        fetch.gate.set()
        policy = await r.resolve(A, fetch)
        assert (policy.status, policy.outcome) == (Status.PAUSED, "network")
        assert "OverflowError" in policy.reason
        assert policy.expires_at == 1000.0 + PolicyConfig().pause_initial
        assert heard.policies == [(A, Status.PAUSED, fetch)]

    await deferred(scenario())


@pytest_twisted.ensureDeferred
async def test_a_listener_that_raises_keeps_the_news_from_no_other(
    caplog: pytest.LogCaptureFixture,
) -> None:
    class Broken(Heard):
        def on_policy(self, origin: str, old: Policy | None, new: Policy, fetched: Any) -> None:
            raise RuntimeError("listener bug")

    async def scenario() -> None:
        r, heard = resolver(), Heard()
        r.listeners.extend([Broken(), heard])
        fetch = FakeFetch([ok()])
        fetch.gate.set()
        with caplog.at_level(logging.ERROR, logger="scrapy_rep"):
            policy = await r.resolve(A, fetch)
        assert policy.status is Status.OK
        assert heard.policies == [(A, Status.OK, fetch)]
        assert any("listener failed" in rec.getMessage() for rec in caplog.records)

    await deferred(scenario())


def settings(**overrides: Any) -> RepSettings:
    values = {"REP_PRODUCT_TOKEN": "testbot", **overrides}
    return RepSettings.from_settings(values.get)


def test_crawlers_share_a_resolver_only_when_every_setting_it_uses_is_equal() -> None:
    clock = lambda: 0.0  # noqa: E731
    base = ResolverSpec.of(settings(), clock, None)
    assert ResolverSpec.of(settings(), clock, None) == base
    assert ResolverSpec.of(settings(REP_PRODUCT_TOKEN="other"), clock, None) == base
    different = [
        {"REP_FETCH_TIMEOUT": 50},
        {TUNE: {"max_redirects": 2}},
        {TUNE: {"lock_timeout": 3}},
        {"REP_CACHE_TTL": 10},
        {TUNE: {"policy.pause_max_tries": 9}},
        {"REP_STATUS_ACTIONS": {"403": "allow"}},
        {TUNE: {"cache_max_origins": 5}},
        {TUNE: {"cache_compiled_bytes": 5_000_000}},
        {"REP_CACHE_MAX_BYTES": 5_000_000},
        {"REP_STORE": "redis://127.0.0.1:1"},
    ]
    for overrides in different:
        assert ResolverSpec.of(settings(**overrides), clock, None) != base, overrides
    assert ResolverSpec.of(settings(), lambda: 0.0, None) != base  # another clock
    # one REP_CLOCK callable, read by each crawler into a clock of its own: still one resolver
    assert ResolverSpec.of(settings(), settings(REP_CLOCK=clock).clock, None) == base
    manual = ManualClock()  # a whole clock: by identity
    assert ResolverSpec.of(settings(), manual, None) == ResolverSpec.of(settings(), manual, None)
    assert ResolverSpec.of(settings(), manual, None) != ResolverSpec.of(
        settings(), ManualClock(), None
    )
    redis = settings(REP_STORE="redis://127.0.0.1:1")
    assert ResolverSpec.of(redis, clock, None) != ResolverSpec.of(
        settings(REP_STORE="redis://127.0.0.1:1", **{TUNE: {"store_retention": 99}}),
        clock,
        None,
    )
    assert ResolverSpec.of(settings(), clock, "/tmp/job") != base  # auto: SQLite in the JOBDIR


def test_shared_resolvers_live_while_someone_uses_them() -> None:
    spec = ResolverSpec.of(settings(), lambda: 0.0, None)
    made: list[Resolver] = []

    def make() -> Resolver:
        made.append(resolver())
        return made[-1]

    first = SharedResolvers.acquire(spec, make)
    assert SharedResolvers.acquire(spec, make) is first
    assert not SharedResolvers.leave(spec)
    assert SharedResolvers.leave(spec)  # the last user
    assert SharedResolvers.acquire(spec, make) is not first
    assert SharedResolvers.leave(spec)
    assert len(made) == 2


def test_another_file_has_one_resolver_per_spec_beside_robots_txt() -> None:
    spec = ResolverSpec.of(settings(), lambda: 0.0, None)
    robots = SharedResolvers.acquire(spec, resolver)
    make = partial(robots.for_file, TDMREP)
    tdm = SharedResolvers.acquire(spec, make, TDMREP)
    assert tdm is not robots and SharedResolvers.acquire(spec, make, TDMREP) is tdm
    assert tdm.file is TDMREP and isinstance(tdm.cache, TdmCache)
    assert tdm.config.actions == TDM_ACTIONS and robots.config.actions != TDM_ACTIONS
    assert not SharedResolvers.leave(spec, TDMREP)
    assert SharedResolvers.leave(spec, TDMREP)  # the last user of the file's resolver
    assert SharedResolvers.acquire(spec, resolver) is robots  # robots.txt's still used
    assert not SharedResolvers.leave(spec) and SharedResolvers.leave(spec)


@pytest_twisted.ensureDeferred
async def test_another_file_is_stored_under_its_own_key_and_known_by_origin(
    tmp_path: Path,
) -> None:
    """The resolver of tdmrep.json shares robots.txt's store, under keys of its own; its
    cache and listeners know origins, and an operator's forget of its key reaches it."""
    clock = ManualClock()
    store = SqliteStore(tmp_path / "shared.sqlite", clock=clock.now)

    async def scenario() -> None:
        try:
            robots = Resolver(PolicyCache(), PolicyConfig(), clock, shared=store)
            tdm, heard = robots.for_file(TDMREP), Heard()
            tdm.listeners.append(heard)
            url = f"{A}/.well-known/tdmrep.json"
            fetch = FakeFetch([FetchResult(url, url, status=200, body=b"[]")])
            fetch.gate.set()
            policy = await tdm.resolve(A, fetch)
            assert policy.status is Status.OK and fetch.calls == [A]
            assert [origin for origin, *_ in heard.policies] == [A]
            kept = tdm.current(A)
            assert kept is not None and kept.url == url and robots.current(A) is None
            assert (await store.load(tdm_key(A))) is not None
            assert (await store.load(A)) is None  # robots.txt's key: not the file's
            tdm.forgotten(A)  # robots.txt's key forgotten: not this file's
            assert tdm.current(A) is not None
            tdm.forgotten(tdm_key(A))
            assert tdm.current(A) is None
        finally:
            await store.close()

    await deferred(scenario())


# -- a worker's lease, on the manual clock ---------------------------------------------------------


async def _until(done: Callable[[], bool]) -> None:
    """Let the loop and the store's thread run until ``done()``; the ManualClock stands still.

    Bounded by wall time (10 s: the store's thread on a machine busy with the suite's
    other processes), not by a count of polls."""
    deadline = time.monotonic() + 10.0
    while time.monotonic() < deadline:
        if done():
            return
        await asyncio.sleep(0.001)
    raise AssertionError("never got there")


@pytest_twisted.ensureDeferred
async def test_a_dead_workers_lease_expires_on_the_manual_clock(tmp_path: Path) -> None:
    """Another worker took the fetch lock and died: this one fetches once its lease ends.

    The poll between looks at the store and the lease's end are both on the
    resolver's clock, so the 10 s lease passes with ``advance``, not in 10 s.
    """
    clock = ManualClock()
    path = tmp_path / "shared.sqlite"
    dead, live = SqliteStore(path, clock=clock.now), SqliteStore(path, clock=clock.now)

    async def scenario() -> None:
        try:
            start = clock.time
            assert await dead.acquire(A, 10.0) is not None  # never renewed, never released
            fetch = FakeFetch([ok()])
            fetch.gate.set()
            r = Resolver(PolicyCache(), PolicyConfig(), clock, shared=live, lock_ttl=10.0)
            task = r.resolve(A, fetch)
            waited = 0.0
            while waited < 9.5:  # the lease holds: this worker looks again, and waits
                await _until(lambda: bool(clock.planned))
                step = clock.planned[0] - clock.time
                clock.advance(step)
                waited += step
            assert fetch.calls == [] and not task.done()
            clock.advance(1.0)  # past the lease's end: a look soon after takes the lock

            def look_planned() -> bool:  # not the lease's renewal, planned once it is taken
                return bool(clock.planned) and clock.planned[0] - clock.time <= r.poll_interval

            while not fetch.calls:
                await _until(lambda: look_planned() or bool(fetch.calls))
                if not fetch.calls:
                    clock.advance(clock.planned[0] - clock.time)
            assert 10.0 <= clock.time - start <= 10.6  # fetched as the lease ended
            policy = await task  # saved and unlocked: no time passes for that
            assert policy.status is Status.OK and fetch.calls == [A]
        finally:
            await dead.close()
            await live.close()

    await deferred(scenario())
