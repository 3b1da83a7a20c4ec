"""Crawl-delay in-process: the floor under Scrapy's download slots, the cap, cluster pacing.

On the rig: Scrapy's own downloader makes the slots, the clock is the
ManualClock, so a cluster send time 30 s away is waited for without waiting.
The whole-crawl versions are in ``tests/integration/test_middleware_behaviour.py``
(the slot a spider sees) and ``tests/integration/test_redis_cluster.py`` (the
send times of a real cluster).
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Coroutine
from typing import Any

import pytest
import pytest_twisted
from pydispatch import dispatcher
from scrapy import Request, signals
from scrapy.http import Response

from scrapy_rep.components.robots import RobotsMiddleware
from scrapy_rep.core.pace import Spacing
from scrapy_rep.core.policy import Policy
from scrapy_rep.crawl import compat
from scrapy_rep.crawl.crawl_delay import SEND_MARGIN, CrawlDelay, delay_slot
from scrapy_rep.crawl.telemetry import Telemetry
from scrapy_rep.runtime.store.pacing import Reserved
from tests.support.policies import full_policy
from tests.support.rig import Rig, in_loop

A = "http://a.example:80"
#: the download slot a delayed origin's requests are sent in: its own, never its host's
SLOT = delay_slot(A)


def policy(digest: str = "d1") -> Policy:
    return dataclasses.replace(full_policy(), digest=digest)


class Asked:
    """The delay each body asks of the crawl's token; counts how often it is asked."""

    def __init__(self, delays: dict[str | None, float | None]) -> None:
        self.delays = delays
        self.calls: list[str | None] = []

    def __call__(self, policy: Policy) -> float | None:
        self.calls.append(policy.digest)
        return self.delays.get(policy.digest)


def crawl_delay(rig: Rig, asked: Asked, cap: float = 60.0, pacing: Any = None) -> CrawlDelay:
    return CrawlDelay(rig.crawler, cap, Telemetry.of(rig.crawler), asked, pacing)


def unawaited(paced: Coroutine[Any, Any, object] | None) -> None:
    """A send's wait for its moment, not awaited: the test asks only about the slot."""
    if paced is not None:
        paced.close()


def jitter_of(slot: Any) -> float:
    return float(slot.jitter) if compat.SLOT_JITTER else float(bool(slot.randomize_delay))


def test_an_origin_without_crawl_delay_leaves_the_slot_alone(rig: Rig) -> None:
    delay = crawl_delay(rig, Asked({}))
    assert delay.keep(Request("http://a.example/1"), A, policy()) is None
    assert rig.engine.downloader.per_slot_settings == {}
    assert rig.stat("rep/crawl_delay/applied") is None
    assert Telemetry.of(rig.crawler).counts.of(A).crawl_delay is None


def test_a_crawl_delay_is_the_floor_of_a_new_slot_without_jitter(rig: Rig) -> None:
    delay = crawl_delay(rig, Asked({"d1": 2.5}))
    request = Request("http://a.example/1")
    assert delay.keep(request, A, policy()) is None
    assert request.meta["download_slot"] == SLOT
    settings = rig.engine.downloader.per_slot_settings[SLOT]
    assert settings["delay"] == 2.5
    _key, slot = rig.engine.downloader._get_slot(request)  # made from those settings
    assert slot.delay == 2.5
    assert jitter_of(slot) == 0
    assert rig.stat("rep/crawl_delay/applied") == 1
    assert Telemetry.of(rig.crawler).counts.of(A).crawl_delay == 2.5


def test_a_live_slot_is_slowed_at_once(rig: Rig) -> None:
    host_slot = rig.slot_of("http://a.example/1")
    _key, slot = rig.engine.downloader._get_slot(Request(A + "/0", meta={"download_slot": SLOT}))
    assert slot.delay == 0
    crawl_delay(rig, Asked({"d1": 3.0})).keep(Request("http://a.example/1"), A, policy())
    assert slot.delay == 3.0
    assert jitter_of(slot) == 0
    assert host_slot.delay == 0  # the host's slot paces the host's other origins: untouched


