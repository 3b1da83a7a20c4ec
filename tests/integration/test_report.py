"""The per-origin report logged at close: bounded, with exact totals, naming whose it is."""

from __future__ import annotations

import logging

import pytest
import pytest_twisted

from tests.support.crawl import ListSpider, crawl_many
from tests.support.fakesite import FakeSite, Reply


class AlphaSpider(ListSpider):
    name = "alpha"
    custom_settings = {"REP_PRODUCT_TOKEN": "alphabot", "CLOSESPIDER_TIMEOUT": 1}  # noqa: RUF012


class BetaSpider(ListSpider):
    name = "beta"
    custom_settings = {"REP_PRODUCT_TOKEN": "betabot", "CLOSESPIDER_TIMEOUT": 1}  # noqa: RUF012


@pytest_twisted.ensureDeferred
async def test_two_crawlers_in_one_process_name_their_spider_and_token(
    site: FakeSite, caplog: pytest.LogCaptureFixture
) -> None:
    """Each close report and each never-downloaded warning says whose it is."""
    down = site.add("down").robots(Reply(status=503))
    with caplog.at_level(logging.INFO, logger="scrapy_rep"):
        await crawl_many(
            [
                (AlphaSpider, [down.url_for("/a1"), down.url_for("/a2")], {}),
                (BetaSpider, [down.url_for("/b1")], {}),
            ]
        )
    messages = [r.getMessage() for r in caplog.records]
    warnings = sorted(m for m in messages if "were never downloaded" in m)
    assert warnings == [
        "scrapy-rep: 1 held requests of spider 'beta' (as 'betabot') were never downloaded "
        "(spider closed: closespider_timeout)",
        "scrapy-rep: 2 held requests of spider 'alpha' (as 'alphabot') were never downloaded "
        "(spider closed: closespider_timeout)",
    ]
    reports = [m.splitlines()[0] for m in messages if m.startswith("scrapy-rep report:")]
    assert len(reports) == 2
    alpha = next(r for r in reports if r.endswith(" (spider 'alpha' as 'alphabot')"))
    beta = next(r for r in reports if r.endswith(" (spider 'beta' as 'betabot')"))
    assert alpha.startswith("scrapy-rep report: 1 origins, 2 requests: 0 downloaded, 2 dropped")
    assert beta.startswith("scrapy-rep report: 1 origins, 1 requests: 0 downloaded, 1 dropped")
