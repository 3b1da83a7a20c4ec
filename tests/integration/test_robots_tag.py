"""The ``Robots-Tag`` header (draft-illyes-repext) in real crawls, beside ``X-Robots-Tag``."""

from __future__ import annotations

import pytest
import pytest_twisted

from tests.support.fakesite import FakeSite
from tests.support.pages import crawl_pages, items, page, paths

MYBOT = {"REP_PRODUCT_TOKEN": "mybot", "USER_AGENT": "mybot/1.0 (+http://127.0.0.1/)"}


@pytest.mark.parametrize(
    ("value", "followed", "noindex"),
    [
        ("mybot: nofollow", False, False),  # X-Robots-Tag's syntax, sent as Robots-Tag
        ("otherbot: noindex", True, False),
        ("mybot;nofollow", False, False),  # the draft's List
        ("otherbot;noindex;nofollow", True, False),
        ("*;noindex, mybot;nofollow", False, True),  # * and the token add up
    ],
)
@pytest_twisted.ensureDeferred
async def test_robots_tag_for_the_token_stops_links_and_for_another_does_not(
    site: FakeSite, value: str, followed: bool, noindex: bool
) -> None:
    a = site.add("a")
    a.page("/", page(links=("/child",), headers={"Robots-Tag": value}))
    result = await crawl_pages(a, MYBOT)
    assert a.hits("/child") == (1 if followed else 0)
    assert paths(result) == (["/", "/child"] if followed else ["/"])
    assert result.stat("rep/dropped/page-nofollow") == (0 if followed else 1)
    assert (items(result) == []) is noindex  # noindex drops the page's items
    assert result.stat("rep/page/noindex") == (1 if noindex else 0)
