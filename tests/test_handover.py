"""Where held requests go at close, and where they come back from, in-process.

On the rig: a shared scrapy-redis queue (a scheduler that notes what it is
given), the JOBDIR (a temporary folder), or nowhere. The whole-crawl versions
are ``tests/integration/test_jobdir.py`` (a crawl stopped and resumed) and
``tests/integration/test_redis_cluster.py`` (requeued to another worker).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from scrapy import Request, Spider
from scrapy_redis.scheduler import Scheduler as RedisScheduler

from scrapy_rep.core.parking import Held
from scrapy_rep.core.policy import Policy, Status
from scrapy_rep.crawl import meta as M
from scrapy_rep.crawl.handover import Handover
from scrapy_rep.crawl.jobdir import FILE
from scrapy_rep.crawl.telemetry import Telemetry
from tests.support.audit import records
from tests.support.decision import EVERY_FIELD
from tests.support.rig import Rig

A = "http://a.example:80"
PAUSED = Policy(
    Status.PAUSED,
    "5xx",
    503,
    1000.0,
    1060.0,
    "http://a.example/robots.txt",
    "http://a.example/robots.txt",
    "robots.txt answered 503",
)


class HeldSpider(Spider):
    name = "held"

    def parse(self, response: Any) -> None:
        pass


@pytest.fixture
def rig() -> Iterator[Rig]:
    """The rig with a spider whose callbacks can be kept in the JOBDIR."""
    with Rig(spidercls=HeldSpider) as r:
        yield r


def held(rig: Rig, *paths: str) -> list[Held[Request]]:
    spider = rig.crawler.spider
    assert isinstance(spider, HeldSpider)
    return [
        Held(Request(f"http://a.example{path}", callback=spider.parse), A, 1000.0, "origin-paused")
        for path in paths
    ]


def handover(rig: Rig, *, requeue: bool = False, jobdir: Path | None = None) -> Handover:
    return Handover(
        rig.crawler,
        Telemetry.of(rig.crawler),
        requeue,
        str(jobdir) if jobdir else None,
        token="testbot",
        policy_of=lambda origin: PAUSED if origin == A else None,
    )


class SharedQueue(RedisScheduler):
    """scrapy-redis's scheduler as scrapy-rep sees it: what it is given, or a failure."""

    def __init__(self, fail: bool = False) -> None:  # no Redis behind it
        self.fail = fail
        self.queued: list[Request] = []

    def enqueue_request(self, request: Request) -> bool:
        if self.fail:
            raise ConnectionError("redis went away")
        self.queued.append(request)
        return True


def test_with_nowhere_to_go_every_held_request_is_dropped_at_close(rig: Rig) -> None:
    requests = held(rig, "/1", "/2")
    assert handover(rig).take(requests) == [(each, "spider-closed") for each in requests]


def test_held_requests_go_back_to_the_shared_queue_unfiltered(rig: Rig) -> None:
    queue = SharedQueue()
    rig.engine._slot.scheduler = queue
    requests = held(rig, "/1", "/2")
    assert handover(rig, requeue=True).take(requests) == []
    assert [r.url for r in queue.queued] == ["http://a.example/1", "http://a.example/2"]
    assert all(r.dont_filter for r in queue.queued)  # the shared dupefilter saw them
    assert rig.stat("rep/requeued") == 2


def test_requeueing_is_off_unless_asked_for(rig: Rig) -> None:
    queue = SharedQueue()
    rig.engine._slot.scheduler = queue
    requests = held(rig, "/1")
    assert handover(rig).take(requests) == [(requests[0], "spider-closed")]
    assert queue.queued == []


def test_only_a_scrapy_redis_queue_is_shared(rig: Rig) -> None:
    rig.engine._slot.scheduler = object()  # Scrapy's own scheduler dies with this worker
    requests = held(rig, "/1")
    assert handover(rig, requeue=True).take(requests) == [(requests[0], "spider-closed")]


