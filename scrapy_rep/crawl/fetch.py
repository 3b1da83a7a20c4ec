"""Fetching robots.txt (or another well-known file) through Scrapy.

Through ``engine.download_async``, so the project's downloader middlewares (proxies,
headers, auth) apply, with Scrapy's redirect, retry and cache off: redirects are
followed here (any authority, RFC 9309 §2.3.1.2; never into ``REP_EXCLUDE``), retries
are the status policy's back-off, and the body is cut at 500 KiB as it arrives.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from scrapy import Request, signals
from scrapy.exceptions import StopDownload
from scrapy.http import TextResponse
from scrapy.http.request import NO_CALLBACK
from scrapy.utils.httpobj import urlparse_cached
from scrapy.utils.log import logformatter_adapter

from scrapy_rep.core.exclusion import ExcludedSites
from scrapy_rep.core.origin import origin_of, robots_url
from scrapy_rep.core.policy import Conditional, FetchResult
from scrapy_rep.crawl import compat
from scrapy_rep.crawl import meta as M
from scrapy_rep.robotstxt import MAX_BYTES
from scrapy_rep.robotstxt.text import printable
from scrapy_rep.runtime.resolver import ROBOTS_TXT, WellKnownFile

if TYPE_CHECKING:
    from scrapy.core.engine import ExecutionEngine
    from scrapy.crawler import Crawler
    from scrapy.http import Response

logger = logging.getLogger(__name__)

#: robots.txt requests jump the queue, as Scrapy's own middleware does
PRIORITY = 1000
_REDIRECTS = (301, 302, 303, 307, 308)
#: the meta keys of Scrapy's FTP download handler that say how to log in
_FTP_LOGIN = ("ftp_user", "ftp_password", "ftp_passive")


class RobotsFetcher:
    """``await fetcher(origin)`` -> :class:`FetchResult`; never raises for network trouble."""

    def __init__(
        self,
        crawler: Crawler,
        timeout: float,
        max_redirects: int,
        token: str,
        *,
        file: WellKnownFile = ROBOTS_TXT,
        check_agent: bool = True,
        excluded: ExcludedSites | None = None,
    ) -> None:
        """``check_agent``: say once if the User-Agent sent lacks the token; ``excluded``: no
        redirect is followed into these sites."""
        self.crawler = crawler
        self.token = token
        self.timeout = timeout
        self.max_redirects = max_redirects
        self.excluded = excluded
        #: the User-Agent header of the first robots.txt request that got an answer
        self.user_agent_sent: str | None = None
        #: origin -> the request its fetch in flight is for (robots_parsed sends it)
        self.asked: dict[str, Request] = {}
        self.file = file
        self.check_agent = check_agent
        #: fetch in a slot of its own: the browser guard's renders hold the host's slot
        self.own_slot = False
        #: exception names an unforeseen failure was logged with (a traceback once each)
        self._unexpected_logged: set[str] = set()
        # bytes_received costs ~9 µs a chunk per receiver: listen only while downloading
        self._downloading = 0
        #: this fetcher's mark on its requests: another fetcher hears their chunks too
        self._mark = f"{type(self).__name__}@{id(self):x}"

    def asking(self, origin: str, request: Request) -> None:
        """The fetch for ``origin`` is on ``request``'s behalf, unless for another already."""
        self.asked.setdefault(origin, request)

    def answered(self, origin: str) -> Request | None:
        """The origin's fetch ended: the request it was for (Scrapy's ``robots_parsed``)."""
        return self.asked.pop(origin, None)

    def _request(self, url: str, validators: Conditional | None, asked: Request | None) -> Request:
        headers = {"Accept-Encoding": "gzip, deflate"}
        if validators is not None and validators.url == url:
            headers.update(validators.headers())
        request = Request(
            url,
            priority=PRIORITY,
            callback=NO_CALLBACK,
            dont_filter=True,
            headers=headers,
            meta={
                M.ROBOTS_REQUEST: True,
                "dont_obey_robotstxt": True,
                "dont_redirect": True,
                "dont_retry": True,
                "dont_cache": True,
                "handle_httpstatus_all": True,
                "download_timeout": self.timeout,
                # a file cut short is no file: its missing lines would go unobeyed
                "download_fail_on_dataloss": True,
                # the raw size is capped by _cap_body; decompression by BodyGuard
                "download_maxsize": 0,
                "download_warnsize": 0,
                M.COUNTED_BY: self._mark,
            },
        )
        if self.own_slot:
            request.meta["download_slot"] = f"rep-robots:{urlparse_cached(request).hostname}"
        if asked is not None:
            _same_proxy(request, asked)
            for key in _FTP_LOGIN:  # an ftp:// robots.txt is read with the files' login
                if key in asked.meta:
                    request.meta[key] = asked.meta[key]
        return request

    def _cap_body(self, data: bytes, request: Request, spider: Any = None) -> None:
        if request.meta.get(M.COUNTED_BY) != self._mark:
            return  # not a download of this fetcher's: its own fetcher counts it
        received = request.meta.get(M.RECEIVED, 0) + len(data)
        request.meta[M.RECEIVED] = received
        if received > MAX_BYTES:
            raise StopDownload(fail=False)

    def _excluded(self, target: str) -> str | None:
        """A redirect target's origin and the ``REP_EXCLUDE`` entry covering it, else None."""
        if not self.excluded:
            return None
        try:
            origin = origin_of(target)
        except ValueError:  # no host: not followed anyway
            return None
        found = self.excluded.match_origin(origin)
        if found is None:
            return None
        return f"{origin}, excluded by the entry {found.entry!r} of {found.where()}"

    async def __call__(self, origin: str, validators: Conditional | None = None) -> FetchResult:
        """The fetch's result; with ``validators``, the hop to their URL asks conditionally."""
        if not self._downloading:
            self.crawler.signals.connect(self._cap_body, signal=signals.bytes_received)
        self._downloading += 1
        try:
            return await self._fetch(origin, validators)
        except Exception as exc:  # not foreseen: judged as a network error, logged once
            name = type(exc).__name__
            log = logger.debug if name in self._unexpected_logged else logger.warning
            self._unexpected_logged.add(name)
            log(
                "scrapy-rep: the %(file)s fetch of %(origin)s failed with %(error)s; "
                "treated as a network error",
                {
                    "file": self.file.name,
                    "origin": printable(origin),
                    "error": printable(f"{name}: {exc}"),
                },
                exc_info=exc,
            )
            return FetchResult(robots_url(origin), robots_url(origin), error=name)
        finally:
            self._downloading -= 1
            if not self._downloading:
                self.crawler.signals.disconnect(self._cap_body, signal=signals.bytes_received)

    async def _fetch(self, origin: str, validators: Conditional | None) -> FetchResult:
        first = url = self.file.url_of(origin)
        engine = self.crawler.engine
        assert engine is not None
        for_request = self.asked.get(origin)
        for hop in range(self.max_redirects + 1):
            request = self._request(url, validators, for_request)
            url = request.url
            try:
                response = await download_aside(engine, request)
            except Exception as exc:  # network errors, IgnoreRequest from a middleware, ...
                return FetchResult(first, url, error=type(exc).__name__, redirects=hop)
            # answered: the project's middlewares have set the headers by now
            if self.user_agent_sent is None:
                sent = (request.headers.get(b"User-Agent") or b"").decode("latin-1")
                self.user_agent_sent = sent
                if self.check_agent and self.token.lower() not in sent.lower():
                    logger.warning(
                        "scrapy-rep: product token %(token)r is not in the User-Agent sent "
                        "(%(ua)r); RFC 9309 §2.2.1 asks crawlers to send it",
                        {"token": self.token, "ua": sent},
                    )
            if "dataloss" in response.flags:  # cut short (DOWNLOAD_FAIL_ON_DATALOSS ignored)
                return FetchResult(first, url, error="ResponseDataLossError", redirects=hop)
            location = response.headers.get(b"Location")
            if response.status in _REDIRECTS and location:
                target = _redirect_target(response, location)
                if target is None:  # mailto:, javascript:, no URL at all: a network error
                    return _result(first, response, hop, error="BadRedirect")
                # any host (RFC 9309 §2.3.1.2), allowed_domains or not, but an excluded site
                excluded = self._excluded(target)
                if excluded is not None:
                    return FetchResult(
                        first, url, status=response.status, redirects=hop, excluded=excluded
                    )
                if hop == self.max_redirects:
                    # one hop too many: RFC 9309 §2.3.1.2 lets us treat it as unavailable
                    return FetchResult(
                        first, url, status=response.status, redirects=hop + 1, redirect_limit=True
                    )
                url = target
                continue
            asked = b"If-None-Match" in request.headers or b"If-Modified-Since" in request.headers
            return _result(first, response, hop, conditional=asked)
        raise AssertionError("unreachable: every hop returns or continues")


