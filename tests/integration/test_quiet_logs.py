"""What a real crawl logs is said once, not once an origin or once an idle tick."""

from __future__ import annotations

import logging
import math

import pytest
import pytest_twisted

from scrapy_rep.crawl.holding import IDLE_LINE_EVERY
from scrapy_rep.runtime.settings import TUNE
from tests.support.crawl import crawl
from tests.support.fakesite import FakeSite, Reply

ALLOW_ALL = b"User-agent: *\nAllow: /\n"


@pytest_twisted.ensureDeferred
async def test_a_soft_404_tdmrep_json_is_no_file_said_once_a_crawl(
    site: FakeSite, caplog: pytest.LogCaptureFixture
) -> None:
    """Sites answering every unknown path with a 200 HTML page (the fake site does, as many
    real ones): no warning per origin, one INFO line at close naming them."""
    origins = [site.add(f"o{i}").robots(Reply(body=ALLOW_ALL)) for i in range(8)]
    with caplog.at_level(logging.INFO):
        result = await crawl([o.url_for("/page") for o in origins], {"REP_USES": ["train-ai"]})
    assert len(result.downloaded) == 8
    assert all(o.hits("/.well-known/tdmrep.json") == 1 for o in origins)
    messages = [r.getMessage() for r in caplog.records if "tdmrep.json" in r.getMessage()]
    warnings = [
        r.getMessage()
        for r in caplog.records
        if r.levelno >= logging.WARNING and "tdmrep.json" in r.getMessage()
    ]
    assert warnings == []
    assert len(messages) == 1, messages
    assert messages[0].startswith(
        "scrapy-rep: 8 tdmrep.json fetches got an HTML page (a soft 404), each read as no file: "
    ) and messages[0].endswith("(and 3 more)"), messages[0]
    assert result.stat("rep/tdmrep/html") == 8 and result.stat("rep/tdmrep/with_diagnostics") == 0


@pytest_twisted.ensureDeferred
async def test_a_broken_json_file_is_still_warned_about(
    site: FakeSite, caplog: pytest.LogCaptureFixture
) -> None:
    origin = site.add("json").robots(Reply(body=ALLOW_ALL))
    origin.page(
        "/.well-known/tdmrep.json",
        Reply(body=b"[{,", headers={"Content-Type": "application/json"}),
    )
    with caplog.at_level(logging.INFO):
        await crawl([origin.url_for("/a"), origin.url_for("/b")], {"REP_USES": ["train-ai"]})
    said = [r for r in caplog.records if "tdmrep.json" in r.getMessage()]
    assert [r.levelno for r in said] == [logging.WARNING]
    assert "tdmrep.json not JSON" in said[0].getMessage()


@pytest_twisted.ensureDeferred
async def test_origins_given_up_one_by_one_do_not_repeat_the_idle_line(
    site: FakeSite, caplog: pytest.LogCaptureFixture
) -> None:
    """60 paused origins, each given up a little after the one before (over ~2.5 s, with
    an idle tick every 0.2 s): the line is said at most every IDLE_LINE_EVERY (5 s)."""
    origins = [site.add(f"down{i}").robots(Reply(status=503, delay=0.02 * i)) for i in range(60)]
    settings = {"REP_PAUSE_INITIAL": 0.3, "REP_PAUSE_MAX": 0.3, TUNE: {"policy.pause_max_tries": 2}}
    with caplog.at_level(logging.INFO, logger="scrapy_rep"):
        result = await crawl([o.url_for("/p") for o in origins], settings)
    assert result.stat("rep/dropped/policy-unresolved") == 60
    idle = [r for r in caplog.records if "the spider is idle but for" in r.getMessage()]
    # at most one line per IDLE_LINE_EVERY of the crawl, however long a loaded machine takes
    bound = 1 + math.ceil(result.stat("elapsed_time_seconds") / IDLE_LINE_EVERY)
    assert 1 <= len(idle) <= bound, [r.getMessage() for r in idle]


@pytest_twisted.ensureDeferred
async def test_a_default_crawl_logs_no_disabled_component_warning(
    site: FakeSite, caplog: pytest.LogCaptureFixture
) -> None:
    """Without REP_USES the media uses middleware is not installed, so Scrapy has nothing
    to warn about: a default crawl's log has no 'Disabled ...' WARNING of scrapy-rep's."""
    origin = site.add("plain").robots(Reply(body=ALLOW_ALL))
    with caplog.at_level(logging.INFO):
        result = await crawl([origin.url_for("/a")])
    assert len(result.downloaded) == 1
    disabled = [
        r.getMessage()
        for r in caplog.records
        if r.levelno >= logging.WARNING and r.getMessage().startswith("Disabled")
    ]
    assert disabled == []
    assert result.crawler is not None
    installed = [type(m).__name__ for m in result.crawler.engine.downloader.middleware.middlewares]
    assert "MediaUsesMiddleware" not in installed


@pytest_twisted.ensureDeferred
async def test_a_crawl_declaring_a_use_installs_the_media_uses_middleware(site: FakeSite) -> None:
    origin = site.add("uses").robots(Reply(body=ALLOW_ALL))
    result = await crawl([origin.url_for("/a")], {"REP_USES": ["train-ai"]})
    assert result.crawler is not None
    installed = [type(m).__name__ for m in result.crawler.engine.downloader.middleware.middlewares]
    assert "MediaUsesMiddleware" in installed