def test_download_delay_above_the_crawl_delay_stays() -> None:
    with Rig({"DOWNLOAD_DELAY": 4.0}) as rig:
        crawl_delay(rig, Asked({"d1": 1.0})).keep(Request("http://a.example/1"), A, policy())
        assert rig.engine.downloader.per_slot_settings[SLOT]["delay"] == 4.0


def test_origins_of_one_host_each_have_a_slot_of_their_own(rig: Rig) -> None:
    delay = crawl_delay(rig, Asked({"slow": 5.0, "fast": 1.0}))
    other = "https://a.example:443"
    delay.keep(Request("http://a.example/1"), A, policy("slow"))
    delay.keep(Request("https://a.example/1"), other, policy("fast"))
    settings = rig.engine.downloader.per_slot_settings
    assert settings[SLOT]["delay"] == 5.0
    assert settings[delay_slot(other)]["delay"] == 1.0
    assert "a.example" not in settings
    assert rig.stat("rep/crawl_delay/applied") == 2


def test_a_slot_the_request_names_itself_keeps_the_largest_delay(rig: Rig) -> None:
    delay = crawl_delay(rig, Asked({"slow": 5.0, "fast": 1.0}))
    named = {"download_slot": "my-group"}
    delay.keep(Request("http://a.example/1", meta=named), A, policy("slow"))
    delay.keep(Request("http://b.example/1", meta=named), "http://b.example:80", policy("fast"))
    assert rig.engine.downloader.per_slot_settings["my-group"]["delay"] == 5.0
    assert rig.stat("rep/crawl_delay/applied") == 1  # the second floor changed nothing


def test_a_crawl_delay_over_the_cap_is_capped_and_said(
    rig: Rig, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, logger="scrapy_rep"):
        crawl_delay(rig, Asked({"d1": 100.0}), cap=0.2).keep(
            Request("http://a.example/1"), A, policy()
        )
    assert rig.engine.downloader.per_slot_settings[SLOT]["delay"] == 0.2
    assert rig.stat("rep/crawl_delay/capped") == 1
    assert any("capped at 0.2s" in r.getMessage() for r in caplog.records)


def test_the_delay_is_decided_once_per_body(rig: Rig) -> None:
    asked = Asked({"d1": 1.0, "d2": 2.0})
    delay = crawl_delay(rig, asked)
    for n in range(3):
        unawaited(delay.keep(Request(f"http://a.example/{n}"), A, policy("d1")))
    assert asked.calls == ["d1"]
    unawaited(delay.keep(Request("http://a.example/new"), A, policy("d2")))  # a new body
    assert asked.calls == ["d1", "d2"]
    assert rig.engine.downloader.per_slot_settings[SLOT]["delay"] == 2.0


def test_as_many_origins_are_remembered_as_the_policy_cache_holds(rig: Rig) -> None:
    asked = Asked({"d1": None})
    delay = CrawlDelay(rig.crawler, 60.0, Telemetry.of(rig.crawler), asked, remember=3)
    origins = [f"http://{n}.example:80" for n in range(5)]
    for origin in [*origins, origins[3], origins[4]]:  # the last three decided stay known
        delay.keep(Request(f"{origin}/"), origin, policy("d1"))
    assert len(asked.calls) == 5
    assert len(delay._known) == 3
    delay.keep(Request(f"{origins[0]}/"), origins[0], policy("d1"))  # forgotten: decided again
    assert len(asked.calls) == 6


def test_the_floor_is_put_back_after_autothrottle_lowers_it(rig: Rig) -> None:
    request = Request("http://a.example/1")
    delay = crawl_delay(rig, Asked({"d1": 3.0}))  # kept: signals hold their receivers weakly
    delay.keep(request, A, policy())
    _key, slot = rig.engine.downloader._get_slot(request)
    slot.delay = 0.5  # AutoThrottle's adjustment on the same signal
    rig.crawler.signals.send_catch_log(
        signal=signals.response_downloaded,
        response=Response(request.url, request=request),
        request=request,
        spider=rig.crawler.spider,
    )
    assert slot.delay == 3.0


