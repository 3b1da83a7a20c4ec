from __future__ import annotations

import logging
import re
from pathlib import Path

import pytest
import pytest_twisted

from tests.support.crawl import crawl
from tests.support.fakesite import FakeSite, Reply

ROOT = Path(__file__).resolve().parents[2]


@pytest_twisted.ensureDeferred
async def test_smoke(site: FakeSite) -> None:
    a = site.add("a").robots(Reply(body=b"User-agent: *\nDisallow: /private\n"))
    result = await crawl([a.url_for("/"), a.url_for("/private/x"), a.url_for("/ok")])
    print(result)
    assert sorted(result.downloaded) == sorted([a.url_for("/"), a.url_for("/ok")])
    assert result.dropped == {a.url_for("/private/x"): "disallow-rule"}
    assert a.hits("/robots.txt") == 1


@pytest_twisted.ensureDeferred
async def test_the_log_lines_the_docs_quote_name_the_loggers_a_crawl_uses(
    site: FakeSite, caplog: pytest.LogCaptureFixture
) -> None:
    """README.md and docs/setup.md quote the start-up and close lines as Scrapy prints them,
    ``[logger] LEVEL: message``: each quoted line's logger is the one a real crawl logs it on."""
    a = site.add("a").robots(Reply(body=b"User-agent: *\nDisallow: /private\n"))
    with caplog.at_level(logging.DEBUG):
        await crawl([a.url_for("/"), a.url_for("/private/x")], {"REP_PRODUCT_TOKEN": "shopbot"})
    quoted = []
    for page in (ROOT / "README.md", ROOT / "docs" / "setup.md"):
        text = page.read_text(encoding="utf-8")
        quoted += re.findall(r"^\[(scrapy_rep[\w.]*)\] (\w+): (scrapy-rep:? \w+:? \w+)", text, re.M)
    assert len(quoted) >= 5, quoted
    for logger, level, start in quoted:
        said = {(r.name, r.levelname) for r in caplog.records if r.getMessage().startswith(start)}
        assert said == {(logger, level)}, (start, said)
