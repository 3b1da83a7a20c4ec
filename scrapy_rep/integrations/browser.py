"""The robots.txt guard for pages rendered with scrapy-playwright.

A page scrapy-rep allowed can, once a browser renders it, load images,
scripts, stylesheets, fonts, iframes and fetch/XHR calls from any origin.
None of them go through Scrapy's downloader middlewares. This module judges
every one of them against the robots.txt of its own origin, with the
crawl's :class:`~scrapy_rep.crawl.service.RobotsService` (its token, policy
cache, status table, gate and collection hook: the admission path the
downloader middleware takes), and aborts what is not allowed. Without the
downloader middleware there is no service: the page itself was never judged,
so nothing it loads is let through either (``guard-error``).

How it hooks in (scrapy-playwright's public hooks only):

- :class:`BrowserGuard`, a downloader middleware the add-on enables when
  scrapy-playwright's download handler is configured, sets the request's
  ``playwright_page_init_callback`` to :func:`page_init` and keeps the
  user's own callback (called from there, then given back in the response's
  meta);
- :func:`page_init` registers a ``page.route("**")`` after scrapy-playwright's
  and the user's, so it runs first. A disallowed request is aborted there. An
  allowed one is handed on with ``route.fallback()`` (the user's route, then
  scrapy-playwright's: headers, ``PLAYWRIGHT_ABORT_REQUEST``), and the
  ``route.continue_`` that ends that chain is taken over for this one route:
  the request is fetched hop by hop (``route.fetch(max_redirects=0)``), each
  ``Location`` judged before it is fetched, and the page fulfilled with the
  final response (Playwright routes only the first URL of a redirect chain);
- a route on each browser context judges what no page route handled: the
  requests of pages scrapy-playwright did not open (popups, ``window.open``);
- service workers, which bypass page routing, are blocked in every context
  the add-on can reach (``service_workers="block"``); WebSockets are judged
  with ``page.route_web_socket`` where the installed Playwright has it.

With uses declared (``REP_USES``), what a render loads is part of the page:
each sub-request carries the page's own answer (``rep_use`` in the meta the
collection hook sees, ``page_use`` in its audit record): the page request's
answer, then what the page's response says in its headers and ``<head>``
(read when the guard fetches the page's navigation). Under
``REP_USE_ACTION = "drop"`` the sub-requests of a page refusing a declared use
are aborted (``use-refused``): its items are dropped, and what it would load
for them is not collected. A sub-request is also judged for its own URL, as
any request is.

If the guard cannot judge (an error, a timeout), the request is aborted with
the reason ``guard-error``: it fails closed. Nothing here imports Playwright
at module level; without scrapy-playwright configured, nothing of it loads.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import weakref
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urljoin

from scrapy import Request, signals
from scrapy.exceptions import NotConfigured
from scrapy.utils.misc import load_object

from scrapy_rep.core.decision import DOWNLOAD, DROP, USE_REFUSED, DecisionRecord, unjudged
from scrapy_rep.core.directives import meta_robots
from scrapy_rep.core.origin import NotAnOrigin, origin_of
from scrapy_rep.core.use_signals import (
    NO_SIGNALS,
    ResponseSignals,
    request_answers,
    response_signals,
    response_uses,
)
from scrapy_rep.core.uses import REFUSED, UseAnswer, uses_field
from scrapy_rep.crawl import graph
from scrapy_rep.crawl import meta as M
from scrapy_rep.crawl.exceptions import RepIgnoreRequest
from scrapy_rep.integrations import wiring
from scrapy_rep.runtime.settings import RepSettings, is_enabled

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.http import Response

    from scrapy_rep.crawl.service import RobotsService
    from scrapy_rep.crawl.telemetry import Telemetry

logger = logging.getLogger(__name__)

#: the abort reason when the guard cannot judge
GUARD_ERROR = "guard-error"
#: what the browser is told for an aborted request (net::ERR_BLOCKED_BY_CLIENT)
ABORT_CODE = "blockedbyclient"
#: seconds a judgement may take beyond REP_PENDING_WAIT (the collection hook)
JUDGE_SLACK = 10.0
_REDIRECTS = (301, 302, 303, 307, 308)
_PAGE_INIT = "scrapy_rep.integrations.browser.page_init"
_NO_CALLBACK = "_rep_none"  # the request had no page-init callback of its own

#: live guards by key: the page-init callback is an import path (meta stays picklable)
_GUARDS: weakref.WeakValueDictionary[str, BrowserGuard] = weakref.WeakValueDictionary()


# -- the middleware ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Judgement:
    """One URL judged by the guard: its origin (None if unparsable) and the decision record."""

    origin: str | None
    record: DecisionRecord

    @property
    def allowed(self) -> bool:
        return bool(self.record["action"] == DOWNLOAD)


class BrowserGuard:
    """Judges what the browser requests while scrapy-playwright renders a page."""

    def __init__(self, crawler: Crawler) -> None:
        settings = crawler.settings
        if not is_enabled(settings.get) or not wiring.browser_wanted(settings):
            raise NotConfigured("the browser guard is off or scrapy-playwright is not configured")
        self.crawler = crawler
        self.config = RepSettings.of(crawler)
        self.token = self.config.token
        self.key = f"{id(self):x}"
        _GUARDS[self.key] = self
        self._service: RobotsService | None = None
        self._warned: set[str] = set()
        self._contexts: weakref.WeakSet[Any] = weakref.WeakSet()
        crawler.signals.connect(self._on_opened, signal=signals.engine_started)
        for name, kwargs in (settings.getdict("PLAYWRIGHT_CONTEXTS") or {}).items():
            if (kwargs or {}).get("service_workers") == "allow":
                self._warn_service_workers(f"PLAYWRIGHT_CONTEXTS[{name!r}]")

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> BrowserGuard:
        return cls(crawler)

    def _on_opened(self) -> None:
        service = self.service
        if service is not None:
            # the render holds the host's download slot; robots.txt must not queue behind it
            service.fetch_in_own_slot()

    @property
    def service(self) -> RobotsService | None:
        """The crawl's RobotsService (None: the downloader middleware is not enabled)."""
        if self._service is None:
            self._service = graph.running(self.crawler)
        return self._service

    def _warn_service_workers(self, where: str) -> None:
        if where not in self._warned:
            self._warned.add(where)
            logger.warning(
                "scrapy-rep: %(where)s allows service workers; their requests bypass the "
                "browser guard (robots.txt is not checked for them); set "
                "service_workers='block'",
                {"where": where},
            )

    async def guard_context(self, context: Any) -> None:
        """Once per browser context: a route for the pages scrapy-playwright did not open."""
        if context in self._contexts:
            return
        self._contexts.add(context)
        handler = PageRoute(self, None, None)
        await context.route("**", handler)
        if hasattr(context, "route_web_socket"):
            await context.route_web_socket("**", handler.web_socket)

    # -- Scrapy's hooks -------------------------------------------------------------------------

    def process_request(self, request: Request, spider: Any = None) -> None:
        meta = request.meta
        if not meta.get("playwright") or M.exempt(meta):
            return
        if meta.get("playwright_page_init_callback") != _PAGE_INIT:
            meta[M.BROWSER_PAGE_INIT] = meta.get("playwright_page_init_callback") or _NO_CALLBACK
            meta["playwright_page_init_callback"] = _PAGE_INIT
        meta[M.BROWSER_GUARD] = self.key
        kwargs = meta.get("playwright_context_kwargs")
        if kwargs is None:
            meta["playwright_context_kwargs"] = {"service_workers": "block"}
        elif kwargs.get("service_workers") == "allow":
            self._warn_service_workers("playwright_context_kwargs")
        else:
            kwargs.setdefault("service_workers", "block")

    def process_response(self, request: Request, response: Response, spider: Any = None) -> Any:
        _restore(request.meta)
        return response

    def process_exception(self, request: Request, exception: Exception, spider: Any = None) -> None:
        meta = request.meta
        _restore(meta)
        dropped = meta.pop(M.BROWSER_NAVIGATION_DROP, None)
        if dropped is not None:  # the page's own navigation redirected to a URL it may not fetch
            meta[M.DECISION] = dropped
            raise RepIgnoreRequest(dropped) from exception

    # -- judging ---------------------------------------------------------------------------------

    async def judge(
        self,
        url: str,
        *,
        page: str,
        resource_type: str,
        method: str,
        hop: int,
        page_use: Mapping[str, UseAnswer] | None = None,
    ) -> Judgement:
        """The decision for one URL the browser asks for; fails closed (``guard-error``)."""
        service = self.service
        token = self.token if service is not None else ""
        try:
            origin = origin_of(url)
        except NotAnOrigin:
            return Judgement(None, _record(None, token, url, DOWNLOAD, "not-governed", ""))
        if service is None:
            return Judgement(
                origin, _record(origin, "", url, DROP, GUARD_ERROR, "no RobotsMiddleware")
            )
        try:
            subrequest = _subrequest(url, page, resource_type, method, hop, page_use)
            timeout = self.config.pending_wait + JUDGE_SLACK
            record, _ = await asyncio.wait_for(
                service.admission.answer(origin, subrequest), timeout
            )
        except Exception as exc:  # the guard could not judge: fail closed
            detail = f"the browser guard could not judge: {type(exc).__name__}: {exc}"
            return Judgement(origin, _record(origin, token, url, DROP, GUARD_ERROR, detail))
        judgement = Judgement(origin, record)
        if page_use:
            judgement.record["page_use"] = uses_field(page_use)
            refused = next((a for a in page_use.values() if a.answer == REFUSED), None)
            if judgement.allowed and refused is not None and self.config.use_action == "drop":
                detail = f"the page {page} refuses {refused.use}: {refused.source}"
                record = _record(origin, token, url, DROP, USE_REFUSED, detail)
                judgement = Judgement(origin, {**record, "page_use": uses_field(page_use)})
        return judgement

    def note(
        self,
        judgement: Judgement,
        *,
        page: str,
        first_url: str,
        resource_type: str,
        method: str,
        hop: int,
        navigation: bool,
    ) -> None:
        """Stats and the audit record of one judgement."""
        service = self.service
        if service is None or judgement.record["reason"] == "not-governed":
            return
        note_subrequest(
            service.telemetry,
            judgement,
            navigation,
            page=page,
            request_url=first_url,
            method=method,
            resource_type=resource_type,
            hop=hop,
        )