async def download_aside(engine: ExecutionEngine, request: Request) -> Response:
    """``engine.download_async``, but outside the downloader's ``active`` set: robots.txt
    downloads that hang would otherwise take ``CONCURRENT_REQUESTS``. Uses private Scrapy
    parts when there, else plain ``engine.download_async``.
    """
    downloader = getattr(engine, "downloader", None)
    enqueue = compat.downloader_enqueue(downloader)
    slot: Any = compat.engine_slot(engine)
    spider = getattr(engine, "spider", None)
    if downloader is None or enqueue is None or not hasattr(slot, "add_request") or spider is None:
        return await engine.download_async(request)
    slot.add_request(request)  # the engine's close waits for it, as for download_async
    try:
        result: Response | Request = await downloader.middleware.download_async(enqueue, request)
    finally:
        slot.remove_request(request)
    if isinstance(result, Request):  # a middleware asked for another request instead
        return await engine.download_async(result)
    if result.request is None:
        result.request = request
    logged = engine.logformatter.crawled(request, result, spider)  # "Crawled (200) <GET ...>"
    if logged is not None:
        level, msg, *args = logformatter_adapter(logged)
        if len(args) == 1 and isinstance(args[0], dict):  # a redirect's host: ESC, BEL, RLO, ...
            args = [{k: v if v is None else printable(str(v)) for k, v in args[0].items()}]
        logger.log(level, msg, *args, extra={"spider": spider})
    engine.signals.send_catch_log(
        signal=signals.response_received, response=result, request=request, spider=spider
    )
    return result


