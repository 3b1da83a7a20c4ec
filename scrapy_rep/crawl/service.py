"""The crawl's service: one per crawler, holding the parts :func:`~scrapy_rep.crawl.graph.build`
made, opening and closing them. Clients ask the part they need.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Coroutine
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from scrapy import signals
from scrapy.downloadermiddlewares.robotstxt import RobotsTxtMiddleware

from scrapy_rep.crawl import compat, parts
from scrapy_rep.runtime.resolver import SharedResolvers

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler

    from scrapy_rep.core.gate import OriginGate
    from scrapy_rep.core.policy import Policy
    from scrapy_rep.crawl.admission import AdmissionPath
    from scrapy_rep.crawl.crawl_delay import CrawlDelay, Turn
    from scrapy_rep.crawl.fetch import RobotsFetcher
    from scrapy_rep.crawl.listener import PolicyListener
    from scrapy_rep.crawl.pushback import PageSignals
    from scrapy_rep.crawl.shared_pauses import SharedPauses
    from scrapy_rep.crawl.tdmrep import TdmRep
    from scrapy_rep.crawl.telemetry import Telemetry
    from scrapy_rep.crawl.walls import LicenceWalls
    from scrapy_rep.runtime.resolver import Resolver, ResolverSpec
    from scrapy_rep.runtime.settings import RepSettings

logger = logging.getLogger(__name__)


@dataclass(eq=False)
class RobotsService:
    """Owns the crawl's parts, opens and closes them."""

    crawler: Crawler
    config: RepSettings
    spec: ResolverSpec
    fetcher: RobotsFetcher
    gate: OriginGate[Request]
    resolver: Resolver
    listener: PolicyListener
    telemetry: Telemetry
    crawl_delay: CrawlDelay
    admission: AdmissionPath
    #: licence and payment walls, handed over by the body guard
    walls: LicenceWalls
    #: what pages say while they are crawled; None: every row of the page status table off
    pushback: PageSignals | None
    #: slots filled only when asked for: tdmrep.json, pauses shared through the store
    tdmrep: TdmRep | None = field(default=None, init=False)
    pauses: SharedPauses | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        self.token = self.config.token
        self.clock = self.config.clock.now
        self.holding = self.listener.holding
        connect = self.crawler.signals.connect
        connect(self._on_opened, signal=signals.spider_opened)
        connect(self._on_idle, signal=signals.spider_idle)
        connect(self._on_closed, signal=signals.spider_closed)
        if self.telemetry.audit is not None:  # the target's own status, for the audit log only
            connect(self.telemetry.response, signal=signals.response_received)
        logger.info("scrapy-rep: obeying robots.txt as %(token)r (RFC 9309)", {"token": self.token})
        compat.log_missing_features(logger)

    def pace(
        self, request: Request, origin: str, policy: Policy
    ) -> Coroutine[Any, Any, Turn] | None:
        """Before a download: its slot keeps the Crawl-delay; the send's reserved moment
        (``max(Crawl-delay, learnt pace)``) to await, or None."""
        core = None if self.pushback is None else self.pushback.core
        if core is None:
            return self.crawl_delay.keep(request, origin, policy)
        spacing = core.spacing(origin, self.clock())
        return self.crawl_delay.keep(request, origin, policy, spacing)

    def use_tdmrep(self, tdmrep: TdmRep) -> None:
        """The crawl's tdmrep.json files, asked by the admission path and closed here."""
        self.tdmrep = self.admission.tdmrep = tdmrep

    def fetch_in_own_slot(self) -> None:
        """robots.txt (and tdmrep.json) no longer queue behind the host's slot: renders hold it."""
        self.fetcher.own_slot = True
        if self.tdmrep is not None:
            self.tdmrep.use_own_slot()

    def _on_opened(self, spider: Any = None) -> Any:
        _warn_if_set_up_amiss(self.crawler)
        self.holding.open()
        return None

    def _on_idle(self, spider: Any = None) -> None:
        """Pages' pauses first (blocked ends, ramps go on), then what is parked."""
        if self.pushback is not None:
            self.pushback.on_idle()
        self.holding.on_idle(spider)

    def _on_closed(self, spider: Any = None, reason: str = "") -> Any:
        if self.tdmrep is not None:  # first: its shared resolver uses the robots.txt one's store
            self.tdmrep.close()
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
        if SharedResolvers.leave(self.spec) and self.resolver.shared is not None:
            steps.append(self.resolver.shared.close())  # the last user closes the connections
        return _in_turn(steps) if steps else None


async def _in_turn(steps: list[Awaitable[None]]) -> None:
    for step in steps:
        await step


def _warn_if_set_up_amiss(crawler: Crawler) -> None:
    """At start: two robots middlewares (robots.txt fetched twice), or, set up by hand, what
    the add-on installs lacking; each said once, with how to fix it."""
    manager = getattr(getattr(crawler.engine, "downloader", None), "middleware", None)
    if any(isinstance(mw, RobotsTxtMiddleware) for mw in getattr(manager, "middlewares", ())):
        logger.warning(
            "scrapy-rep: Scrapy's RobotsTxtMiddleware is active too (ROBOTSTXT_OBEY=True), so "
            "robots.txt is fetched twice; enable scrapy-rep with ADDONS = "
            "{'scrapy_rep.Addon': 100}, or set ROBOTSTXT_OBEY = False"
        )
    lacking = parts.missing(crawler.settings)
    if lacking:
        logger.warning(
            "scrapy-rep: set up without the add-on, this crawl lacks %(what)s: %(names)s not "
            "enabled; use ADDONS = {'scrapy_rep.Addon': 100}, or list them as the migration "
            "guide does",
            {
                "what": "; ".join(part.lacks for part in lacking),
                "names": ", ".join(part.path.rsplit(".", 1)[1] for part in lacking),
            },
        )
