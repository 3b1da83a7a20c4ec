"""The browser guard in-process: a fake Playwright page and route, the rig's crawler.

Routing (abort, fall back, carry out), redirect following hop by hop, which
request is the page's own navigation, popups through the context's route and
WebSockets, all on ``tests/support/playwright_fake.py``; the crawler, its
RobotsService and the ManualClock are the rig's. That the hooks are the ones
Chromium calls is proven by ``tests/integration/test_browser_guard.py``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
import pytest_twisted
import scrapy
from scrapy import signals
from scrapy.settings import Settings
from scrapy.utils.misc import load_object

from scrapy_rep.addon import Addon
from scrapy_rep.components.robots import RobotsMiddleware
from scrapy_rep.crawl import meta as M
from scrapy_rep.crawl.exceptions import RepIgnoreRequest
from scrapy_rep.crawl.telemetry import Telemetry
from scrapy_rep.integrations.browser import ABORT_CODE, BrowserGuard, page_init
from scrapy_rep.integrations.wiring import HANDLER
from tests.support.playwright_fake import (
    FakeContext,
    FakeNetwork,
    FakePage,
    FakeRequest,
    FakeRoute,
    Served,
)
from tests.support.rig import Rig, Stall, in_loop, rig_for

PLAYWRIGHT = {"DOWNLOAD_HANDLERS": {"http": HANDLER, "https": HANDLER}}
A = "http://a.example:80"
B = "http://b.example:80"
RULES = (200, {}, b"User-agent: *\nDisallow: /private\n")
PAGE = "http://a.example/page"


@pytest.fixture
def rig() -> Iterator[Rig]:
    rig = rig_for({A: RULES, B: RULES}, **PLAYWRIGHT)
    yield rig
    rig.crawler.signals.send_catch_log(signals.spider_closed, spider=rig.crawler.spider)
    rig.close()


def stats(rig: Rig) -> dict[str, Any]:
    Telemetry.of(rig.crawler).flush()
    assert rig.crawler.stats is not None
    found = rig.crawler.stats.get_stats()
    return {k: v for k, v in found.items() if k.startswith("rep/browser/")}


class Render:
    """A page scrapy-playwright opens for ``request``, guarded as the middleware sets it up."""

    def __init__(self, rig: Rig, network: FakeNetwork, request: scrapy.Request) -> None:
        self.rig = rig
        self.network = network
        self.request = request
        self.context = FakeContext(network)
        self.page = FakePage(self.context)

    @classmethod
    async def open(
        cls,
        rig: Rig,
        served: dict[str, Served] | None = None,
        *,
        service: bool = True,
        **meta: Any,
    ) -> Render:
        if service:
            RobotsMiddleware(rig.crawler)
        guard = BrowserGuard(rig.crawler)
        request = scrapy.Request(PAGE, meta={"playwright": True, **meta})
        guard.process_request(request)
        render = cls(rig, FakeNetwork(served), request)
        await render.page.route("**", scrapy_playwrights_route)  # its own, made with the page
        await page_init(render.page, request)  # then the page-init callback it calls
        return render

    async def load(self, url: str, **kw: Any) -> FakeRoute:
        return await self.page.load(FakeRequest(url, **kw))


async def scrapy_playwrights_route(route: FakeRoute, pw_request: FakeRequest) -> None:
    """scrapy-playwright's route on every page it opens: its headers, then ``continue_``."""
    await route.continue_()


# -- sub-requests: abort, or carry out -----------------------------------------------------------


@pytest_twisted.ensureDeferred
async def test_a_disallowed_subrequest_is_aborted_and_an_allowed_one_fetched(rig: Rig) -> None:
    async def scenario() -> None:
        render = await Render.open(rig, {"http://a.example/ok.png": Served(200, body=b"png")})
        refused = await render.load("http://a.example/private/x.png")
        assert (refused.outcome, refused.abort_code) == ("aborted", ABORT_CODE)
        allowed = await render.load("http://a.example/ok.png")
        assert allowed.outcome == "fulfilled" and allowed.response is not None
        assert allowed.response.status == 200
        assert render.network.fetched == [("GET", "http://a.example/ok.png")]  # one, not two
        assert stats(rig) == {"rep/browser/allowed": 1, "rep/browser/aborted/disallow-rule": 1}

    await in_loop(scenario())


