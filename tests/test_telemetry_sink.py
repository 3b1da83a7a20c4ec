"""One sink per crawler: every component counts through the same Telemetry."""

from __future__ import annotations

from scrapy import signals
from scrapy.utils.test import get_crawler

from scrapy_rep.adapter.page import PageDirectivesMiddleware
from scrapy_rep.adapter.telemetry import Telemetry

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