def test_only_a_crawl_with_a_floor_listens_to_each_response(rig: Rig) -> None:
    def listening(delay: CrawlDelay) -> bool:
        heard = dispatcher.getAllReceivers(rig.crawler.signals.sender, signals.response_downloaded)
        receivers = dispatcher.liveReceivers(heard)
        return any(getattr(r, "__self__", None) is delay for r in receivers)

    delay = crawl_delay(rig, Asked({"d1": 3.0}))
    delay.keep(Request("http://b.example/1"), "http://b.example:80", policy("none"))
    assert not listening(delay)  # ~9 µs a response saved while no origin asks for a delay
    delay.keep(Request("http://a.example/1"), A, policy())
    assert listening(delay)


# -- cluster pacing: send times reserved in the shared store -------------------------------------


class FakePacing:
    """The shared store's send times: each reservation answers the next wait, or fails;
    ``kept``: the gap the cluster's other workers keep (0: none), which a worker joins."""

    def __init__(self, waits: list[float | Exception], kept: float = 0.0) -> None:
        self.waits = waits
        self.kept = kept
        self.reserved: list[tuple[str, float]] = []
        self.joins: list[bool] = []
        self.asked: set[str] = set()

    def first(self, slot: str) -> bool:
        """Whether ``slot`` is asked about for the first time."""
        known = slot in self.asked
        self.asked.add(slot)
        return not known

    async def reserve_spaced(self, slot: str, spacing: Spacing) -> Reserved:
        """The wait; no other worker's send known."""
        gap, join = spacing.gap, spacing.join
        self.reserved.append((slot, gap))
        self.joins.append(join)
        if join:
            gap = max(gap, self.kept)
        wait = self.waits.pop(0) if gap else 0.0
        if isinstance(wait, Exception):
            raise wait
        return Reserved(wait, gap)


@pytest_twisted.ensureDeferred
async def test_a_request_waits_for_its_reserved_send_time_on_the_crawls_clock(rig: Rig) -> None:
    async def scenario() -> None:
        pacing = FakePacing([30.0])
        delay = crawl_delay(rig, Asked({"d1": 2.0}), pacing=pacing)
        paced = delay.keep(Request("http://a.example/1"), A, policy())
        assert paced is not None
        send = asyncio.ensure_future(paced)
        for _ in range(5):
            await asyncio.sleep(0)
        assert pacing.reserved == [(SLOT, 2.0 + SEND_MARGIN)]
        assert rig.clock.planned == [rig.clock.now() + 30.0]
        rig.clock.advance(29.9)
        await asyncio.sleep(0)
        assert not send.done()
        rig.clock.advance(0.1)
        await send
        assert rig.stat("rep/cluster/delay-waits") == 1
        counts = Telemetry.of(rig.crawler).counts
        assert (counts.delay_waits, counts.delay_waited_s) == (1, 30.0)
        # the local floor too: this worker's own sends are a reservation apart at least
        assert rig.engine.downloader.per_slot_settings[SLOT]["delay"] == 2.0

    await in_loop(scenario())


@pytest_twisted.ensureDeferred
async def test_a_slot_slower_than_the_crawl_delay_reserves_its_own_delay(rig: Rig) -> None:
    # AutoThrottle chose 4 s for the slot: reserving 2 s, the slot would hold the request
    # past its moment and send it inside another worker's gap
    async def scenario() -> None:
        _key, slot = rig.engine.downloader._get_slot(
            Request(A + "/0", meta={"download_slot": SLOT})
        )
        slot.delay = 4.0
        pacing = FakePacing([0.0])
        paced = crawl_delay(rig, Asked({"d1": 2.0}), pacing=pacing).keep(
            Request("http://a.example/1"), A, policy()
        )
        assert paced is not None
        await paced
        assert pacing.reserved == [(SLOT, 4.0 + SEND_MARGIN)]

    await in_loop(scenario())