@pytest_twisted.ensureDeferred
async def test_data_urls_fall_back_to_the_routes_before_the_guard(rig: Rig) -> None:
    async def scenario() -> None:
        render = await Render.open(rig)
        route = await render.load("data:image/png;base64,AAAA")
        assert route.outcome == "continued"  # no route after ours: the browser's own
        assert render.network.fetched == [] and stats(rig) == {}

    await in_loop(scenario())


# -- redirects, hop by hop ------------------------------------------------------------------------


@pytest_twisted.ensureDeferred
async def test_each_location_is_judged_before_it_is_fetched(rig: Rig) -> None:
    served = {
        "http://a.example/img": Served(301, {"Location": "http://b.example/pic.png"}),
        "http://b.example/pic.png": Served(302, {"Location": "/private/pic.png"}),
        "http://a.example/ok": Served(302, {"Location": "http://b.example/fine.png"}),
        "http://b.example/fine.png": Served(200, body=b"png"),
    }

    async def scenario() -> None:
        render = await Render.open(rig, served)
        stopped = await render.load("http://a.example/img")
        assert stopped.outcome == "aborted"
        followed = await render.load("http://a.example/ok")
        assert followed.outcome == "fulfilled" and followed.response is not None
        assert followed.response.url == "http://b.example/fine.png"
        assert render.network.fetched == [
            ("GET", "http://a.example/img"),
            ("GET", "http://b.example/pic.png"),  # b's /private/pic.png: judged, never fetched
            ("GET", "http://a.example/ok"),
            ("GET", "http://b.example/fine.png"),
        ]
        assert stats(rig)["rep/browser/aborted/disallow-rule"] == 1

    await in_loop(scenario())


@pytest_twisted.ensureDeferred
async def test_a_303_and_a_posts_301_go_on_as_get(rig: Rig) -> None:
    served = {
        "http://a.example/form": Served(303, {"Location": "/done"}),
        "http://a.example/moved": Served(301, {"Location": "/there"}),
        "http://a.example/kept": Served(307, {"Location": "/there"}),
    }

    async def scenario() -> None:
        render = await Render.open(rig, served)
        for path in ("/form", "/moved", "/kept"):
            route = await render.load(f"http://a.example{path}", method="POST")
            assert route.outcome == "fulfilled"
        assert render.network.fetched == [
            ("POST", "http://a.example/form"),
            ("GET", "http://a.example/done"),
            ("POST", "http://a.example/moved"),
            ("GET", "http://a.example/there"),
            ("POST", "http://a.example/kept"),
            ("POST", "http://a.example/there"),  # 307 keeps the method
        ]

    await in_loop(scenario())


@pytest_twisted.ensureDeferred
async def test_past_rep_max_redirects_the_last_redirect_is_the_answer(rig: Rig) -> None:
    loop = {f"http://a.example/r{n}": Served(302, {"Location": f"/r{n + 1}"}) for n in range(10)}

    async def scenario() -> None:
        render = await Render.open(rig, loop)
        route = await render.load("http://a.example/r0")
        assert route.outcome == "fulfilled" and route.response is not None
        assert route.response.status == 302
        assert len(render.network.fetched) == 6  # the first URL and the 5 redirect hops followed

    await in_loop(scenario())


# -- the page's own navigation ---------------------------------------------------------------------


@pytest_twisted.ensureDeferred
async def test_the_pages_own_navigation_is_not_judged_again_but_its_redirects_are(
    rig: Rig,
) -> None:
    served = {PAGE: Served(302, {"Location": "/private/landing"})}

    async def scenario() -> None:
        render = await Render.open(rig, served)
        route = await render.page.navigate(PAGE)
        assert route.outcome == "aborted"
        assert render.network.fetched == [("GET", PAGE)]  # the page itself: the middleware's
        dropped = render.request.meta[M.BROWSER_NAVIGATION_DROP]
        assert (dropped["url"], dropped["reason"]) == (
            "http://a.example/private/landing",
            "disallow-rule",
        )
        assert stats(rig) == {}  # the page's redirect is the page's drop, no sub-request
        guard = BrowserGuard(rig.crawler)
        with pytest.raises(RepIgnoreRequest):  # the failed render becomes the page's drop
            guard.process_exception(render.request, RuntimeError("net::ERR_BLOCKED_BY_CLIENT"))
        assert render.request.meta[M.DECISION] is dropped

    await in_loop(scenario())


