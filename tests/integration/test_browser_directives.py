"""A rendered page's directives: its initial HTML's and its final DOM's ``<meta name="robots">``.

Real Chromium (scrapy-playwright, the browser guard), a real crawl: a script
that removes ``nofollow`` from the page before the callback sees it does not
undo what the page said when it was fetched.
"""

from __future__ import annotations

from typing import Any

import pytest_twisted

from tests.support.browsersite import chromium_for, page_request
from tests.support.crawl import crawl
from tests.support.fakesite import FakeSite, Reply

BROWSER: dict[str, Any] = {}

#: says nofollow in its HTML, then a script removes the tag before the DOM is read
SAYS_THEN_HIDES = b"""<html><head><title>t</title>
<meta name="robots" content="nofollow">
<script>
document.addEventListener("DOMContentLoaded", () => {
  document.querySelector('meta[name="robots"]').remove();
  window.__done = true;
});
</script></head><body><a href="/child">child</a></body></html>"""

#: says nothing in its HTML; a script adds noindex to the DOM
ADDS_LATER = b"""<html><head><title>t</title>
<script>
document.addEventListener("DOMContentLoaded", () => {
  const tag = document.createElement("meta");
  tag.name = "robots"; tag.content = "noindex";
  document.head.appendChild(tag);
  window.__done = true;
});
</script></head><body><a href="/child">child</a></body></html>"""


chromium = chromium_for(BROWSER)


@pytest_twisted.ensureDeferred
async def test_the_initial_htmls_nofollow_holds_after_a_script_removes_it(
    site: FakeSite,
) -> None:
    a = site.add("a").robots(Reply(body=b"User-agent: *\nDisallow: /private\n"))
    a.page("/page", Reply(body=SAYS_THEN_HIDES, headers={"Content-Type": "text/html"}))
    result = await crawl([page_request(a.url_for("/page"))], BROWSER, follow=True)
    assert result.downloaded == [a.url_for("/page")], result.errors
    assert a.hits("/child") == 0
    assert result.stat("rep/dropped/page-nofollow") == 1

    # the twin: without the guard (no initial HTML kept) the final DOM alone lets it through
    b = site.add("b").robots(Reply(body=b"User-agent: *\nDisallow: /private\n"))
    b.page("/page", Reply(body=SAYS_THEN_HIDES, headers={"Content-Type": "text/html"}))
    unguarded = {**BROWSER, "REP_BROWSER_GUARD": False}
    result = await crawl([page_request(b.url_for("/page"))], unguarded, follow=True)
    assert b.hits("/child") == 1


@pytest_twisted.ensureDeferred
async def test_what_the_final_dom_adds_counts_too(site: FakeSite) -> None:
    a = site.add("a").robots(Reply(body=b"User-agent: *\nDisallow: /private\n"))
    a.page("/page", Reply(body=ADDS_LATER, headers={"Content-Type": "text/html"}))
    result = await crawl([page_request(a.url_for("/page"))], BROWSER, follow=True)
    assert result.downloaded[0] == a.url_for("/page"), result.errors
    assert result.stat("rep/page/noindex") == 1
    assert a.hits("/child") == 1