@pytest_twisted.ensureDeferred
async def test_a_request_woken_late_reserves_again_rather_than_crowd_the_next(rig: Rig) -> None:
    # Woken 1 s past its moment (a busy worker), a request sent now would leave inside the
    # gap before the next worker's, which leaves on time: it reserves a new moment.
    async def scenario() -> None:
        pacing = FakePacing([30.0, 5.0])
        paced = crawl_delay(rig, Asked({"d1": 2.0}), pacing=pacing).keep(
            Request("http://a.example/1"), A, policy()
        )
        assert paced is not None
        send = asyncio.ensure_future(paced)
        for _ in range(5):
            await asyncio.sleep(0)
        rig.clock.advance(31.0)  # the timer fires 1 s late
        for _ in range(5):
            await asyncio.sleep(0)
        assert len(pacing.reserved) == 2 and not send.done()
        rig.clock.advance(5.0)  # on time now
        await send
        assert len(pacing.reserved) == 2
        assert rig.stat("rep/cluster/delay-waits") == 2

    await in_loop(scenario())


@pytest_twisted.ensureDeferred
async def test_no_wait_no_timer(rig: Rig) -> None:
    async def scenario() -> None:
        pacing = FakePacing([0.0])
        paced = crawl_delay(rig, Asked({"d1": 2.0}), pacing=pacing).keep(
            Request("http://a.example/1"), A, policy()
        )
        assert paced is not None
        await paced
        assert rig.clock.planned == []
        assert rig.stat("rep/cluster/delay-waits") is None

    await in_loop(scenario())


@pytest_twisted.ensureDeferred
async def test_when_the_shared_pacing_fails_the_slot_gets_the_local_floor(
    rig: Rig, caplog: pytest.LogCaptureFixture
) -> None:
    async def scenario() -> None:
        pacing = FakePacing([ConnectionError("redis down"), ConnectionError("still"), 0.0])
        delay = crawl_delay(rig, Asked({"d1": 2.0}), pacing=pacing)
        with caplog.at_level(logging.DEBUG, logger="scrapy_rep"):
            for n in range(3):
                paced = delay.keep(Request(f"http://a.example/{n}"), A, policy())
                assert paced is not None
                send = asyncio.ensure_future(paced)
                for _ in range(5):
                    await asyncio.sleep(0)
                if n == 1:  # Redis still down: this worker's own reservation spaces it
                    assert not send.done()
                    assert rig.clock.planned == [rig.clock.now() + 2.0 + SEND_MARGIN]
                    rig.clock.advance(2.0 + SEND_MARGIN)
                await send
        assert rig.engine.downloader.per_slot_settings[SLOT]["delay"] == 2.0
        failed = [r for r in caplog.records if "shared Crawl-delay failed" in r.getMessage()]
        assert [r.levelno for r in failed] == [logging.WARNING, logging.DEBUG]  # warned once
        assert any("answers again" in r.getMessage() for r in caplog.records)

    await in_loop(scenario())


@pytest_twisted.ensureDeferred
async def test_one_reservation_per_slot_at_a_time_in_a_worker(rig: Rig) -> None:
    async def scenario() -> None:
        pacing = FakePacing([10.0, 10.0])
        delay = crawl_delay(rig, Asked({"d1": 2.0}), pacing=pacing)
        first = asyncio.ensure_future(delay.keep(Request("http://a.example/1"), A, policy()))  # type: ignore[arg-type]
        second = asyncio.ensure_future(delay.keep(Request("http://a.example/2"), A, policy()))  # type: ignore[arg-type]
        for _ in range(5):
            await asyncio.sleep(0)
        assert len(pacing.reserved) == 1  # the second waits for the first's turn
        rig.clock.advance(10)
        await first
        for _ in range(5):
            await asyncio.sleep(0)
        assert len(pacing.reserved) == 2
        rig.clock.advance(10)
        await second
        assert delay._turns == {} and delay._queued == {}  # nothing kept per slot afterwards

    await in_loop(scenario())


