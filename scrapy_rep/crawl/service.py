"""The crawl's robots.txt service: one per crawler, one admission path for every client.

:meth:`RobotsService.answer` is the one admission path (carried out by
:class:`~scrapy_rep.crawl.admission.AdmissionPath`); the downloader middleware,
the browser guard, ``scrapy robots`` and the SitemapSpider's robots.txt
request are its clients and hold no admission logic of their own.

The service owns what lives as long as the crawl: the robots.txt fetcher,
the resolver and this crawler's :class:`~scrapy_rep.crawl.listener.PolicyListener`
(its fetches, and what each new policy means here), the gate and
:class:`Holding` (where held requests wait), Crawl-delay, TDMRep, the collection hook,
the page pauses and their sharing (:class:`~scrapy_rep.crawl.shared_pauses.SharedPauses`),
the sink and the open and close handlers. The downloader middleware makes it
(:meth:`RobotsService.of`); the other clients find it
(:meth:`RobotsService.running`), and without it they fail closed: a browser
render whose page was never judged has nothing to judge its sub-requests by.
"""

from __future__ import annotations

import logging
import weakref
from collections.abc import Awaitable, Coroutine
from dataclasses import replace
from functools import partial
from typing import TYPE_CHECKING, Any

from scrapy import Request, signals
from scrapy.downloadermiddlewares.robotstxt import RobotsTxtMiddleware
from scrapy.exceptions import NotConfigured
from scrapy.utils.asyncio import is_asyncio_available

from scrapy_rep.core.decision import DecisionRecord
from scrapy_rep.core.gate import OriginGate
from scrapy_rep.core.policy import Policy, Status
from scrapy_rep.core.pushback import Pushback
from scrapy_rep.core.tdmrep import USE as TDM_USE
from scrapy_rep.core.waiting_room import waiting_bound
from scrapy_rep.crawl import compat, oneshot, parts
from scrapy_rep.crawl.admission import AdmissionPath
from scrapy_rep.crawl.collection import CollectionHook, load_collection_policy
from scrapy_rep.crawl.crawl_delay import CrawlDelay, Turn
from scrapy_rep.crawl.fetch import RobotsFetcher
from scrapy_rep.crawl.handover import Handover
from scrapy_rep.crawl.held_records import HeldRecords
from scrapy_rep.crawl.listener import PolicyListener
from scrapy_rep.crawl.pushback import PageSignals
from scrapy_rep.crawl.shared_pauses import SharedPauses
from scrapy_rep.crawl.tdmrep import TdmRep
from scrapy_rep.crawl.telemetry import Telemetry
from scrapy_rep.runtime.logs import bound_lines
from scrapy_rep.runtime.resolver import Resolver, ResolverSpec, SharedResolvers
from scrapy_rep.runtime.settings import RepSettings, SettingError, is_enabled
from scrapy_rep.runtime.store import open_store
from scrapy_rep.runtime.store.factory import shared_pacing
from scrapy_rep.runtime.store.memory import EVICTED_PER_CACHED, PolicyCache
from scrapy_rep.runtime.tdmrep import TDMREP

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.http import Response

logger = logging.getLogger(__name__)