@pytest_twisted.ensureDeferred
async def test_only_the_first_main_frame_navigation_to_the_page_is_the_pages_own(
    rig: Rig,
) -> None:
    served = {PAGE: Served(200, body=b"<html></html>")}

    async def scenario() -> None:
        render = await Render.open(rig, served)
        private = "http://a.example/private/page"
        # an iframe navigating to a disallowed URL is a sub-request like any other
        frame = await render.load(private, resource_type="document", navigation=True)
        assert frame.outcome == "aborted"
        own = await render.page.navigate(PAGE + "/")  # a trailing slash is the same page
        assert own.outcome == "fulfilled"
        again = await render.page.navigate(PAGE)  # the page navigates again: judged now
        assert again.outcome == "fulfilled"
        moved = await render.page.navigate(private)  # and to where it may not go: aborted
        assert moved.outcome == "aborted"
        assert stats(rig) == {"rep/browser/allowed": 1, "rep/browser/aborted/disallow-rule": 2}

    await in_loop(scenario())


# -- the user's hooks, chained --------------------------------------------------------------------

USER_ROUTES: list[str] = []


async def user_page_init(page: FakePage, request: scrapy.Request) -> None:
    """A spider's own ``playwright_page_init_callback``: a route that aborts fonts."""

    async def fonts(route: FakeRoute, pw_request: FakeRequest) -> None:
        USER_ROUTES.append(pw_request.url)
        if pw_request.resource_type == "font":
            await route.abort()
        else:
            await route.fallback()

    await page.route("**", fonts)


@pytest_twisted.ensureDeferred
async def test_the_users_page_init_and_route_run_after_the_guard(rig: Rig) -> None:
    USER_ROUTES.clear()
    user = f"{__name__}.user_page_init"
    served = {"http://a.example/ok.png": Served(200), "http://a.example/f.woff": Served(200)}

    async def scenario() -> None:
        render = await Render.open(rig, served, playwright_page_init_callback=user)
        assert len(render.page.handlers) == 3  # the guard's, registered again last, first
        refused = await render.load("http://a.example/private/f.woff", resource_type="font")
        assert refused.outcome == "aborted" and USER_ROUTES == []  # the guard said no first
        font = await render.load("http://a.example/f.woff", resource_type="font")
        assert font.outcome == "aborted" and font.abort_code == "failed"  # the user's abort
        image = await render.load("http://a.example/ok.png")
        assert image.outcome == "fulfilled" and image.fallbacks == 2  # the user's, scrapy-pw's
        assert USER_ROUTES == ["http://a.example/f.woff", "http://a.example/ok.png"]
        assert render.network.fetched == [("GET", "http://a.example/ok.png")]
        BrowserGuard(rig.crawler).process_response(render.request, scrapy.http.Response(PAGE))
        assert render.request.meta["playwright_page_init_callback"] == user  # given back

    await in_loop(scenario())


# -- failing closed -------------------------------------------------------------------------------


@pytest_twisted.ensureDeferred
async def test_without_the_robots_middleware_everything_is_aborted(rig: Rig) -> None:
    async def scenario() -> None:
        render = await Render.open(rig, {"http://a.example/ok.png": Served(200)}, service=False)
        route = await render.load("http://a.example/ok.png")
        assert route.outcome == "aborted" and render.network.fetched == []

    await in_loop(scenario())


@pytest_twisted.ensureDeferred
async def test_a_fetch_that_fails_is_aborted(rig: Rig) -> None:
    class Broken(FakeNetwork):
        def answer(self, url: str, method: str) -> Any:
            raise ConnectionResetError("gone")

    async def scenario() -> None:
        render = await Render.open(rig)
        render.network = render.context.network = Broken()
        route = await render.load("http://a.example/ok.png")
        assert route.outcome == "aborted"

    await in_loop(scenario())


