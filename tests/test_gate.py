"""OriginGate: the lifecycle of held requests, with a fake clock and no crawl."""

from __future__ import annotations

from dataclasses import replace

import pytest

from scrapy_rep.core.gate import (
    JUDGE,
    ORIGIN_PAUSED,
    ORIGIN_PENDING,
    PARK,
    WAIT,
    OriginGate,
    Release,
    Waiting,
    Wake,
)
from scrapy_rep.core.pace import START_GAP
from scrapy_rep.core.policy import Policy, PolicyConfig, Status
from scrapy_rep.core.pushback import (
    RATE_LIMITED,
    SERVICE_UNAVAILABLE,
    Pushback,
    PushbackConfig,
)
from scrapy_rep.core.waiting_room import QUICK_FETCH, SLOW_FETCH, waiting_bound

A = "https://a.example:443"


def policy(status: Status, fetched_at: float = 0.0, ttl: float = 100.0, **kw: object) -> Policy:
    return replace(Policy(status, "x", 200, fetched_at, fetched_at + ttl, "u", "u", "why"), **kw)


def gate(pending_wait: float = 2.0, park_max: int = 10) -> OriginGate[str]:
    return OriginGate(pending_wait, park_max, park_timeout=50.0)


def test_a_fresh_policy_is_judged_at_once() -> None:
    assert gate().admit(A, policy(Status.OK), None, 10.0).action == JUDGE
    assert gate().admit(A, policy(Status.UNAVAILABLE), None, 10.0).action == JUDGE


def test_no_policy_waits_for_the_fetch_with_what_is_left_of_the_budget() -> None:
    g = gate(pending_wait=2.0)
    first = g.admit(A, None, None, 10.0)
    assert (first.action, first.budget) == (WAIT, 2.0)
    late = g.admit(A, None, 9.5, 10.0)  # the fetch started half a second ago
    assert (late.action, late.budget) == (WAIT, 1.5)
    too_late = g.admit(A, None, 7.0, 10.0)
    assert (too_late.action, too_late.reason) == (PARK, ORIGIN_PENDING)


def test_at_most_max_waiting_requests_wait_their_whole_budget() -> None:
    g: OriginGate[str] = OriginGate(2.0, 10, park_timeout=50.0, max_waiting=2)
    assert g.room.wait_budget(2.0, 10.0) == 2.0
    with g.room.enter(10.0):
        assert g.room.wait_budget(1.5, 10.0) == 1.5
        with g.room.enter(10.0):
            # past the bound, while the fetches are quick: a short wait, never longer
            assert g.room.wait_budget(2.0, 10.0 + QUICK_FETCH / 2) == QUICK_FETCH
            assert g.room.wait_budget(0.1, 10.0 + QUICK_FETCH / 2) == 0.1
            # one of them has waited a quick fetch's time: parked at once
            assert g.room.wait_budget(2.0, 10.0 + QUICK_FETCH) == 0.0
        assert g.room.wait_budget(2.0, 99.0) == 2.0
    try:
        with g.room.enter(10.0):
            raise RuntimeError("a wait cut short")
    except RuntimeError:
        pass
    with g.room.enter(10.0):  # counted out however the wait ends: one waits, not two
        assert g.room.wait_budget(2.0, 10.0) == 2.0
    assert gate().room.wait_budget(2.0, 10.0) == 2.0  # no bound by default


def test_the_longest_waiting_request_decides_whether_fetches_are_quick() -> None:
    g: OriginGate[str] = OriginGate(2.0, 10, park_timeout=50.0, max_waiting=1)
    with g.room.enter(10.0), g.room.enter(11.0):
        assert (
            g.room.wait_budget(2.0, 11.0) == 0.0
        )  # the one since 10.0 is slow, though 11.0 is not
    with g.room.enter(11.0), g.room.enter(10.9):
        assert g.room.wait_budget(2.0, 11.0) == QUICK_FETCH


def test_what_counts_as_a_quick_fetch_follows_how_long_fetches_lately_took() -> None:
    g: OriginGate[str] = OriginGate(2.0, 10, park_timeout=50.0, max_waiting=1)
    assert g.room.quick_fetch == QUICK_FETCH  # nothing measured yet
    g.room.fetched(0.6)  # the first fetch to end sets the pace: a busy crawl, 0.6 s a fetch
    assert g.room.quick_fetch == SLOW_FETCH * 0.6
    g.room.fetched(0.2)  # one quicker fetch moves it by an eighth of the difference
    assert g.room.quick_fetch == pytest.approx(SLOW_FETCH * 0.55)
    with g.room.enter(10.0):
        assert (
            g.room.wait_budget(2.0, 10.9) == g.room.quick_fetch
        )  # 0.9 s is not slow in this crawl
        assert g.room.wait_budget(2.0, 11.2) == 0.0  # twice what fetches take is
    for _ in range(40):  # quick again: the window shrinks back, never below QUICK_FETCH
        g.room.fetched(0.01)
    assert g.room.quick_fetch == QUICK_FETCH
    for _ in range(40):  # fetches slower than REP_PENDING_WAIT: never past it
        g.room.fetched(5.0)
    assert g.room.quick_fetch == 2.0