class RobotsService:
    """Builds and owns the crawl's parts, opens and closes them; every client asks it."""

    @classmethod
    def of(cls, crawler: Crawler) -> RobotsService:
        """The crawler's service, made on first use (by the downloader middleware)."""
        found = _SERVICES.get(crawler)
        if found is None:
            found = _SERVICES[crawler] = cls(crawler)
        return found

    @classmethod
    def running(cls, crawler: Crawler) -> RobotsService | None:
        """The crawler's service if the downloader middleware made one; None: not enabled."""
        return _SERVICES.get(crawler)

    def __init__(self, crawler: Crawler) -> None:
        if not is_enabled(crawler.settings.get):
            raise NotConfigured("REP_ENABLED is off")
        if not is_asyncio_available():
            raise SettingError(
                "scrapy-rep needs Scrapy's asyncio reactor: TWISTED_REACTOR = "
                "'twisted.internet.asyncioreactor.AsyncioSelectorReactor' (Scrapy's default)"
            )
        self.crawler = crawler
        bound_lines()  # no log line past MAX_RECORD, whatever a call site forgets
        self.config = config = RepSettings.of(crawler)
        self.token = config.token
        #: the time and the timers (refetches, park expiry): a test's clock, given in REP_CLOCK
        self.timers = config.clock
        self.clock = self.timers.now
        self.fetcher = RobotsFetcher(
            crawler,
            config.fetch_timeout,
            config.max_redirects,
            token=config.token,
            excluded=config.exclude,
        )
        self.jobdir: str | None = crawler.settings.get("JOBDIR") or None
        self.spec = ResolverSpec.of(config, self.timers, self.jobdir)
        #: ``scrapy fetch`` and the like: wait for the whole fetch, then answer; hold nothing
        self.one_shot = oneshot.command_of(crawler)
        wait = config.pending_wait if self.one_shot is None else self.spec.fetch_budget
        # a one-shot command's requests all wait: none may be dropped for want of room
        concurrency = crawler.settings.getint("CONCURRENT_REQUESTS")
        #: what pages say while they are crawled (429, 503, 403s): the pure side, which the
        #: gate asks too; None: every row of the page status table is off
        rows_on = any(action != "off" for action in config.pushback.actions.values())
        heard = Pushback(replace(config.pushback, ramp_max=_ramp_max(crawler))) if rows_on else None
        self.gate: OriginGate[Request] = OriginGate(
            wait,
            config.park_max,
            config.park_timeout,
            max_waiting=waiting_bound(concurrency) if self.one_shot is None else None,
            pushback=heard,
        )
        hook = load_collection_policy(config.collection_policy)
        collection = CollectionHook(hook) if hook is not None else None
        #: REP_EXCLUDE: sites dropped before any fetch (None: no list, no cost)
        self.excluded = config.exclude
        self.telemetry = Telemetry.of(crawler)
        self.resolver = SharedResolvers.acquire(self.spec, self._make_resolver)
        #: the resolver's fetch for this crawler, and the parked requests it carries out on
        self.listener = PolicyListener(
            crawler,
            self.fetcher,
            self.gate,
            self.resolver,
            self.telemetry,
            clock=self.timers,
            token=self.token,
            handover=Handover(
                crawler,
                self.telemetry,
                config.requeue_parked,
                self.jobdir,
                token=self.token,
                policy_of=self.resolver.current,
            ),
        )
        self.fetch = self.listener.fetch
        self.holding = self.listener.holding
        shared = self.resolver.shared
        #: the one pacing of sends: Crawl-delay, and in a cluster the learnt pace with it
        self.crawl_delay = CrawlDelay(
            crawler,
            config.crawl_delay_max,
            self.telemetry,
            self._asked_delay if config.crawl_delay_enabled else None,
            shared_pacing(shared) if config.crawl_delay_shared else None,
            remember=config.cache_max_origins,
        )
        #: tdmrep.json, fetched only when a declared use is the one TDMRep speaks of
        self.tdmrep = (
            TdmRep(
                crawler,
                config,
                self.telemetry,
                SharedResolvers.acquire(self.spec, partial(self.resolver.for_file, TDMREP), TDMREP),
                self.listener.closing,
            )
            if TDM_USE in config.uses
            else None
        )
        #: a page's pause is the cluster's (Redis) or outlives the crawl (SQLite)
        self.pauses = (
            SharedPauses(shared)
            if heard is not None and shared is not None and hasattr(shared, "save_pause")
            else None
        )
        self.pushback = (
            PageSignals(
                crawler,
                self.gate,
                self.holding,
                self.telemetry,
                heard,
                clock=self.timers,
                share=self.pauses.save if self.pauses is not None else None,
                one_shot=self.one_shot,
            )
            if heard is not None
            else None
        )
        if self.pauses is not None and self.pushback is not None:
            self.pauses.listen(self.pushback.adopt, self.pushback.forgotten)
        self.admission = AdmissionPath(
            crawler,
            config,
            gate=self.gate,
            resolver=self.resolver,
            fetcher=self.fetcher,
            fetch=self.fetch,
            telemetry=self.telemetry,
            clock=self.timers,
            excluded=self.excluded,
            one_shot=self.one_shot,
            collection=collection,
            tdmrep=self.tdmrep,
            pushback=self.pushback,
        )
        connect = crawler.signals.connect
        connect(self._on_opened, signal=signals.spider_opened)
        connect(self._on_idle, signal=signals.spider_idle)
        connect(self._on_closed, signal=signals.spider_closed)
        if self.telemetry.audit is not None:  # the target's own status, for the audit log only
            connect(self.telemetry.response, signal=signals.response_received)
        logger.info("scrapy-rep: obeying robots.txt as %(token)r (RFC 9309)", {"token": self.token})
        compat.log_missing_features(logger)

    def _make_resolver(self) -> Resolver:
        cache = PolicyCache(
            self.config.cache_max_origins,
            compiled_max=self.config.cache_compiled_origins,
            max_bytes=self.config.cache_max_bytes,
            compiled_bytes=self.config.cache_compiled_bytes,
        )
        # an operator's ``scrapy-rep store forget`` empties the local cache too
        shared = open_store(self.config, self.jobdir, on_invalidate=cache.forget)
        if shared is None:  # nothing else to ask for an evicted origin: keep it compact
            cache.evicted_max = EVICTED_PER_CACHED * self.config.cache_max_origins
        return Resolver.of(self.spec, cache, shared)

    # -- the one admission path (AdmissionPath) --------------------------------

    def answer(
        self, origin: str, request: Request, *, downloader: bool = False
    ) -> Coroutine[Any, Any, tuple[DecisionRecord, Policy | None]]:
        """The decision record for ``request`` and the policy it rests on, to await (see
        :meth:`AdmissionPath.answer <scrapy_rep.crawl.admission.AdmissionPath.answer>`; its own
        coroutine, so the hot path awaits one frame, not two)."""
        return self.admission.answer(origin, request, downloader=downloader)

    def excluded_record(
        self, origin: str, request: Request, downloader: bool
    ) -> DecisionRecord | None:
        """The record of a request to a site on ``REP_EXCLUDE``, or None."""
        return self.admission.excluded_record(origin, request, downloader)

    async def robots_for_spider(self, origin: str, request: Request) -> Response | None:
        """A spider's own robots.txt request, answered from the cache when it is fresh and ok."""
        return await self.admission.robots_for_spider(origin, request)

    async def ask(self, url: str) -> tuple[DecisionRecord, Policy | None]:
        """The answer a crawl would give for ``url`` now, recording nothing (``scrapy robots``)."""
        return await self.admission.ask(url)

    # -- what the clients ask besides ---------------------------------------------

    def pace(
        self, request: Request, origin: str, policy: Policy
    ) -> Coroutine[Any, Any, Turn | None] | None:
        """Before a download: its slot keeps the origin's Crawl-delay; with cluster pacing,
        the send's moment to await, ``max(Crawl-delay, learnt pace)`` after the cluster's
        last (None: nothing to await for an undelayed, unpaced origin)."""
        pushback = self.pushback
        learnt = pushback.core.gap(origin) if pushback is not None else 0.0
        return self.crawl_delay.keep(request, origin, policy, learnt)

    def to_parking(self, request: Request, reason: str) -> Request:
        """A held request, handed back to the engine, to be parked before the scheduler."""
        return self.holding.to_parking(request, reason)

    def drop_held(self, origin: str, request: Request, reason: str) -> None:
        """Drop a held request for a reason of its own (raises :class:`RepIgnoreRequest`)."""
        self.holding.drop_held(origin, request, reason)

    def subrequest(self, origin: str | None, record: DecisionRecord, **where: Any) -> None:
        """A browser's sub-request judged: recorded with the page and hop it came from."""
        self.telemetry.subrequest(origin, record, **where)

    def final(self, origin: str | None, record: DecisionRecord) -> None:
        """A request's last answer, given by a client (a render's navigation dropped)."""
        self.telemetry.final(origin, record)

    def fetch_in_own_slot(self) -> None:
        """robots.txt (and tdmrep.json) no longer queue behind the host's slot: renders hold it."""
        self.fetcher.use_own_slot()
        if self.tdmrep is not None:
            self.tdmrep.use_own_slot()

    def _asked_delay(self, policy: Policy) -> float | None:
        robots = self.resolver.cache.robots(policy) if policy.status is Status.OK else None
        return robots.crawl_delay(self.token) if robots is not None else None

    # -- open and close -----------------------------------------------------

    def _on_opened(self, spider: Any = None) -> Any:
        _warn_if_set_up_amiss(self.crawler)
        self.holding.open(HeldRecords.open(self.crawler, self.config, self.telemetry))
        return None

    def _on_idle(self, spider: Any = None) -> None:
        """Nothing to do: pages' pauses first (blocked ends, ramps go on), then what is parked."""
        if self.pushback is not None:
            self.pushback.on_idle()
        self.holding.on_idle(spider)

    def _on_closed(self, spider: Any = None, reason: str = "") -> Any:
        if self.pushback is not None:
            self.pushback.close()
        if self.pauses is not None:
            self.pauses.summary()
        name = getattr(spider or self.crawler.spider, "name", None) or self.crawler.spidercls.name
        self.telemetry.closed(reason, self.holding.close(), spider=name, token=self.token)
        self.listener.leave()
        steps: list[Awaitable[None]] = []
        records = self.holding.close_records()  # handed over by now: the records go
        if records is not None:
            steps.append(records)
        if self.tdmrep is not None:
            SharedResolvers.leave(self.spec, TDMREP)  # the robots.txt resolver's store, closed next
        if SharedResolvers.leave(self.spec) and self.resolver.shared is not None:
            steps.append(self.resolver.shared.close())  # the last user closes the connections
        return _in_turn(steps) if steps else None


