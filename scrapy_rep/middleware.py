"""The Scrapy downloader middleware: a thin shell around the sans-IO core.

Data flows one way: request -> origin -> resolver (cache, or one shared
fetch) -> policy -> :func:`~scrapy_rep.decision.judge` -> download, drop or
park. Every request is judged as it enters the downloader, against the
policy current at that moment.

Held requests never wait in Scrapy's queues: a ``request_scheduled``
handler parks requests of a paused origin before the scheduler sees them,
and a request that finds its origin paused (or its fetch slow) in the
downloader is handed back to the engine to be parked the same way. A timer
per paused origin refetches its robots.txt; the new policy releases (or
drops, with a reason) what it held. ``spider_idle`` keeps the spider open
while anything is parked, and ``spider_closed`` counts what was left.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from scrapy import Request, signals
from scrapy.downloadermiddlewares.robotstxt import RobotsTxtMiddleware
from scrapy.exceptions import DontCloseSpider, NotConfigured
from scrapy.utils.asyncio import is_asyncio_available
from scrapy.utils.conf import build_component_list
from scrapy.utils.misc import load_object

from scrapy_rep import compat
from scrapy_rep import signals as rep_signals
from scrapy_rep.audit import AuditLog, PolicyArchive
from scrapy_rep.decision import APPROVED, DOWNLOAD, DROP, Decision, judge, withheld
from scrapy_rep.exceptions import Parked, RepIgnoreRequest
from scrapy_rep.fetch import META_KEY, RobotsFetcher
from scrapy_rep.origin import NotAnOrigin, origin_of
from scrapy_rep.parking import ParkingLot
from scrapy_rep.policy import FetchResult, Policy, PolicyConfig, Status, classify
from scrapy_rep.report import CrawlCounts, report_lines
from scrapy_rep.resolver import Resolver
from scrapy_rep.settings import RepSettings, SettingError
from scrapy_rep.store.base import SharedStore
from scrapy_rep.store.memory import PolicyCache

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.http import Response

logger = logging.getLogger(__name__)

_HELD = (Status.PAUSED, Status.UNRESOLVED)


class _Shared:
    """Resolvers shared by the crawlers of one process with the same settings.

    Two spiders in one process (even with different product tokens) then
    share one fetch and one cache per origin. A resolver lives while a
    crawler uses it, so sequential crawls start fresh.
    """

    _resolvers: dict[tuple[Any, ...], tuple[Resolver, int]] = {}  # noqa: RUF012

    @classmethod
    def acquire(cls, key: tuple[Any, ...], make: Callable[[], Resolver]) -> Resolver:
        resolver, users = cls._resolvers.get(key) or (make(), 0)
        cls._resolvers[key] = (resolver, users + 1)
        return resolver

    @classmethod
    def release(cls, key: tuple[Any, ...]) -> bool:
        """True when that was the last user (who then closes the resolver's store)."""
        resolver, users = cls._resolvers[key]
        if users <= 1:
            del cls._resolvers[key]
            return True
        cls._resolvers[key] = (resolver, users - 1)
        return False


def _shared_key(settings: RepSettings, clock: Callable[[], float]) -> tuple[Any, ...]:
    policy: PolicyConfig = settings.policy
    return (
        settings.store,
        settings.redis_url,
        settings.redis_prefix,
        settings.cache_max_origins,
        tuple(sorted((k, v.value) for k, v in policy.actions.items())),
        *(getattr(policy, f) for f in ("ttl", "min_ttl", "pause_initial", "pause_max")),
        *(getattr(policy, f) for f in ("pause_max_tries", "retry_after_max", "use_stale")),
        policy.unreachable_max_age,
        id(clock),
    )


class RobotsMiddleware:
    """Obeys robots.txt per RFC 9309, pauses origins that cannot be read, says why."""

    def __init__(self, crawler: Crawler) -> None:
        if not crawler.settings.getbool("REP_ENABLED", True):
            raise NotConfigured("REP_ENABLED is off")
        if not is_asyncio_available():
            raise SettingError(
                "scrapy-rep needs Scrapy's asyncio reactor: TWISTED_REACTOR = "
                "'twisted.internet.asyncioreactor.AsyncioSelectorReactor' (Scrapy's default)"
            )
        self.crawler = crawler
        self.config = config = RepSettings.from_settings(crawler.settings.get)
        self.token = config.token
        self.stats = crawler.stats
        self.clock: Callable[[], float] = crawler.settings.get("REP_CLOCK") or time.time
        self.fetcher = RobotsFetcher(crawler, config.fetch_timeout, config.max_redirects)
        self.parking: ParkingLot[Request] = ParkingLot(config.park_max)
        self.collection: Callable[[Request, Any], str] | None = (
            load_object(config.collection_policy) if config.collection_policy else None
        )
        self.audit = AuditLog(config.decision_log) if config.decision_log else None
        self.archive = PolicyArchive(config.policy_archive) if config.policy_archive else None
        self.counts = CrawlCounts(config.cache_max_origins)  # for the report at close
        self._shared_key = _shared_key(config, self.clock)
        self.resolver = _Shared.acquire(self._shared_key, self._make_resolver)
        self.resolver.listeners.append(self._on_policy)
        self._timers: dict[str, asyncio.TimerHandle] = {}
        self._floors: dict[str, float] = {}  # download slot -> Crawl-delay floor
        self._delays: dict[str, tuple[str | None, float | None]] = {}  # origin -> digest, delay
        self._ua_checked = False
        self._closed = False
        self._paused: set[str] = set()  # origins whose new requests are parked when scheduled
        self._listening = False  # to request_scheduled: see _listen
        self._fetching: dict[str, float] = {}  # origin -> loop time its fetch started
        connect = crawler.signals.connect
        connect(self._on_idle, signal=signals.spider_idle)
        connect(self._on_closed, signal=signals.spider_closed)
        logger.info("scrapy-rep: obeying robots.txt as %(token)r (RFC 9309)", {"token": self.token})
        compat.log_missing_features(logger)
        _warn_if_builtin_active(crawler)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> RobotsMiddleware:
        # Every process_response hop costs each response a coroutine: only the
        # audit log needs one.
        if cls is RobotsMiddleware and crawler.settings.get("REP_DECISION_LOG"):
            return AuditedRobotsMiddleware(crawler)
        return cls(crawler)

    def _make_resolver(self) -> Resolver:
        cache = PolicyCache(self.config.cache_max_origins)
        shared = self._redis_store(cache) if self.config.store == "redis" else None
        return Resolver(
            cache,
            self.config.policy,
            self.clock,
            shared=shared,
            lock_ttl=self.config.fetch_timeout * (self.config.max_redirects + 1) + 5,
        )

    def _redis_store(self, cache: PolicyCache) -> SharedStore:
        """The cluster's store; an operator's ``scrapy-rep store forget`` empties ``cache``."""
        from scrapy_rep.store.redis import RedisStore  # redis is an optional dependency

        store = RedisStore.from_url(
            self.config.redis_url,
            prefix=self.config.redis_prefix,
            retention=self.config.redis_retention,
        )
        store.on_invalidate(cache.forget)
        return store

    # -- the request path ---------------------------------------------------

    async def process_request(self, request: Request, spider: Any = None) -> Request | None:
        if request.meta.get("dont_obey_robotstxt") or request.meta.get(META_KEY):
            return None
        try:
            origin = origin_of(request.url)
        except NotAnOrigin:
            return None  # data:, file:, ... are not governed by robots.txt
        withheld_reason = request.meta.pop("rep_drop", None)
        if withheld_reason is not None:
            record = withheld(
                origin, self.token, request.url, self.resolver.current(origin), withheld_reason
            ).to_dict()
            request.meta["rep_decision"] = record
            self._count_drop(request, withheld_reason)
            raise RepIgnoreRequest(record)
        policy = await self._current_policy(origin)
        if policy is None:
            return self._hand_back(request, "origin-pending")
        decision = self._judge(origin, request, policy)
        if decision.action == DOWNLOAD:
            self._apply_crawl_delay(request, origin, policy)
            return None
        if decision.action == DROP:
            raise RepIgnoreRequest(request.meta["rep_decision"])
        return self._hand_back(request, decision.reason)

    async def _current_policy(self, origin: str) -> Policy | None:
        """The fresh policy, waiting for a fetch at most REP_PENDING_WAIT; None if still pending."""
        policy = self.resolver.current(origin)
        if policy is not None and policy.fresh(self.clock()):
            self.stats.inc_value("rep/cache/hit")
            return policy
        self.stats.inc_value("rep/cache/miss" if policy is None else "rep/cache/expired")
        if policy is not None and policy.status in _HELD and origin in self._timers:
            return policy  # its refetch is already scheduled; judge as held
        task = self.resolver.resolve(origin, self._fetch)
        wait = self.config.pending_wait
        started = self._fetching.get(origin)
        if started is not None:  # a late request waits only for what is left of the wait
            wait -= asyncio.get_running_loop().time() - started
        try:
            return await asyncio.wait_for(asyncio.shield(task), max(wait, 1e-9))
        except asyncio.TimeoutError:
            return None

    def _judge(self, origin: str, request: Request, policy: Policy) -> Decision:
        robots = self.resolver.cache.robots(policy) if policy.status is Status.OK else None
        collection = APPROVED
        if self.collection is not None and policy.status in (Status.OK, Status.UNAVAILABLE):
            collection = self.collection(request, self.crawler.spider)
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
        record = decision.to_dict()
        request.meta["rep_decision"] = record
        self.stats.inc_value("rep/requests/judged")
        self.stats.inc_value(f"rep/decision/{decision.rep_decision}")
        if decision.rep_decision == "disallow":
            self.stats.inc_value("robotstxt/forbidden")
        if decision.action == DROP:
            self.stats.inc_value(f"rep/dropped/{decision.reason}")
            self.counts.dropped(origin, decision.reason)
            logger.debug(
                "scrapy-rep: dropped %(url)s for %(token)r: %(detail)s",
                {"url": request.url, "token": self.token, "detail": decision.detail},
                extra={"spider": self.crawler.spider},
            )
        elif decision.action == DOWNLOAD:
            self.stats.inc_value("rep/downloaded")
            self.counts.downloaded(origin)
        if self.audit is not None:
            self.audit.write("decision", record)
        return decision

    def _hand_back(self, request: Request, reason: str) -> Request:
        """Give the request back to the engine; ``request_scheduled`` parks it.

        It has passed the dupefilter once: if it is not parked after all, the
        scheduler must not drop it as a duplicate of itself.
        """
        request = request.replace(dont_filter=True)
        request.meta["rep_park"] = reason
        self._listen(True)  # the engine schedules it next: be there to park it
        return request

    # -- fetching -----------------------------------------------------------

    async def _fetch(self, origin: str) -> FetchResult:
        self._fetching[origin] = asyncio.get_running_loop().time()
        try:
            result = await self.fetcher(origin)
        finally:
            self._fetching.pop(origin, None)
        if not self._ua_checked and self.fetcher.user_agent_sent is not None:
            self._ua_checked = True
            self._check_user_agent(self.fetcher.user_agent_sent)
        outcome = classify(result)
        self.stats.inc_value("rep/fetch/count")
        self.stats.inc_value(f"rep/fetch/outcome/{outcome}")
        if result.error:
            self.stats.inc_value(f"rep/fetch/error/{result.error}")
        if result.truncated:
            self.stats.inc_value("rep/fetch/truncated")
        if result.redirects:
            self.stats.inc_value("rep/fetch/redirected")
        return result

    def _check_user_agent(self, sent: str) -> None:
        if self.token.lower() not in sent.lower():
            logger.warning(
                "scrapy-rep: product token %(token)r is not in the User-Agent sent "
                "(%(ua)r); RFC 9309 §2.2.1 asks crawlers to send it",
                {"token": self.token, "ua": sent},
            )

    def _on_policy(self, origin: str, old: Policy | None, new: Policy, fetched: bool) -> None:
        """A new policy for ``origin`` (from any crawler sharing the resolver)."""
        if self._closed:
            return
        if fetched:
            self.counts.fetched(origin, new.status.value)
        else:
            self.counts.status(origin, new.status.value)
        archived = self._archived(new) if fetched else None
        if fetched and self.audit is not None:
            self.audit.write("fetch", {**_fetch_record(origin, new), "archive": archived})
        was_held = old is not None and old.status in _HELD
        self._paused.discard(origin)
        if new.status is Status.PAUSED:
            self._paused.add(origin)
            self._listen(True)
            self.stats.inc_value(f"rep/origin/paused/{new.outcome}")
            logger.info(
                "scrapy-rep: %(origin)s paused until %(until)s: %(reason)s",
                {"origin": origin, "until": _when(new.expires_at), "reason": new.reason},
            )
            self._send(rep_signals.origin_paused, origin, new)
            self._wake_at(origin, new.expires_at)
            return
        if new.status is Status.UNRESOLVED:
            logger.warning(
                "scrapy-rep: %(origin)s: %(reason)s", {"origin": origin, "reason": new.reason}
            )
            self._drop_parked(origin)
            self._listen(bool(self._paused or len(self.parking)))
            return
        if new.status is Status.UNREACHABLE or new.stale_since is not None:
            logger.warning(
                "scrapy-rep: %(origin)s: %(reason)s", {"origin": origin, "reason": new.reason}
            )
            self._wake_at(origin, new.expires_at)
        elif new.status is Status.UNAVAILABLE:
            logger.info(
                "scrapy-rep: %(origin)s: %(reason)s", {"origin": origin, "reason": new.reason}
            )
        elif fetched and new.status is Status.OK:
            robots = self.resolver.cache.robots(new)
            if robots is not None and robots.diagnostics:
                self.stats.inc_value("rep/robots/with_diagnostics")
            compat.send_robots_parsed(self.crawler, robots, Request(new.url))
        if was_held:
            logger.info(
                "scrapy-rep: %(origin)s resumed: %(reason)s",
                {"origin": origin, "reason": new.reason},
            )
            self.stats.inc_value("rep/origin/resumed")
            self._send(rep_signals.origin_resumed, origin, new)
        self._release(origin)
        self._listen(bool(self._paused or len(self.parking)))

    def _archived(self, policy: Policy) -> str | None:
        """Keep the body in REP_POLICY_ARCHIVE (once per digest); its path, or None."""
        if self.archive is None or policy.body is None or policy.digest is None:
            return None
        try:
            return self.archive.keep(policy.digest, policy.body)
        except OSError as exc:
            logger.warning("scrapy-rep: cannot archive robots.txt: %(error)s", {"error": exc})
            return None

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

    def _send(self, signal: object, origin: str, policy: Policy) -> None:
        self.crawler.signals.send_catch_log(
            signal=signal, origin=origin, policy=policy, spider=self.crawler.spider
        )

    # -- parking ------------------------------------------------------------

    def _on_scheduled(self, request: Request, spider: Any = None) -> None:
        """Park requests that cannot be judged now, before the scheduler takes them."""
        meta = request.meta
        if meta.get("dont_obey_robotstxt") or meta.get(META_KEY):
            return
        if "rep_drop" in meta:
            return  # on its way to be dropped in the downloader, where its errback hears of it
        reason = meta.pop("rep_park", None)
        handed_back = reason is not None  # it went through the scheduler (and dupefilter) once
        try:
            origin = origin_of(request.url)
        except NotAnOrigin:
            return
        if reason in (None, "origin-paused", "origin-pending"):
            # Park only while the origin really cannot be judged: the fetch may
            # have finished since the downloader handed this request back.
            now = self.clock()
            policy = self.resolver.current(origin)
            started = self.resolver.pending_since(origin)
            if (
                policy is not None
                and policy.status is Status.PAUSED
                and (policy.fresh(now) or origin in self._timers)
            ):
                reason = "origin-paused"
            elif started is not None and (
                reason == "origin-pending" or now - started >= self.config.pending_wait
            ):
                reason = "origin-pending"
            else:
                return
        if not handed_back and self._seen_before(request):
            return  # a duplicate: the scheduler's dupefilter drops it, as it would unparked
        now = self.clock()
        since = meta.setdefault("rep_parked_at", now)
        if self.parking.park(origin, request, since, reason):
            self.stats.inc_value("rep/parked")
            self.stats.inc_value(f"rep/parked/{reason}")
            self.counts.parked(origin)
            if self.audit is not None:
                self.audit.write("parked", {"url": request.url, "origin": origin, "reason": reason})
            if origin not in self._timers and self.resolver.pending_since(origin) is None:
                self._wake_at(origin, self._due(origin))
            raise Parked(reason)
        # The scheduler takes it (its dupefilter has seen it: _seen_before) and
        # the downloader drops it, so its errback hears why.
        meta["rep_drop"] = "park-overflow"
        request.dont_filter = True

    def _seen_before(self, request: Request) -> bool:
        """Ask the scheduler's dupefilter before parking: released requests skip it."""
        dupefilter = getattr(compat.scheduler_of(self.crawler.engine), "df", None)
        if request.dont_filter or dupefilter is None:
            return False
        return bool(dupefilter.request_seen(request))

    def _due(self, origin: str) -> float:
        policy = self.resolver.current(origin)
        return policy.expires_at if policy is not None else self.clock()

    def _wake_at(self, origin: str, when: float) -> None:
        """Refetch ``origin``'s robots.txt at ``when`` (one timer per origin)."""
        old = self._timers.pop(origin, None)
        if old is not None:
            old.cancel()
        loop = asyncio.get_event_loop()
        delay = max(0.0, when - self.clock())
        self._timers[origin] = loop.call_later(delay, self._wake, origin)

    def _wake(self, origin: str) -> None:
        """Refetch for the requests held here; with none held, the next request will."""
        self._timers.pop(origin, None)
        if not self._closed and origin in self.parking:
            self.resolver.resolve(origin, self._fetch)

    def _recrawl(self, request: Request) -> None:
        """Give a held request back to the engine; the dupefilter has seen it already."""
        engine = self.crawler.engine
        assert engine is not None
        engine.crawl(request.replace(dont_filter=True))

    def _release(self, origin: str) -> None:
        for parked in self.parking.release(origin):
            self.stats.inc_value("rep/released")
            self.counts.released(origin)
            if self.audit is not None:
                self.audit.write("released", {"url": parked.item.url, "origin": origin})
            self._recrawl(parked.item)

    def _drop_parked(self, origin: str) -> None:
        """Hand held requests back to be judged against the policy that drops them.

        Dropped in the downloader, each reaches its errback as a RepIgnoreRequest
        carrying its decision record, instead of vanishing from the spider's view.
        """
        for parked in self.parking.release(origin):
            self._recrawl(parked.item)

    def _count_drop(self, request: Request, reason: str) -> None:
        self.stats.inc_value(f"rep/dropped/{reason}")
        try:
            origin: str | None = origin_of(request.url)
        except NotAnOrigin:
            origin = None
        self.counts.dropped(origin, reason)
        logger.debug(
            "scrapy-rep: dropped %(url)s: %(reason)s", {"url": request.url, "reason": reason}
        )
        if self.audit is not None:
            self.audit.write("dropped", {"url": request.url, "origin": origin, "reason": reason})

    def _on_idle(self, spider: Any = None) -> None:
        for parked in self.parking.expire(self.clock() - self.config.park_timeout):
            parked.item.meta["rep_drop"] = "park-expired"
            self._recrawl(parked.item)
        for origin in self.parking.origins():  # make sure every held origin will wake
            if origin not in self._timers and self.resolver.pending_since(origin) is None:
                self._wake_at(origin, self._due(origin))
        if len(self.parking):
            raise DontCloseSpider

    def _on_closed(self, spider: Any = None, reason: str = "") -> Awaitable[None] | None:
        self._closed = True
        for timer in self._timers.values():
            timer.cancel()
        self._timers.clear()
        left = 0
        queue = self._shared_queue()
        for parked in self.parking.drain():
            if queue is not None and self._requeue(queue, parked.item):
                continue
            self._count_drop(parked.item, "spider-closed")
            left += 1
        if left:
            logger.warning(
                "scrapy-rep: %(n)d parked requests were never downloaded (spider closed: "
                "%(reason)s)",
                {"n": left, "reason": reason},
            )
        try:
            if self.config.report_enabled:
                logger.info("%(report)s", {"report": "\n".join(report_lines(self.counts))})
            if self.audit is not None:
                for origin, counts in self.counts.origins.items():
                    self.audit.write("origin", {"origin": origin, **counts.to_dict()})
        finally:
            if self.audit is not None:
                self.audit.close()  # flushes: nothing buffered is lost
        self.resolver.listeners.remove(self._on_policy)
        if _Shared.release(self._shared_key) and self.resolver.shared is not None:
            return self.resolver.shared.close()  # the last user closes the connections
        return None

    def _shared_queue(self) -> Any:
        """A scrapy-redis scheduler, whose queue the cluster shares, or None.

        Parked requests live in this worker's memory. When it closes with some
        still parked, they go back into the shared queue (``REP_REQUEUE_PARKED``),
        so another worker takes them, and parks them again while their origin is
        paused, instead of losing them.
        """
        if not self.config.requeue_parked or not len(self.parking):
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
                "scrapy-rep: could not push a parked request back to the shared queue: %(error)s",
                {"error": f"{type(exc).__name__}: {exc}"},
            )
            return False
        self.stats.inc_value("rep/requeued")
        logger.debug("scrapy-rep: requeued %(url)s for another worker", {"url": request.url})
        return True

    # -- Crawl-delay --------------------------------------------------------

    def _apply_crawl_delay(self, request: Request, origin: str, policy: Policy) -> None:
        if not self.config.crawl_delay_enabled:
            return
        known = self._delays.get(origin)
        if known is not None and known[0] == policy.digest:
            delay = known[1]
        else:
            robots = self.resolver.cache.robots(policy) if policy.status is Status.OK else None
            delay = robots.crawl_delay(self.token) if robots is not None else None
            if delay is not None and delay > self.config.crawl_delay_max:
                logger.info(
                    "scrapy-rep: %(origin)s asks for Crawl-delay %(asked)ss, capped at %(cap)ss",
                    {"origin": origin, "asked": delay, "cap": self.config.crawl_delay_max},
                )
                self.stats.inc_value("rep/crawl_delay/capped")
                delay = self.config.crawl_delay_max
            self._delays[origin] = (policy.digest, delay)
            self.counts.crawl_delay(origin, delay)
        if not delay:
            return
        engine = self.crawler.engine
        assert engine is not None
        downloader = engine.downloader
        key = downloader.get_slot_key(request)
        user_delay = float(self.crawler.settings.getfloat("DOWNLOAD_DELAY"))
        floor = max(delay, user_delay)
        # Origins on one host share its slot: the largest Crawl-delay among them wins.
        floor = max(floor, self._floors.get(key, 0.0))
        if self._floors.get(key) == floor:
            return
        if not self._floors:  # listen only once there is a floor to keep (~9 µs a response)
            self.crawler.signals.connect(self._keep_delay_floor, signal=signals.response_downloaded)
        self._floors[key] = floor
        self.stats.inc_value("rep/crawl_delay/applied")
        # Slots are keyed by host and dropped when idle: write both the live
        # slot and the settings a new slot is made from. No jitter below the floor.
        slot_settings = downloader.per_slot_settings.setdefault(key, {})
        slot_settings["delay"] = max(float(slot_settings.get("delay", 0)), floor)
        compat.no_jitter_slot_settings(slot_settings)
        slot = downloader.slots.get(key)
        if slot is not None:
            slot.delay = max(slot.delay, floor)
            compat.no_jitter_slot(slot)

    def _keep_delay_floor(self, response: Response, request: Request, spider: Any = None) -> None:
        """Re-apply the floor after AutoThrottle (which adjusts on the same signal)."""
        if not self._floors:
            return
        engine = self.crawler.engine
        if engine is None:
            return
        key = request.meta.get("download_slot")
        if not isinstance(key, str):
            return
        floor = self._floors.get(key)
        slot = engine.downloader.slots.get(key) if floor is not None else None
        if slot is not None and floor is not None and slot.delay < floor:
            slot.delay = floor


