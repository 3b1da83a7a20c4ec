"""What pages say while they are crawled (429, 503, a wall of 403s).

First the pure core (core/pushback.py), with the clock passed in; then, on
the rig, the Scrapy side: ``PushbackMiddleware`` and ``PageSignals`` in the
crawl's own chain of downloader middlewares, with the ManualClock, and
``SharedPauses`` on a SQLite store. The whole-crawl versions are in
``tests/integration/test_pushback.py``.
"""

from __future__ import annotations

import asyncio
import email.utils
import heapq
import itertools
import math
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import pytest_twisted
from scrapy import Request
from scrapy.http import Response
from scrapy.utils.defer import maybe_deferred_to_future
from twisted.internet.defer import Deferred

from scrapy_rep.core.gate import JUDGE, PARK, OriginGate
from scrapy_rep.core.pace import (
    COARSE,
    DECAY,
    FINE,
    GAP_GROWTH,
    START_GAP,
    SUSTAINED,
    Pace,
    fit_bucket,
)
from scrapy_rep.core.policy import Policy, Status
from scrapy_rep.core.pushback import (
    BLOCKED,
    GIVE_UP_AFTER,
    RATE_LIMITED,
    SERVICE_UNAVAILABLE,
    PauseState,
    Pushback,
    PushbackConfig,
)
from scrapy_rep.crawl import graph
from scrapy_rep.crawl.exceptions import RepIgnoreRequest
from tests.support.clock import ManualClock
from tests.support.rig import Middlewares, Rig, Stall, in_loop, rig_for

A = "http://a.example:80"
B = "http://b.example:80"
NOW = 1_000_000.0


def make(**knobs: object) -> Pushback:
    base: dict[str, object] = {"floor": 1.0, "pause_max": 600.0, "backoff_start": 5.0}
    base.update(knobs)
    return Pushback(PushbackConfig(**base))  # type: ignore[arg-type]


def ra(value: str) -> dict[str, str]:
    return {"retry-after": value}


def test_a_429_with_retry_after_delta_pauses_its_origin_for_that_long() -> None:
    pb = make()
    pause = pb.on_response(A, 429, ra("30"), f"{A}/x", NOW)
    assert pause is not None and pause.new
    assert pause.cause == RATE_LIMITED
    assert pause.until == NOW + 30
    assert pause.state.retry_after == 30 and pause.state.url == f"{A}/x"
    assert pb.hold_reason(A, NOW + 29) == RATE_LIMITED
    assert pb.hold_reason(B, NOW + 1) is None  # other origins keep their pace


def test_a_503_is_its_own_cause_and_an_http_date_is_read() -> None:
    pb = make()
    date = email.utils.formatdate(NOW + 120, usegmt=True)
    pause = pb.on_response(A, 503, ra(date), f"{A}/", NOW)
    assert pause is not None and pause.cause == SERVICE_UNAVAILABLE
    assert pause.until == pytest.approx(NOW + 120, abs=1)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("-5", 5.0),  # negative: unreadable, the back-off
        ("soon", 5.0),  # garbage: the back-off
        ("", 5.0),
        ("9" * 5000, 600.0),  # huge: REP_PAUSE_MAX
        ("0", 1.0),  # the floor
        (email.utils.formatdate(NOW - 3600, usegmt=True), 1.0),  # past: the floor
        ("Fri, 31 Dec 99999 23:59:59 GMT", 5.0),  # an impossible date: the back-off
        ("1e400", 5.0),
    ],
)
def test_hostile_retry_after_never_crashes_nor_pauses_unboundedly(
    value: str, expected: float
) -> None:
    pause = make().on_response(A, 429, ra(value), f"{A}/", NOW)
    assert pause is not None
    assert pause.until - NOW == pytest.approx(expected)


def test_without_retry_after_the_back_off_grows_per_pushback_and_is_capped() -> None:
    pb = make(backoff_start=5.0, backoff_factor=3.0, pause_max=100.0)
    now = NOW
    waits = []
    for _ in range(5):
        pause = pb.on_response(A, 503, {}, f"{A}/", now)
        assert pause is not None
        waits.append(pause.until - now)
        now = pause.until
        pb.resume(A, now)
    assert waits == [5.0, 15.0, 45.0, 100.0, 100.0]


def test_a_run_of_healthy_responses_resets_the_back_off() -> None:
    pb = make(backoff_start=5.0, reset_after=3, ramp_max=100)
    pause = pb.on_response(A, 429, {}, f"{A}/", NOW)
    assert pause is not None
    pb.resume(A, pause.until)
    for _ in range(3):
        pb.sent(A)
        pb.done(A)
        assert pb.on_response(A, 200, {}, f"{A}/ok", pause.until) is None
    again = pb.on_response(A, 429, {}, f"{A}/", pause.until + 1)
    assert again is not None and again.until - (pause.until + 1) == 5.0  # level 1 again


def test_responses_in_flight_when_it_paused_add_no_depth() -> None:
    pb = make(backoff_start=5.0)
    first = pb.on_response(A, 429, {}, f"{A}/1", NOW)
    second = pb.on_response(A, 429, {}, f"{A}/2", NOW + 0.1)
    assert first is not None and second is not None
    assert first.new and not second.new
    assert second.state.level == 1
    assert second.until == pytest.approx(NOW + 5.1)  # never shorter, never deeper


def test_a_later_shorter_retry_after_never_shortens_the_pause() -> None:
    pb = make()
    pb.on_response(A, 429, ra("60"), f"{A}/1", NOW)
    second = pb.on_response(A, 429, ra("1"), f"{A}/2", NOW + 1)
    assert second is not None and second.until == NOW + 60


def test_slow_start_one_in_flight_then_one_more_per_healthy_response() -> None:
    pb = make(ramp_max=4)
    pause = pb.on_response(A, 429, ra("10"), f"{A}/", NOW)
    assert pause is not None
    t = pause.until
    assert pb.hold_reason(A, t) == RATE_LIMITED  # until the caller resumes it
    assert pb.resume(A, t) is not None
    assert pb.room(A) == 1
    pb.sent(A)
    assert pb.hold_reason(A, t) == RATE_LIMITED and pb.room(A) == 0
    pb.done(A)
    pb.on_response(A, 200, {}, f"{A}/a", t + 1)
    assert pb.room(A) == 2
    pb.sent(A)
    pb.sent(A)
    pb.done(A)
    pb.on_response(A, 200, {}, f"{A}/b", t + 2)
    assert pb.room(A) == 2  # window 3, one in flight
    pb.done(A)
    pb.on_response(A, 200, {}, f"{A}/c", t + 3)
    assert pb.room(A) is None  # window reached ramp_max: its normal concurrency


def test_a_429_during_the_ramp_pauses_again_for_longer() -> None:
    pb = make(backoff_start=5.0, backoff_factor=2.0)
    first = pb.on_response(A, 429, ra("2"), f"{A}/", NOW)
    assert first is not None
    pb.resume(A, first.until)
    pb.sent(A)
    pb.done(A)
    again = pb.on_response(A, 429, ra("2"), f"{A}/", first.until + 0.5)
    assert again is not None and again.new
    assert again.until - (first.until + 0.5) == 3.0  # Retry-After and half of it: longer
    assert pb.room(A) == 0


def test_the_fifth_pause_in_a_row_gives_up_a_healthy_answer_starts_the_count_over() -> None:
    pb = make()
    now = NOW
    given_up = []
    for _ in range(GIVE_UP_AFTER + 1):
        pause = pb.on_response(A, 429, ra("1"), f"{A}/", now)
        assert pause is not None and pause.new
        given_up.append(pause.given_up)
        assert pb.on_response(A, 429, ra("1"), f"{A}/x", now).given_up is False  # in flight
        now = pause.until
        pb.resume(A, now)
    assert given_up == [False] * (GIVE_UP_AFTER - 1) + [True, True]
    pb.on_response(A, 200, {}, f"{A}/ok", now)
    pause = pb.on_response(A, 429, ra("1"), f"{A}/", now)
    assert pause is not None and not pause.given_up


def test_a_lone_403_is_that_urls_answer_a_wall_of_them_blocks() -> None:
    pb = make(block_after=3, block_pause=3600.0)
    assert pb.on_response(A, 403, {}, f"{A}/never-served", NOW) is None  # served nothing yet
    assert pb.on_response(A, 200, {}, f"{A}/", NOW) is None
    assert pb.on_response(A, 403, {}, f"{A}/1", NOW) is None
    assert pb.on_response(A, 200, {}, f"{A}/2", NOW) is None  # a success breaks the run
    assert pb.on_response(A, 403, {}, f"{A}/3", NOW) is None
    assert pb.on_response(A, 401, {}, f"{A}/4", NOW) is None
    block = pb.on_response(A, 403, {}, f"{A}/5", NOW + 1)
    assert block is not None and block.cause == BLOCKED
    assert block.statuses == (401, 403)
    assert (block.first_url, block.last_url, block.refusals) == (f"{A}/3", f"{A}/5", 3)
    assert block.until == NOW + 1 + 3600
    assert pb.hold_reason(A, NOW + 2) == BLOCKED


def test_an_origin_that_never_served_a_page_is_not_blocked() -> None:
    pb = make(block_after=2)
    for i in range(5):
        assert pb.on_response(A, 403, {}, f"{A}/{i}", NOW) is None
    assert A not in pb


def test_a_row_switched_off_does_nothing_and_other_5xx_are_left_to_scrapy() -> None:
    pb = make(actions={"429": "off", "503": "pause"})
    assert pb.on_response(A, 429, ra("30"), f"{A}/", NOW) is None
    assert pb.on_response(A, 500, ra("30"), f"{A}/", NOW) is None
    assert pb.on_response(A, 502, {}, f"{A}/", NOW) is None
    assert A not in pb


def test_healthy_origins_leave_no_state_behind() -> None:
    pb = make()
    for i in range(100):
        pb.on_response(f"http://h{i}.example:80", 200, {}, "u", NOW)
    assert not any(f"http://h{i}.example:80" in pb for i in range(100))