def test_half_the_downloader_may_wait_for_robots_txt() -> None:
    assert [waiting_bound(n) for n in (16, 3, 1, 0)] == [8, 1, 1, None]


def test_an_expired_policy_waits_for_its_refetch() -> None:
    assert gate().admit(A, policy(Status.OK, ttl=5.0), None, 10.0).action == WAIT


def test_a_paused_origin_parks_until_its_refetch_even_after_expiry() -> None:
    g = gate()
    paused = policy(Status.PAUSED, ttl=60.0)
    assert g.admit(A, paused, None, 10.0) == g.admit(A, paused, None, 59.0)
    assert g.admit(A, paused, None, 10.0).reason == ORIGIN_PAUSED
    # expired and no refetch planned: the request waits for a new fetch
    assert g.admit(A, paused, None, 61.0).action == WAIT
    effects = g.on_policy(A, None, paused, 0.0)
    assert effects.paused and effects.wake_at == 60.0
    assert g.admit(A, paused, None, 61.0).reason == ORIGIN_PAUSED  # its refetch is planned


def test_hold_reason_rechecks_paused_and_pending_but_keeps_other_reasons() -> None:
    g = gate(pending_wait=2.0)
    ok = policy(Status.OK)
    assert g.hold_reason(A, None, ok, None, 10.0) is None
    assert g.hold_reason(A, ORIGIN_PENDING, ok, None, 10.0) is None  # the fetch ended meanwhile
    assert g.hold_reason(A, ORIGIN_PENDING, None, 9.0, 10.0) == ORIGIN_PENDING
    assert g.hold_reason(A, None, None, 9.0, 10.0) is None  # still within the wait
    assert g.hold_reason(A, None, None, 7.0, 10.0) == ORIGIN_PENDING
    assert g.hold_reason(A, None, policy(Status.PAUSED), None, 10.0) == ORIGIN_PAUSED
    assert g.hold_reason(A, "disallow-rule", ok, None, 10.0) == "disallow-rule"


def test_a_good_policy_releases_everything_held_and_says_resumed() -> None:
    g = gate()
    paused = policy(Status.PAUSED, ttl=60.0)
    g.on_policy(A, None, paused, 0.0)
    assert g.watching
    for n in range(3):
        assert g.park(A, f"r{n}", float(n), ORIGIN_PAUSED)
    effects = g.on_policy(A, paused, policy(Status.OK, fetched_at=60.0), 60.0)
    assert [h.item for h in effects.release] == ["r0", "r1", "r2"]
    assert effects.resumed and not effects.paused and effects.wake_at is None
    assert len(g) == 0 and not g.watching


def test_giving_up_releases_to_be_dropped_and_is_no_resume() -> None:
    g = gate()
    g.on_policy(A, None, policy(Status.PAUSED), 0.0)
    g.park(A, "r", 0.0, ORIGIN_PAUSED)
    effects = g.on_policy(A, policy(Status.PAUSED), policy(Status.UNRESOLVED), 10.0)
    assert [h.item for h in effects.release] == ["r"]
    assert not effects.resumed


def test_an_unreachable_origin_plans_its_refetch() -> None:
    g = gate()
    effects = g.on_policy(A, None, policy(Status.UNREACHABLE, ttl=30.0), 0.0)
    assert effects.wake_at == 30.0
    assert g.wake_due(A, None, 0.0) is None  # already planned


def test_capacity_is_shared_by_all_origins() -> None:
    g = gate(park_max=2)
    assert g.park(A, "1", 0.0, ORIGIN_PENDING)
    assert g.park("https://b:443", "2", 0.0, ORIGIN_PENDING)
    assert not g.park(A, "3", 0.0, ORIGIN_PENDING)


def test_wake_due_plans_one_refetch_per_origin() -> None:
    g = gate()
    g.park(A, "r", 0.0, ORIGIN_PENDING)
    assert g.origins_without_wake() == [A]
    assert g.wake_due(A, policy(Status.PAUSED, ttl=40.0), 5.0) == 40.0
    assert g.wake_due(A, None, 5.0) is None
    assert g.origins_without_wake() == []
    assert g.wake(A, 39.0) == Wake(False, False, 40.0)  # early: wake again at its time
    assert g.wake(A, 40.0).refetch  # something still waits: refetch
    assert g.origins_without_wake() == [A]
    g = gate()
    g.wake_due(A, None, 5.0)
    assert not g.wake(A, 5.0).refetch  # nothing held: the next request will fetch


