"""Each request's identity checked as it leaves for the network (``core/identity.py``), by
the last downloader middleware: it sees the headers as the handler sends them, and can
still stop the request (``request_reached_downloader`` cannot).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from scrapy import signals
from scrapy.exceptions import NotConfigured
from scrapy.utils.misc import load_object
from twisted.python.failure import Failure

from scrapy_rep import signals as rep_signals
from scrapy_rep.components.robots import RobotsMiddleware
from scrapy_rep.core.decision import identity_drop
from scrapy_rep.core.identity import (
    IDENTITY_CHANGED,
    MAX_ORIGINS,
    REFUSAL_MEMORY,
    REFUSING_STATUSES,
    TOKEN_MISSING,
    Identity,
    Once,
    RefusedIdentities,
    carries_token,
)
from scrapy_rep.core.origin import origin_or_none
from scrapy_rep.crawl import compat, graph
from scrapy_rep.crawl import meta as M
from scrapy_rep.crawl.exceptions import RepIgnoreRequest
from scrapy_rep.crawl.parts import IDENTITY_PRIORITY

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.http import Response

logger = logging.getLogger(__name__)

_THE_SETTING = "it is the USER_AGENT setting: put the token in it (or set REP_PRODUCT_TOKEN)"


class IdentityGuard:
    """Checks the token in each leaving request's ``User-Agent``; no new identity after a
    refusal. Answers through the crawl's service and sink, as every other drop."""

    def __init__(self, crawler: Crawler) -> None:
        service = graph.running(crawler)
        if service is None:  # no RobotsMiddleware (REP_ENABLED off, or removed): nothing to keep
            raise NotConfigured("scrapy-rep's RobotsMiddleware is not enabled")
        self.token_action = service.config.identity_action[TOKEN_MISSING]
        self.change_action = service.config.identity_action[IDENTITY_CHANGED]
        if self.token_action == "off" and self.change_action == "off":
            raise NotConfigured("REP_IDENTITY_ACTION off")
        self.crawler = crawler
        self.token = service.token
        self.clock = service.clock
        self.telemetry = service.telemetry
        self.refused = RefusedIdentities(REFUSAL_MEMORY, MAX_ORIGINS)
        self.warned = Once(MAX_ORIGINS)
        self.user_agent = str(crawler.settings.get("USER_AGENT") or "")
        self.set_by = _set_by(crawler)  # who else may have set a User-Agent, in words
        self._last_raw: tuple[Any, ...] = ()
        self._last: tuple[Identity, bool] = (Identity(""), False)
        crawler.signals.connect(self._resumed, signal=rep_signals.origin_resumed)
        crawler.signals.connect(self._downloaded, signal=signals.response_downloaded)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> IdentityGuard:
        return cls(crawler)

    def process_request(self, request: Request, spider: Any = None) -> None:
        origin = _governed_origin(request)
        if origin is None:
            return
        identity, carries = self._seen(request)
        if not carries and self.token_action != "off":
            agent = identity.user_agent
            who = _THE_SETTING if agent and agent == self.user_agent else self.set_by
            detail = (
                f"its User-Agent {agent!r} does not carry the product token {self.token!r}; {who}"
            )
            drop = self._mismatch(origin, request, TOKEN_MISSING, self.token_action, detail)
            if drop is not None:
                raise drop
        drop = self._changed(origin, request)
        if drop is not None:
            raise drop

    def _changed(self, origin: str, request: Request) -> RepIgnoreRequest | None:
        """Says a request sent to ``origin`` under another identity than the one it refused
        lately; what to raise when it is dropped."""
        if self.change_action == "off" or not len(self.refused):
            return None
        identity = self._seen(request)[0]
        refusal = self.refused.changed(origin, identity, self.clock())
        if refusal is None:
            return None
        detail = (
            f"the origin answered {refusal.status} to {refusal.url} sent as "
            f"{refusal.identity}; this request changes "
            f"{'; '.join(refusal.identity.changes(identity))} (an HTTP error is no "
            "reason to change identity: kept until the origin's pause ends)"
        )
        return self._mismatch(origin, request, IDENTITY_CHANGED, self.change_action, detail)

    def _seen(self, request: Request) -> tuple[Identity, bool]:
        """The request's identity and whether it carries the token; the last answer is kept
        (a crawl sends one identity, or a few, over and over)."""
        headers = request.headers  # read as the dict it is: a third of Headers.get's cost
        raw = (
            dict.get(headers, b"User-Agent"),
            request.meta.get("proxy"),
            dict.get(headers, b"Proxy-Authorization"),
        )
        if raw != self._last_raw:
            agent, proxy, auth = raw
            identity = Identity.of(
                agent[-1].decode("latin-1") if agent else "",  # the last value is the one sent
                proxy,
                auth[-1].decode("latin-1") if auth else None,
            )
            self._last_raw = raw
            self._last = identity, carries_token(identity.user_agent, self.token)
        return self._last

    def _mismatch(
        self, origin: str, request: Request, reason: str, action: str, detail: str
    ) -> RepIgnoreRequest | None:
        """Records the mismatch; what to raise when it is dropped (None: sent)."""
        drop = action == "drop"
        said = {
            "origin": origin,
            "url": request.url,
            "reason": reason,
            "action": "drop" if drop else "warn",
            "user_agent": self._seen(request)[0].user_agent,
            "detail": detail,
        }
        self.telemetry.identity_mismatch(said, self.warned.first(f"{reason} {origin}"))
        if not drop:
            return None
        judged = request.meta.get(M.DECISION)
        record = identity_drop(judged, origin, self.token, request.url, reason, detail)
        request.meta[M.DECISION] = record
        self.telemetry.stopped(origin, judged, record)  # a download counted: no longer
        return RepIgnoreRequest(record)

    def _downloaded(self, response: Response, request: Request, **_: Any) -> None:
        """A 403/429 fixes its origin's identity before the download slot lets the next
        request go; the origin's requests waiting there under another identity are
        dropped (with ``drop``; they passed :meth:`process_request` before the refusal)."""
        if response.status not in REFUSING_STATUSES or request.meta.get(M.DONT_OBEY):
            return
        origin = _origin(request)
        if origin is None:
            return
        now = self.clock()
        self.refused.refused(origin, self._seen(request)[0], response.status, request.url, now)
        if self.change_action != "drop":
            return
        taken = compat.take_queued(
            self.crawler.engine,
            lambda queued: (
                _governed_origin(queued) == origin
                and self.refused.changed(origin, self._seen(queued)[0], now) is not None
            ),
        )
        for queued, deferred in taken:
            drop = self._changed(origin, queued)
            if drop is not None:
                deferred.errback(Failure(drop))  # type: ignore[no-untyped-call]

    def _resumed(self, origin: str, **_: Any) -> None:
        """A paused origin resumed: it may be asked afresh, under any identity."""
        self.refused.ended(origin)


