"""The crawl's object graph: :func:`build` makes every part of one crawler, once.

Components find it through :func:`of` (made on first use; ``NotConfigured`` if
``REP_ENABLED`` is off) or :func:`running` (None: no component made it, so a client
needing a judged page fails closed); an optional part's component fills its slot with
:func:`when_built`, as the graph never imports such a part.
"""

from __future__ import annotations

from dataclasses import replace
from functools import partial
from typing import TYPE_CHECKING

from scrapy.exceptions import NotConfigured
from scrapy.utils.asyncio import is_asyncio_available

from scrapy_rep.core.gate import OriginGate
from scrapy_rep.core.policy import Policy, Status
from scrapy_rep.core.pushback import BLOCK, PAUSE, Pushback
from scrapy_rep.core.waiting_room import waiting_bound
from scrapy_rep.crawl import oneshot
from scrapy_rep.crawl.admission import AdmissionPath
from scrapy_rep.crawl.crawl_delay import CrawlDelay
from scrapy_rep.crawl.fetch import RobotsFetcher
from scrapy_rep.crawl.listener import PolicyListener
from scrapy_rep.crawl.pushback import PageSignals
from scrapy_rep.crawl.service import RobotsService
from scrapy_rep.crawl.telemetry import Telemetry
from scrapy_rep.crawl.walls import LicenceWalls
from scrapy_rep.runtime.logs import bound_lines
from scrapy_rep.runtime.per_crawler import PerCrawler
from scrapy_rep.runtime.resolver import Resolver, ResolverSpec, SharedResolvers
from scrapy_rep.runtime.settings import RepSettings, SettingError, is_enabled
from scrapy_rep.runtime.store import open_store
from scrapy_rep.runtime.store.factory import shared_pacing
from scrapy_rep.runtime.store.memory import EVICTED_PER_CACHED, PolicyCache

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler


def build(crawler: Crawler) -> RobotsService:
    """Every part of the crawl for ``crawler``, each given what it works with."""
    if not is_enabled(crawler.settings.get):
        raise NotConfigured("REP_ENABLED is off")
    if not is_asyncio_available():
        raise SettingError(
            "scrapy-rep needs Scrapy's asyncio reactor: TWISTED_REACTOR = "
            "'twisted.internet.asyncioreactor.AsyncioSelectorReactor' (Scrapy's default)"
        )
    bound_lines()  # no log line past MAX_RECORD, whatever a call site forgets
    config = RepSettings.of(crawler)
    token = config.token
    #: the time and the timers: a test's clock, given in REP_CLOCK
    clock = config.clock
    fetcher = RobotsFetcher(
        crawler, config.fetch_timeout, config.max_redirects, token=token, excluded=config.exclude
    )
    jobdir: str | None = crawler.settings.get("JOBDIR") or None
    spec = ResolverSpec.of(config, clock, jobdir)
    one_shot = oneshot.command_of(crawler)
    # a one-shot command's requests all wait: none may be dropped for want of room
    wait = config.pending_wait if one_shot is None else spec.fetch_budget
    settings = crawler.settings
    concurrency = settings.getint("CONCURRENT_REQUESTS")
    # a page pause's slow start ends at the origin's concurrency
    per_origin = settings.getint("CONCURRENT_REQUESTS_PER_IP") or settings.getint(
        "CONCURRENT_REQUESTS_PER_DOMAIN"
    )
    ramp = replace(config.pushback, ramp_max=max(1, per_origin or 8))
    # None: no row of the page status table pauses or blocks
    rows_on = any(action in (PAUSE, BLOCK) for action in config.pushback.actions.values())
    heard = Pushback(ramp) if rows_on else None
    gate: OriginGate[Request] = OriginGate(
        wait,
        config.park_max,
        config.park_timeout,
        max_waiting=waiting_bound(concurrency) if one_shot is None else None,
        pushback=heard,
    )
    telemetry = Telemetry.of(crawler)
    resolver = SharedResolvers.acquire(spec, partial(_resolver, config, spec, jobdir))
    listener = PolicyListener(crawler, fetcher, gate, resolver, telemetry, clock=clock, token=token)
    crawl_delay = CrawlDelay(
        crawler,
        config.crawl_delay_max,
        telemetry,
        partial(_asked_delay, resolver, token) if config.crawl_delay_enabled else None,
        shared_pacing(resolver.shared, config.cache_max_origins),
        remember=config.cache_max_origins,
    )
    pushback = (
        None
        if heard is None
        else PageSignals(
            crawler,
            gate,
            listener.holding,
            telemetry,
            heard,
            clock=clock,
            reserving=crawl_delay.reserving,
            one_shot=one_shot,
        )
    )
    admission = AdmissionPath(
        crawler,
        config,
        gate=gate,
        resolver=resolver,
        fetcher=fetcher,
        fetch=listener.fetch,
        telemetry=telemetry,
        one_shot=one_shot,
    )
    return RobotsService(
        crawler,
        config,
        spec=spec,
        fetcher=fetcher,
        gate=gate,
        resolver=resolver,
        listener=listener,
        telemetry=telemetry,
        crawl_delay=crawl_delay,
        admission=admission,
        walls=LicenceWalls(resolver, telemetry, pushback, token=token),
        pushback=pushback,
    )


def _resolver(config: RepSettings, spec: ResolverSpec, jobdir: str | None) -> Resolver:
    cache = PolicyCache(
        config.cache_max_origins,
        max_bytes=config.cache_max_bytes,
        compiled_bytes=config.cache_compiled_bytes,
    )
    # an operator's ``scrapy-rep store forget`` empties the local cache too
    shared = open_store(config, jobdir, on_invalidate=cache.forget)
    if shared is None:  # nothing else to ask for an evicted origin: keep it compact
        cache.evicted_max = EVICTED_PER_CACHED * config.cache_max_origins
    return Resolver(
        cache,
        spec.policy,
        spec.clock,
        shared=shared,
        lock_ttl=spec.lock_ttl,
        fetch_budget=spec.fetch_budget,
    )


def _asked_delay(resolver: Resolver, token: str, policy: Policy) -> float | None:
    """The Crawl-delay ``policy``'s robots.txt asks of ``token``."""
    robots = resolver.cache.robots(policy) if policy.status is Status.OK else None
    return robots.crawl_delay(token) if robots is not None else None


_GRAPHS = PerCrawler(build)
of, when_built, running = _GRAPHS.of, _GRAPHS.when_made, _GRAPHS.running
