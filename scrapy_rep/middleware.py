"""The Scrapy downloader middleware: a thin adapter around the sans-IO core.

Data flows one way: request -> origin -> resolver (cache, or one shared
fetch) -> policy -> :class:`~scrapy_rep.gate.OriginGate` (judge, wait or
park) -> :func:`~scrapy_rep.decision.judge` -> download, drop or park ->
:class:`~scrapy_rep.telemetry.Telemetry`. Every request is judged as it
enters the downloader, against the policy current at that moment.

What lives here is only what needs Scrapy: the hooks, the dupefilter,
``engine.crawl``, timers and exceptions. A held request never waits in
Scrapy's queues: a ``request_scheduled`` handler parks it before the
scheduler sees it, and a request that cannot be judged in the downloader is
handed back to the engine to be parked the same way. Timers refetch held
origins; a new policy gives their requests back to be judged. At close,
whatever is still held is dropped with a reason (or requeued to a shared
scrapy-redis queue), never silently lost.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import time
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from scrapy import Request, signals
from scrapy.downloadermiddlewares.robotstxt import RobotsTxtMiddleware
from scrapy.exceptions import DontCloseSpider, NotConfigured
from scrapy.utils.asyncio import is_asyncio_available
from scrapy.utils.misc import load_object

from scrapy_rep import compat
from scrapy_rep import meta as M
from scrapy_rep import signals as rep_signals
from scrapy_rep.audit import AuditLog, PolicyArchive
from scrapy_rep.crawl_delay import CrawlDelay
from scrapy_rep.decision import (
    APPROVED,
    COLLECTION_ANSWERS,
    DOWNLOAD,
    DROP,
    Decision,
    judge,
    withheld,
)
from scrapy_rep.exceptions import ParkedRequest, RepIgnoreRequest
from scrapy_rep.fetch import RobotsFetcher
from scrapy_rep.gate import JUDGE, PARK, OriginGate
from scrapy_rep.origin import NotAnOrigin, origin_of
from scrapy_rep.parking import Held
from scrapy_rep.policy import FetchResult, Policy, Status, classify
from scrapy_rep.resolver import (
    Fetch,
    FetchAbandoned,
    Resolver,
    ResolverSpec,
    SharedResolvers,
)
from scrapy_rep.robotparser import RepRobotParser
from scrapy_rep.settings import RepSettings, SettingError, is_enabled
from scrapy_rep.store import open_store
from scrapy_rep.store.memory import PolicyCache
from scrapy_rep.telemetry import Telemetry

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.http import Response

logger = logging.getLogger(__name__)


class RobotsMiddleware:
    """Obeys robots.txt per RFC 9309, pauses origins that cannot be read, says why."""

    def __init__(self, crawler: Crawler) -> None:
        if not is_enabled(crawler.settings.get):
            raise NotConfigured("REP_ENABLED is off")
        if not is_asyncio_available():
            raise SettingError(
                "scrapy-rep needs Scrapy's asyncio reactor: TWISTED_REACTOR = "
                "'twisted.internet.asyncioreactor.AsyncioSelectorReactor' (Scrapy's default)"
            )
        self.crawler = crawler
        self.config = config = RepSettings.from_settings(crawler.settings.get)
        self.token = config.token
        self.clock = crawler.settings.get("REP_CLOCK") or time.time
        self.fetcher = RobotsFetcher(crawler, config.fetch_timeout, config.max_redirects)
        self.gate: OriginGate[Request] = OriginGate(
            config.pending_wait, config.park_max, config.park_timeout
        )
        self.collection = (
            load_object(config.collection_policy) if config.collection_policy else None
        )
        self.telemetry = Telemetry(
            crawler.stats,
            max_origins=config.cache_max_origins,
            audit=AuditLog(config.decision_log) if config.decision_log else None,
            archive=PolicyArchive(config.policy_archive) if config.policy_archive else None,
            report=config.report_enabled,
        )
        self.crawl_delay = (
            CrawlDelay(crawler, config.crawl_delay_max) if config.crawl_delay_enabled else None
        )
        self.jobdir: str | None = crawler.settings.get("JOBDIR") or None
        self.spec = ResolverSpec.of(config, self.clock, self.jobdir)
        self.resolver = SharedResolvers.acquire(self.spec, self._make_resolver)
        self.resolver.listeners.append(self)
        self._timers: dict[str, asyncio.TimerHandle] = {}
        self._listening = False  # to request_scheduled: see _listen
        self._ua_checked = False
        self._closed = False
        self._noted: set[str] = set()  # origins whose file problems were logged
        connect = crawler.signals.connect
        connect(self._on_opened, signal=signals.spider_opened)
        connect(self._on_idle, signal=signals.spider_idle)
        connect(self._on_closed, signal=signals.spider_closed)
        if self.telemetry.audit is not None:  # the target's own status, for the audit log only
            connect(self._on_response, signal=signals.response_received)
        logger.info("scrapy-rep: obeying robots.txt as %(token)r (RFC 9309)", {"token": self.token})
        compat.log_missing_features(logger)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> RobotsMiddleware:
        return cls(crawler)

    def _make_resolver(self) -> Resolver:
        cache = PolicyCache(self.config.cache_max_origins)
        # an operator's ``scrapy-rep store forget`` empties the local cache too
        shared = open_store(self.config, self.jobdir, on_invalidate=cache.forget)
        return Resolver(
            cache,
            self.config.policy,
            self.clock,
            shared=shared,
            lock_ttl=self.spec.lock_ttl,
            fetch_budget=self.spec.fetch_budget,
        )

    # -- the request path ---------------------------------------------------

    async def process_request(self, request: Request, spider: Any = None) -> Request | None:
        meta = request.meta
        if meta.get(M.DONT_OBEY) or meta.get(M.ROBOTS_REQUEST):
            return None
        try:
            origin = origin_of(request.url)
        except NotAnOrigin:
            return None  # data:, file:, ... are not governed by robots.txt
        withheld_reason = meta.pop(M.DROP, None)
        if withheld_reason is not None:
            self._withhold(origin, request, withheld_reason)
        policy = self.resolver.current(origin)
        now = self.clock()
        cache = "miss" if policy is None else "hit" if policy.fresh(now) else "expired"
        admission = self.gate.admit(origin, policy, self.resolver.pending_since(origin), now)
        if admission.action != JUDGE:
            if admission.action == PARK:
                return self._hand_back(request, admission.reason)
            policy = await self._wait_for_fetch(origin, admission.budget)
            admission = self.gate.admit_fetched(policy)
            if admission.action != JUDGE:
                return self._hand_back(request, admission.reason)
        assert policy is not None
        decision = await self._decide(origin, request, policy)
        record = decision.to_dict()
        meta[M.DECISION] = record
        self.telemetry.judged(origin, record, cache)
        if decision.action == DOWNLOAD:
            if self.crawl_delay is not None:
                self._apply_crawl_delay(request, origin, policy)
            return None
        if decision.action == DROP:
            raise RepIgnoreRequest(record)
        return self._hand_back(request, decision.reason)  # REP_*_ACTION = "park"

    async def ask(self, url: str) -> tuple[Decision, Policy]:
        """The answer a crawl would give for ``url`` now, recording nothing (``scrapy robots``)."""
        origin = origin_of(url)
        policy = self.resolver.current(origin)
        if policy is None or not policy.fresh(self.clock()):
            policy = await self.resolver.resolve(origin, self._fetch)
        return await self._decide(origin, Request(url), policy), policy

    async def _wait_for_fetch(self, origin: str, budget: float) -> Policy | None:
        """The new policy, if the origin's fetch ends within ``budget`` seconds."""
        task = self.resolver.resolve(origin, self._fetch)
        try:
            return await asyncio.wait_for(asyncio.shield(task), max(budget, 1e-9))
        except (asyncio.TimeoutError, FetchAbandoned):
            return None
        except asyncio.CancelledError:
            if task.cancelled():  # the fetch was given up, not this request
                return None
            raise

    async def _decide(self, origin: str, request: Request, policy: Policy) -> Decision:
        robots = self.resolver.cache.robots(policy) if policy.status is Status.OK else None
        collection, problem = APPROVED, None
        if self.collection is not None and policy.status in (Status.OK, Status.UNAVAILABLE):
            collection, problem = await self._ask_collection(request)
        decision = judge(
            origin,
            self.token,
            request.url,
            policy,
            robots,
            collection=collection,
            disallowed_action=self.config.disallowed_action,
            unresolved_collection_action=self.config.collection_unresolved_action,
        )
        return decision if problem is None else replace(decision, detail=problem)

    async def _ask_collection(self, request: Request) -> tuple[str, str | None]:
        """The collection hook's answer, and what was wrong with it (then ``error``)."""
        assert self.collection is not None
        try:
            answer = self.collection(request, self.crawler.spider)
            if inspect.isawaitable(answer):
                answer = await answer
        except Exception as exc:
            return "error", f"REP_COLLECTION_POLICY raised {type(exc).__name__}: {exc}"
        if isinstance(answer, str) and answer in COLLECTION_ANSWERS:
            return answer, None
        problem = (
            f"REP_COLLECTION_POLICY returned {answer!r}; it must return one of "
            f"{', '.join(COLLECTION_ANSWERS)}"
        )
        if "collection-answer" not in self._noted:
            self._noted.add("collection-answer")
            logger.error("scrapy-rep: %(problem)s", {"problem": problem})
        return "error", problem

    def _withhold(self, origin: str, request: Request, reason: str) -> None:
        """Drop a held request for a reason of its own (overflow, expiry): its errback hears it."""
        record = withheld(origin, self.token, request.url, self.resolver.current(origin), reason)
        request.meta[M.DECISION] = record.to_dict()
        self.telemetry.final(origin, request.meta[M.DECISION])
        raise RepIgnoreRequest(request.meta[M.DECISION])

    def _hand_back(self, request: Request, reason: str) -> Request:
        """Give the request back to the engine; ``request_scheduled`` parks it.

        It has passed the dupefilter once: if it is not parked after all, the
        scheduler must not drop it as a duplicate of itself.
        """
        request = request.replace(dont_filter=True)
        request.meta[M.PARK] = reason
        self._listen(True)  # the engine schedules it next: be there to park it
        return request

    # -- fetching -----------------------------------------------------------

    async def _fetch(self, origin: str) -> FetchResult:
        if self._closed or _closing(self.crawler):
            raise FetchAbandoned(origin)
        result = await self.fetcher(origin)
        if result.error and (self._closed or _closing(self.crawler)):
            raise FetchAbandoned(origin)  # cut short by our own close, not the site's fault
        if not self._ua_checked and self.fetcher.user_agent_sent is not None:
            self._ua_checked = True
            self._check_user_agent(self.fetcher.user_agent_sent)
        self.telemetry.fetched(classify(result), result.error, result.truncated, result.redirects)
        return result

    def _check_user_agent(self, sent: str) -> None:
        if self.token.lower() not in sent.lower():
            logger.warning(
                "scrapy-rep: product token %(token)r is not in the User-Agent sent "
                "(%(ua)r); RFC 9309 §2.2.1 asks crawlers to send it",
                {"token": self.token, "ua": sent},
            )

    # -- new policies (the resolver's listener) -----------------------------

    def on_policy(
        self, origin: str, old: Policy | None, new: Policy, fetched: Fetch | None
    ) -> None:
        """A new policy for ``origin``, from any crawler sharing the resolver."""
        if self._closed:
            return
        here = fetched == self._fetch
        self.telemetry.policy(origin, new, here)
        effects = self.gate.on_policy(origin, old, new, self.clock())
        if effects.paused:
            self.telemetry.paused(origin, new)
            self._send(rep_signals.origin_paused, origin, new)
        elif new.status is Status.UNRESOLVED:
            self.telemetry.gave_up(origin, new)
        elif new.status is Status.UNREACHABLE or new.stale_since is not None:
            self.telemetry.note(origin, new)
        elif new.status is Status.UNAVAILABLE:
            self.telemetry.note(origin, new, logging.INFO)
        elif here and new.status is Status.OK:
            self._parsed(origin, new)
        if effects.wake_at is not None:
            self._set_timer(origin, effects.wake_at)
        if effects.resumed:
            self.telemetry.resumed(origin, new)
            self._send(rep_signals.origin_resumed, origin, new)
        released = new.status is not Status.UNRESOLVED  # the others go back to be dropped
        for held in effects.release:
            self._give_back(held, released=released)
        self._listen(self.gate.watching)

    def on_abandoned(self, origin: str) -> None:
        """A fetch ended with its crawler: fetch again for what this crawler holds."""
        if not self._closed and self.gate.holds(origin) and not _closing(self.crawler):
            self.resolver.resolve(origin, self._fetch)

    def _parsed(self, origin: str, policy: Policy) -> None:
        robots = self.resolver.cache.robots(policy)
        if robots is None:
            return
        if robots.diagnostics:
            self.telemetry.inc("rep/robots/with_diagnostics")
            unreadable = [str(d) for d in robots.diagnostics if "UTF-16" in d.text]
            if unreadable and origin not in self._noted:
                self._noted.add(origin)
                logger.warning(
                    "scrapy-rep: %(origin)s: robots.txt is unreadable (%(why)s); "
                    "everything is allowed",
                    {"origin": origin, "why": unreadable[0]},
                )
        compat.send_robots_parsed(
            self.crawler,
            RepRobotParser(robots, self.token),
            self.fetcher.sent.pop(origin, None) or Request(policy.url),
        )

    def _send(self, signal: object, origin: str, policy: Policy) -> None:
        self.crawler.signals.send_catch_log(
            signal=signal, origin=origin, policy=policy, spider=self.crawler.spider
        )

    # -- parking ------------------------------------------------------------

    def _listen(self, on: bool) -> None:
        """Hear ``request_scheduled`` only while something may have to be parked.

        Every receiver costs each scheduled request ~10 µs of signal dispatch,
        about a tenth of a lean crawl's CPU (``benchmarks/bench_crawl.py``).
        Nothing depends on it for safety: a request that reaches the scheduler
        unheard is judged in the downloader and handed back, which listens again.
        """
        if on and not self._listening:
            self.crawler.signals.connect(self._on_scheduled, signal=signals.request_scheduled)
        elif not on and self._listening:
            self.crawler.signals.disconnect(self._on_scheduled, signal=signals.request_scheduled)
        self._listening = on

    def _on_scheduled(self, request: Request, spider: Any = None) -> None:
        """Park requests that cannot be judged now, before the scheduler takes them."""
        meta = request.meta
        if meta.get(M.DONT_OBEY) or meta.get(M.ROBOTS_REQUEST) or M.DROP in meta:
            return  # a request on its way to be dropped is dropped in the downloader
        handed_back = meta.pop(M.PARK, None)
        try:
            origin = origin_of(request.url)
        except NotAnOrigin:
            return
        now = self.clock()
        reason = self.gate.hold_reason(
            origin,
            handed_back,
            self.resolver.current(origin),
            self.resolver.pending_since(origin),
            now,
        )
        if reason is None:
            return
        if handed_back is None and self._seen_before(request):
            return  # a duplicate: the scheduler's dupefilter drops it, as it would unparked
        since = meta.setdefault(M.PARKED_AT, now)
        if self.gate.park(origin, request, since, reason):
            self.telemetry.parked(origin, request.url, reason)
            self._plan_wake(origin)
            raise ParkedRequest(reason)
        # The scheduler takes it (its dupefilter has seen it: _seen_before) and
        # the downloader drops it, so its errback hears why.
        meta[M.DROP] = "park-overflow"
        request.dont_filter = True

    def _seen_before(self, request: Request) -> bool:
        """Ask the scheduler's dupefilter before parking: released requests skip it."""
        dupefilter = getattr(compat.scheduler_of(self.crawler.engine), "df", None)
        if request.dont_filter or dupefilter is None:
            return False
        return bool(dupefilter.request_seen(request))

    def _plan_wake(self, origin: str) -> None:
        """Make sure a held origin will be refetched (unless a fetch is under way)."""
        if self.resolver.pending_since(origin) is not None:
            return
        when = self.gate.wake_due(origin, self.resolver.current(origin), self.clock())
        if when is not None:
            self._set_timer(origin, when)

    def _set_timer(self, origin: str, when: float) -> None:
        """Refetch ``origin``'s robots.txt at ``when`` (one timer per origin)."""
        old = self._timers.pop(origin, None)
        if old is not None:
            old.cancel()
        delay = max(0.0, when - self.clock())
        self._timers[origin] = asyncio.get_event_loop().call_later(delay, self._wake, origin)

    def _wake(self, origin: str) -> None:
        """Refetch for the requests held here; with none held, the next request will."""
        self._timers.pop(origin, None)
        if self.gate.woken(origin) and not self._closed:
            self.resolver.resolve(origin, self._fetch)

    def _give_back(self, held: Held[Request], *, released: bool = True, drop: str = "") -> None:
        """Hand a held request back to the engine, to be judged (or dropped: ``drop``).

        Once the engine is closing, a request given to it would be lost:
        it ends here instead, with a reason.
        """
        if _closing(self.crawler):
            self._end_at_close(held)
            return
        request = held.item
        if drop:
            request.meta[M.DROP] = drop  # dropped in the downloader, where its errback hears it
        elif released:
            self.telemetry.released(held.origin, request.url)
        engine = self.crawler.engine
        assert engine is not None
        engine.crawl(request.replace(dont_filter=True))  # the dupefilter has seen it already

    def _end_at_close(self, held: Held[Request]) -> None:
        policy = self.resolver.current(held.origin)
        record = withheld(held.origin, self.token, held.item.url, policy, "spider-closed")
        held.item.meta[M.DECISION] = record.to_dict()
        self.telemetry.final(held.origin, held.item.meta[M.DECISION])

    def _on_idle(self, spider: Any = None) -> None:
        self.telemetry.flush()
        for held in self.gate.expire(self.clock()):
            self._give_back(held, drop="park-expired")
        for origin in self.gate.origins_without_wake():
            self._plan_wake(origin)
        if len(self.gate):
            raise DontCloseSpider

    # -- open and close -----------------------------------------------------

    def _on_opened(self, spider: Any = None) -> None:
        _warn_if_builtin_active(self.crawler)

    def _on_closed(self, spider: Any = None, reason: str = "") -> Any:
        self._closed = True
        for timer in self._timers.values():
            timer.cancel()
        self._timers.clear()
        held = self.gate.close()
        queue = self._shared_queue() if held else None
        left = 0
        for each in held:
            if queue is not None and self._requeue(queue, each.item):
                continue
            self._end_at_close(each)
            left += 1
        self.telemetry.closed(reason, left)
        self.resolver.listeners.remove(self)
        if SharedResolvers.leave(self.spec) and self.resolver.shared is not None:
            return self.resolver.shared.close()  # the last user closes the connections
        return None

    def _shared_queue(self) -> Any:
        """A scrapy-redis scheduler, whose queue the cluster shares, or None.

        Held requests live in this worker's memory. When it closes with some
        still held, they go back into the shared queue (``REP_REQUEUE_PARKED``),
        so another worker takes them, and parks them again while their origin is
        paused, instead of losing them.
        """
        if not self.config.requeue_parked:
            return None
        try:
            from scrapy_redis.scheduler import Scheduler as RedisScheduler
        except ImportError:
            return None
        scheduler = compat.scheduler_of(self.crawler.engine)
        return scheduler if isinstance(scheduler, RedisScheduler) else None

    def _requeue(self, scheduler: Any, request: Request) -> bool:
        try:
            scheduler.enqueue_request(request.replace(dont_filter=True))
        except Exception as exc:
            logger.warning(
                "scrapy-rep: could not push a held request back to the shared queue: %(error)s",
                {"error": f"{type(exc).__name__}: {exc}"},
            )
            return False
        self.telemetry.requeued(request.url)
        return True

    # -- Crawl-delay and the audit trail ------------------------------------

    def _apply_crawl_delay(self, request: Request, origin: str, policy: Policy) -> None:
        assert self.crawl_delay is not None
        known, delay = self.crawl_delay.known(origin, policy.digest)
        if not known:
            robots = self.resolver.cache.robots(policy) if policy.status is Status.OK else None
            asked = robots.crawl_delay(self.token) if robots is not None else None
            delay = self.crawl_delay.decide(origin, policy.digest, asked)
            self.telemetry.counts.crawl_delay(origin, delay)
        if delay:
            self.crawl_delay.apply(request, delay)

    def _on_response(self, response: Response, request: Request, spider: Any = None) -> None:
        """With ``REP_DECISION_LOG``: each downloaded page's own HTTP status."""
        decision = request.meta.get(M.DECISION)
        audit = self.telemetry.audit
        if audit is not None and decision is not None and not request.meta.get(M.ROBOTS_REQUEST):
            audit.write(
                "response",
                {
                    "url": decision["url"],
                    "origin": decision["origin"],
                    "target_status": response.status,  # never mixed with the robots.txt one
                    "response_url": response.url,
                },
            )


def _closing(crawler: Crawler) -> bool:
    """Whether the engine is closing the spider (requests given to it now would be lost)."""
    engine = crawler.engine
    slot = getattr(engine, "_slot", None)
    return engine is None or slot is None or getattr(slot, "closing", None) is not None


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
