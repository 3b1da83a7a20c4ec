"""The robots.txt guard for pages rendered with scrapy-playwright.

Real Chromium, real loopback origins (``tests/support/browsersite.py``), real Scrapy
crawls: what the guard does is judged by what the servers saw. Each test that
shows the guard stopping something has a twin, or an assertion, showing the
same page without the guard does ask for it. The routing itself, on a fake
Playwright page: ``tests/test_browser_guard.py``.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any, ClassVar

import pytest
import pytest_twisted
import scrapy
from scrapy_playwright.page import PageMethod

from scrapy_rep.cli.explain import explain
from scrapy_rep.crawl import graph
from scrapy_rep.integrations import browser
from tests.support.audit import of, records
from tests.support.browsersite import (
    ALLOWED,
    DISALLOWED,
    PAGE,
    build,
    chromium_for,
    hits,
    page_request,
)
from tests.support.crawl import CrawlResult, ListSpider, crawl
from tests.support.fakesite import FakeSite, Reply

#: scrapy-playwright's settings, connected to the module's one Chromium (filled by chromium())
BROWSER: dict[str, Any] = {}


chromium = chromium_for(BROWSER)


def rep_stats(result: CrawlResult) -> dict[str, Any]:
    return {k: v for k, v in result.stats.items() if k.startswith("rep/browser/")}


def guards(result: CrawlResult) -> list[Any]:
    assert result.crawler is not None and result.crawler.engine is not None
    manager = result.crawler.engine.downloader.middleware
    return [mw for mw in manager.middlewares if isinstance(mw, browser.BrowserGuard)]


@pytest_twisted.ensureDeferred
async def test_guard_aborts_every_disallowed_subrequest(site: FakeSite) -> None:
    origins = build(site)
    url = origins["main"].url_for(PAGE)
    result = await crawl([page_request(url)], BROWSER)
    assert result.downloaded == [url], result.errors  # the page's callback ran
    assert hits(site, DISALLOWED) == dict.fromkeys(DISALLOWED, 0)
    loaded = hits(site, ALLOWED)
    assert all(loaded.values()), loaded
    # fetched by the guard with the headers scrapy-playwright chose (Scrapy's User-Agent)
    (image,) = origins["main"].requests("/img/ok.png")
    headers = {name.lower(): value for name, value in image.headers.items()}
    assert headers["user-agent"].startswith("testbot/1.0")
    # an allowed redirect is fetched once, by the guard, not again by the browser
    assert origins["cdn"].hits("/img/after-redirect.png") == 1
    stats = rep_stats(result)
    assert stats["rep/browser/aborted/disallow-rule"] == 10
    assert stats["rep/browser/aborted/origin-paused"] == 1  # the 503 origin's iframe
    assert stats["rep/browser/allowed"] >= len(ALLOWED)
    assert origins["down"].hits("/robots.txt") == 1  # asked for by the guard, once
    # the page's own navigation is the middleware's: one judgement, one download
    assert result.stat("rep/judgements") == 1 and result.stat("rep/downloaded") == 1


@pytest_twisted.ensureDeferred
async def test_without_the_guard_the_browser_fetches_what_robots_txt_disallows(
    site: FakeSite,
) -> None:
    origins = build(site)
    url = origins["main"].url_for(PAGE)
    result = await crawl([page_request(url)], {**BROWSER, "REP_BROWSER_GUARD": False})
    assert result.downloaded == [url]
    assert guards(result) == []
    seen = hits(site, DISALLOWED)
    assert all(seen.values()), seen  # every trap is sprung: the guarded test can fail
    assert origins["down"].hits("/robots.txt") == 0
    assert rep_stats(result) == {}
    # and nothing changes for the robots.txt fetches: they share the host's download slot
    service = graph.running(result.crawler)
    assert service is not None
    assert service.fetcher.own_slot is False


@pytest_twisted.ensureDeferred
async def test_dont_obey_robotstxt_on_the_page_exempts_its_subrequests(site: FakeSite) -> None:
    origins = build(site)
    url = origins["main"].url_for(PAGE)
    result = await crawl([page_request(url, dont_obey_robotstxt=True)], BROWSER)
    assert result.downloaded == [url]
    assert guards(result)  # the guard is on; the page opted out
    assert all(hits(site, DISALLOWED).values())
    assert rep_stats(result) == {}


@pytest_twisted.ensureDeferred
async def test_page_navigation_redirect_to_a_disallowed_url_drops_the_page(
    site: FakeSite,
) -> None:
    main = site.add("main").robots(Reply(body=b"User-agent: *\nDisallow: /private/\n"))
    main.page("/moved", Reply(status=302, redirect_to="/private/landing"))
    main.page("/moved-ok", Reply(status=302, redirect_to="/landing.html"))
    bad, good = main.url_for("/moved"), main.url_for("/moved-ok")
    result = await crawl([page_request(bad, wait=False), page_request(good, wait=False)], BROWSER)
    assert main.hits("/private/landing") == 0
    assert result.dropped == {bad: "disallow-rule"}
    assert result.decisions[bad]["url"] == main.url_for("/private/landing")
    assert result.downloaded == [good]
    assert main.hits("/landing.html") == 1  # followed by the guard, fulfilled once
    assert result.stat("rep/dropped/disallow-rule") == 1


@pytest_twisted.ensureDeferred
async def test_collection_hook_sees_subrequests_and_can_keep_a_render_to_one_origin(
    site: FakeSite,
) -> None:
    origins = build(site)
    main = origins["main"].url
    seen: list[dict[str, Any]] = []

    def only_main(request: scrapy.Request, spider: Any) -> str:
        sub = request.meta.get("rep_subrequest")
        if sub is None:
            return "approved"  # the page itself
        seen.append(sub)
        return "approved" if request.url.startswith(main) else "rejected"

    url = origins["main"].url_for(PAGE)
    result = await crawl(
        [page_request(url, wait=False)],
        {**BROWSER, "REP_COLLECTION_POLICY": only_main},
    )
    assert result.downloaded == [url]
    assert origins["main"].hits("/img/ok.png") == 1
    for name in ("cdn", "static"):
        assert [p for p in origins[name].hit_paths() if p != "/robots.txt"] == []
    assert rep_stats(result)["rep/browser/aborted/collection-rejected"] >= 3
    assert {s["page"] for s in seen} == {url}
    assert {"image", "script", "stylesheet"} <= {s["resource_type"] for s in seen}


@pytest_twisted.ensureDeferred
async def test_guard_fails_closed_when_it_cannot_judge(
    site: FakeSite, monkeypatch: pytest.MonkeyPatch
) -> None:
    origins = build(site)
    monkeypatch.setattr(browser, "JUDGE_SLACK", 0.3)  # give up judging after 0.5 s

    async def stuck(request: scrapy.Request, spider: Any) -> str:
        if request.meta.get("rep_subrequest"):
            await asyncio.sleep(30)  # a scope check that never answers in time
        return "approved"

    url = origins["main"].url_for(PAGE)
    result = await crawl(
        [page_request(url, wait=False)],
        {**BROWSER, "REP_COLLECTION_POLICY": stuck, "REP_PENDING_WAIT": 0.2},
    )
    assert result.downloaded == [url]
    assert hits(site, DISALLOWED) == dict.fromkeys(DISALLOWED, 0)
    assert origins["main"].hits("/img/ok.png") == 0  # allowed by robots.txt, yet not judged
    assert rep_stats(result).get("rep/browser/aborted/guard-error", 0) >= 5
    assert "rep/browser/allowed" not in rep_stats(result)


@pytest_twisted.ensureDeferred
async def test_robots_txt_of_a_subrequest_origin_does_not_wait_behind_the_render(
    site: FakeSite,
) -> None:
    """One download slot per host (all origins here are 127.0.0.1): the render holds it."""
    main = site.add("main")
    cdn = site.add("cdn").robots(Reply(body=b"User-agent: *\nDisallow: /private/\n"))
    main.page("/p", Reply(body=f'<img src="{cdn.url}/img/x.png">'.encode()))
    result = await crawl(
        [page_request(main.url_for("/p"), wait=False)],
        {**BROWSER, "CONCURRENT_REQUESTS_PER_DOMAIN": 1},
    )
    assert result.downloaded == [main.url_for("/p")]
    assert cdn.hits("/img/x.png") == 1
    assert rep_stats(result) == {"rep/browser/allowed": 1}


async def _user_init(page: Any, request: scrapy.Request) -> None:
    """A user's page-init callback with a route of its own: it continues the redirects."""
    request.meta["user_init_ran"] = True

    async def passthrough(route: Any) -> None:
        if "/go/" in route.request.url:
            await route.continue_()  # straight to the network, past scrapy-playwright's route
        else:
            await route.fallback()

    await page.route("**", passthrough)