def _governed_origin(request: Request) -> str | None:
    """The origin whose refusals govern ``request``; None for requests not checked here
    (``dont_obey_robotstxt``; robots.txt's own, checked by crawl/fetch.py; not an origin)."""
    meta = request.meta
    if meta.get(M.DONT_OBEY) or meta.get(M.ROBOTS_REQUEST):
        return None
    return _origin(request)


def _origin(request: Request) -> str | None:
    """The request's origin (the one scrapy-rep judged it for, when it did); None: not one."""
    judged = request.meta.get(M.DECISION)
    if judged is not None:  # judged by scrapy-rep's middleware: its origin is known
        return str(judged["origin"])
    return origin_or_none(request.url)


def _set_by(crawler: Crawler) -> str:
    """Who set a User-Agent that is not the setting, in words: the downloader middlewares
    between scrapy-rep's and the guard, not Scrapy's own; warns of any after the guard."""
    found = compat.component_priority_dict(crawler.settings, "DOWNLOADER_MIDDLEWARES")
    # each one loads: Scrapy built them all before the guard, last (or it fails anyway)
    classes = [(load_object(c), int(p)) for c, p in found.items() if p is not None]
    rows = [(f"{c.__module__}.{c.__qualname__}", p, c) for c, p in classes]
    ours = next((p for _, p, c in rows if c is RobotsMiddleware), 0)
    mine = next((p for _, p, c in rows if c is IdentityGuard), IDENTITY_PRIORITY)
    later = [n for n, p, c in rows if p >= mine and c is not IdentityGuard]
    if later:
        logger.warning(
            "scrapy-rep: downloader middleware(s) %(later)s are ordered at or after scrapy-rep's "
            "IdentityGuard (%(mine)s): what they change in a request is not checked",
            {"later": ", ".join(later), "mine": mine},
        )
    between = [
        f"{n} ({p})"
        for n, p, c in sorted(rows, key=lambda row: row[1])
        if ours < p < mine and not n.startswith(("scrapy.", "scrapy_rep."))
    ]
    if not between:
        return "set by the spider or a middleware ordered before scrapy-rep"
    return (
        "not the USER_AGENT setting: set by the spider, or by a downloader middleware "
        f"ordered after scrapy-rep: {', '.join(between)}"
    )