class AuditedRobotsMiddleware(RobotsMiddleware):
    """With ``REP_DECISION_LOG``: also records each downloaded page's own HTTP status."""

    def process_response(self, request: Request, response: Response, spider: Any = None) -> Any:
        decision = request.meta.get("rep_decision")
        if self.audit is not None and decision is not None and not request.meta.get(META_KEY):
            # the target's own status, never mixed with the robots.txt one
            self.audit.write(
                "response",
                {
                    "url": decision["url"],
                    "origin": decision["origin"],
                    "target_status": response.status,
                    "response_url": response.url,
                },
            )
        return response


def _warn_if_builtin_active(crawler: Crawler) -> None:
    """Two robots middlewares would fetch every robots.txt twice; say how to fix it."""
    if not crawler.settings.getbool("ROBOTSTXT_OBEY"):
        return
    components = build_component_list(
        compat.component_priority_dict(crawler.settings, "DOWNLOADER_MIDDLEWARES")
    )
    if any(load_object(c) is RobotsTxtMiddleware for c in components):
        logger.warning(
            "scrapy-rep: Scrapy's RobotsTxtMiddleware is active too (ROBOTSTXT_OBEY=True), so "
            "robots.txt is fetched twice; enable scrapy-rep with ADDONS = "
            "{'scrapy_rep.Addon': 100}, or set ROBOTSTXT_OBEY = False"
        )


def _when(timestamp: float) -> str:
    return time.strftime("%H:%M:%S", time.localtime(timestamp))


def _fetch_record(origin: str, policy: Policy) -> dict[str, Any]:
    return {
        "origin": origin,
        "url": policy.url,
        "final_url": policy.final_url,
        "status": policy.status.value,
        "http_status": policy.http_status,
        "outcome": policy.outcome,
        "fetched_at": policy.fetched_at,
        "expires_at": policy.expires_at,
        "digest": policy.digest,
        "size": len(policy.body) if policy.body is not None else None,
        "truncated": policy.truncated,
        "reason": policy.reason,
    }
