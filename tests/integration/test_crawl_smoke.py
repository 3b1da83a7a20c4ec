from __future__ import annotations

import pytest_twisted

from tests.support.crawl import crawl
from tests.support.fakesite import FakeSite, Reply


@pytest_twisted.ensureDeferred
async def test_smoke(site: FakeSite) -> None:
    a = site.add("a").robots(Reply(body=b"User-agent: *\nDisallow: /private\n"))
    result = await crawl([a.url_for("/"), a.url_for("/private/x"), a.url_for("/ok")])
    print(result)
    assert sorted(result.downloaded) == sorted([a.url_for("/"), a.url_for("/ok")])
    assert result.dropped == {a.url_for("/private/x"): "disallow-rule"}
    assert a.hits("/robots.txt") == 1