def _same_proxy(request: Request, asked: Request) -> None:
    """Send robots.txt through the explicit ``meta["proxy"]`` (and credentials) of the
    request it is fetched for, so the site sees the same client."""
    meta = asked.meta
    if "proxy" not in meta or meta.get("_scheme_proxy"):
        return
    request.meta["proxy"] = meta["proxy"]
    credentials = asked.headers.get(b"Proxy-Authorization")
    if credentials is not None:
        request.headers[b"Proxy-Authorization"] = credentials


def _redirect_target(response: Response, location: bytes) -> str | None:
    """The http(s) URL a redirect points to; None if it points nowhere a crawler may go."""
    try:
        target = response.urljoin(location.decode("latin-1"))
        scheme = urlparse_cached(Request(target)).scheme
    except ValueError:  # "http://[::1", no scheme, ...
        return None
    return target if scheme in ("http", "https") else None


def _result(
    first: str,
    response: Response,
    hops: int,
    error: str | None = None,
    conditional: bool = False,
) -> FetchResult:
    encoding_error = response.meta.get(M.ENCODING_ERROR)
    if encoding_error or error:
        return FetchResult(first, response.url, error=error or encoding_error, redirects=hops)
    body = response.body
    truncated = bool(response.meta.get(M.TRUNCATED)) or len(body) > MAX_BYTES
    headers = {
        key.decode("latin-1").lower(): b", ".join(values).decode("latin-1")
        for key, values in response.headers.items()
    }
    return FetchResult(
        first,
        response.url,
        status=response.status,
        body=body[:MAX_BYTES] if truncated else body,
        headers=headers,
        truncated=truncated or response.meta.get(M.RECEIVED, 0) > MAX_BYTES,
        redirects=hops,
        conditional=conditional,
    )


#: in ``response.flags`` of a robots.txt answered from scrapy-rep's cache
FROM_CACHE_FLAG = "scrapy-rep: robots.txt from cache"


def cached_robots_response(
    request: Request, body: bytes, sitemaps: tuple[str, ...]
) -> TextResponse:
    """A spider's own robots.txt request answered from the cache; a body cut at 500 KiB
    ends with every ``Sitemap:`` line the parser kept."""
    if len(body) >= MAX_BYTES:
        lines = "".join(f"Sitemap: {url}\n" for url in sitemaps)
        body += f"\n# cut at 500 KiB by scrapy-rep; its Sitemap lines:\n{lines}".encode()
    request.meta["dont_cache"] = True
    return TextResponse(
        url=request.url,
        status=200,
        headers={"Content-Type": "text/plain; charset=utf-8"},
        body=body,
        request=request,
        flags=[FROM_CACHE_FLAG],
    )