@pytest.mark.parametrize(("asked", "learnt"), [({"d1": 2.0}, 0.0), ({}, 2.0)])
@pytest_twisted.ensureDeferred
async def test_a_worker_alone_reserves_its_sends_and_one_woken_late_reserves_again(
    rig: Rig, asked: dict[str | None, float | None], learnt: float
) -> None:
    # without a cluster, Crawl-delay and the learnt pace are the one reservation too
    async def scenario() -> None:
        delay = crawl_delay(rig, Asked(asked))
        start = rig.clock.now()
        # its moment: now
        assert delay.keep(Request(A + "/1"), A, policy(), Spacing(learnt)) is None
        paced = delay.keep(Request(A + "/2"), A, policy(), Spacing(learnt))
        assert paced is not None
        send = asyncio.ensure_future(paced)
        for _ in range(5):
            await asyncio.sleep(0)
        assert rig.clock.planned == [start + 2.0]
        rig.clock.advance(3.0)  # the timer fires 1 s late
        for _ in range(5):
            await asyncio.sleep(0)
        assert not send.done() and rig.clock.planned == [start + 4.0]  # reserved again
        rig.clock.advance(1.0)
        await send
        assert rig.stat("rep/cluster/delay-waits") is None  # no cluster was asked

    await in_loop(scenario())


# -- one pacing: the gap before a send is max(Crawl-delay, learnt pace), one reservation ---------


def paced_rig(robots: bytes, pacing: FakePacing, monkeypatch: pytest.MonkeyPatch) -> Rig:
    """A rig whose store paces the cluster with ``pacing``, origin A pushed back once (a 429
    of 1 s: its pace learnt from 1 s between sends) and resumed."""
    from scrapy_rep.crawl import graph

    monkeypatch.setattr(graph, "shared_pacing", lambda store, remember: pacing)
    rig = Rig({}, {A: (200, {}, robots)})
    core = RobotsMiddleware(rig.crawler).service.pushback
    assert core is not None
    pause = core.core.on_response(A, 429, {"retry-after": "1"}, A + "/0", rig.clock.now())
    assert pause is not None and core.core.gap(A) == 1.0
    rig.clock.advance(1.0)
    assert core.core.resume(A, rig.clock.now()) is not None
    return rig


