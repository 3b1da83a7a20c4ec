"""No scrapy-rep log line is longer than MAX_RECORD, even from a call site that forgot to
summarise (runtime/logs.py, put on the package's loggers when the service starts)."""

from __future__ import annotations

import logging

import pytest

import scrapy_rep.crawl.service  # noqa: F401  (the crawl's loggers, as a crawl makes them)
from scrapy_rep.robotstxt.text import MAX_RECORD
from scrapy_rep.runtime.logs import MESSAGE_LIMIT, bound_lines


@pytest.fixture
def bounded() -> None:
    bound_lines()


@pytest.mark.parametrize("name", ["scrapy_rep.crawl.service", "scrapy_rep.crawl.telemetry"])
def test_a_message_past_the_limit_is_clipped(
    bounded: None, name: str, caplog: pytest.LogCaptureFixture
) -> None:
    logger = logging.getLogger(name)
    site_text = "/" + "a" * 900_000
    with caplog.at_level(logging.DEBUG, logger=name):
        logger.info("robots.txt of %s says %s", "http://a.example", site_text)
        logger.warning("forgot to summarise: " + site_text)
    formatter = logging.Formatter("%(asctime)s [%(name)s] %(levelname)s: %(message)s")
    lines = [formatter.format(record) for record in caplog.records]
    assert len(lines) == 2
    assert all(len(line) <= MAX_RECORD for line in lines), [len(line) for line in lines]
    assert lines[0].split(": ", 1)[1].startswith("robots.txt of http://a.example says /aaa")
    assert lines[1].endswith("more characters)")


def test_a_short_message_is_left_as_it_is(bounded: None, caplog: pytest.LogCaptureFixture) -> None:
    logger = logging.getLogger("scrapy_rep.crawl.service")
    with caplog.at_level(logging.DEBUG, logger=logger.name):
        logger.info("%d origins paused", 3)
        logger.info("x" * MESSAGE_LIMIT)
    assert caplog.records[0].msg == "%d origins paused" and caplog.records[0].args == (3,)
    assert caplog.records[1].getMessage() == "x" * MESSAGE_LIMIT


def test_every_logger_of_the_package_gets_the_filter_once() -> None:
    logging.getLogger("scrapy_rep.a_future_module")
    bound_lines()
    assert bound_lines() == 0
    names = [
        name
        for name, logger in logging.root.manager.loggerDict.items()
        if name.startswith("scrapy_rep") and isinstance(logger, logging.Logger)
    ]
    assert "scrapy_rep.a_future_module" in names
    for name in names:
        assert len(logging.getLogger(name).filters) >= 1, name


def test_an_outage_is_one_warning_then_quiet_then_one_line_when_it_answers(
    caplog: pytest.LogCaptureFixture,
) -> None:
    from scrapy_rep.runtime.logs import Outage

    log = logging.getLogger("scrapy_rep.test_outage")
    outage = Outage(log, "the store failed (%(error)s)", "the local cache meanwhile", "back")
    with caplog.at_level(logging.DEBUG, logger="scrapy_rep.test_outage"):
        outage.answered()  # never down: nothing to say
        for _ in range(3):
            outage.failed(ConnectionError("refused"))
        outage.answered()
        outage.answered()
        outage.failed(OSError("again"))
    said = [(r.levelno, r.getMessage()) for r in caplog.records]
    assert said == [
        (logging.WARNING, "the store failed (ConnectionError: refused); the local cache meanwhile"),
        (logging.DEBUG, "the store failed (ConnectionError: refused); the local cache meanwhile"),
        (logging.DEBUG, "the store failed (ConnectionError: refused); the local cache meanwhile"),
        (logging.INFO, "back"),
        (logging.WARNING, "the store failed (OSError: again); the local cache meanwhile"),
    ]