def note_subrequest(
    telemetry: Telemetry, judgement: Judgement, navigation: bool, **where: str | int
) -> None:
    """A request the browser made while rendering a page: counted (but a redirect hop of the
    page's own navigation: the page itself is counted by the middleware) and audited with
    ``where`` it was asked (``page``, ``request_url``, ``method``, ``resource_type``, ``hop``)."""
    record, origin = judgement.record, judgement.origin or None
    if not navigation:
        if judgement.allowed:
            telemetry.inc("rep/browser/allowed")
            telemetry.counts.add(origin, "browser_allowed")
        else:
            reason = record["reason"]
            telemetry.inc(f"rep/browser/aborted/{reason}")
            telemetry.counts.add(origin, "browser_aborted", reason)
    if telemetry.audit is not None:
        telemetry.audit.write("subrequest", {**record, **where})


def _restore(meta: dict[str, Any]) -> None:
    """Give the request's meta back as the spider set it."""
    user = meta.pop(M.BROWSER_PAGE_INIT, None)
    meta.pop(M.BROWSER_GUARD, None)
    if user is not None and meta.get("playwright_page_init_callback") == _PAGE_INIT:
        if user == _NO_CALLBACK:
            del meta["playwright_page_init_callback"]
        else:
            meta["playwright_page_init_callback"] = user


