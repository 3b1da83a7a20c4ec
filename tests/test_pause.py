"""One pause: the back-off both pauses wait by, and the one per-origin pause record. Pure.

The back-offs' expected sequences are written out from the formulas the two
pauses had before they shared :class:`Backoff` (robots.txt: doubling from
``pause_initial``; a page: ``backoff_start`` x ``backoff_factor`` ** (n - 1)),
both capped at ``pause_max``.
"""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from scrapy_rep.core.gate import HELD_DETAIL, ORIGIN_PENDING, SLOW_START_DETAIL, OriginGate
from scrapy_rep.core.pause import (
    BLOCKED,
    CAUSES,
    ORIGIN_PAUSED,
    RATE_LIMITED,
    SERVICE_UNAVAILABLE,
    Backoff,
    PauseState,
    longest,
)
from scrapy_rep.core.policy import FetchResult, PolicyConfig, Status, next_policy
from scrapy_rep.core.pushback import GIVE_UP_AFTER, Pushback, PushbackConfig

NOW = 1_700_000_000.0
URL = "https://example.com/robots.txt"
A = "http://a.example:80"


def test_one_back_off_gives_the_robots_txt_pause_its_defaults() -> None:
    """robots.txt: 60 s doubling, at most 3,600 s, given up at the fifth failure."""
    backoff = PolicyConfig().backoff
    old = [min(3_600.0, 60.0 * 2.0 ** (n - 1)) for n in range(1, 13)]
    assert [backoff.wait(n) for n in range(1, 13)] == old
    assert old[:8] == [60, 120, 240, 480, 960, 1920, 3600, 3600]
    assert backoff.wait(0) == 60.0 and backoff.wait(10_000) == 3_600.0  # no overflow
    assert [backoff.gives_up(n) for n in range(1, 7)] == [False] * 4 + [True, True]
    assert backoff.left(1) == 120 + 240 + 480
    assert backoff.clamp(0.0) == 1.0 and backoff.clamp(7_200.0) == 3_600.0


def test_one_back_off_gives_the_page_pause_its_defaults() -> None:
    """A page: 5 s doubling, at most 3,600 s, given up at the fifth pushback in a row."""
    backoff = PushbackConfig().backoff
    old = [min(3_600.0, 5.0 * 2.0 ** (n - 1)) for n in range(1, 13)]
    assert [backoff.wait(n) for n in range(1, 13)] == old
    assert old[:3] == [5, 10, 20] and old[-1] == 3_600
    assert backoff.wait(10_000) == 3_600.0
    assert [backoff.gives_up(n) for n in range(1, 7)] == [False] * 4 + [True, True]
    assert GIVE_UP_AFTER == backoff.tries == 5
    assert backoff.clamp(0.0) == 1.0 and backoff.clamp(1e9) == 3_600.0


def test_the_settings_map_onto_the_one_back_off() -> None:
    policy = PolicyConfig(pause_initial=5.0, pause_max=40.0, pause_max_tries=3, retry_after_max=9)
    assert policy.backoff == Backoff(5.0, 2.0, 40.0, 3, floor=1.0, hint_cap=9.0)
    assert [policy.backoff.wait(n) for n in range(1, 6)] == [5, 10, 20, 40, 40]
    assert policy.backoff.clamp(30.0) == 9.0  # Retry-After has its own cap
    page = PushbackConfig(backoff_start=5.0, backoff_factor=3.0, pause_max=100.0, floor=2.0)
    assert page.backoff == Backoff(5.0, 3.0, 100.0, GIVE_UP_AFTER, 2.0)
    assert [page.backoff.wait(n) for n in range(1, 5)] == [5, 15, 45, 100]
    assert page.backoff.clamp(0.5) == 2.0 and page.backoff.clamp(500.0) == 100.0
    assert Backoff(1.0, factor=1e300).wait(5) == 3_600.0  # overflow: the cap