def test_a_shared_pause_is_adopted_if_longer_and_round_trips_as_json() -> None:
    pb = make()
    state = PauseState(NOW + 50, RATE_LIMITED, 429, f"{A}/", 50.0, 1, NOW)
    assert PauseState.from_dict(state.to_dict()) == state
    assert PauseState.from_dict({"until": "x"}) is None
    assert PauseState.from_dict({**state.to_dict(), "cause": "nonsense"}) is None
    adopted = pb.adopt(A, state, NOW + 1)
    assert adopted is not None and pb.hold_reason(A, NOW + 2) == RATE_LIMITED
    assert pb.adopt(A, state, NOW + 1) is None  # already known
    assert pb.adopt(B, state, NOW + 60) is None  # over already


def test_a_refusal_in_flight_that_asks_longer_moves_the_pauses_end_and_says_so() -> None:
    # two requests in flight at one worker, both refused: the site counts its Retry-After
    # from the later one, and the cluster's other workers must hear of that end too
    pb = make()
    first = pb.on_response(A, 429, ra("60"), f"{A}/1", NOW)
    later = pb.on_response(A, 429, ra("60"), f"{A}/2", NOW + 1)
    sooner = pb.on_response(A, 429, ra("10"), f"{A}/3", NOW + 2)
    assert first is not None and first.new and first.moved
    assert later is not None and not later.new and later.moved and later.until == NOW + 61
    assert sooner is not None and not sooner.moved and sooner.until == NOW + 61
    # a worker that adopted the first end adopts the later one: the same episode, held on
    other = make()
    adopted = other.adopt(A, first.state, NOW)
    assert adopted is not None and adopted.new
    moved = other.adopt(A, later.state, NOW + 1)
    assert moved is not None and not moved.new
    assert other.paused(A, NOW + 60.5) is not None


def _ok_policy() -> Policy:
    return Policy(Status.OK, "2xx", 200, NOW, NOW + 86_400, "u", "u", "ok", body=b"")


def test_the_gate_holds_a_paused_origins_requests_with_the_pages_reason() -> None:
    pb = make()
    gate: OriginGate[str] = OriginGate(10.0, 100, 3600.0, pushback=pb)
    policy = _ok_policy()
    assert gate.admit(A, policy, None, NOW).action == JUDGE
    pb.on_response(A, 429, ra("30"), f"{A}/", NOW)
    held = gate.admit(A, policy, None, NOW + 1)
    assert (held.action, held.reason) == (PARK, RATE_LIMITED)
    assert gate.admit(B, policy, None, NOW + 1).action == JUDGE
    # entering the scheduler: parked; once resumed and with room, let through
    assert gate.hold_reason(A, None, policy, None, NOW + 1) == RATE_LIMITED
    assert gate.park(A, "r1", NOW + 1, RATE_LIMITED) and gate.park(A, "r2", NOW + 1, RATE_LIMITED)
    # a new robots.txt policy meanwhile does not release what a page's pause holds
    assert gate.on_policy(A, policy, _ok_policy(), NOW + 2).release == []
    pb.resume(A, NOW + 31)
    assert gate.hold_reason(A, RATE_LIMITED, policy, None, NOW + 31) is None
    assert [h.item for h in gate.release_some(A, pb.room(A))] == ["r1"]
    assert len(gate) == 1


def test_refusals_in_flight_when_an_origin_was_blocked_start_no_new_block() -> None:
    pb = make(block_after=2)
    pb.on_response(A, 200, {}, f"{A}/", NOW)
    pb.on_response(A, 403, {}, f"{A}/1", NOW)
    assert pb.on_response(A, 403, {}, f"{A}/2", NOW) is not None
    for i in range(3, 10):
        assert pb.on_response(A, 403, {}, f"{A}/{i}", NOW + 1) is None


def test_the_page_status_table_setting_overrides_rows_and_refuses_nonsense() -> None:
    from scrapy_rep.runtime.settings import SettingError, page_status_actions

    def read(value: object) -> dict[str, str]:
        return page_status_actions("REP_PAGE_STATUS_ACTIONS", value, {}.get)

    assert read({})["429"] == "pause" and read({})["403"] == "block"
    assert read({"503": "off", 502: "PAUSE"})["503"] == "off"
    assert read({"502": "pause"})["502"] == "pause"
    assert read('{"429": "off"}')["429"] == "off"  # -s on the command line
    assert read({"403": None})["403"] == "off"
    for bad in ({"200": "pause"}, {"abc": "pause"}, {"429": "retry"}, "[", ["429"]):
        with pytest.raises(SettingError, match="REP_PAGE_STATUS_ACTIONS"):
            read(bad)


def test_a_licence_wall_is_a_row_of_the_page_status_table_that_stays_one() -> None:
    from scrapy_rep.runtime.settings import SettingError, page_status_actions

    def read(value: object) -> dict[str, str]:
        return page_status_actions("REP_PAGE_STATUS_ACTIONS", value, {}.get)

    assert read({})["402"] == "wall" and read({"402": "wall"})["402"] == "wall"
    # a wall is dropped whatever the table says of 402; no other status is a wall
    for bad in ({"402": "off"}, {"402": "pause"}, {"429": "wall"}, {"401": "wall"}):
        with pytest.raises(SettingError, match="only a licence wall's row"):
            read(bad)


def test_a_ramp_refused_at_some_width_stops_below_it_until_a_healthy_run() -> None:
    pb = make(ramp_max=8, reset_after=4, backoff_start=1.0)
    pause = pb.on_response(A, 429, ra("1"), f"{A}/", NOW)
    assert pause is not None
    t = pause.until
    pb.resume(A, t)
    for _ in range(2):  # window 1 -> 3
        pb.sent(A)
        pb.done(A)
        pb.on_response(A, 200, {}, f"{A}/ok", t)
    assert pb.room(A) == 3
    again = pb.on_response(A, 429, ra("1"), f"{A}/", t + 0.1)  # refused at width 3
    assert again is not None
    t = again.until
    pb.resume(A, t)
    for _ in range(3):
        pb.sent(A)
        pb.done(A)
        pb.on_response(A, 200, {}, f"{A}/ok", t)
    assert pb.room(A) == 2  # stops at 2, below the width refused
    pb.sent(A)
    pb.done(A)
    pb.on_response(A, 200, {}, f"{A}/ok", t)  # the 4th healthy in a row: it may grow again
    assert pb.room(A) == 3


