"""The Scrapy side in-process: a clock moved by hand, and a fake robots.txt fetch.

The rig fakes exactly two things, the clock and the robots.txt fetch seam
(``engine.download_async``); everything else is Scrapy's own crawler from
``get_crawler()`` and scrapy-rep's own components.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from scrapy import Request, Spider, signals
from scrapy.core.downloader import Downloader, Slot
from scrapy.core.downloader.middleware import DownloaderMiddlewareManager
from scrapy.core.spidermw import SpiderMiddlewareManager
from scrapy.crawler import Crawler
from scrapy.exceptions import IgnoreRequest
from scrapy.http import Response
from scrapy.utils.test import get_crawler
from twisted.internet.defer import Deferred
from twisted.python.failure import Failure

from scrapy_rep.core.origin import NotAnOrigin, origin_of, robots_url
from scrapy_rep.crawl.telemetry import Telemetry
from tests.support.clock import ManualClock
from tests.support.crawl import BASE_SETTINGS


def in_loop(coro: Awaitable[Any]) -> Deferred[Any]:
    """Run ``coro`` as an asyncio task (timers, ``wait_for`` and locks need one) for a test."""
    return Deferred.fromFuture(asyncio.ensure_future(coro))


# -- the fetch seam -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Answer:
    """What the fake transport answers for one URL: a response, or an exception to raise."""

    status: int = 200
    headers: Mapping[str, str] = field(default_factory=dict)
    body: bytes = b""
    #: Scrapy's response flags, e.g. ``("dataloss",)`` for a body cut short
    flags: tuple[str, ...] = ()


class Stall:
    """A fetch that hangs until the test calls ``release()``, then answers ``then``."""

    def __init__(self, then: tuple[int, Mapping[str, str], bytes] | Answer = (404, {}, b"")):
        self.then = then
        self._released: asyncio.Event | None = None

    def _event(self) -> asyncio.Event:
        if self._released is None:  # made in the running loop, at the first fetch
            self._released = asyncio.Event()
        return self._released

    async def wait(self) -> None:
        await self._event().wait()

    def release(self) -> None:
        self._event().set()


#: what a key of the transport's mapping may answer: ``(status, headers, body)``, an Answer,
#: an exception (raised as the download's failure), a Stall, or a list of those, one per request
Reply = tuple[int, Mapping[str, str], bytes] | Answer | BaseException | Stall


class FakeTransport:
    """The robots.txt fetch seam faked, as httpx's ``MockTransport`` fakes a transport.

    ``answers`` maps an origin (its robots.txt) or a whole URL to what it
    answers; a list answers one item per request, the last one again after
    that. An unknown URL is a 404. Every request sent is kept in ``sent``.
    """

    def __init__(self, answers: Mapping[str, Reply | list[Reply]] | None = None) -> None:
        self.answers: dict[str, Reply | list[Reply]] = dict(answers or {})
        self.sent: list[Request] = []

    def urls(self) -> list[str]:
        return [request.url for request in self.sent]

    def _reply(self, url: str) -> Reply:
        try:
            key = url if url in self.answers else robots_origin(url)
        except NotAnOrigin:
            key = url
        planned = self.answers.get(key, (404, {}, b""))
        if not isinstance(planned, list):
            return planned
        return planned.pop(0) if len(planned) > 1 else planned[0]

    async def __call__(self, request: Request) -> Response:
        self.sent.append(request)
        reply = self._reply(request.url)
        if isinstance(reply, Stall):
            await reply.wait()
            reply = reply.then
        if isinstance(reply, BaseException):
            raise reply
        answer = reply if isinstance(reply, Answer) else Answer(reply[0], reply[1], reply[2])
        return Response(
            request.url,
            status=answer.status,
            headers=dict(answer.headers),
            body=answer.body,
            request=request,
            flags=list(answer.flags),
        )


def robots_origin(url: str) -> str:
    """The origin whose robots.txt ``url`` is; any other URL is its own key."""
    origin = origin_of(url)
    return origin if robots_url(origin) == url else url


# -- the crawler ----------------------------------------------------------------------------------


class RigSlot:
    """The engine's slot, as far as scrapy-rep looks: not closing; its scheduler."""

    closing = None

    def __init__(self) -> None:
        self.scheduler: Any = None


class RigEngine:
    """What scrapy-rep asks of Scrapy's engine, with downloads going to the fake transport.

    The downloader is Scrapy's own (its slots and per-slot settings are what
    crawl delay changes), made for a twin crawler without the add-on, so no
    second scrapy-rep middleware is built beside the component under test.
    Requests given to ``crawl()`` are kept in ``crawled``.
    """

    def __init__(self, crawler: Crawler, transport: FakeTransport, downloader: Downloader) -> None:
        self.crawler = crawler
        self.spider = crawler.spider
        self.signals = crawler.signals
        self.transport = transport
        self.downloader = downloader
        self._slot = RigSlot()
        self.crawled: list[Request] = []

    @property
    def scheduler(self) -> Any:
        return self._slot.scheduler

    def crawl(self, request: Request) -> None:
        self.crawled.append(request)

    async def download_async(self, request: Request) -> Response:
        return await self.transport(request)