def _user_abort(request: Any) -> bool:
    return bool(request.url.endswith("/img/ok.png"))


class MetaSpider(ListSpider):
    metas: ClassVar[list[dict[str, Any]]] = []

    def parse(self, response: scrapy.http.Response) -> Any:
        self.metas.append(dict(response.meta))
        return super().parse(response)


@pytest_twisted.ensureDeferred
async def test_user_page_init_callback_and_abort_request_are_chained(site: FakeSite) -> None:
    origins = build(site)
    url = origins["main"].url_for(PAGE)
    request = page_request(url, wait=False, playwright_page_init_callback=_user_init)
    MetaSpider.metas = []
    result = await crawl(
        [request],
        {**BROWSER, "PLAYWRIGHT_ABORT_REQUEST": _user_abort},
        spider=MetaSpider,
    )
    assert result.downloaded == [url]
    (meta,) = MetaSpider.metas
    assert meta["user_init_ran"] is True
    assert meta["playwright_page_init_callback"] is _user_init  # given back as it was
    assert not any(key.startswith("_rep_") for key in meta)
    assert origins["main"].hits("/img/ok.png") == 0  # the user's abort hook still aborts
    assert origins["cdn"].hits("/img/cdn-ok.png") == 1
    # the user's route was registered after the guard's, yet runs after it, and its
    # continue_() follows redirects hop by hop like scrapy-playwright's
    assert hits(site, DISALLOWED) == dict.fromkeys(DISALLOWED, 0)
    assert origins["main"].hits("/go/redirect") == 1
    assert origins["cdn"].hits("/img/after-redirect.png") == 1