def test_origins_that_served_pages_are_remembered_within_a_bound(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import scrapy_rep.core.pushback as module

    monkeypatch.setattr(module, "SERVED_MAX", 3)
    pb = make(block_after=1)
    for i in range(5):
        pb.on_response(f"http://h{i}.example:80", 200, {}, "u", NOW)
    assert pb.on_response("http://h0.example:80", 403, {}, "u", NOW) is None  # forgotten
    assert pb.on_response("http://h4.example:80", 403, {}, "u", NOW) is not None


def _answers(pb: Pushback, t: float, spacing: float, n: int, status: int = 200) -> float:
    """``n`` requests of A sent ``spacing`` s apart from ``t``, each answered ``status``."""
    for _ in range(n):
        t += spacing
        pb.sent(A, t)
        pb.done(A)
        pb.on_response(A, status, {}, f"{A}/p", t)
    return t


def test_a_first_pushback_paces_sends_from_a_start_gap_that_shrinks_per_healthy_answer() -> None:
    pb = make(ramp_max=2, reset_after=1_000)
    assert not pb.paced(A)
    first = pb.on_response(A, 429, ra("2"), f"{A}/", NOW)
    assert first is not None and pb.gap(A) == START_GAP
    assert first.state.gap == START_GAP  # shared with the pause: the cluster paces too
    pb.resume(A, first.until)
    t = first.until
    pb.sent(A, t)
    pb.done(A)
    assert pb.wait(A, t) == START_GAP and pb.hold_reason(A, t + 0.5) == RATE_LIMITED
    assert pb.hold_reason(A, t + 0.5, paced=False) is None  # the cluster gave it its moment
    pb.on_response(A, 200, {}, f"{A}/ok", t)
    assert pb.gap(A) == pytest.approx(START_GAP * DECAY[COARSE])  # quickly faster
    assert pb.hold_reason(A, t + START_GAP) is None


def test_the_next_pushbacks_go_back_to_the_last_healthy_pace_then_keep_it() -> None:
    pb = make(ramp_max=2, reset_after=1_000)
    first = pb.on_response(A, 429, ra("2"), f"{A}/", NOW)
    assert first is not None
    pb.resume(A, first.until)
    t = _answers(pb, first.until, 0.5, 3)  # healthy at 0.5 s apart
    t += 0.3
    pb.sent(A, t)
    pb.done(A)
    second = pb.on_response(A, 429, ra("2"), f"{A}/", t)  # refused at 0.3 s apart
    assert second is not None and second.new
    assert second.until - t == 2.0  # after healthy answers: not deeper, Retry-After as said
    assert pb.gap(A) == 0.5  # the last healthy pace, shrinking slowly from here
    pb.resume(A, second.until)
    t = _answers(pb, second.until, 0.45, 2)
    assert pb.gap(A) == pytest.approx(0.5 * DECAY[FINE] ** 2)
    t += 0.44
    pb.sent(A, t)
    pb.done(A)
    third = pb.on_response(A, 429, ra("2"), f"{A}/", t)
    assert third is not None
    kept = 0.45 / DECAY[FINE]  # the last healthy pace, one fine step slower
    assert pb.gap(A) == pytest.approx(kept)
    pb.resume(A, third.until)
    _answers(pb, third.until, kept, 50)
    assert pb.gap(A) == pytest.approx(kept)  # settled: healthy answers keep it


def test_a_pushback_at_a_settled_pace_slows_it_a_long_healthy_run_probes_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import scrapy_rep.core.pace as module

    monkeypatch.setattr(module, "REPROBE", 20)
    pb = make(ramp_max=2, reset_after=1_000)
    t = NOW
    for spacing in (0.5, 0.4):  # the first pushback, then two that each find a healthy pace
        pause = pb.on_response(A, 429, ra("1"), f"{A}/", t)
        assert pause is not None
        pb.resume(A, pause.until)
        t = _answers(pb, pause.until, spacing, 2)
    pause = pb.on_response(A, 429, ra("1"), f"{A}/", t)
    assert pause is not None
    kept = pb.gap(A)
    assert kept == pytest.approx(0.4 / DECAY[FINE])
    pb.resume(A, pause.until)
    t = _answers(pb, pause.until, kept, 2)
    slower = pb.on_response(A, 429, ra("1"), f"{A}/", t)  # refused at the kept pace
    assert slower is not None and pb.gap(A) == pytest.approx(kept * GAP_GROWTH)
    pb.resume(A, slower.until)
    _answers(pb, slower.until, kept * GAP_GROWTH, 20)  # REPROBE healthy in a row
    assert pb.gap(A) < kept * GAP_GROWTH  # it tries a little faster again


def test_a_shared_pace_is_adopted_and_a_bad_one_is_ignored() -> None:
    pb = make()
    state = PauseState(NOW + 5, RATE_LIMITED, 429, f"{A}/", 5.0, 1, NOW, gap=0.75, stage=FINE)
    assert PauseState.from_dict(state.to_dict()) == state
    unpaced = replace(state, gap=0.0, stage=COARSE)
    assert PauseState.from_dict({**state.to_dict(), "gap": -1}) == unpaced
    assert PauseState.from_dict({**state.to_dict(), "gap": 1e300}) == unpaced
    assert PauseState.from_dict({**state.to_dict(), "stage": 7}) == unpaced
    legacy = {k: v for k, v in state.to_dict().items() if k not in ("gap", "stage")}
    assert PauseState.from_dict(legacy) == unpaced  # an older worker's
    assert pb.adopt(A, state, NOW) is not None
    assert pb.gap(A) == 0.75  # the pace the cluster learnt last, where its learning is
    pb.resume(A, state.until)
    _answers(pb, state.until, 0.75, 1)
    assert pb.gap(A) == pytest.approx(0.75 * DECAY[FINE])


def test_paced_origins_are_remembered_within_a_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    import scrapy_rep.core.pushback as module

    monkeypatch.setattr(module, "TRACKED_MAX", 3)
    pb = make()
    origins = [f"http://h{i}.example:80" for i in range(5)]
    for origin in origins:
        pause = pb.on_response(origin, 429, ra("1"), f"{origin}/", NOW)
        assert pause is not None
        if origin != origins[2]:
            pb.resume(origin, pause.until)  # paced now, not paused
    assert [o in pb for o in origins] == [False, False, True, True, True]
    assert pb.paused(origins[2], NOW) is not None  # a paused one is never forgotten


def test_only_refusals_of_urls_the_origin_or_the_crawl_asked_for_count_toward_a_block() -> None:
    pb = make(block_after=2)
    e = "http://e.example:80"
    pb.on_response(A, 200, {}, f"{A}/", NOW)
    # another site's links to refused or walled URLs: those URLs' answers, however many
    for i in range(5):
        assert pb.on_response(A, 403, {}, f"{A}/private/{i}", NOW, linked_from=e) is None
        assert pb.on_wall(A, 402, f"{A}/paid/{i}", NOW, linked_from=e) is None
        assert pb.on_response(A, 403, {}, f"{A}/x/{i}", NOW, linked_from="") is None
    # the origin's own free page linking to walls: the wall covers part of the site
    for i in range(5):
        assert pb.on_wall(A, 402, f"{A}/paid/{i}", NOW, linked_from=A) is None
    assert pb.hold_reason(A, NOW) is None
    # the origin's own links refused after it served pages: a firewall
    assert pb.on_response(A, 403, {}, f"{A}/1", NOW, linked_from=A) is None
    block = pb.on_response(A, 403, {}, f"{A}/2", NOW, linked_from=A)
    assert block is not None and block.cause == BLOCKED
    # a wall on every page, the start requests' and the origin's own links alike
    assert pb.on_wall(B, 402, f"{B}/", NOW) is None
    walled = pb.on_wall(B, 402, f"{B}/a", NOW, linked_from=B)
    assert walled is not None and walled.cause == BLOCKED


def test_the_tracked_origin_bound_holds_when_every_tracked_origin_is_paused() -> None:
    from scrapy_rep.core.pushback import TRACKED_MAX

    pb = make()
    origins = [f"http://h{i}.example:80" for i in range(TRACKED_MAX + 1_000)]
    for origin in origins:
        assert pb.on_response(origin, 429, ra("30"), f"{origin}/", NOW) is not None
    tracked = sum(origin in pb for origin in origins)
    assert tracked == TRACKED_MAX
    assert origins[-1] in pb  # the newest pushback is always kept


def test_beyond_the_bound_a_quiet_origin_goes_first_else_the_pause_ending_soonest(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import scrapy_rep.core.pushback as module

    monkeypatch.setattr(module, "TRACKED_MAX", 3)
    pb = make()
    h = [f"http://h{i}.example:80" for i in range(6)]
    for origin, seconds in zip(h, ("600", "60", "300", "500"), strict=False):
        assert pb.on_response(origin, 429, ra(seconds), f"{origin}/", NOW) is not None
    assert [o in pb for o in h[:4]] == [True, False, True, True]  # h1's pause ended first
    pb.resume(h[2], NOW + 500)  # paced, nothing in flight: quiet
    pb.resume(h[3], NOW + 500)
    pb.sent(h[3], NOW + 500)  # paced, one in flight: busy
    assert pb.on_response(h[4], 429, ra("30"), f"{h[4]}/", NOW + 500) is not None
    assert [o in pb for o in h[:5]] == [True, False, False, True, True]  # the quiet one
    # nothing quiet: an origin's pace is forgotten before any origin's pause
    assert pb.on_response(h[5], 429, ra("30"), f"{h[5]}/", NOW + 500) is not None
    assert [o in pb for o in h] == [True, False, False, False, True, True]


def test_first_contact_one_in_flight_more_per_healthy_answer_a_slow_one_eases(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pb = make(ramp_max=4)
    # an origin never heard from: one request in flight, and nothing pushed back (no reason)
    assert pb.contact(A) and pb.first_room(A) == 1
    pb.sent(A, NOW)
    assert pb.first_room(A) == 0
    assert pb.hold_reason(A, NOW) is None and pb.paused(A, NOW) is None and not pb.paced(A)
    t = NOW
    for _ in range(2):  # a window of 2, then 3: two go for each healthy answer that came back
        t += 0.05
        pb.done(A)
        pb.on_response(A, 200, {}, f"{A}/", t, latency=0.03)
        if t == NOW + 0.05:  # nothing in flight: no state kept, its width is known again
            assert A not in pb
        assert pb.contact(A) and pb.first_room(A) == 2
        pb.sent(A, t)
        pb.sent(A, t)
        assert pb.first_room(A) == 0 and pb.hold_reason(A, t) is None
    pb.done(A)
    pb.on_response(A, 200, {}, f"{A}/", t + 0.05, latency=0.03)
    assert A not in pb and not pb.contact(A)  # the ramp reached ramp_max: forgotten, heard from
    # a RISING answer during it: back to one in flight, as a slowing site's pushback
    assert pb.contact(B)
    pb.sent(B, NOW)
    pb.done(B)
    pb.on_response(B, 200, {}, f"{B}/", NOW + 0.03, latency=0.03)
    assert pb.contact(B) and pb.first_room(B) == 2
    pb.sent(B, NOW + 0.03)
    pb.sent(B, NOW + 0.03)
    pb.done(B)
    pb.on_response(B, 200, {}, f"{B}/", NOW + 0.6, latency=0.5)
    assert pb.first_room(B) is None and pb.room(B) == 0
    assert pb.hold_reason(B, NOW + 0.6) == SERVICE_UNAVAILABLE
    # a broad crawl's first contacts stay within the tracked bound
    import scrapy_rep.core.pushback as module

    monkeypatch.setattr(module, "TRACKED_MAX", 3)
    for i in range(10):
        pb.contact(f"http://h{i}.example:80")
        pb.sent(f"http://h{i}.example:80", NOW)
    assert sum(f"http://h{i}.example:80" in pb for i in range(10)) <= 3


def test_an_operator_lifts_pauses_one_origin_or_all_then_they_start_slowly() -> None:
    pb = make()
    for origin in (A, B):
        assert pb.on_response(origin, 429, ra("600"), f"{origin}/", NOW) is not None
    assert [o for o, _ in pb.lift(A)] == [A]
    assert pb.paused(A, NOW + 1) is None and pb.hold_reason(A, NOW + 1) is None
    assert pb.room(A) == 1  # slow start, as after any pause
    assert pb.paused(B, NOW + 1) is not None
    assert [o for o, _ in pb.lift(None)] == [B]
    assert pb.lift(None) == [] and pb.lift("http://never:80") == []


# -- the Scrapy side, in-process: the crawl's downloader middlewares on the rig ----------------

SITE = "http://a.example"
ROBOTS = (200, {}, b"User-agent: *\nAllow: /\n")
OK = (200, {}, b"ok")


@pytest.fixture
def mw() -> Iterator[Middlewares]:
    rig = rig_for(
        {A: ROBOTS},
    )
    yield Middlewares(rig)
    rig.close()


def pages(rig: Rig, *paths: str, reply: Any = OK) -> list[str]:
    """``paths`` of SITE answered ``reply``; their URLs."""
    urls = [SITE + path for path in paths]
    for url in urls:
        rig.transport.answers[url] = reply
    return urls


def sent(rig: Rig) -> list[str]:
    """The pages that went out to the network, in order (not robots.txt)."""
    return [url for url in rig.transport.urls() if not url.endswith("/robots.txt")]


def released(rig: Rig) -> list[str]:
    return [request.url for request in rig.engine.crawled]


async def held(mw: Middlewares, url: str) -> Request:
    """``url`` fetched, handed back by the middlewares and parked as the engine schedules it."""
    handed = await mw.fetch(Request(url))
    assert isinstance(handed, Request), handed
    assert handed.url == url and handed.dont_filter  # the dupefilter saw it already
    assert not mw.rig.schedule(handed)
    return handed


async def ok(mw: Middlewares, request: Request) -> Response:
    response = await mw.fetch(request)
    assert isinstance(response, Response) and response.status == 200, response
    return response


@pytest_twisted.ensureDeferred
async def test_a_429_holds_its_request_pauses_its_origin_for_retry_after_then_sends_it(
    mw: Middlewares,
) -> None:
    rig = mw.rig

    async def scenario() -> None:
        (first,) = pages(rig, "/1", reply=[(429, {"Retry-After": "30"}, b""), OK])
        (later,) = pages(rig, "/2")
        rig.transport.answers["http://b.example/1"] = OK
        await held(mw, first)  # the refused request: held, not retried, not lost
        assert not rig.schedule(Request(later))  # the origin's next requests are held too
        await ok(mw, Request("http://b.example/1"))  # other origins keep their pace
        rig.clock.advance(29.9)
        assert released(rig) == []
        assert sent(rig) == [first, "http://b.example/1"]
        rig.clock.advance(0.1)  # the pause is over: one request goes (slow start)
        assert released(rig) == [first]
        await ok(mw, rig.engine.crawled[0])
        assert sent(rig) == [first, "http://b.example/1", first]
        assert rig.stat("rep/pushback/pauses/rate-limited") == 1
        assert rig.stat("rep/pushback/refused/429") == 1
        assert rig.stat("rep/pushback/held/rate-limited") == 2
        assert rig.stat("rep/pushback/released/rate-limited") == 1

    await in_loop(scenario())


@pytest_twisted.ensureDeferred
async def test_what_a_slowing_origin_holds_goes_at_its_pace_and_when_its_ramp_ends() -> None:
    # found in CI, where load made a healthy origin's answers look slow: its requests held
    # for the pace after a slow answer had no timer (they waited for the engine's idle);
    # and the answer that ended the ramp also took the origin's state, so what the ramp
    # still held was never released, and ten pages were lost at the crawl's time limit
    rig = rig_for({A: ROBOTS}, CONCURRENT_REQUESTS_PER_DOMAIN=2)  # a ramp of two
    mw = Middlewares(rig)

    async def scenario() -> None:
        urls = pages(rig, *(f"/{i}" for i in range(6)))
        for url, latency in zip(urls[:3], (0.01, 0.01, 0.5), strict=True):  # the last slower
            await ok(mw, Request(url, meta={"download_latency": latency}))
        for url in urls[3:]:  # one in flight, the next 0.5 s after the slow answer
            await held(mw, url)
        rig.clock.advance(0.5)
        assert released(rig) == [urls[3]]  # before: none until the engine was idle
        rig.engine.crawled[0].meta["download_latency"] = 0.01
        await ok(mw, rig.engine.crawled[0])  # its ramp is over, and its state with it
        assert released(rig) == urls[3:]  # before: /4 and /5 held until the crawl ended

    try:
        await in_loop(scenario())
    finally:
        rig.close()


@pytest_twisted.ensureDeferred
async def test_a_429_is_taken_before_scrapys_retry_unless_its_row_is_off() -> None:
    async def scenario(rig: Rig) -> Request:
        (url,) = pages(rig, "/1", reply=(429, {}, b""))
        handed = await Middlewares(rig).fetch(Request(url))
        assert isinstance(handed, Request)
        return handed

    for row, retried in (("pause", False), ("off", True)):
        rig = rig_for({A: ROBOTS}, RETRY_ENABLED=True, REP_PAGE_STATUS_ACTIONS={"429": row})
        try:
            handed = await in_loop(scenario(rig))
            assert ("retry_times" in handed.meta) is retried
            assert (rig.stat("retry/count") is not None) is retried
            assert (rig.stat("rep/pushback/pauses/rate-limited") is None) is retried
        finally:
            rig.close()


@pytest_twisted.ensureDeferred
async def test_after_the_pause_one_request_is_in_flight_until_it_answers(
    mw: Middlewares,
) -> None:
    rig = mw.rig

    async def scenario() -> None:
        first, *rest = pages(rig, "/0", "/1", "/2")
        stall = Stall(then=OK)
        rig.transport.answers[first] = [(503, {"Retry-After": "10"}, b""), stall]
        await held(mw, first)
        for url in rest:
            assert not rig.schedule(Request(url))
        rig.clock.advance(10)
        assert released(rig) == [first]
        in_flight = asyncio.ensure_future(mw.fetch(rig.engine.crawled[0]))
        await turns()
        rig.clock.advance(60)  # however long it takes: no second request beside it
        assert released(rig) == [first]
        stall.release()
        await in_flight  # a healthy answer: one more may go
        rig.clock.advance(START_GAP)
        assert released(rig) == [first, rest[0]]

    await in_loop(scenario())


@pytest_twisted.ensureDeferred
async def test_a_request_refused_again_is_the_first_to_go_when_the_pause_ends(
    mw: Middlewares,
) -> None:
    rig = mw.rig

    async def scenario() -> None:
        first, *rest = pages(rig, "/0", "/1", "/2")
        refusal = (429, {"Retry-After": "5"}, b"")
        rig.transport.answers[first] = [refusal, refusal, OK]
        await held(mw, first)
        for url in rest:  # parked while it pauses, after it
            assert not rig.schedule(Request(url))
        rig.clock.advance(5)
        assert released(rig) == [first]
        again = await mw.fetch(rig.engine.crawled[0])  # refused once more: held again
        assert isinstance(again, Request) and not rig.schedule(again)
        rig.clock.advance(60)
        # the retry its Retry-After asked for goes before the pages parked behind it
        assert released(rig) == [first, first]
        await ok(mw, rig.engine.crawled[-1])

    await in_loop(scenario())


@pytest_twisted.ensureDeferred
async def test_after_a_first_pushback_sends_are_paced_from_a_second_apart_then_faster(
    mw: Middlewares,
) -> None:
    rig = mw.rig

    async def scenario() -> None:
        first, *rest = pages(rig, "/0", "/1", "/2", "/3")
        rig.transport.answers[first] = [(429, {"Retry-After": "5"}, b""), OK]
        await held(mw, first)
        for url in rest:
            assert not rig.schedule(Request(url))
        rig.clock.advance(5)
        gaps = [START_GAP, START_GAP * DECAY[COARSE]]  # 25% faster per healthy answer
        for n, gap in enumerate(gaps, start=1):
            await ok(mw, rig.engine.crawled[-1])  # answered at once
            rig.clock.advance(gap * DECAY[COARSE] - 0.01)  # sooner than the pace learnt
            assert len(released(rig)) == n
            rig.clock.advance(gap - gap * DECAY[COARSE] + 0.01)
            assert len(released(rig)) == n + 1

    await in_loop(scenario())


@pytest_twisted.ensureDeferred
async def test_a_paced_origin_paused_again_keeps_one_timer_which_ends_the_pause(
    mw: Middlewares,
) -> None:
    rig = mw.rig

    async def scenario() -> None:
        first, *rest = pages(rig, "/0", "/1", "/2")
        rig.transport.answers[first] = [(429, {"Retry-After": "5"}, b""), OK]
        await held(mw, first)
        for url in rest:
            assert not rig.schedule(Request(url))
        rig.clock.advance(5)
        await ok(mw, rig.engine.crawled[-1])  # healthy: the next one goes at its pace
        timers = len(rig.clock.planned)  # the park expiry, and the origin's one timer
        now = rig.clock.now()
        shared = PauseState(now + 60, RATE_LIMITED, 429, f"{SITE}/x", None, 2, now)
        assert graph.of(rig.crawler).pushback.adopt(A, shared)  # another worker's pause
        assert len(rig.clock.planned) == timers  # still one for the origin
        rig.clock.advance(START_GAP)
        assert released(rig) == [first]  # paused: its pace lets nothing go
        rig.clock.advance(60 - START_GAP)  # the pause's end, on the same timer
        assert released(rig) == [first, rest[0]]

    await in_loop(scenario())


@pytest_twisted.ensureDeferred
async def test_a_request_waiting_in_its_download_slot_is_taken_back_when_its_origin_pauses(
    mw: Middlewares,
) -> None:
    rig = mw.rig

    async def in_the_slot(request: Request) -> Response:
        """The downloader's part, where a judged request waits for its slot."""
        queued: Deferred[Response] = Deferred()
        rig.slot_of(request.url).queue.append((request, queued))
        return await maybe_deferred_to_future(queued)

    async def scenario() -> None:
        refused, waiting = pages(rig, "/1", "/2")
        rig.transport.answers[refused] = (429, {"Retry-After": "30"}, b"")
        queued = asyncio.ensure_future(mw.downloader.download_async(in_the_slot, Request(waiting)))
        await turns()
        await held(mw, refused)
        # failed out of the slot's queue, handed back (Scrapy 2.14's manager takes a few
        # reactor turns more to carry the failure out: wait, boundedly)
        await asyncio.wait({queued}, timeout=5)
        assert queued.done()
        handed = queued.result()
        assert isinstance(handed, Request) and handed.url == waiting
        assert not rig.schedule(handed)
        assert sent(rig) == [refused]  # never sent during the pause
        assert rig.stat("rep/pushback/unsent") == 1

    await in_loop(scenario())


@pytest_twisted.ensureDeferred
async def test_a_wall_of_403s_blocks_its_origin_whose_held_requests_end_when_idle(
    mw: Middlewares,
) -> None:
    rig = mw.rig

    async def scenario() -> None:
        (served,) = pages(rig, "/")
        refused = pages(rig, "/r1", "/r2", "/r3", reply=(403, {}, b""))
        (later,) = pages(rig, "/later")
        await ok(mw, Request(served))
        for n, url in enumerate(refused, start=1):
            response = await mw.fetch(Request(url))  # each refusal is that URL's answer
            assert isinstance(response, Response) and response.status == 403
            blocked = rig.stat("rep/pushback/pauses/blocked")
            assert blocked == (1 if n == 3 else None)  # REP_BLOCK_AFTER = 3
        await held(mw, later)
        rig.idle()  # nothing else to do: not held for hours
        (ended,) = rig.engine.crawled
        with pytest.raises(RepIgnoreRequest) as dropped:
            await mw.fetch(ended)
        assert dropped.value.decision["reason"] == "blocked"  # its errback hears why
        assert later not in sent(rig)
        assert rig.stat("rep/dropped/blocked") == 1

    await in_loop(scenario())


@pytest_twisted.ensureDeferred
async def test_dont_obey_robotstxt_requests_are_neither_paused_nor_held(mw: Middlewares) -> None:
    rig = mw.rig

    async def scenario() -> None:
        (url,) = pages(rig, "/1", reply=(429, {"Retry-After": "30"}, b""))
        response = await mw.fetch(Request(url, meta={"dont_obey_robotstxt": True}))
        assert isinstance(response, Response) and response.status == 429
        (later,) = pages(rig, "/2")
        await ok(mw, Request(later))
        assert rig.stat("rep/pushback/pauses/rate-limited") is None

    await in_loop(scenario())


# -- SharedPauses: a page's pause in the shared store ----------------------------------------------


def sqlite_rig(path: Path, clock: ManualClock) -> Rig:
    rig = Rig({"REP_PENDING_WAIT": 5, "REP_STORE": f"sqlite:///{path}"}, {A: ROBOTS}, clock=clock)
    pages(rig, "/1", "/2")
    return rig


@pytest_twisted.ensureDeferred
async def test_with_the_sqlite_store_a_pause_holds_the_next_run_until_its_end(
    tmp_path: Path,
) -> None:
    path = tmp_path / "rep.sqlite"
    start = time.time()  # the file's own clock says which pauses are over

    async def first_run() -> None:
        rig = sqlite_rig(path, ManualClock(start))
        try:
            mw = Middlewares(rig)
            await rig.open_spider()
            rig.transport.answers[SITE + "/1"] = (429, {"Retry-After": "600"}, b"")
            await held(mw, SITE + "/1")
            await turns()  # the save goes on in the background
            await rig.close_spider()
        finally:
            rig.close()

    async def next_run() -> None:
        rig = sqlite_rig(path, ManualClock(start + 100))
        try:
            mw = Middlewares(rig)
            await rig.open_spider()  # the store's pauses are read before the first request
            await held(mw, SITE + "/2")
            rig.clock.advance(499)
            assert released(rig) == []
            rig.clock.advance(1)
            assert released(rig) == [SITE + "/2"]
            await ok(mw, rig.engine.crawled[0])
            assert sent(rig) == [SITE + "/2"]
            await rig.close_spider()
        finally:
            rig.close()

    await in_loop(first_run())
    await in_loop(next_run())


@pytest_twisted.ensureDeferred
async def test_with_a_shared_store_a_pause_one_crawl_saw_holds_the_other(tmp_path: Path) -> None:
    path = tmp_path / "rep.sqlite"
    clock = ManualClock(time.time())

    async def scenario() -> None:
        one, other = sqlite_rig(path, clock), sqlite_rig(path, clock)
        try:
            mws = Middlewares(one), Middlewares(other)
            for rig in (one, other):
                await rig.open_spider()
            one.transport.answers[SITE + "/1"] = (503, {"Retry-After": "60"}, b"")
            await held(mws[0], SITE + "/1")
            for _ in range(100):  # the save, on the store's thread, then told to the other
                if other.stat("rep/pushback/pauses/service-unavailable"):
                    break
                await asyncio.sleep(0.005)
            await held(mws[1], SITE + "/2")
            assert sent(other) == []
            clock.advance(60)
            assert released(other) == [SITE + "/2"]
            for rig in (one, other):
                await rig.close_spider()
        finally:
            one.close()
            other.close()

    await in_loop(scenario())


async def turns(n: int = 10) -> None:
    """Let the tasks the middlewares and timers started run."""
    for _ in range(n):
        await asyncio.sleep(0)


# -- the sustainable rate, not the burst: a token bucket crawled on a simulated clock -----------


class Bucket:
    """A site's token bucket: ``rate`` tokens a second, ``size`` at most, full at first."""

    def __init__(self, rate: float, size: float) -> None:
        self.rate, self.size, self.tokens, self.filled = rate, size, size, 0.0

    def serves(self, t: float) -> bool:
        """Whether a request at ``t`` is served (it takes a token) or refused."""
        self.tokens = min(self.size, self.tokens + (t - self.filled) * self.rate)
        self.filled = t
        if self.tokens < 1:
            return False
        self.tokens -= 1
        return True


def _crawl_a_bucket(
    rate: float, burst: float, retry_after: str | None, pages: int, latency: float = 0.02
) -> tuple[list[float], list[float]]:
    """The core against a token bucket (``rate`` pages/s, ``burst`` tokens, 429 beyond it),
    sending each request as soon as the core lets it go (8 in flight before any pace): when
    each page was served, when each 429 was."""
    pb = make(ramp_max=8, reset_after=10)
    site, t = Bucket(rate, burst), 0.0
    served: list[float] = []
    refused: list[float] = []
    while len(served) < pages and t < 3_600:
        t += pb.wait(A, t)
        pb.sent(A, t)
        ok = site.serves(t)
        (served if ok else refused).append(t)
        pb.done(A)
        hint = ra(retry_after) if retry_after is not None and not ok else {}
        pause = pb.on_response(A, 200 if ok else 429, hint, f"{A}/p", t + latency)
        if pause is not None:
            t = pause.until
            pb.resume(A, t)
        elif not pb.gap(A):
            t += latency / 8
    return served, refused


def _use(served: list[float], rate: float) -> float:
    """Pages per second over the span, as a share of ``rate``."""
    return (len(served) - 1) / (served[-1] - served[0]) / rate


def _whole_use(served: list[float], rate: float, pages: int = 150) -> float:
    """The bench's use over the whole crawl: pages got at ``rate`` over the time from the
    start to the last page and one token, at least the time ``pages`` take at that rate."""
    return len(served) / max(served[-1] + 1 / rate, pages / rate) / rate


@pytest.mark.parametrize(
    ("burst", "retry_after"),
    [(5.0, "2"), (5.0, None), (1.0, "2")],
    ids=["burst-5", "burst-5-without-retry-after", "bucket-1"],
)
def test_a_rate_limit_that_allows_bursts_is_crawled_near_its_rate_once_learnt(
    burst: float, retry_after: str | None
) -> None:
    # after each pause the bucket has refilled: the first answers come at the burst's pace,
    # and a pace learnt from them is the burst's (before: 0.62 of the rate in the second
    # half with a burst of 5, 20 pushbacks in 150 pages; 0.31 without Retry-After)
    served, refused = _crawl_a_bucket(5.0, burst, retry_after, 150)
    assert len(served) == 150
    second_half = served[len(served) // 2 :]
    assert _use(second_half, 5.0) >= 0.9, f"{_use(second_half, 5.0):.2f} of the rate"
    # pushbacks become rare once learnt, not periodic
    assert sum(1 for t in refused if t >= second_half[0]) <= 1, refused


@pytest.mark.parametrize(
    ("burst", "retry_after", "whole"),
    [(5.0, "2", 0.85), (5.0, None, 0.7), (1.0, "2", 0.8)],
    ids=["burst-5", "burst-5-without-retry-after", "bucket-1"],
)
def test_a_rate_limit_is_read_from_one_window_past_its_burst_over_the_whole_crawl(
    burst: float, retry_after: str | None, whole: float
) -> None:
    # the first pushback says how many pages the bucket held (what the site served before
    # refusing); the next one ends a window whose sends fit a bucket that size: its rate is
    # kept from there, and no pushback follows in 150 pages (before: 0.75, 0.52 and 0.76 of
    # the rate over the whole crawl, 6, 6 and 3 pushbacks); a bucket of 1 has no burst to blur
    # its window: the rate is read halfway between its bounds (before: 0.77 of the rate over
    # the whole crawl, 0.90 in its second half)
    served, refused = _crawl_a_bucket(5.0, burst, retry_after, 150)
    assert len(served) == 150
    use = _whole_use(served, 5.0)  # the bench's figure
    assert use >= whole, f"{use:.2f} of the rate over the whole crawl"
    assert len(refused) <= 2, refused  # the first burst, then the end of the first window


def _crawl_a_bucket_as_a_cluster(
    rate: float,
    pages: int,
    workers: int,
    latency: float = 0.02,
    burst: float = 1.0,
    together: bool = False,
    held: bool = False,
) -> tuple[list[float], list[float]]:
    """Like :func:`_crawl_a_bucket` (``Retry-After: 2``), by ``workers`` cores taking turns,
    their sends reserved one after the other as the cluster's pacing does (each reservation
    the reserver's gap after the one before, and the sum of the pages each worker heard
    before its first pushback), a pause told to every worker; the first worker alone until
    the first pause (the start URLs' batch), unless ``together``."""
    cores = [make(ramp_max=8, reset_after=10) for _ in range(workers)]
    site, t, free = Bucket(rate, burst), 0.0, 0.0
    heard: dict[int, int] = {}  # worker -> the pages it heard before its first pushback
    sends: list[float] = []
    own: dict[int, float] = {}  # worker -> its last send
    served: list[float] = []
    refused: list[float] = []
    turn, kept = 0, (-math.inf, 0.0)  # the last reservation's moment and gap
    while len(served) < pages and t < 3_600:
        worker = turn % workers if refused or together else 0
        turn += 1
        pb = cores[worker]
        spacing = pb.spacing(A, t)
        gap = spacing.gap
        if gap:  # the cluster's reservation: the next free moment, then one gap on
            if spacing.faster < 1 and t - kept[0] <= spacing.window:  # a step down per send
                gap = max(min(gap, kept[1] * spacing.faster), spacing.floor)
            t = max(t, free)
            free, kept = t + gap, (t, gap)
            if pb.heard(A):
                heard[worker] = pb.heard(A)
            pb.told(A, pages=sum(heard.values()))
        others = [t - at for at in reversed(sends) if at > own.get(worker, -1.0)]
        pb.sent(A, t, others)
        sends.append(t)
        own[worker] = t
        ok = site.serves(t)
        (served if ok else refused).append(t)
        pb.done(A)
        pause = pb.on_response(A, 200 if ok else 429, {} if ok else ra("2"), f"{A}/p", t + latency)
        if pause is not None:
            for w, other in enumerate(cores):
                if other is not pb:
                    other.adopt(A, pause.state, t + latency)
                    if held and other.gap(A):  # a request reserves its moment, then is held
                        own[w] = max(t + latency, free)
                        sends.append(own[w])
                        free, kept = own[w] + other.gap(A), (own[w], other.gap(A))
            t = pause.until
            for core in cores:
                core.resume(A, t)
        elif not gap:
            t += latency / 8
    return served, refused


def test_a_cluster_reads_the_sites_rate_from_every_workers_sends() -> None:
    # each worker read the rate from its own sends, a third of the cluster's, and the
    # window of one that had not pushed back itself spanned the others' pause: its read
    # paced the whole cluster three times too slowly (before: 0.26 of the rate, in the
    # second half too). Now a reservation says when the other workers sent, and a pause
    # another worker heard starts a window, as the worker's own would
    one, one_refused = _crawl_a_bucket_as_a_cluster(5.0, 150, workers=1)
    three, three_refused = _crawl_a_bucket_as_a_cluster(5.0, 150, workers=3)
    assert len(three) == 150
    second_half = three[len(three) // 2 :]
    assert _use(second_half, 5.0) >= 0.9, f"{_use(second_half, 5.0):.2f} of the rate"
    assert _use(three, 5.0) >= _use(one, 5.0) - 0.05
    assert len(three_refused) <= len(one_refused)


def test_a_cluster_meeting_a_burst_together_reads_the_bucket_all_its_workers_emptied() -> None:
    # three workers crawling an origin from its first request each counted only its own
    # share of the pages the bucket served before the first pushback (one adopting
    # another's pause counted none): each read the bucket as smaller, its rate as faster,
    # and was refused again a window later (before: 16 pushbacks in 150 pages of a burst of
    # 5, 0.60 of the rate, 0.62 in the second half). Each reservation now adds the pages
    # each worker heard before its first pushback, and the bucket is read at their sum. With
    # the moments reserved by requests a pause then held (never sent) read as served: 5
    _, one_refused = _crawl_a_bucket_as_a_cluster(5.0, 150, 1, burst=5.0, together=True)
    three, three_refused = _crawl_a_bucket_as_a_cluster(
        5.0, 150, 3, burst=5.0, together=True, held=True
    )
    assert len(three) == 150
    assert len(three_refused) <= len(one_refused), three_refused
    assert _use(three[len(three) // 2 :], 5.0) >= 0.9
    use = _whole_use(three, 5.0)  # the bench's figure
    assert use >= 0.8, f"{use:.2f} of the rate over the whole crawl"


def test_a_cluster_steps_its_pace_down_for_every_page_any_worker_was_served() -> None:
    # after a pause each worker stepped its pace down for its own pages only, and reserved
    # with the gap it had before the other workers' sends its reservation told it of: three
    # workers learnt their pace three times slower than one (1, 1, 1, 0.75 s between sends
    # against 1, 0.75, 0.56 s), and used 0.74 of a burst of 5's rate against 0.90. Each
    # send the cluster reserves now steps the pace down from the last one's gap, and each
    # worker's own pace steps for the others' sends
    one, _ = _crawl_a_bucket_as_a_cluster(5.0, 150, 1, burst=5.0, held=True)
    three, three_refused = _crawl_a_bucket_as_a_cluster(5.0, 150, 3, burst=5.0, held=True)
    assert len(three) == 150 and len(three_refused) == 2
    gaps = [round(later - sooner, 2) for sooner, later in itertools.pairwise(three[5:10])]
    assert gaps == [1.0, 0.75, 0.56, 0.42], gaps  # the first pause's end: as one worker's
    assert _whole_use(three, 5.0) >= _whole_use(one, 5.0) - 0.005
    assert _use(three[75:], 5.0) >= _use(one[75:], 5.0) - 0.005  # the second half too


def test_a_moment_reserved_in_a_pause_is_not_read_as_a_page_served() -> None:
    # logged in a cluster: another worker's request reserved its moment 83 ms into a pause,
    # which then held it; it never left, but this worker's window counted it served, and the
    # only bucket of one serving a page then refills at 12 pages/s. The cluster was paced
    # 0.085 s apart (0.2 s allowed), refused after every pause, and gave 90 pages up
    pb = make()
    pb.sent(A, 0.0)
    pb.done(A)
    first = pb.on_response(A, 429, ra("2"), f"{A}/p", 0.0)
    assert first is not None
    pb.resume(A, first.until)
    t, others = first.until, [first.until - 0.083]
    for _ in range(19):  # 4 pages/s, a bucket of one at 5: each served
        pb.sent(A, t, others)
        pb.done(A)
        assert pb.on_response(A, 200, {}, f"{A}/p", t + 0.01) is None
        t, others = t + 0.25, []
    t -= 0.25 - 0.177  # too soon: refused
    pb.sent(A, t)
    pb.done(A)
    assert pb.on_response(A, 429, ra("2"), f"{A}/p", t + 0.01) is not None
    # read as the site's bucket: 0.2 s and the margin (before: 0.085 s; with the window
    # read as no bucket, the last page's 0.25 s)
    assert 0.19 <= pb.gap(A) <= 0.23, f"{pb.gap(A):.3f} s apart, 0.2 s allowed"


def test_a_window_no_bucket_fits_is_not_read_as_the_rate_its_odd_send_needs() -> None:
    # a send read as served 83 ms after the refusal before it needs 12 tokens a second; the
    # refusal at the window's end, 0.177 s after a page, needs fewer than 5.7: no bucket of
    # one fits both. The refusal's bound was searched only among rates serving every send
    # before it, so it came out as the first bound, and 12 pages/s was read
    sends = [0.083 + 1.0 * i for i in range(4)] + [3.333, 3.57, 3.747]
    assert fit_bucket(sends, 6, 1.0, empty=0.0) is None
    assert fit_bucket(sends[1:], 5, 1.0, empty=0.0) == pytest.approx(4.76, abs=0.3)


def test_a_worker_counts_the_pages_served_before_the_first_pause_answered_during_it() -> None:
    # logged in a cluster meeting a burst of 5 together: the workers adopting the first
    # pause had their pages in flight, answered after it; those were not counted, and the
    # cluster told itself its bucket held 2 pages
    pb = make(ramp_max=8)
    for t in (0.0, 0.1):
        pb.contact(A)
        pb.sent(A, t)
        pb.done(A)
        assert pb.on_response(A, 200, {}, f"{A}/p", t + 0.01) is None
    pb.contact(A)
    pb.sent(A, 0.2)  # in flight when another worker is refused
    other = make(ramp_max=8)
    other.contact(A)
    other.sent(A, 0.25)
    pause = other.on_response(A, 429, ra("2"), f"{A}/q", 0.3)
    assert pause is not None
    pb.adopt(A, pause.state, 0.31)
    pb.done(A)
    assert pb.on_response(A, 200, {}, f"{A}/p", 0.32) is None  # sent before the pause
    assert pb.heard(A) == 3  # before: 2
    assert other.heard(A) == 0
    pb.resume(A, pause.until)
    pb.sent(A, pause.until)
    pb.done(A)
    assert pb.on_response(A, 200, {}, f"{A}/p", pause.until + 0.01) is None
    assert pb.heard(A) == 3  # sent after the pause: the site's pace, not its burst


def test_a_bucket_told_by_the_cluster_is_kept_until_a_window_reads_its_size() -> None:
    pace = Pace()
    pace.pushed_back(1.0, 2, 0.5)
    pace.told(6)
    assert pace.burst == 6.0
    pace.told(4)  # a worker's sum is never read as a smaller bucket than one told
    assert pace.burst == 6.0
    pace.stage, pace.burst = SUSTAINED, 3.0  # a window read its size: the sum is history
    pace.told(9)
    assert pace.burst == 3.0


@pytest.mark.parametrize(("rate", "burst"), [(2.0, 10.0), (2.0, 5.0), (3.0, 10.0)])
def test_a_burst_the_pause_did_not_refill_is_read_at_its_rate(rate: float, burst: float) -> None:
    # a 2-s pause refills 4 of a 10-token bucket at 2 pages/s: the window read as a bucket
    # full at its first send made its rate look far slower (before: 0.18 of the rate over the
    # whole crawl at 2 pages/s with 10 tokens, 0.83 with 5, 0.90 at 3 pages/s); the bucket
    # is read as empty at the pushback before the window, refilling at its rate through the
    # pause
    served, refused = _crawl_a_bucket(rate, burst, "2", 150)
    assert len(served) == 150
    use = _whole_use(served, rate)
    assert use >= 0.9, f"{use:.2f} of the rate over the whole crawl"
    assert _use(served[len(served) // 2 :], rate) >= 0.9
    assert len(refused) <= 2, refused


def test_a_pace_refused_without_a_window_to_read_never_probes_back_below_it() -> None:
    # refused one answer into a sustained pace: the gap grew by GAP_GROWTH, but the floor it
    # probes down to stayed the old one, so it was refused again a few answers later at a
    # pace already refused (before: 5 pushbacks in 150 pages of a bucket of one at 4.25/s)
    pace = Pace(gap=0.2, stage=SUSTAINED, floor=0.2, window_start=0.0, burst=1.0)
    t = 10.0
    pace.sent(t)
    pace.healthy()
    t += 0.2
    pace.sent(t)
    refused = pace.gap
    pace.pushed_back(t)  # one answer: nothing to read a rate from
    assert pace.gap == pytest.approx(refused * GAP_GROWTH)
    for _ in range(200):
        t += pace.gap
        pace.sent(t)
        pace.healthy()
    assert pace.gap > refused, f"{pace.gap:.4f} s apart, {refused:.4f} refused"
    _, pushbacks = _crawl_a_bucket(4.25, 1.0, "2", 150)
    assert len(pushbacks) <= 4, pushbacks


def test_a_429_without_retry_after_at_a_rate_read_pauses_as_long_as_the_bucket_refills() -> None:
    # without Retry-After each pushback backed off 5 s, the one at the end of the first
    # window too: 0.76 of the rate over the whole crawl of a burst of 5 (the goal: 0.8). A
    # pushback whose window was read as a token bucket pauses as long as that bucket takes
    # to fill at the rate read (at least the floor); a 429 before any rate is read, or
    # refused again at once, backs off as before
    served, _ = _crawl_a_bucket(5.0, 5.0, None, 150)
    assert len(served) == 150
    use = _whole_use(served, 5.0)
    assert use >= 0.8, f"{use:.2f} of the rate over the whole crawl"
    pb = make(ramp_max=8, reset_after=10)
    for n in range(5):
        pb.on_response(A, 200, {}, f"{A}/{n}", NOW)
    first = pb.on_response(A, 429, {}, f"{A}/5", NOW)
    assert first is not None and first.until - NOW == 5.0  # nothing read yet: the back-off
    pb.resume(A, first.until)
    t = _answers(pb, first.until, 0.3, 8)  # at the bucket's pace: served
    t = _answers(pb, t, 0.02, 5)  # then faster: the bucket drains
    pb.sent(A, t + 0.02)
    pb.done(A)
    second = pb.on_response(A, 429, {}, f"{A}/p", t + 0.02)
    assert second is not None and pb.gap(A) > 0
    refill = 5 * pb.gap(A)  # 5 tokens at the pace read
    assert second.until - (t + 0.02) == pytest.approx(max(refill, 1.0))
    assert second.until - (t + 0.02) < 5.0
    pb.resume(A, second.until)
    third = pb.on_response(A, 429, {}, f"{A}/p", second.until)  # refused again at once
    assert third is not None and third.until - second.until >= 5.0  # the back-off again


def test_a_bucket_of_one_starts_its_ramp_two_steps_on() -> None:
    # one page served before the first pushback: a bucket of one token, whose bounds are the
    # ramp's last two steps whatever it starts from; its two slowest steps cost ~1.75 s
    # (before: START_GAP, 0.81 of the rate over the whole crawl of a bucket of one at 5/s)
    pb = make()
    pb.on_response(A, 200, {}, f"{A}/", NOW)
    pause = pb.on_response(A, 429, ra("2"), f"{A}/1", NOW)
    assert pause is not None and pb.gap(A) == pytest.approx(START_GAP * DECAY[COARSE] ** 2)
    served, refused = _crawl_a_bucket(5.0, 1.0, "2", 150)
    use = _whole_use(served, 5.0)
    assert use >= 0.83, f"{use:.2f} of the rate over the whole crawl"
    assert len(refused) <= 2, refused


def _crawl_a_bucket_in_flight(
    rate: float,
    burst: float,
    retry_after: str | None,
    pages: int,
    latency: float = 0.02,
    late: float = 0.0,
) -> tuple[list[float], list[float]]:
    """As :func:`_crawl_a_bucket`, but as the bench's site answers: a page after ``latency``
    s, a 429 at once, up to 8 requests in flight (each sent as soon as the core lets it go,
    and ``late`` s after the one before while not paced: a loaded crawler's late sends): a
    refusal can come back before the pages sent just before it."""
    pb = make(ramp_max=8, reset_after=10)
    tokens, filled, t, order, last = burst, 0.0, 0.0, 0, -late
    served: list[float] = []
    refused: list[float] = []
    answers: list[tuple[float, int, bool]] = []  # (when it comes back, order, served)
    resume: float | None = None
    while len(served) < pages and t < 3_600:
        moments = [(answers[0][0], 1)] if answers else []
        if resume is not None:
            moments.append((resume, 2))
        elif len(answers) < 8 and pb.room(A) != 0:
            moments.append((max(t + pb.wait(A, t), last + (0.0 if pb.gap(A) else late)), 0))
        t, what = max(t, min(moments)[0]), min(moments)[1]
        if what == 2:
            pb.resume(A, t)
            resume = None
        elif what == 1:
            ok = heapq.heappop(answers)[2]
            pb.done(A)
            hint = ra(retry_after) if retry_after is not None and not ok else {}
            pause = pb.on_response(A, 200 if ok else 429, hint, f"{A}/p", t)
            if pause is not None:
                resume = max(resume or 0.0, pause.until)
        else:
            pb.sent(A, t)
            last = t
            tokens, filled = min(burst, tokens + (t - filled) * rate), t
            ok = tokens >= 1
            tokens -= ok
            (served if ok else refused).append(t)
            order += 1
            heapq.heappush(answers, (t + latency if ok else t, order, ok))
    return served, refused


@pytest.mark.parametrize(
    ("burst", "retry_after", "whole"),
    [(5.0, "2", 0.85), (5.0, None, 0.8), (1.0, "2", 0.8)],
    ids=["burst-5", "burst-5-without-retry-after", "bucket-1"],
)
def test_a_refusal_answered_before_the_pages_sent_before_it_is_read_at_its_rate(
    burst: float, retry_after: str | None, whole: float
) -> None:
    # a site answers a 429 at once and a page after 20 ms: a page sent just before the
    # refusal comes back after it. Counted in the next window, it made the burst read one
    # smaller and the next window one send longer than it was (none fits, a faster pace
    # read or none at all), and the window it was sent in one shorter (a slower one)
    # (before: 0.51 / 0.54 of the rate with a burst of 5, 28 pushbacks; 0.74 / 0.95
    # without Retry-After; 0.76 / 0.87 with a bucket of 1)
    served, refused = _crawl_a_bucket_in_flight(5.0, burst, retry_after, 150)
    assert len(served) == 150
    use = _whole_use(served, 5.0)
    half = served[len(served) // 2 :]
    assert use >= whole, f"{use:.2f} of the rate over the whole crawl"
    assert _use(half, 5.0) >= 0.9, f"{_use(half, 5.0):.2f} of the rate in the second half"
    assert sum(1 for t in refused if t >= half[0]) <= 1, refused


@pytest.mark.parametrize("retry_after", ["2", None], ids=["burst-5", "without-retry-after"])
def test_a_burst_served_while_the_crawler_sent_late_is_read_less_its_refill(
    retry_after: str | None,
) -> None:
    # a loaded crawler sends its first pages 50 ms apart: the bucket of 5 refills while they
    # are served and the site serves 6; read as a bucket of 6, the first window read a rate
    # ~25% too slow, kept (before: 0.70 / 0.75 of the rate with Retry-After, 0.66 / 0.75
    # without). The size is read with the rate: what was served less what that rate refilled
    served, refused = _crawl_a_bucket_in_flight(5.0, 5.0, retry_after, 150, late=0.05)
    assert len(served) == 150
    use = _whole_use(served, 5.0)
    half = served[len(served) // 2 :]
    assert use >= 0.8, f"{use:.2f} of the rate over the whole crawl"
    assert _use(half, 5.0) >= 0.9, f"{_use(half, 5.0):.2f} of the rate in the second half"
    assert len(refused) <= 4, refused


def test_a_refusal_at_the_pace_after_a_late_send_slows_it_a_little_not_twice() -> None:
    # a bucket of one at 5 pages/s, paced at 0.216 s; on a loaded machine the 9th request
    # left 0.116 s after the crawler took it to, the 10th went at its moment and was
    # refused: every send looks 0.216-0.229 s apart, no bucket serves them and refuses it,
    # and the window was read as no bucket: 2x slower, kept (before: 0.431 s, 0.45 of the
    # rate over the whole crawl in the bench). Bounds crossed by a little read between them
    pace = Pace(gap=0.2162, stage=SUSTAINED, floor=0.2162, window_start=3.751, burst=1.0)
    sends = [5.752, 5.973, 6.193, 6.413, 6.630, 6.848, 7.069, 7.285, 7.514, 7.732]
    for at in sends[:-1]:
        pace.sent(at)
        pace.healthy()
    pace.sent(sends[-1])
    refused = pace.gap
    pace.pushed_back(7.737)
    assert pace.stage == SUSTAINED
    assert refused < pace.gap <= refused * GAP_GROWTH, f"{pace.gap:.4f} s apart"


def _window_with_a_page_in_flight(late: bool) -> float:
    """A burst of 5 served, the 5th answer after the 429 (``late``) or before; then a window
    of 14 sends, the 14th page's answer after the refusal of the 15th or before: the gap
    read from that window."""
    pb = make(ramp_max=8, reset_after=10)
    for n in range(4):
        pb.on_response(A, 200, {}, f"{A}/{n}", NOW)
    if not late:
        pb.on_response(A, 200, {}, f"{A}/4", NOW + 0.01)
    first = pb.on_response(A, 429, {}, f"{A}/5", NOW + 0.01)
    assert first is not None
    if late:
        pb.on_response(A, 200, {}, f"{A}/4", NOW + 0.02)
    pb.resume(A, first.until)
    t = _answers(pb, first.until, 0.3, 8)  # at the bucket's pace: served
    t = _answers(pb, t, 0.1, 5)  # then faster: the bucket drains
    pb.sent(A, t + 0.1)  # the 14th: served, answered after the refusal of the 15th
    pb.sent(A, t + 0.2)
    if not late:
        pb.done(A)
        pb.on_response(A, 200, {}, f"{A}/p", t + 0.12)
    second = pb.on_response(A, 429, {}, f"{A}/p", t + 0.2)
    if late:
        pb.done(A)
        pb.on_response(A, 200, {}, f"{A}/p", t + 0.22)
    assert second is not None
    return pb.gap(A)


def test_an_answer_that_comes_after_a_refusal_is_read_in_the_window_it_was_sent_in() -> None:
    # the same sends served and refused, the last page's answer before or after the 429
    # (as a site answers a refusal faster than a page): the same pace read (before: 0.199 s
    # against 0.290 s: the burst read as 4 pages, the late answer counted in the window)
    assert _window_with_a_page_in_flight(late=True) == pytest.approx(
        _window_with_a_page_in_flight(late=False)
    )


# -- a site slowing down under the crawl: its response times against its own baseline --------


def _timed(
    pb: Pushback, t: float, latencies: list[float], every: float = 0.05, origin: str = A
) -> float:
    """Healthy answers of ``origin``, ``every`` s apart (or its pace's), each having taken
    the next of ``latencies``."""
    for latency in latencies:
        t += every + pb.wait(origin, t + every)
        pb.sent(origin, t)
        pb.done(origin)
        pb.on_response(origin, 200, {}, f"{origin}/p", t, latency=latency)
    return t


def test_a_site_slowing_down_under_the_crawl_is_sent_to_more_slowly_until_it_recovers() -> None:
    pb = make()
    t = _timed(pb, NOW, [0.03] * 10)
    assert not pb.paced(A) and A not in pb  # a healthy origin: nothing paced, nothing kept
    t = _timed(pb, t, [0.1, 0.2, 0.3, 0.4, 0.5])  # ten times its baseline: saturating
    assert pb.paced(A) and pb.gap(A) > 0.05, pb.gap(A)  # slower than its answers came
    eased = pb.gap(A)
    pb.sent(A, t)
    pb.done(A)
    assert pb.hold_reason(A, t) == SERVICE_UNAVAILABLE  # the next send waits for its time
    assert pb.wait(A, t) == pytest.approx(eased)
    t = _timed(pb, t, [0.6] * 6)
    assert pb.gap(A) > eased  # still slowing: slower again
    assert pb.gap(A) <= 10.0  # bounded
    _timed(pb, t, [0.03] * 200)  # back at its baseline: the pace returns, then goes
    assert not pb.paced(A) and pb.gap(A) == 0.0
    assert pb.on_response(A, 429, ra("1"), f"{A}/", t + 100) is not None  # pauses as ever


def test_latency_noise_on_a_healthy_origin_never_paces_it() -> None:
    import random

    pb = make()
    rnd = random.Random(47)
    # loopback: a millisecond or two, 10x jitter, and lone stalls of 80 ms
    noise = [rnd.uniform(0.0005, 0.02) for _ in range(2_000)]
    for i in range(0, 2_000, 97):
        noise[i] = 0.08
    _timed(pb, NOW, noise, every=0.002)
    assert not pb.paced(A) and A not in pb
    # a slow site that stays slow (one second each, from the first answer) is its baseline
    slow = "http://slow.example:80"
    _timed(pb, NOW, [1.0, 1.2, 0.9] * 20, origin=slow)
    assert not pb.paced(slow) and slow not in pb


def _crawl_a_slowing_site(
    capacity: float, pages: int = 150, base: float = 0.03, slow: float = 0.6, late: bool = False
) -> tuple[int, int, float, float]:
    """The core against a server that slows with its load (``tests/support/pushback_site.py``'s
    rule: with ``n`` requests arrived in the last second a page takes ``base`` up to
    ``capacity`` a second, rising linearly to ``slow`` at three times it, and is answered 503
    beyond), crawling a tree of links (4 a page) with 8 in flight, as Scrapy would:
    pages got, 503s, the p95 latency of the pages got, the crawl's simulated seconds.

    ``late``: a freed download slot sends its next queued request before the answer is read
    (Scrapy's order when requests wait in the slot)."""
    pb = make(ramp_max=8)
    arrivals: list[float] = []
    events: list[tuple[float, int, int, int, float, bool]] = []  # at, seq, page, status, ...
    todo, got, refused, latencies, out = [0], set(), 0, [], 0
    seq = iter(range(10**9))

    def send(now: float) -> None:
        nonlocal out
        while todo and out < 8:
            counted = A in pb
            if counted and (pb.paused(A, now) or pb.hold_reason(A, now) is not None):
                if not pb.paused(A, now) and pb.wait(A, now) > 0:
                    heapq.heappush(events, (now + pb.wait(A, now), next(seq), -1, 0, 0.0, False))
                return
            if counted:
                pb.sent(A, now)
            arrivals.append(now)
            recent = sum(1 for at in arrivals if at > now - 1.0)
            load = (recent - capacity) / (2 * capacity)
            latency = base + (slow - base) * max(load, 0)
            status, latency = (503, base) if load > 1 else (200, latency)
            out += 1
            answer = (now + latency, next(seq), todo.pop(), status, latency, counted)
            heapq.heappush(events, answer)

    send(0.0)
    t = 0.0
    while events and len(got) < pages and t < 3_600:
        t, _, page, status, latency, counted = heapq.heappop(events)
        if page == -2 and pb.paused(A, t) is None:  # a pause's end
            pb.resume(A, t)
        if page >= 0:
            out -= 1
            if late:
                send(t)
            if counted:
                pb.done(A)
            pause = pb.on_response(A, status, {}, f"{A}/p/{page}", t, latency=latency)
            if status == 200:
                got.add(page)
                latencies.append(latency)
                todo += [c for c in range(4 * page + 1, 4 * page + 5) if c < pages]
            else:
                refused += 1
                todo.append(page)
            if pause is not None:
                heapq.heappush(events, (pause.until, next(seq), -2, 0, 0.0, False))
        send(t)
    latencies.sort()
    return len(got), refused, latencies[int(0.95 * len(latencies))], t


@pytest.mark.parametrize("late", [False, True], ids=["read-first", "slot-first"])
@pytest.mark.parametrize("capacity", [5.0, 10.0])
def test_a_site_slowing_under_the_crawl_is_eased_before_it_refuses(
    capacity: float, late: bool
) -> None:
    # the first requests, 8 in flight, pass three times its capacity before the fast average
    # has three slow answers to read; each 503 cost a 5-s back-off, then a pace from 1 s.
    # Now an answer well above the baseline holds the origin at one request in flight, and
    # nothing more is sent for as long again as it took (before: 1 or 2 503s, 58-62 s of
    # crawl at a capacity of 5; 1 503 and 128 s for 300 pages at 10)
    pages = 150 if capacity == 5.0 else 300
    got, refused, p95, span = _crawl_a_slowing_site(capacity, pages, late=late)
    assert got == pages
    assert refused == 0
    assert p95 <= 0.21  # at a capacity of 5, its latency at 8 requests a second
    assert span <= 1.5 * pages / capacity, span  # not crawled slower than the site needs


def test_a_pushback_after_the_site_slowed_down_paces_from_the_eased_gap() -> None:
    # a site that slowed down before it refused: the pace after the pause starts from the gap
    # its latency eased to, not from one page a second (before: START_GAP)
    pb = make()
    t = _timed(pb, NOW, [0.03] * 10)
    t = _timed(pb, t, [0.1, 0.2, 0.3, 0.4, 0.5])
    eased = pb.gap(A)
    assert 0 < eased < START_GAP
    pause = pb.on_response(A, 503, {}, f"{A}/p", t + 0.1)
    assert pause is not None and pb.gap(A) == pytest.approx(eased)
    pb.resume(A, pause.until)
    _timed(pb, pause.until, [0.03] * 5)
    assert pb.gap(A) < eased  # and learns on from there


def test_one_slow_answer_holds_the_origin_to_one_request_for_as_long_as_it_took() -> None:
    pb = make(ramp_max=8)
    t = _timed(pb, NOW, [0.03] * 10)
    assert A not in pb
    pb.on_response(A, 200, {}, f"{A}/p", t, latency=0.5)  # one answer 16 times the baseline
    assert pb.room(A) == 1 and pb.wait(A, t) == pytest.approx(0.5)
    assert not pb.paced(A)  # one answer alone eases no pace
    _timed(pb, t + 0.5, [0.03] * 8)  # back at its baseline: the ramp grows back, then goes
    assert A not in pb


@pytest_twisted.ensureDeferred
async def test_requests_waiting_at_first_contact_reserve_no_crawl_delay_turn_meanwhile() -> None:
    rig = rig_for({A: (200, {}, b"User-agent: *\nCrawl-delay: 1\n")})
    mw = Middlewares(rig)

    async def scenario() -> None:
        first, *rest = pages(rig, "/0", "/1", "/2", "/3")
        stall = Stall(then=OK)
        rig.transport.answers[first] = stall
        going = [asyncio.ensure_future(mw.fetch(Request(url))) for url in (first, *rest)]
        await turns(50)
        assert sent(rig) == [first]  # one in flight at first contact; the others wait
        rig.clock.advance(1.5)  # past the moment a second request would have had
        await turns(50)
        assert sent(rig) == [first]
        stall.release()  # a healthy answer: room for two
        await turns(50)
        # the next goes at once (its Crawl-delay since the first kept), not after the moments
        # the waiting requests would have reserved while there was no room
        assert sent(rig) == [first, rest[0]]
        rig.clock.advance(1.0)
        await turns(50)
        assert sent(rig) == [first, rest[0], rest[1]]
        rig.clock.advance(10.0)
        await asyncio.gather(*going)

    await rig.run(scenario())


@pytest_twisted.ensureDeferred
async def test_a_later_end_of_a_pause_is_told_to_the_cluster_too(mw: Middlewares) -> None:
    # before: only a new pause was saved to the shared store; a refusal in flight that
    # moved its end later was not, and another worker sent into the end the site asked for
    rig = mw.rig
    told: list[float] = []
    signals = graph.of(rig.crawler).pushback
    assert signals is not None
    signals.share = lambda origin, state: told.append(state.until)

    async def scenario() -> None:
        for url in pages(rig, *(f"/w{i}" for i in range(8))):  # past its first contact
            await ok(mw, Request(url))
        first, second = pages(rig, "/1", "/2")
        stalls = [Stall(then=(429, {"Retry-After": "60"}, b"")) for _ in range(2)]
        rig.transport.answers[first], rig.transport.answers[second] = stalls
        going = [asyncio.ensure_future(mw.fetch(Request(url))) for url in (first, second)]
        await turns(50)
        assert sent(rig)[-2:] == [first, second]  # both in flight
        start = rig.clock.now()
        stalls[0].release()
        await turns(50)
        rig.clock.advance(1.0)
        stalls[1].release()
        await turns(50)
        assert told == [start + 60, start + 61]
        rig.clock.advance(61)
        await asyncio.gather(*going)

    await rig.run(scenario())


@pytest_twisted.ensureDeferred
async def test_a_request_waiting_at_first_contact_goes_as_soon_as_the_first_answers(
    mw: Middlewares,
) -> None:
    rig = mw.rig

    async def scenario() -> None:
        first, second = pages(rig, "/0", "/1")
        stall = Stall(then=OK)
        rig.transport.answers[first] = stall
        going = [asyncio.ensure_future(mw.fetch(Request(url))) for url in (first, second)]
        await turns(50)
        assert sent(rig) == [first]
        stall.release()  # its download's end counted it back before its answer was read
        await turns(50)
        assert sent(rig) == [first, second]  # at once, not at the next look a second later
        await asyncio.gather(*going)

    await rig.run(scenario())