def _subrequest(
    url: str,
    page: str,
    resource_type: str,
    method: str,
    hop: int,
    page_use: Mapping[str, UseAnswer] | None,
) -> Request:
    """The request the collection hook sees for what the browser asks (``rep_subrequest``)."""
    return Request(
        url,
        method=method,
        meta={
            M.SUBREQUEST: {
                "page": page,
                "resource_type": resource_type,
                "method": method,
                "hop": hop,
            },
            M.USE: {use: answer.answer for use, answer in (page_use or {}).items()},
        },
    )


def _record(
    origin: str | None, token: str, url: str, action: str, reason: str, detail: str
) -> DecisionRecord:
    """A decision record for a URL no rule decided (not governed, refused, guard error)."""
    return unjudged(origin or "", token, url, None, action, reason, detail)


# -- the page ---------------------------------------------------------------------------------


async def page_init(page: Any, request: Request) -> None:
    """``playwright_page_init_callback`` set by :class:`BrowserGuard`: guard this page.

    The guard's route is registered before the user's callback runs and again
    after it (routes registered later run first), so it always runs first.
    The user's callback is called as scrapy-playwright would call it.
    """
    guard = _GUARDS.get(request.meta.get(M.BROWSER_GUARD, ""))
    route = PageRoute(guard, page, request)
    await page.route("**", route)
    if guard is not None:
        await guard.guard_context(page.context)
    if guard is not None and hasattr(page, "route_web_socket"):
        await page.route_web_socket("**", route.web_socket)
    user = request.meta.get(M.BROWSER_PAGE_INIT)
    if user is None or user == _NO_CALLBACK:
        return
    try:
        await load_object(user)(page, request)
    finally:  # routes the callback added run before ours: register ours again, last
        await page.unroute("**", route)
        await page.route("**", route)