@pytest_twisted.ensureDeferred
async def test_a_paced_request_woken_late_reserves_again_as_a_delayed_one_does(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # the late-wake rule holds for the learnt pace too: woken 1 s past its moment, a request
    # of a paced origin sent now would land inside the next worker's gap
    pacing = FakePacing([30.0, 5.0])
    rig = paced_rig(b"User-agent: *\nAllow: /\n", pacing, monkeypatch)

    async def scenario() -> None:
        middleware = RobotsMiddleware(rig.crawler)
        send = asyncio.ensure_future(middleware.process_request(Request(A + "/1")))
        for _ in range(50):
            await asyncio.sleep(0)
        assert len(pacing.reserved) == 1
        rig.clock.advance(31.0)  # the timer fires 1 s late
        for _ in range(50):
            await asyncio.sleep(0)
        assert len(pacing.reserved) == 2 and not send.done()
        rig.clock.advance(5.0)
        assert await send is None  # sent, at its second moment
        assert len(pacing.reserved) == 2

    await rig.run(scenario())


@pytest_twisted.ensureDeferred
async def test_a_delayed_and_paced_origin_reserves_once_the_larger_gap(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pacing = FakePacing([0.0, 0.0])
    rig = paced_rig(b"User-agent: *\nCrawl-delay: 2\n", pacing, monkeypatch)

    async def scenario() -> None:
        middleware = RobotsMiddleware(rig.crawler)
        assert await middleware.process_request(Request(A + "/1")) is None
        assert pacing.reserved == [(SLOT, 2.0 + SEND_MARGIN)]  # max(Crawl-delay, pace 1 s)

    await rig.run(scenario())


# -- a worker's first contact joins the pace the cluster keeps ----------------------------------


def first_contact_rig(pacing: FakePacing, monkeypatch: pytest.MonkeyPatch) -> Rig:
    """A rig whose store paces the cluster with ``pacing``; its pages' answers heard."""
    from scrapy_rep.crawl import graph

    monkeypatch.setattr(graph, "shared_pacing", lambda store, remember: pacing)
    rig = Rig({}, {A: (200, {}, b"User-agent: *\nAllow: /\n")})
    pushback = RobotsMiddleware(rig.crawler).service.pushback
    assert pushback is not None
    pushback.heard = True
    return rig


@pytest_twisted.ensureDeferred
async def test_a_worker_at_first_contact_keeps_the_pace_the_cluster_keeps(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # the other workers learnt 0.5 s from pushbacks this worker never heard (their pause
    # ended before it first asked for the origin): unpaced, it would send between theirs
    pacing = FakePacing([0.3], kept=0.5)
    rig = first_contact_rig(pacing, monkeypatch)

    async def scenario() -> None:
        middleware = RobotsMiddleware(rig.crawler)
        send = asyncio.ensure_future(middleware.process_request(Request(A + "/1")))
        for _ in range(50):
            await asyncio.sleep(0)
        assert pacing.reserved == [(SLOT, 0.0)] and pacing.joins == [True]
        assert not send.done()  # it waits for the moment the cluster gave it
        rig.clock.advance(0.3)
        assert await send is None
        core = middleware.service.pushback
        assert core is not None
        assert core.core.gap(A) == 0.5  # its own pace from now: the next reserves 0.5 s
        assert core.core.first_room(A) is None  # paced, not a first contact any more
        second = middleware.service.pace(Request(A + "/2"), A, policy())
        assert second is not None
        pacing.waits.append(0.0)
        await second
        assert pacing.reserved[-1] == (SLOT, 0.5) and pacing.joins[-1] is False

    await rig.run(scenario())


@pytest_twisted.ensureDeferred
async def test_a_request_coming_while_a_first_contact_joins_waits_for_room_then_keeps_the_pace(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # the second request came while the first waited for the moment the cluster gave it:
    # before, it found the question asked and went at once, unpaced, between the other
    # workers' paced sends (joining behind the first instead reserved moments it then had
    # no room for). Now the first keeps its room while it waits: the second waits for its
    # answer, then reserves at the pace the first joined
    pacing = FakePacing([0.3, 0.5], kept=0.5)
    rig = first_contact_rig(pacing, monkeypatch)

    async def scenario() -> None:
        middleware = RobotsMiddleware(rig.crawler)
        signals = middleware.service.pushback
        assert signals is not None
        one, two = Request(A + "/1"), Request(A + "/2")
        first = asyncio.ensure_future(middleware.process_request(one))
        second = asyncio.ensure_future(middleware.process_request(two))
        for _ in range(50):
            await asyncio.sleep(0)
        assert pacing.reserved == [(SLOT, 0.0)] and pacing.joins == [True]
        assert not first.done() and not second.done()
        rig.clock.advance(0.3)
        assert await first is None
        for _ in range(50):
            await asyncio.sleep(0)
        assert len(pacing.reserved) == 1 and not second.done()  # the first is in flight
        signals.response(one, Response(one.url, status=200, request=one))
        for _ in range(50):
            await asyncio.sleep(0)
        assert len(pacing.reserved) == 2 and pacing.joins[-1] is False
        slot, gap = pacing.reserved[-1]  # the pace joined, a little faster for the answer
        assert slot == SLOT and gap == pytest.approx(0.5, rel=0.01)
        assert not second.done()
        rig.clock.advance(0.5)
        assert await second is None

    await rig.run(scenario())


@pytest_twisted.ensureDeferred
async def test_a_cluster_keeping_no_pace_leaves_a_first_contact_unpaced(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pacing = FakePacing([], kept=0.0)
    rig = first_contact_rig(pacing, monkeypatch)

    async def scenario() -> None:
        middleware = RobotsMiddleware(rig.crawler)
        assert await middleware.process_request(Request(A + "/1")) is None
        assert pacing.joins == [True]  # asked, at its first contact
        core = middleware.service.pushback
        assert core is not None
        assert core.core.gap(A) == 0.0 and core.core.first_room(A) == 0  # one in flight
        # asked once per origin: a pace the cluster learns later comes with its pause
        assert middleware.service.pace(Request(A + "/2"), A, policy()) is None
        assert pacing.joins == [True]

    await rig.run(scenario())