SERVICE_WORKER_PAGE = b"""<!doctype html><script>
window.__done = false;
navigator.serviceWorker.register("/sw.js")
  .then(function () { return navigator.serviceWorker.ready; })
  .then(function () { return new Promise(function (r) { setTimeout(r, 500); }); })
  .then(function () { window.__done = "registered"; },
        function () { window.__done = "blocked"; });
setTimeout(function () { if (window.__done === false) window.__done = "never"; }, 3000);
</script>"""
SERVICE_WORKER = b"""
self.addEventListener("install", function (event) {
  event.waitUntil(fetch("/private/from-sw"));
});
"""


@pytest.mark.parametrize("guard", [True, False])
@pytest_twisted.ensureDeferred
async def test_service_workers_are_blocked(site: FakeSite, guard: bool) -> None:
    main = site.add("main").robots(Reply(body=b"User-agent: *\nDisallow: /private/\n"))
    main.page("/sw-page", Reply(body=SERVICE_WORKER_PAGE))
    main.page("/sw.js", Reply(body=SERVICE_WORKER, headers={"Content-Type": "text/javascript"}))
    wait = PageMethod("wait_for_function", "window.__done !== false", timeout=10_000)
    request = scrapy.Request(
        main.url_for("/sw-page"), meta={"playwright": True, "playwright_page_methods": [wait]}
    )
    result = await crawl([request], {**BROWSER, "REP_BROWSER_GUARD": guard})
    assert result.downloaded == [main.url_for("/sw-page")]
    if guard:
        assert main.hits("/sw.js") == 0 and main.hits("/private/from-sw") == 0
    else:  # what the guard prevents: a worker's requests, which no page route sees
        assert main.hits("/private/from-sw") == 1


