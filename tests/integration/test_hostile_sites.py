"""Hostile sites, bounded: each attack of issue 36 as a real crawl of loopback origins.

Every bound is asserted from outside: what the site's server was asked for,
the sizes and longest lines of the files the crawl writes (audit log, crawl
log), what a CLI command prints, and the peak RSS of a child crawl where
memory is the claim. Each crawl is small and bounded in time.
"""

from __future__ import annotations

import json
from typing import Any

import pytest_twisted

from tests.support.crawl import crawl
from tests.support.fakesite import FakeSite, Reply

TDMREP = "/.well-known/tdmrep.json"


def padded_robots(size: int, last: str) -> bytes:
    """A legal robots.txt of about ``size`` bytes: one group, comments, then ``last``."""
    head = b"User-agent: *\nAllow: /\n"
    line = b"# " + b"p" * 76 + b"\n"
    body = head + line * ((size - len(head)) // len(line))
    return body + last.encode() + b"\n"


def large_tdmrep(size: int) -> bytes:
    """A legal tdmrep.json of about ``size`` bytes (nothing reserved where the test looks)."""
    entry = {"location": "/nothing-here/" + "n" * 60, "tdm-reservation": 1}
    one = len(json.dumps(entry)) + 2
    return json.dumps([entry] * (size // one)).encode()


# -- the 500 KiB cap counts its own download's bytes ----------------------------------------------


@pytest_twisted.ensureDeferred
async def test_the_cap_counts_only_its_own_download_when_tdmrep_json_downloads_too(
    site: FakeSite,
) -> None:
    """A 459 KB robots.txt ending in ``Disallow: /private`` is read whole beside a large
    tdmrep.json (before: the two fetchers each counted every chunk, the cap fired at half,
    the last line was lost and /private was downloaded)."""
    robots = padded_robots(459_000, "Disallow: /private")
    assert 450_000 < len(robots) < 500 * 1024
    origin = site.add("big").robots(Reply(body=robots))
    # the tdmrep.json answers late, so its fetcher is listening while robots.txt arrives
    origin.page(TDMREP, Reply(body=large_tdmrep(450_000), delay=1.0))
    settings: dict[str, Any] = {"REP_USES": ["train-ai"]}
    result = await crawl([origin.url_for("/private"), origin.url_for("/open")], settings)
    assert origin.hits(TDMREP) == 1
    assert origin.hits("/open") == 1
    assert origin.hits("/private") == 0, "the last rule of a 459 KB robots.txt was lost"
    assert result.dropped[origin.url_for("/private")] == "disallow-rule"
    assert not result.stat("rep/fetch/truncated")