def test_expire_gives_back_what_waited_too_long() -> None:
    g = gate()  # park_timeout 50
    g.park(A, "old", 0.0, ORIGIN_PAUSED)
    g.park(A, "new", 30.0, ORIGIN_PAUSED)
    assert [h.item for h in g.expire(60.0)] == ["old"]
    assert len(g) == 1


def test_close_gives_back_everything_and_then_holds_nothing() -> None:
    g = gate()
    g.on_policy(A, None, policy(Status.PAUSED), 0.0)
    g.park(A, "a", 0.0, ORIGIN_PAUSED)
    g.park("https://b:443", "b", 1.0, ORIGIN_PENDING)
    assert sorted(h.item for h in g.close()) == ["a", "b"]
    assert len(g) == 0 and not g.watching
    # a fetch that ends after close releases nothing (close() already gave it all back)
    assert g.on_policy(A, None, policy(Status.OK), 5.0).release == []
    assert not g.park(A, "late", 6.0, ORIGIN_PENDING)
    assert g.wake(A, 6.0) == Wake(False, False, None)


def test_a_request_that_waited_is_judged_by_the_policy_it_waited_for() -> None:
    g = gate()
    assert g.admit_fetched(policy(Status.OK, ttl=0.0)).action == JUDGE  # max-age=0 still answers
    assert g.admit_fetched(policy(Status.PAUSED)).reason == ORIGIN_PAUSED
    assert g.admit_fetched(None).reason == ORIGIN_PENDING


def test_every_transition_of_the_table_is_what_on_policy_does() -> None:
    """TRANSITIONS is the gate's own table (the docs draw it): each row, carried out."""
    from scrapy_rep.core.gate import RESUME, STAY, TRANSITIONS

    before = {
        gate_state: old
        for gate_state, old in (
            ("pending", None),
            ("open", policy(Status.OK)),
            ("paused", policy(Status.PAUSED)),
            ("unresolved", policy(Status.UNRESOLVED)),
        )
    }
    assert set(TRANSITIONS) == set(before)
    for state, row in TRANSITIONS.items():
        assert set(row) == set(Status), state
        for status, (after, effect) in row.items():
            g = gate()
            if before[state] is not None:
                g.on_policy(A, None, before[state], 0.0)
            assert g.state(A, before[state]) == state
            assert g.park(A, "held", 1.0, ORIGIN_PAUSED)
            new = policy(status, fetched_at=2.0)
            effects = g.on_policy(A, before[state], new, 2.0)
            assert [h.item for h in effects.release] == ([] if effect == STAY else ["held"])
            assert effects.resumed == (effect == RESUME), (state, status)
            assert effects.paused == (after == "paused")
            assert g.state(A, new) == after, (state, status)


def test_waiting_says_how_many_whose_and_until_when_at_the_latest() -> None:
    config = PolicyConfig(pause_initial=10.0, pause_max=1000.0, pause_max_tries=4)
    b = "https://b.example:443"
    # b failed once and is refetched at 20; then back-offs of 20 s and 40 s: given up at 80
    policies = {b: policy(Status.PAUSED, fetched_at=10.0, ttl=10.0, failures=1)}
    g: OriginGate[str] = OriginGate(2.0, 10, park_timeout=500.0)
    assert g.waiting(policies.get, config) is None
    for n in range(3):
        g.park(b, f"b{n}", 5.0 + n, ORIGIN_PAUSED)
    waiting = g.waiting(policies.get, config)
    assert waiting is not None
    assert (waiting.held, waiting.origins, waiting.given_up_by) == (3, (b,), 80.0)
    # an origin with no policy yet waits at most REP_PARK_TIMEOUT after its last request parked
    g.park(A, "a", 1.0, ORIGIN_PENDING)
    waiting = g.waiting(policies.get, config)
    assert waiting is not None
    assert (waiting.held, waiting.origins, waiting.given_up_by) == (4, (b, A), 501.0)
    # REP_PARK_TIMEOUT comes first when it is shorter than the back-off
    short: OriginGate[str] = OriginGate(2.0, 10, park_timeout=30.0)
    short.park(b, "b", 7.0, ORIGIN_PAUSED)
    assert short.waiting(policies.get, config) == Waiting(1, (b,), 37.0)