@pytest_twisted.ensureDeferred
async def test_a_subrequest_waits_rep_pending_wait_on_the_crawls_clock(rig: Rig) -> None:
    """robots.txt of the image's origin hangs: aborted when the ManualClock passes 5 s."""
    stall = Stall(RULES)
    rig.transport.answers["http://slow.example:80"] = stall

    async def scenario() -> None:
        render = await Render.open(rig, {"http://slow.example/ok.png": Served(200)})
        loading = asyncio.ensure_future(render.load("http://slow.example/ok.png"))
        for _ in range(200):
            if rig.clock.planned:
                break
            await asyncio.sleep(0)
        assert not loading.done()
        rig.clock.advance(5)
        route = await loading
        assert route.outcome == "aborted"
        assert stats(rig) == {"rep/browser/aborted/origin-pending": 1}
        stall.release()

    await in_loop(scenario())


# -- what scrapy-playwright did not open: popups, WebSockets --------------------------------------


@pytest_twisted.ensureDeferred
async def test_a_popup_is_judged_by_the_contexts_route_and_carried_out_there(rig: Rig) -> None:
    served = {"http://a.example/popup-ok.html": Served(200, body=b"<html></html>")}

    async def scenario() -> None:
        render = await Render.open(rig, served)
        assert len(render.context.handlers) == 1  # one per context, however many pages
        referer = {"referer": PAGE}
        ok = FakeRequest(
            "http://a.example/popup-ok.html", resource_type="document", headers=referer
        )
        no = FakeRequest("http://a.example/private/popup.html", resource_type="document")
        allowed, refused = await render.context.load(ok), await render.context.load(no)
        assert (allowed.outcome, refused.outcome) == ("fulfilled", "aborted")
        assert render.network.fetched == [("GET", "http://a.example/popup-ok.html")]

    await in_loop(scenario())


@pytest_twisted.ensureDeferred
async def test_websockets_are_judged_by_origin_and_path(rig: Rig) -> None:
    async def scenario() -> None:
        render = await Render.open(rig)
        ok, no = (
            await render.page.web_socket("ws://a.example/ws"),
            await render.page.web_socket("ws://a.example/private/ws"),
        )
        assert ok.connected and ok.closed is None
        assert not no.connected and no.closed == (1008, "robots.txt: disallow-rule")
        assert stats(rig) == {"rep/browser/allowed": 1, "rep/browser/aborted/disallow-rule": 1}

    await in_loop(scenario())


# -- the add-on's side ----------------------------------------------------------------------------


def _addon_settings(**values: Any) -> Any:
    settings = Settings(values, priority="project")
    Addon().update_settings(settings)
    return settings


def _downloader_middlewares(settings: Any) -> set[Any]:
    """The classes the settings enable (the add-on names optional ones by import path)."""
    found = settings.getdict("DOWNLOADER_MIDDLEWARES")
    return {load_object(c) if isinstance(c, str) else c for c, p in found.items() if p is not None}


def test_addon_enables_the_guard_only_with_scrapy_playwright_configured() -> None:
    configured = _addon_settings(DOWNLOAD_HANDLERS=PLAYWRIGHT["DOWNLOAD_HANDLERS"])
    assert BrowserGuard in _downloader_middlewares(configured)
    assert BrowserGuard not in _downloader_middlewares(_addon_settings())
    off = _addon_settings(
        DOWNLOAD_HANDLERS=PLAYWRIGHT["DOWNLOAD_HANDLERS"], REP_BROWSER_GUARD="False"
    )
    assert BrowserGuard not in _downloader_middlewares(off)


def test_addon_blocks_service_workers_in_named_contexts_unless_allowed_explicitly() -> None:
    settings = _addon_settings(
        DOWNLOAD_HANDLERS=PLAYWRIGHT["DOWNLOAD_HANDLERS"],
        PLAYWRIGHT_CONTEXTS={"plain": {"locale": "de-DE"}, "mine": {"service_workers": "allow"}},
    )
    contexts = settings.getdict("PLAYWRIGHT_CONTEXTS")
    assert contexts["plain"] == {"service_workers": "block", "locale": "de-DE"}
    assert contexts["mine"] == {"service_workers": "allow"}  # the user's word stands (warned)