class Rig:
    """One crawler from Scrapy's ``get_crawler()`` with the add-on, a ManualClock, a fake fetch.

    Components are built from ``rig.crawler`` as the crawl builds them; the
    clock moves only by ``rig.clock.advance``; robots.txt comes from
    ``rig.transport``. ``close()`` (or leaving ``with``) stops what the downloader started.
    """

    def __init__(
        self,
        settings: Mapping[str, Any] | None = None,
        answers: Mapping[str, Reply | list[Reply]] | None = None,
        spidercls: type[Spider] = Spider,
        clock: ManualClock | None = None,
    ) -> None:
        self.clock = clock or ManualClock()
        self.transport = FakeTransport(answers)
        merged = {**BASE_SETTINGS, "REP_CLOCK": self.clock, **(settings or {})}
        self.crawler = get_crawler(spidercls, settings_dict=merged)
        self.crawler.spider = spidercls.from_crawler(self.crawler, name="rig")
        twin = get_crawler(spidercls, settings_dict={**merged, "ADDONS": {}})
        twin.spider = self.crawler.spider  # older downloaders read the spider's download_delay
        self.engine = RigEngine(self.crawler, self.transport, Downloader(twin))
        self.crawler.engine = self.engine  # type: ignore[assignment]

    def slot_of(self, url: str) -> Slot:
        """The download slot Scrapy's downloader makes (or has) for ``url``."""
        _key, slot = self.engine.downloader._get_slot(Request(url))
        return slot

    def schedule(self, request: Request) -> bool:
        """The engine schedules ``request`` (sends ``request_scheduled`` as Scrapy's engine
        does): False when a receiver kept it out of the scheduler (scrapy-rep parked it)."""
        sent = self.crawler.signals.send_catch_log(
            signals.request_scheduled,
            request=request,
            spider=self.crawler.spider,
            dont_log=IgnoreRequest,
        )
        return not any(
            isinstance(result, Failure) and isinstance(result.value, IgnoreRequest)
            for _, result in sent
        )

    async def open_spider(self) -> None:
        """``spider_opened``, as the engine sends it: its receivers awaited."""
        await self.crawler.signals.send_catch_log_async(
            signals.spider_opened, spider=self.crawler.spider
        )

    async def close_spider(self, reason: str = "finished") -> None:
        """``spider_closed``, as the engine sends it: its receivers awaited."""
        await self.crawler.signals.send_catch_log_async(
            signals.spider_closed, spider=self.crawler.spider, reason=reason
        )

    def idle(self) -> None:
        """The engine has nothing to do (``spider_idle``, as Scrapy's engine sends it)."""
        self.crawler.signals.send_catch_log(signals.spider_idle, spider=self.crawler.spider)

    def stat(self, key: str) -> Any:
        """The crawl's stat ``key``, with what the telemetry holds back flushed first."""
        Telemetry.of(self.crawler).flush()
        return self.crawler.stats.get_value(key)

    def close(self) -> None:
        self.engine.downloader.close()

    async def run(self, scenario: Awaitable[Any]) -> Any:
        """``scenario`` as an asyncio task (``in_loop``), the rig closed after it, whatever
        happened: its result."""
        try:
            return await in_loop(scenario)
        finally:
            self.close()

    def __enter__(self) -> Rig:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def rig_for(answers: Mapping[str, Reply | list[Reply]], **settings: Any) -> Rig:
    """A rig whose transport answers ``answers``; a request waits up to 5 s (of the manual
    clock) for a robots.txt fetch before it is parked."""
    return Rig({"REP_PENDING_WAIT": 5, **settings}, answers)


class Middlewares:
    """The crawl's downloader and spider middlewares, Scrapy's and the add-on's in the
    add-on's order, run as Scrapy's downloader and scraper run them.

    The network is the rig's transport: a page is answered by its whole URL
    in ``rig.transport.answers`` (an unknown one is a 404) and kept in
    ``rig.transport.sent``, beside the robots.txt fetches.
    """

    def __init__(self, rig: Rig) -> None:
        self.rig = rig
        # both made before anything is downloaded, as the crawl makes them (a spider
        # middleware may listen to the downloader's signals)
        self.downloader = DownloaderMiddlewareManager.from_crawler(rig.crawler)
        self.spider = SpiderMiddlewareManager.from_crawler(rig.crawler)
        # Scrapy's own middlewares set themselves up on spider_opened (Scrapy 2.14's
        # OffsiteMiddleware reads allowed_domains only then); the add-on's parts are
        # opened by the test itself (rig.open_spider), so only Scrapy's hear it here
        for manager in (self.downloader, self.spider):
            for middleware in manager.middlewares:
                opened = getattr(middleware, "spider_opened", None)
                if opened is not None and type(middleware).__module__.startswith("scrapy."):
                    opened(rig.crawler.spider)

    async def fetch(self, request: Request) -> Response | Request:
        """``request`` through the downloader middlewares: the response, or a request handed
        back to the engine (to be scheduled); raises what its errback would hear. It is in
        the downloader's ``active`` meanwhile, as Scrapy's downloader has it."""
        active = self.rig.engine.downloader.active
        active.add(request)
        try:
            return await self.downloader.download_async(self._download, request)
        finally:
            active.discard(request)

    async def _download(self, request: Request) -> Response:
        """The download handler's part, with the signals Scrapy's downloader sends around it."""
        crawler = self.rig.crawler
        try:
            response = await self.rig.transport(request)
            crawler.signals.send_catch_log(
                signals.response_downloaded,
                response=response,
                request=request,
                spider=crawler.spider,
            )
            return response
        finally:
            crawler.signals.send_catch_log(
                signals.request_left_downloader, request=request, spider=crawler.spider
            )

    async def scrape(self, response: Response, output: Iterable[Any]) -> list[Any]:
        """What the spider middlewares let through of ``output``, a callback's for ``response``."""

        async def callback(_response: Response | Failure, _request: Request) -> Iterable[Any]:
            return output

        assert response.request is not None
        chain: AsyncIterator[Any] | Iterable[Any] = await self.spider.scrape_response_async(
            callback, response, response.request
        )
        if isinstance(chain, Iterable):  # Scrapy 2.14 hands back a plain chain
            return list(chain)
        return [each async for each in chain]
