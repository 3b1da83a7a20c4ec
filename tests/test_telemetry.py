"""Telemetry, the one sink per crawler: every component counts through it, and it writes
the stats, the per-origin counts, the audit log and the close report together.

In-process, on Scrapy's ``get_crawler()``; what a whole crawl writes is in
``tests/integration/test_audit.py`` and ``tests/integration/test_report.py``.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
from scrapy import signals
from scrapy.utils.test import get_crawler

from scrapy_rep.components.page import PageDirectivesMiddleware
from scrapy_rep.core.decision import KEEP, REQUEUE, withheld
from scrapy_rep.core.policy import Policy, Status
from scrapy_rep.crawl.handover import handed_over
from scrapy_rep.crawl.held_records import held_fields, requeued
from scrapy_rep.crawl.telemetry import FLUSH_EVERY, Telemetry
from tests.support.audit import records

ADDON = {"ADDONS": {"scrapy_rep.Addon": 100}}


def test_each_crawler_has_one_sink() -> None:
    crawler = get_crawler(settings_dict=ADDON)
    assert Telemetry.of(crawler) is Telemetry.of(crawler)
    assert Telemetry.of(get_crawler(settings_dict=ADDON)) is not Telemetry.of(crawler)


def test_the_page_middleware_counts_through_the_crawls_sink() -> None:
    crawler = get_crawler(settings_dict=ADDON)
    page = PageDirectivesMiddleware.from_crawler(crawler)
    assert page.telemetry is Telemetry.of(crawler)


def test_batched_counts_reach_scrapys_stats_when_the_spider_closes() -> None:
    crawler = get_crawler(settings_dict=ADDON)
    sink = Telemetry.of(crawler)
    sink.inc("rep/page/nofollow")
    assert crawler.stats.get_value("rep/page/nofollow") is None  # still batched
    crawler.signals.send_catch_log(signal=signals.spider_closed, spider=None, reason="finished")
    assert crawler.stats.get_value("rep/page/nofollow") == 1


A = "http://a.example:80"


def test_counts_reach_scrapys_stats_in_batches_of_flush_every() -> None:
    crawler = get_crawler(settings_dict=ADDON)
    sink = Telemetry.of(crawler)
    for _ in range(FLUSH_EVERY - 1):
        sink.inc("rep/parked")
    assert crawler.stats.get_value("rep/parked") is None
    sink.inc("rep/parked")
    assert crawler.stats.get_value("rep/parked") == FLUSH_EVERY


def test_a_dropped_request_is_one_decision_record_with_its_counts(tmp_path: Path) -> None:
    log = tmp_path / "audit.jsonl"
    crawler = get_crawler(settings_dict={**ADDON, "REP_DECISION_LOG": str(log)})
    sink = Telemetry.of(crawler)
    record = withheld(A, "testbot", "http://a.example/1", None, "park-expired")
    sink.final(A, record)
    sink.closed("finished", 0, spider="s", token="testbot")
    assert crawler.stats.get_value("rep/dropped/park-expired") == 1
    assert sink.counts.of(A).to_dict()["dropped"] == {"park-expired": 1}
    decisions = [r for r in records(log) if r["type"] == "decision"]
    assert [(r["url"], r["reason"]) for r in decisions] == [("http://a.example/1", "park-expired")]
    (origin,) = [r for r in records(log) if r["type"] == "origin"]
    assert origin["origin"] == A


def test_parked_and_released_each_leave_a_record(tmp_path: Path) -> None:
    log = tmp_path / "audit.jsonl"
    crawler = get_crawler(settings_dict={**ADDON, "REP_DECISION_LOG": str(log)})
    sink = Telemetry.of(crawler)
    sink.parked(A, "http://a.example/1", "origin-paused")
    sink.released(A, "http://a.example/1")
    sink.parked(A, "http://a.example/2", "origin-pending")
    sink.closed("finished", 0, spider="s", token="testbot")
    kinds = [(r["type"], r["url"]) for r in records(log) if r["type"] != "origin"]
    assert kinds == [
        ("parked", "http://a.example/1"),
        ("released", "http://a.example/1"),
        ("parked", "http://a.example/2"),
    ]
    stats = crawler.stats
    assert stats.get_value("rep/parked") == 2
    assert stats.get_value("rep/parked/origin-paused") == 1
    assert stats.get_value("rep/released") == 1


def test_a_request_kept_or_requeued_at_close_is_a_final_decision_record_not_a_drop(
    tmp_path: Path,
) -> None:
    log = tmp_path / "audit.jsonl"
    crawler = get_crawler(settings_dict={**ADDON, "REP_DECISION_LOG": str(log)})
    sink = Telemetry.of(crawler)
    sink.final(A, handed_over(A, "testbot", "http://a.example/2", None, KEEP, "origin-pending"))
    sink.final(A, handed_over(A, "testbot", "http://a.example/3", None, REQUEUE, "origin-paused"))
    sink.closed("finished", 0, spider="s", token="testbot")
    decisions = [r for r in records(log) if r["type"] == "decision"]
    assert [(r["url"], r["action"], r["reason"]) for r in decisions] == [
        ("http://a.example/2", "keep", "origin-pending"),
        ("http://a.example/3", "requeue", "origin-paused"),
    ]
    assert {r["type"] for r in records(log)} == {"decision"}  # no requeued, kept records
    stats = crawler.stats
    assert stats.get_value("rep/held/saved") == 1
    assert stats.get_value("rep/requeued") == 1
    assert not any(key.startswith("rep/dropped") for key in stats.get_stats())
    assert stats.get_value("rep/downloaded") is None
    assert sink.counts.of(A).to_dict()["dropped"] == {}


def test_a_dead_workers_requeued_requests_get_the_decision_records_it_would_have_written(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    log = tmp_path / "audit.jsonl"
    crawler = get_crawler(settings_dict={**ADDON, "REP_DECISION_LOG": str(log)})
    sink = Telemetry.of(crawler)
    paused = Policy(
        Status.PAUSED, "5xx", 503, 10.0, 70.0, f"{A}/robots.txt", f"{A}/robots.txt", "HTTP 503"
    )
    held = [
        held_fields(A, "otherbot", paused, "origin-paused"),
        held_fields(A, "otherbot", None, "origin-pending"),
        None,  # recorded by an older version: the URL alone
        {"origin": A, "reason": 7},  # unreadable
    ]
    urls = [f"http://a.example/{n}" for n in range(4)]
    with caplog.at_level(logging.INFO, logger="scrapy_rep"):
        requeued(
            sink,
            "host:41:ab",
            [(u, json.dumps(h).encode() if h else b"") for u, h in zip(urls, held, strict=True)],
        )
    sink.closed("finished", 0, spider="s", token="testbot")

    found = records(log)
    decisions = [r for r in found if r["type"] == "decision"]
    assert [(r["url"], r["action"], r["reason"], r["policy_status"]) for r in decisions] == [
        (urls[0], "requeue", "origin-paused", "paused"),
        (urls[1], "requeue", "origin-pending", "pending"),
    ]
    first = decisions[0]
    assert (first["origin"], first["product_token"]) == (A, "otherbot")  # the dead worker's
    assert first["policy_http_status"] == 503 and first["policy_fetched_at"] == 10.0
    assert first["policy_url"] == f"{A}/robots.txt"
    assert "worker host:41:ab, whose lease expired" in first["detail"]
    bare = [r for r in found if r["type"] == "requeued"]
    assert [(r["url"], r["reason"], r["worker"]) for r in bare] == [
        (urls[2], "worker-lease-expired", "host:41:ab"),
        (urls[3], "worker-lease-expired", "host:41:ab"),
    ]
    (warned,) = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert "2 requeued requests of worker host:41:ab came without" in warned.getMessage()
    stats = crawler.stats
    assert stats.get_value("rep/cluster/requeued-from-dead-worker") == 4
    assert stats.get_value("rep/requeued") is None  # not this worker's own close
    assert sink.counts.requeued_from_dead == 4


def test_the_close_names_the_spider_and_token_of_what_was_never_downloaded(
    caplog: pytest.LogCaptureFixture,
) -> None:
    sink = Telemetry.of(get_crawler(settings_dict=ADDON))
    with caplog.at_level(logging.INFO, logger="scrapy_rep"):
        sink.closed("shutdown", 3, spider="books", token="testbot")
    (warned,) = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert "3 held requests of spider 'books' (as 'testbot')" in warned.getMessage()
    assert "shutdown" in warned.getMessage()
    assert any("spider 'books' as 'testbot'" in r.getMessage() for r in caplog.records)


def test_without_the_report_the_close_says_nothing_when_all_went_well(
    caplog: pytest.LogCaptureFixture,
) -> None:
    sink = Telemetry.of(get_crawler(settings_dict={**ADDON, "REP_REPORT": False}))
    with caplog.at_level(logging.INFO, logger="scrapy_rep"):
        sink.closed("finished", 0, spider="books", token="testbot")
    assert caplog.records == []


def test_a_walls_log_line_escapes_the_control_characters_of_its_headers(
    caplog: pytest.LogCaptureFixture,
) -> None:
    from dataclasses import asdict

    from scrapy_rep.core.walls import wall_of

    hostile = "USD 1\x07\x1b[31m\x85\x9b"
    server = 'License server="https://l.example/\x1b]0;t\x07"'
    found = {"crawler-price": [hostile], "www-authenticate": [server]}
    wall = wall_of(401, lambda name: found.get(name, []))
    assert wall is not None
    sink = Telemetry.of(get_crawler(settings_dict=ADDON))
    with caplog.at_level(logging.INFO, logger="scrapy_rep"):
        sink.licence_wall(A, f"{A}/\x1b[2J", {**asdict(wall), "said": wall.said()}, False, ())
    (line,) = [r.getMessage() for r in caplog.records if "wall" in r.getMessage()]
    assert not any(ch in line for ch in "\x07\x1b\x85\x9b"), repr(line)
    assert "USD 1\\x07\\x1b[31m\\x85\\x9b" in line and "https://l.example/\\x1b]0;t\\x07" in line


def test_one_pause_family_is_said_and_counted_by_its_cause(
    caplog: pytest.LogCaptureFixture,
) -> None:
    from scrapy_rep.core.pushback import Pause, PauseState

    crawler = get_crawler(settings_dict=ADDON)
    sink = Telemetry.of(crawler)
    robots = Policy(
        Status.PAUSED, "5xx", 503, 10.0, 70.0, f"{A}/robots.txt", f"{A}/robots.txt", "HTTP 503"
    )
    robots_state = robots.pause()
    assert robots_state is not None and robots_state.cause == "origin-paused"
    page = PauseState(40.0, "rate-limited", 429, f"{A}/p", 30.0, 1, 10.0)
    with caplog.at_level(logging.INFO, logger="scrapy_rep"):
        sink.paused(A, robots_state, policy=robots)
        sink.paused(A, page, page=Pause(A, page))
        sink.resumed(A, robots_state, policy=robots)
        sink.resumed(A, page)
    crawler.signals.send_catch_log(signal=signals.spider_closed, spider=None, reason="finished")
    stat = crawler.stats.get_value
    assert stat("rep/pauses/5xx") == stat("rep/resumes") == 1
    assert (
        stat("rep/pushback/pauses/rate-limited") == stat("rep/pushback/resumes/rate-limited") == 1
    )
    said = [r.getMessage() for r in caplog.records]
    assert any(f"{A} paused until" in m and m.endswith(": HTTP 503") for m in said), said
    assert any("(rate-limited): it answered 429" in m for m in said), said
    assert any(m.endswith("resumed: HTTP 503") for m in said), said
    assert any("resumed after its pause (rate-limited)" in m for m in said), said