@pytest_twisted.ensureDeferred
async def test_audit_log_and_explain_name_the_page_and_resource(
    site: FakeSite, tmp_path: Path
) -> None:
    origins = build(site)
    url = origins["main"].url_for(PAGE)
    log = tmp_path / "audit.jsonl"
    result = await crawl([page_request(url)], {**BROWSER, "REP_DECISION_LOG": log})
    assert result.downloaded == [url]
    found = records(log)
    subs = of(found, "subrequest")
    font = origins["static"].url_for("/private/font.woff")
    (record,) = [r for r in subs if r["url"] == font]
    assert record["page"] == url and record["resource_type"] == "font"
    assert record["action"] == "drop" and record["reason"] == "disallow-rule"
    assert record["matched_rule"] == "disallow: /private/" and record["hop"] == 0
    hop = next(r for r in subs if r["url"].endswith("/private/redirected.png"))
    assert hop["hop"] == 1 and hop["request_url"] == origins["main"].url_for("/go/redirect")
    origin_rows = {r["origin"]: r for r in of(found, "origin")}
    assert origin_rows[origins["static"].url]["browser_aborted"] == {"disallow-rule": 2}
    action, lines = explain(str(log), font)
    assert action == "drop"
    assert any("browser" in line and "font of" in line for line in lines), lines


WEBSOCKET_PAGE = """<!doctype html><script>
window.__done = false;
var left = 2;
["/ws-ok", "/private/ws"].forEach(function (path) {
  var ws = new WebSocket("ws://" + location.host + path);
  ws.onclose = ws.onerror = function () { if (--left === 0) window.__done = true; };
});
setTimeout(function () { window.__done = true; }, 3000);
</script>"""


@pytest.mark.parametrize("guard", [True, False])
@pytest_twisted.ensureDeferred
async def test_websockets_are_judged_by_origin_and_path(site: FakeSite, guard: bool) -> None:
    """The handshake is an HTTP GET: the server sees it even though it never upgrades."""
    main = site.add("main").robots(Reply(body=b"User-agent: *\nDisallow: /private/\n"))
    main.page("/ws-page", Reply(body=WEBSOCKET_PAGE.encode()))
    result = await crawl(
        [page_request(main.url_for("/ws-page"))],
        {**BROWSER, "REP_BROWSER_GUARD": guard},
    )
    assert result.downloaded == [main.url_for("/ws-page")]
    assert main.wait_for_hits(1, "/ws-ok", timeout=2)
    assert main.hits("/private/ws") == (0 if guard else 1)
    if guard:
        assert rep_stats(result) == {
            "rep/browser/allowed": 1,
            "rep/browser/aborted/disallow-rule": 1,
        }


POPUP_PAGE = """<!doctype html><script>
window.open("/private/popup.html");
window.open("/popup-ok.html");
window.__done = true;
</script>"""


@pytest.mark.parametrize("guard", [True, False])
@pytest_twisted.ensureDeferred
async def test_popups_are_judged_by_the_context_route(site: FakeSite, guard: bool) -> None:
    """A page scrapy-playwright did not open has no page route: the context's judges it."""
    main = site.add("main").robots(Reply(body=b"User-agent: *\nDisallow: /private/\n"))
    main.page("/opener", Reply(body=POPUP_PAGE.encode()))
    main.page("/popup-ok.html", Reply(body=b'<img src="/private/in-popup.png">'))
    wait = PageMethod("wait_for_timeout", 1500)  # the popups load meanwhile
    request = scrapy.Request(
        main.url_for("/opener"), meta={"playwright": True, "playwright_page_methods": [wait]}
    )
    result = await crawl([request], {**BROWSER, "REP_BROWSER_GUARD": guard})
    assert result.downloaded == [main.url_for("/opener")]
    assert main.wait_for_hits(1, "/popup-ok.html", timeout=2)
    if guard:
        assert main.hits("/private/popup.html") == 0 and main.hits("/private/in-popup.png") == 0
        assert rep_stats(result)["rep/browser/aborted/disallow-rule"] == 2
    else:
        assert main.wait_for_hits(1, "/private/in-popup.png", timeout=2)
        assert main.hits("/private/popup.html") == 1


