"""The pushback site is what the pushback tests and benchmark trust: each rule is checked."""

from __future__ import annotations

import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator

import pytest

from tests.support.pushback_site import (
    ALLOW_ALL,
    OriginSpec,
    PushbackSite,
    max_in_flight_after,
    page_paths,
    pages,
    pause_ends,
)

TIMEOUT = 5.0


@pytest.fixture
def site() -> Iterator[PushbackSite]:
    with PushbackSite() as s:
        yield s


def get(url: str, agent: str = "testbot/1.0") -> tuple[int, dict[str, str], bytes]:
    request = urllib.request.Request(url, headers={"User-Agent": agent})
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT) as resp:
            return resp.status, dict(resp.headers.items()), resp.read()
    except urllib.error.HTTPError as err:
        return err.code, dict(err.headers.items()), err.read()


def test_origins_are_distinct_hosts_and_pages_form_a_tree(site: PushbackSite) -> None:
    a = site.add("a", pages=7, fanout=2)
    b = site.add("b")
    assert a.host != b.host and a.host.startswith("127.") and b.host.startswith("127.")
    assert get(a.robots_url)[0::2] == (200, ALLOW_ALL)
    # walk the link tree from "/": every page once, nothing else
    seen: list[str] = []
    todo = ["/"]
    while todo:
        path = todo.pop(0)
        status, _, body = get(a.url_for(path))
        assert status == 200
        seen.append(path)
        todo += [p for p in body.decode().split('"') if p.startswith("/p/")]
    assert sorted(seen) == sorted(page_paths(7))
    assert get(a.url_for("/p/7"))[0] == 404


def test_token_bucket_answers_429_with_retry_after(site: PushbackSite) -> None:
    a = site.add("a", rate=0.5, burst=2, retry_after=7)
    answers = [get(a.url_for("/"))[:2] for _ in range(4)]
    assert [status for status, _ in answers] == [200, 200, 429, 429]
    assert answers[2][1]["Retry-After"] == "7"
    assert "Retry-After" not in answers[0][1]
    # robots.txt is never rate-limited and takes no token
    assert get(a.robots_url)[0] == 200
    ends = pause_ends(a.log(), a.spec)
    assert len(ends) == 1  # two overlapping asks: one pause episode
    twos = [e for e in a.log() if e.status == 429]
    assert ends[0] == pytest.approx(twos[-1].at + 7)


def test_no_retry_after_when_none(site: PushbackSite) -> None:
    a = site.add("a", rate=0.01, burst=1, retry_after=None)
    get(a.url_for("/"))
    status, headers, _ = get(a.url_for("/"))
    assert status == 429 and "Retry-After" not in headers
    a.configure(retry_after="Wed, 21 Oct 2015 07:28:00 GMT")
    assert get(a.url_for("/"))[1]["Retry-After"] == "Wed, 21 Oct 2015 07:28:00 GMT"


def test_503_window_then_recovers(site: PushbackSite) -> None:
    a = site.add("a", unavailable=(0.0, 0.4), unavailable_retry_after=3)
    status, headers, _ = get(a.url_for("/"))
    assert status == 503 and headers["Retry-After"] == "3"
    assert get(a.robots_url)[0] == 200  # robots.txt is outside the window
    deadline = time.monotonic() + TIMEOUT
    while get(a.url_for("/"))[0] == 503:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert get(a.url_for("/p/0"))[0] == 200


def test_403_wall_after_k_pages(site: PushbackSite) -> None:
    a = site.add("a", wall_after=2)
    statuses = [get(a.url_for(p))[0] for p in ("/", "/p/0", "/p/1", "/p/2", "/")]
    assert statuses == [200, 200, 403, 403, 403]
    assert get(a.robots_url)[0] == 200


def test_log_records_agent_status_and_in_flight(site: PushbackSite) -> None:
    a = site.add("a", latency=0.3)
    b = site.add("b")
    gate = threading.Barrier(3)

    def fetch(path: str) -> None:
        gate.wait()
        get(a.url_for(path), agent=f"bot-{path}")

    threads = [threading.Thread(target=fetch, args=(p,)) for p in ("/", "/p/0", "/p/1")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    get(b.url_for("/"), agent="other/2")
    log = site.log()
    assert [e.origin for e in log] == ["a", "a", "a", "b"]
    assert sorted(e.in_flight for e in log[:3]) == [1, 2, 3]  # all three overlapped
    assert log[3].in_flight == 1 and log[3].user_agent == "other/2" and log[3].status == 200
    assert {e.user_agent for e in log[:3]} == {"bot-/", "bot-/p/0", "bot-/p/1"}
    assert max_in_flight_after(log, log[0].at, 10.0) == 3
    assert max_in_flight_after(log, log[-1].at + 1, 1.0) == 0
    assert pages(a.log()) == log[:3]
    site.clear_log()
    assert site.log() == []


def test_configure_switches_behaviour_mid_crawl(site: PushbackSite) -> None:
    a = site.add("a", spec=OriginSpec(pages=3))
    assert get(a.url_for("/"))[0] == 200
    a.configure(wall_after=0)
    assert get(a.url_for("/"))[0] == 403
    with pytest.raises(AttributeError):
        a.configure(nonsense=1)


def test_a_server_slows_down_with_the_request_rate_then_answers_503(site: PushbackSite) -> None:
    a = site.add("a", capacity=2.0, latency=0.0, slow_latency=0.1, pages=20)
    statuses = [get(a.url_for("/"))[0] for _ in range(7)]  # 7 in well under a second
    assert statuses == [200] * 6 + [503]  # 6 = three times its capacity
    delays = [e.delay for e in a.log()]
    assert delays[:2] == [0.0, 0.0]  # within its capacity: its own latency
    assert delays[2] < delays[3] < delays[4] < delays[5] <= 0.1  # then slower and slower