def _ramp_max(crawler: Crawler) -> int:
    """Requests in flight at which a page pause's slow start ends: the origin's concurrency."""
    per_domain = crawler.settings.getint("CONCURRENT_REQUESTS_PER_DOMAIN")
    per_ip = crawler.settings.getint("CONCURRENT_REQUESTS_PER_IP")
    return max(1, per_ip or per_domain or 8)


async def _in_turn(steps: list[Awaitable[None]]) -> None:
    for step in steps:
        await step


def _warn_if_builtin_active(crawler: Crawler) -> None:
    """Two robots middlewares would fetch every robots.txt twice; say how to fix it."""
    engine = crawler.engine
    manager = getattr(getattr(engine, "downloader", None), "middleware", None)
    if any(isinstance(mw, RobotsTxtMiddleware) for mw in getattr(manager, "middlewares", ())):
        logger.warning(
            "scrapy-rep: Scrapy's RobotsTxtMiddleware is active too (ROBOTSTXT_OBEY=True), so "
            "robots.txt is fetched twice; enable scrapy-rep with ADDONS = "
            "{'scrapy_rep.Addon': 100}, or set ROBOTSTXT_OBEY = False"
        )


def _warn_if_set_up_amiss(crawler: Crawler) -> None:
    """At start: two robots middlewares, or (set up by hand, no add-on) what the add-on
    installs beside the middleware lacking; each said once, with how to fix it."""
    _warn_if_builtin_active(crawler)
    lacking = parts.missing(crawler.settings)
    if lacking:
        logger.warning(
            "scrapy-rep: set up without the add-on, this crawl lacks %(what)s: %(names)s not "
            "enabled; use ADDONS = {'scrapy_rep.Addon': 100}, or list them as the migration "
            "guide does",
            {
                "what": "; ".join(part[2] for part in lacking),
                "names": ", ".join(part[1].rsplit(".", 1)[1] for part in lacking),
            },
        )


#: crawler -> its service (``RobotsService.of``); gone with the crawler
_SERVICES: weakref.WeakKeyDictionary[Any, RobotsService] = weakref.WeakKeyDictionary()