@pytest_twisted.ensureDeferred
async def test_subrequest_waits_at_most_pending_wait_for_a_new_origins_robots_txt(
    site: FakeSite,
) -> None:
    main = site.add("main")
    slow = site.add("slow").robots(Reply(body=b"User-agent: *\nAllow: /\n", delay=2.0))
    main.page("/p", Reply(body=f'<img src="{slow.url}/img/x.png">'.encode()))
    result = await crawl(
        [page_request(main.url_for("/p"), wait=False)],
        {**BROWSER, "REP_PENDING_WAIT": 0.3},
    )
    assert result.downloaded == [main.url_for("/p")]
    assert slow.hits("/robots.txt") == 1  # asked for at once, by the guard
    assert slow.hits("/img/x.png") == 0  # allowed, but its robots.txt came too late
    assert rep_stats(result) == {"rep/browser/aborted/origin-pending": 1}


@pytest.mark.parametrize("action", ["drop", "record"])
@pytest_twisted.ensureDeferred
async def test_subrequests_carry_the_pages_own_use_answer(
    site: FakeSite, tmp_path: Path, action: str
) -> None:
    main = site.add("main").robots(Reply(body=b"User-agent: *\nAllow: /\n"))
    png = Reply(body=b"\x89PNG\r\n\x1a\n", headers={"Content-Type": "image/png"})
    said = {
        "refusing": ("Content-Usage", "train-ai=n"),
        "signal": ("Content-Signal", "ai-train=no"),
    }
    for name in ("refusing", "signal", "silent"):
        main.page(f"/img/{name}.png", png)
        html = f'<html><head></head><body><img src="/img/{name}.png"></body></html>'
        headers = {"Content-Type": "text/html; charset=utf-8"}
        if name in said:  # said in the response only: the page itself is fetched
            header, value = said[name]
            headers[header] = value
        main.page(f"/{name}.html", Reply(body=html.encode(), headers=headers))
    log = tmp_path / "audit.jsonl"
    urls = [main.url_for(f"/{name}.html") for name in ("refusing", "signal", "silent")]
    waits = [PageMethod("wait_for_load_state", "load")]
    result = await crawl(
        [
            scrapy.Request(u, meta={"playwright": True, "playwright_page_methods": waits})
            for u in urls
        ],
        {
            **BROWSER,
            "REP_USES": ["train-ai"],
            "REP_USE_ACTION": action,
            "REP_DECISION_LOG": log,
        },
    )
    assert sorted(result.downloaded) == sorted(urls)
    assert main.hits("/img/silent.png") == 1
    subs = {
        r["url"]: r
        for r in map(json.loads, log.read_text().splitlines())
        if r["type"] == "subrequest"
    }
    refusing = subs[main.url_for("/img/refusing.png")]
    assert refusing["page_use"]["train-ai"] == {
        "answer": "refused",
        "source": "header Content-Usage: train-ai=n",
    }
    signal = subs[main.url_for("/img/signal.png")]
    assert signal["page_use"]["train-ai"] == {
        "answer": "refused",
        "source": "header Content-Signal: ai-train=no",
    }
    assert subs[main.url_for("/img/silent.png")]["page_use"]["train-ai"]["answer"] == "unknown"
    if action == "drop":  # part of a page whose items are dropped: not collected either
        assert main.hits("/img/refusing.png") == main.hits("/img/signal.png") == 0
        assert refusing["reason"] == signal["reason"] == "use-refused"
        assert rep_stats(result)["rep/browser/aborted/use-refused"] == 2
    else:
        assert main.hits("/img/refusing.png") == main.hits("/img/signal.png") == 1
        assert refusing["action"] == signal["action"] == "download"