@pytest.mark.parametrize("status", [429, 503, 500, None])
def test_a_paused_policy_gives_the_one_pause_record(status: int | None) -> None:
    config = PolicyConfig()
    error = None if status is not None else "ConnectionRefusedError"
    fetch = FetchResult(URL, URL, status, error=error)
    first = next_policy(None, fetch, NOW, config)
    second = next_policy(first, fetch, NOW + 60, config)
    assert second.status is Status.PAUSED
    assert second.pause() == PauseState(
        NOW + 60 + 120, ORIGIN_PAUSED, status or 0, URL, None, 2, NOW + 60
    )
    ok = next_policy(None, FetchResult(URL, URL, 200, b"Allow: /\n"), NOW, config)
    assert ok.pause() is None


def test_a_page_pause_is_the_same_record() -> None:
    pb = Pushback(PushbackConfig())
    pause = pb.on_response(A, 429, {"retry-after": "30"}, f"{A}/x", NOW)
    assert pause is not None
    expected = PauseState(NOW + 30, RATE_LIMITED, 429, f"{A}/x", 30.0, 1, NOW)
    assert pause.state == replace(expected, gap=pause.state.gap)  # the pace is another matter
    assert pb.paused(A, NOW + 1) == pause.state


def test_a_stored_page_pause_of_before_still_loads() -> None:
    """The stored form is unchanged: a record a store kept before loads as it was."""
    before = (
        '{"until": 1700000030.0, "cause": "rate-limited", "status": 429, '
        '"url": "http://a.example:80/x", "retry_after": 30.0, "level": 1, '
        '"started": 1700000000.0, "gap": 0.5, "stage": 1}'
    )
    state = PauseState.from_dict(json.loads(before))
    assert state == PauseState(NOW + 30, RATE_LIMITED, 429, f"{A}/x", 30.0, 1, NOW, 0.5, 1)
    assert state is not None and json.loads(json.dumps(state.to_dict())) == json.loads(before)
    older = '{"until": 1.0, "cause": "blocked", "status": 403, "url": "u", "retry_after": null, '
    older += '"level": 2, "started": 0.0}'  # no pace: written before it was learnt
    assert PauseState.from_dict(json.loads(older)) == PauseState(1.0, BLOCKED, 403, "u", None, 2, 0)


def test_every_cause_round_trips_and_no_other_does() -> None:
    assert set(CAUSES) == {ORIGIN_PAUSED, RATE_LIMITED, SERVICE_UNAVAILABLE, BLOCKED}
    for cause in CAUSES:
        state = PauseState(NOW, cause, 503, URL, None, 1, NOW - 5)
        assert PauseState.from_dict(state.to_dict()) == state
    assert PauseState.from_dict({**state.to_dict(), "cause": "licence-required"}) is None


def test_of_two_pauses_the_one_ending_last_holds() -> None:
    short = PauseState(NOW + 5, RATE_LIMITED, 429, URL, 5.0, 1, NOW)
    long = PauseState(NOW + 60, ORIGIN_PAUSED, 503, URL, None, 1, NOW)
    assert longest(short, None, long) == long
    assert longest(None, None) is None
    assert long.lasts(NOW + 59) and not long.lasts(NOW + 60)


def test_a_held_request_is_described_by_the_pause_that_holds_it() -> None:
    """One function says why a request is held: the page's pause in words while it lasts,
    its slow start after, and a fixed sentence for robots.txt."""
    pb = Pushback(PushbackConfig())
    gate: OriginGate[str] = OriginGate(2.0, 10, park_timeout=50.0, pushback=pb)
    pause = pb.on_response(A, 429, {"retry-after": "30"}, f"{A}/x", NOW)
    assert pause is not None
    said = gate.detail(A, RATE_LIMITED, NOW + 1)
    assert said == pause.state.describe()
    assert said == (
        f"the origin answered 429 to {A}/x (Retry-After: 30s); "
        "rate-limited until 2023-11-14T22:13:50Z (30s)"
    )
    assert gate.detail(A, RATE_LIMITED, NOW + 31) == SLOW_START_DETAIL
    assert gate.detail(A, ORIGIN_PAUSED, NOW + 1) == HELD_DETAIL[ORIGIN_PAUSED]
    assert gate.detail(A, ORIGIN_PENDING, NOW + 1) == HELD_DETAIL[ORIGIN_PENDING]
    assert gate.detail(A, "park-overflow", NOW + 1) == "park-overflow"
    assert pause.state.evidence() == {
        "status": 429,
        "retry_after": 30.0,
        "page": f"{A}/x",
        "until": NOW + 30,
    }
