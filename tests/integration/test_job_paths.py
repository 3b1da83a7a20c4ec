"""``REP_DECISION_LOG`` and ``REP_REPORT`` take the placeholders of Scrapy's ``FEEDS``
URIs: ``%(name)s``, ``%(time)s`` and spider attributes (scrapyd's ``%(_job)s``), so each
job writes files of its own instead of one file every job overwrites."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest_twisted

from tests.support.audit import records
from tests.support.crawl import crawl
from tests.support.fakesite import FakeSite, Reply


@pytest_twisted.ensureDeferred
async def test_a_crawl_names_its_log_and_report_after_the_spider_its_job_and_time(
    site: FakeSite, tmp_path: Path
) -> None:
    origin = site.add("a").robots(Reply(body=b"User-agent: *\nDisallow: /private\n"))
    settings: dict[str, Any] = {
        "REP_DECISION_LOG": str(tmp_path / "logs" / "%(name)s-%(_job)s.jsonl"),
        "REP_REPORT": str(tmp_path / "%(name)s" / "%(_job)s-%(time)s%20x.html"),
    }
    result = await crawl([origin.url_for("/"), origin.url_for("/private/a")], settings, _job="j7")
    assert result.stat("rep/downloaded") == 1
    log = tmp_path / "logs" / "list-j7.jsonl"
    assert log.exists(), sorted(p.name for p in tmp_path.rglob("*"))
    assert {r["crawl"] for r in records(log)} == {"j7"}
    pages = list((tmp_path / "list").glob("*.html"))
    assert len(pages) == 1, sorted(p.name for p in tmp_path.rglob("*"))
    # FEEDS' %(time)s: UTC to the second, ISO 8601, ':' written '-'; another '%' stays
    assert re.fullmatch(r"j7-\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d\+00-00%20x\.html", pages[0].name)
    assert "private/a" in pages[0].read_text()
    assert not list(tmp_path.rglob("*%(*")), "a placeholder was taken literally"