class PageRoute:
    """The guard's route handler for one page (and the Scrapy request that rendered it).

    Without a request, it is the context's route: it sees only what no page
    route handled, the requests of pages scrapy-playwright did not open
    (popups, ``window.open``), and carries out allowed ones itself.
    """

    def __init__(self, guard: BrowserGuard | None, page: Any, request: Request | None) -> None:
        self.guard = guard
        self.page = page
        self.request = request
        self.page_url = request.url if request is not None else ""
        self.navigated = request is None  # the page's own first navigation has been seen
        config = guard.config if guard is not None and guard.service is not None else None
        self.max_hops = config.max_redirects if config is not None else 5
        #: the declared uses (REP_USES), and the page's own answer for each: its request's,
        #: then its response's once the guard has fetched the navigation
        self.uses: tuple[str, ...] = tuple(config.uses) if config is not None else ()
        #: REP_PAGE_DIRECTIVES: the initial HTML's robots meta tags are kept for the page's
        self.directives = config.page_directives if config is not None else False
        self.page_use: dict[str, UseAnswer] | None = None
        if self.uses and request is not None:
            self.page_use = self._page_use(request.meta.get(M.DECISION), NO_SIGNALS)

    async def __call__(self, route: Any, pw_request: Any) -> None:
        try:
            await self._handle(route, pw_request)
        except Exception as exc:  # fail closed: never let through what was not judged
            logger.debug("scrapy-rep: browser guard error on %s: %r", pw_request.url, exc)
            await _abort(route)

    async def _handle(self, route: Any, pw_request: Any) -> None:
        url: str = pw_request.url
        if not url.startswith(("http://", "https://")):
            await route.fallback()  # data:, blob:, about: have no robots.txt
            return
        guard = self.guard
        if guard is None or guard.service is None:
            judgement = Judgement(None, _record(None, "", url, DROP, GUARD_ERROR, "lost"))
            self._count(judgement, url, pw_request, 0, navigation=False)
            await _abort(route)
            return
        navigation = self._is_page_navigation(pw_request)
        if not navigation:
            judgement = await guard.judge(
                url,
                page=self._page_of(pw_request),
                resource_type=pw_request.resource_type,
                method=pw_request.method,
                hop=0,
                page_use=self.page_use,
            )
            self._count(judgement, url, pw_request, 0, navigation=False)
            if not judgement.allowed:
                await _abort(route)
                return
        if self.request is None:  # the context's route: nothing after it, fetch here
            await self._follow(route, pw_request, False, None, None, None, None)
            return
        # allowed: the rest of the chain (the user's route, scrapy-playwright's) runs, and
        # its continue_ fetches hop by hop here
        route.continue_ = self._continuation(route, pw_request, navigation)
        await route.fallback()

    def _page_of(self, pw_request: Any) -> str:
        """The rendered page's URL; for a popup, the document that asked (its referer)."""
        if self.request is not None:
            return self.page_url
        return str(pw_request.headers.get("referer") or "")

    def _is_page_navigation(self, pw_request: Any) -> bool:
        """The page's own first navigation: judged by the middleware already."""
        if self.navigated or not pw_request.is_navigation_request():
            return False
        try:
            main = pw_request.frame == self.page.main_frame
        except Exception:
            return False
        if main and pw_request.url.rstrip("/") == self.page_url.rstrip("/"):
            self.navigated = True
            return True
        return False

    def _count(
        self, judgement: Judgement, first_url: str, pw_request: Any, hop: int, *, navigation: bool
    ) -> None:
        if self.guard is None:
            return
        self.guard.note(
            judgement,
            page=self._page_of(pw_request),
            first_url=first_url,
            resource_type=pw_request.resource_type,
            method=pw_request.method,
            hop=hop,
            navigation=navigation,
        )

    def _continuation(
        self, route: Any, pw_request: Any, navigation: bool
    ) -> Callable[..., Awaitable[None]]:
        async def continue_(
            url: str | None = None,
            method: str | None = None,
            headers: dict[str, str] | None = None,
            post_data: Any = None,
        ) -> None:
            try:
                await self._follow(route, pw_request, navigation, url, method, headers, post_data)
            except Exception as exc:
                logger.debug("scrapy-rep: browser guard error on %s: %r", pw_request.url, exc)
                await _abort(route)

        return continue_

    async def _follow(
        self,
        route: Any,
        pw_request: Any,
        navigation: bool,
        url: str | None,
        method: str | None,
        headers: dict[str, str] | None,
        post_data: Any,
    ) -> None:
        """Fetch hop by hop, judging each ``Location``; fulfil with the last answer."""
        assert self.guard is not None
        first = current = url or pw_request.url
        verb = method or pw_request.method
        for hop in range(1, self.max_hops + 2):
            response = await route.fetch(
                url=current, method=verb, headers=headers, post_data=post_data, max_redirects=0
            )
            location = response.headers.get("location")
            if response.status not in _REDIRECTS or not location or hop > self.max_hops:
                if navigation and self.uses and self.request is not None:
                    self.page_use = self._page_use(
                        self.request.meta.get(M.DECISION), await self._signals(response)
                    )
                if navigation and self.directives and self.request is not None:
                    await self._initial_metas(response, self.request)
                await route.fulfill(response=response)
                return
            target = urljoin(current, location)
            if not target.startswith(("http://", "https://")):
                await route.fulfill(response=response)
                return
            await response.dispose()
            judgement = await self.guard.judge(
                target,
                page=self._page_of(pw_request),
                resource_type=pw_request.resource_type,
                method=verb,
                hop=hop,
                page_use=None if navigation else self.page_use,
            )
            self._count(judgement, first, pw_request, hop, navigation=navigation)
            if not judgement.allowed:
                if navigation:
                    self._drop_page(judgement)
                await _abort(route)
                return
            if response.status == 303 or (response.status in (301, 302) and verb == "POST"):
                verb, post_data = "GET", None
            current = target

    def _page_use(
        self, decision: Mapping[str, Any] | None, signals: ResponseSignals
    ) -> dict[str, UseAnswer]:
        """The page's answer per declared use: its request's, met by its response's signals."""
        before, tdm_file = request_answers(decision.get("uses") if decision else None)
        return response_uses(self.uses, before, tdm_file, signals)

    async def _signals(self, response: Any) -> ResponseSignals:
        """What the page's own response (a Playwright APIResponse) says about use."""
        headers: dict[str, list[bytes]] = {}
        for header in response.headers_array:
            headers.setdefault(header["name"].lower(), []).append(header["value"].encode())
        content_type = b"".join(headers.get("content-type", [])).lower()
        html = b"html" in content_type
        token = self.guard.token if self.guard is not None else ""
        return response_signals(
            token,
            content_usage=headers.get("content-usage", []),
            content_signal=headers.get("content-signal", []),
            tdm_reservation=headers.get("tdm-reservation", []),
            x_robots_tag=headers.get("x-robots-tag", []),
            robots_tag=headers.get("robots-tag", []),
            body=await response.body() if html else None,
            image=content_type.startswith(b"image/"),
        )

    async def _initial_metas(self, response: Any, request: Request) -> None:
        """The initial HTML's robots meta tags, for the page directives middleware.

        A script can remove ``<meta name="robots" content="nofollow">`` before the
        callback sees the DOM: what the page said before it ran still counts.
        """
        content_type = (response.headers.get("content-type") or "").lower()
        if "html" not in content_type:
            return
        token = self.guard.token if self.guard is not None else ""
        found = meta_robots(await response.body(), token)
        if found:
            request.meta[M.BROWSER_INITIAL_METAS] = found

    def _drop_page(self, judgement: Judgement) -> None:
        """The render fails; the request's errback hears a drop with this record."""
        if self.request is None:
            return
        self.request.meta[M.BROWSER_NAVIGATION_DROP] = judgement.record
        service = self.guard.service if self.guard is not None else None
        if service is not None:
            service.telemetry.final(judgement.origin, judgement.record)

    async def web_socket(self, ws: Any) -> None:
        """A WebSocket: judged by the origin and path of its http(s) equivalent."""
        url: str = ws.url
        http = "https" + url[3:] if url.startswith("wss:") else "http" + url[2:]
        if self.guard is None:
            await ws.close(code=1008, reason="robots.txt: guard-error")
            return
        judgement = await self.guard.judge(
            http, page=self.page_url, resource_type="websocket", method="GET", hop=0
        )
        self.guard.note(
            judgement,
            page=self.page_url,
            first_url=url,
            resource_type="websocket",
            method="GET",
            hop=0,
            navigation=False,
        )
        if judgement.allowed:
            ws.connect_to_server()
        else:
            await ws.close(code=1008, reason=f"robots.txt: {judgement.record['reason']}")


async def _abort(route: Any) -> None:
    with contextlib.suppress(Exception):  # already handled, or the page closed
        await route.abort(ABORT_CODE)