def test_a_request_the_shared_queue_refuses_goes_to_the_jobdir(
    rig: Rig, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    rig.engine._slot.scheduler = SharedQueue(fail=True)
    requests = held(rig, "/1")
    with caplog.at_level(logging.WARNING, logger="scrapy_rep"):
        assert handover(rig, requeue=True, jobdir=tmp_path).take(requests) == []
    assert any("could not push a held request back" in r.getMessage() for r in caplog.records)
    assert (tmp_path / FILE).exists()
    assert rig.stat("rep/held/saved") == 1 and rig.stat("rep/requeued") is None


def test_held_requests_kept_in_the_jobdir_come_back_on_resume(
    rig: Rig, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    requests = held(rig, "/1", "/2")
    with caplog.at_level(logging.INFO, logger="scrapy_rep"):
        assert handover(rig, jobdir=tmp_path).take(requests) == []
    assert rig.stat("rep/held/saved") == 2
    assert any("2 held requests kept in" in r.getMessage() for r in caplog.records)

    with Rig(spidercls=HeldSpider) as resumed:
        handover(resumed, jobdir=tmp_path).restore()
        crawled = resumed.engine.crawled
        assert [r.url for r in crawled] == ["http://a.example/1", "http://a.example/2"]
        assert all(r.dont_filter for r in crawled)  # the dupefilter saw them last run
        assert crawled[0].callback == resumed.crawler.spider.parse  # type: ignore[union-attr]
        assert resumed.stat("rep/held/restored") == 2
        assert not (tmp_path / FILE).exists()  # restored once, not again at the next start


def test_a_request_that_cannot_be_kept_is_dropped_as_unserializable(
    rig: Rig, tmp_path: Path
) -> None:
    fine, odd = held(rig, "/fine", "/odd")
    odd.item.meta["lock"] = threading.Lock()  # cannot be pickled
    assert handover(rig, jobdir=tmp_path).take([fine, odd]) == [(odd, "unserializable")]
    assert rig.stat("rep/held/saved") == 1


def decisions(log: Path) -> list[dict[str, Any]]:
    return [r for r in records(log) if r["type"] == "decision"]


def test_each_request_handed_over_ends_with_a_decision_record(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    log = tmp_path / "audit.jsonl"
    with Rig(spidercls=HeldSpider, settings={"REP_DECISION_LOG": str(log)}) as rig:
        rig.engine._slot.scheduler = SharedQueue()
        requeued = held(rig, "/1")
        with caplog.at_level(logging.DEBUG, logger="scrapy_rep"):
            assert handover(rig, requeue=True).take(requeued) == []
        fine, odd = held(rig, "/fine", "/odd")
        odd.item.meta["lock"] = threading.Lock()  # cannot be pickled: dropped by the caller
        assert handover(rig, jobdir=tmp_path).take([fine, odd]) == [(odd, "unserializable")]
        Telemetry.of(rig.crawler).closed("finished", 0, spider="held", token="testbot")
    found = decisions(log)
    assert [(r["url"], r["action"]) for r in found] == [
        ("http://a.example/1", "requeue"),
        ("http://a.example/fine", "keep"),
    ]
    for record in found:
        assert set(record) == {"type", "at", "crawl", *EVERY_FIELD}
        assert record["origin"] == A and record["product_token"] == "testbot"
        assert record["reason"] == "origin-paused"  # why it was held
        assert (record["policy_status"], record["policy_http_status"]) == ("paused", 503)
        assert (record["rep_decision"], record["collection_decision"]) == (
            "unresolved",
            "unresolved",
        )
    assert "shared scrapy-redis queue" in found[0]["detail"]
    assert "JOBDIR" in found[1]["detail"]
    assert M.DECISION not in requeued[0].item.meta  # it lives on, to be judged again
    assert any("requeue http://a.example/1" in r.getMessage() for r in caplog.records)


def test_a_jobdir_that_cannot_be_written_drops_with_a_logged_error(
    rig: Rig, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    missing = tmp_path / "no-such-dir"
    requests = held(rig, "/1")
    with caplog.at_level(logging.ERROR, logger="scrapy_rep"):
        assert handover(rig, jobdir=missing).take(requests) == [(requests[0], "spider-closed")]
    assert any("cannot keep held requests in the JOBDIR" in r.getMessage() for r in caplog.records)


def test_a_broken_file_of_the_last_run_is_said_and_left_alone(
    rig: Rig, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    (tmp_path / FILE).write_bytes(b"not a pickle")
    with caplog.at_level(logging.ERROR, logger="scrapy_rep"):
        handover(rig, jobdir=tmp_path).restore()
    assert rig.engine.crawled == []
    assert any("cannot read the held requests" in r.getMessage() for r in caplog.records)
    assert (tmp_path / FILE).exists()  # kept for a person to look at


def test_without_a_jobdir_nothing_is_restored(rig: Rig) -> None:
    handover(rig).restore()
    assert rig.engine.crawled == []
