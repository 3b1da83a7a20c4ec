"""Pushback end to end: real Scrapy crawls (RetryMiddleware on, at Scrapy's defaults) against
a loopback site that answers 429 + Retry-After, 503 windows and a wall of 403s; what the
crawler did is read from the server's own request log."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import pytest_twisted

from tests.support.crawl import CrawlResult, crawl
from tests.support.pushback_site import (
    Entry,
    PushbackSite,
    max_in_flight_after,
    page_paths,
    pages,
)

#: Scrapy's defaults for retries (BASE_SETTINGS switches them off for other tests)
RETRY_ON = {"RETRY_ENABLED": True, "REP_PAGE_BACKOFF_START": 1.0}
#: a request sent while the crawler had not yet heard its origin's 429 reaches the server
#: at most this long after it (loopback): later ones were sent during the pause
IN_FLIGHT_MARGIN = 0.25


@pytest.fixture
def pbsite() -> Iterator[PushbackSite]:
    with PushbackSite() as s:
        yield s


def served(entries: list[Entry]) -> set[str]:
    return {e.path for e in pages(entries) if e.status == 200}


def pause_windows(
    entries: list[Entry], seconds: float, status: int = 429
) -> list[tuple[float, float]]:
    """The windows in which the crawler must have sent nothing: from each refusal (plus the
    in-flight margin) to the end of the pause it asked for."""
    return [(e.at + IN_FLIGHT_MARGIN, e.at + seconds) for e in pages(entries) if e.status == status]


def sent_during(entries: list[Entry], windows: list[tuple[float, float]]) -> list[Entry]:
    return [e for e in pages(entries) if any(a <= e.at < b for a, b in windows)]


def no_retry_gave_up(result: CrawlResult) -> None:
    assert not result.errors, result.errors
    assert result.stat("retry/max_reached") == 0
    assert result.stat("retry/reason_count/429 Unknown Status") == 0


@pytest_twisted.ensureDeferred
async def test_429_pauses_the_origin_holds_the_refused_page_and_resumes_with_one_in_flight(
    pbsite: PushbackSite,
) -> None:
    a = pbsite.add("a", rate=4.0, burst=3, retry_after=2, pages=16, latency=0.3)
    result = await crawl([a.url_for("/")], {**RETRY_ON}, follow=True)
    log = a.log()
    refused = [e for e in pages(log) if e.status == 429]
    assert refused, "the site never pushed back: the test proves nothing"
    # 0 lost: every page was fetched with a 200 in the end, none given up by RetryMiddleware
    assert served(log) == set(page_paths(16))
    no_retry_gave_up(result)
    assert result.stat("retry/count") == 0  # the 429s were never RetryMiddleware's
    assert result.stat("rep/pushback/refused/429") == len(refused)
    assert result.stat("rep/pushback/pauses/rate-limited") >= 1
    # nothing sent during a pause the site asked for
    assert sent_during(log, pause_windows(log, 2.0)) == []
    # one request in flight when each pause ends (the next waits for its healthy answer)
    for e in refused:
        after = [x for x in pages(log) if x.at >= e.at + 2.0]
        if after:
            assert max_in_flight_after(log, after[0].at, 0.25) == 1, after[:3]