def test_next_expiry_is_the_earliest_give_up_time_of_what_is_held() -> None:
    g = gate()  # park_timeout 50
    assert g.next_expiry() is None
    g.park(A, "late", 30.0, ORIGIN_PAUSED)
    g.park("https://b.example:443", "early", 10.0, ORIGIN_PENDING)
    assert g.next_expiry() == 60.0
    assert g.expire(60.0) == []  # parked *longer* than the timeout: not at the instant itself
    assert [h.item for h in g.expire(60.001)] == ["early"]
    assert g.next_expiry() == 80.0


# -- the gate asks what a page said too: right before the download, and after its pause --------


def paged(**config: object) -> tuple[OriginGate[str], Pushback]:
    pb = Pushback(PushbackConfig(**config))  # type: ignore[arg-type]
    return OriginGate(2.0, 10, park_timeout=3_600.0, pushback=pb), pb


def test_right_before_the_download_the_gate_holds_for_a_page_pause_or_counts_it_sent() -> None:
    g, pb = paged(ramp_max=2)
    assert g.sending(A, 10.0) is None  # an origin that never pushed back: nothing to ask
    pb.on_response(A, 429, {"retry-after": "30"}, f"{A}/", 10.0)
    assert g.sending(A, 11.0) == RATE_LIMITED  # paused while the request was judged
    pb.resume(A, 40.0)
    assert g.sending(A, 40.0) is None  # the slow start's one request: counted in flight
    assert g.sending(A, 40.0, turn=True) == RATE_LIMITED  # ramp full: one in flight
    pb.done(A)
    assert g.sending(A, 40.1) == RATE_LIMITED  # its pace: not yet
    assert g.sending(A, 40.1, turn=True, others=(1.0,)) is None  # the cluster spaced it


def test_after_a_page_pause_the_gate_lets_held_requests_go_as_its_slow_start_allows() -> None:
    g, pb = paged(ramp_max=8)
    assert g.ramp(A, 10.0) == Release(0)  # holds nothing
    pause = pb.on_response(A, 503, {"retry-after": "5"}, f"{A}/", 10.0)
    assert pause is not None
    for n in range(3):
        assert g.park(A, f"r{n}", 10.0, SERVICE_UNAVAILABLE)
    assert g.ramp(A, 12.0) == Release(0)  # paused
    pb.resume(A, 15.0)
    assert g.ramp(A, 15.0) == Release(1)  # one in flight to start with
    g.release_some(A, 1)
    assert g.sending(A, 15.0) is None
    assert g.ramp(A, 15.0) == Release(0)  # the one in flight fills the slow start
    pb.done(A)
    assert g.ramp(A, 15.5) == Release(0, START_GAP - 0.5)  # paced: ask again then
    assert g.ramp(A, 15.0 + START_GAP) == Release(1)  # one at a time, each at its moment


def test_one_question_is_this_origin_paused_why_until_when_for_either_cause() -> None:
    g, pb = paged()
    ok = policy(Status.OK)
    assert g.pause(A, 10.0, ok) is None and g.pause(A, 10.0, None) is None
    robots = policy(Status.PAUSED, fetched_at=0.0, ttl=60.0, failures=1)
    said = g.pause(A, 10.0, robots)
    assert said is not None and (said.cause, said.until) == (ORIGIN_PAUSED, 60.0)
    assert g.pause(A, 61.0, robots) is None  # over, and no refetch planned
    g.park(A, "r", 10.0, ORIGIN_PAUSED)
    assert g.wake_due(A, robots, 61.0) == 60.0  # the refetch is planned at its end
    assert g.pause(A, 61.0, robots) == said  # its refetch is planned: still held for it
    pb.on_response(A, 429, {"retry-after": "100"}, f"{A}/x", 10.0)
    page = g.pause(A, 10.0, robots)
    assert page is not None and (page.cause, page.until, page.url) == (
        RATE_LIMITED,
        110.0,
        f"{A}/x",
    )
    assert g.pause(A, 10.0, ok) == page
    assert g.pause(A, 10.0, replace(robots, expires_at=500.0)) == replace(said, until=500.0)


def test_one_timer_per_origin_asks_the_gate_what_is_due_whatever_it_was_set_for() -> None:
    g, pb = paged()
    g.park(A, "r", 10.0, ORIGIN_PAUSED)
    assert g.wake_due(A, policy(Status.PAUSED, ttl=300.0), 10.0) == 300.0
    pb.on_response(A, 503, {"retry-after": "20"}, f"{A}/", 10.0)
    assert g.wake(A, 15.0) == Wake(False, False, 30.0)  # the page pause ends first
    assert g.wake(A, 30.0) == Wake(False, True, 300.0)  # over: resume it; robots.txt later
    pb.resume(A, 30.0)
    assert g.wake(A, 300.0) == Wake(True, True, None)  # the refetch, and the pace looked at
    assert g.wake(A, 301.0) == Wake(False, True, None)  # nothing planned any more
