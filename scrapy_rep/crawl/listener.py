"""One crawler's side of the shared robots.txt resolver: what each new policy means for it.

Every new policy, whoever fetched it, is recorded, given to the gate (whose effects
:class:`~scrapy_rep.crawl.holding.Holding` carries out) and said to the application
(``origin_paused`` / ``origin_resumed``, Scrapy's ``robots_parsed``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from scrapy import Request

from scrapy_rep import signals as rep_signals
from scrapy_rep.core.pause import ORIGIN_PAUSED, PauseState
from scrapy_rep.core.policy import NOT_MODIFIED, FetchResult, Policy, Status
from scrapy_rep.crawl import compat
from scrapy_rep.crawl.holding import Holding, closing
from scrapy_rep.crawl.robotparser import RepRobotParser
from scrapy_rep.crawl.wellknown import FileListener

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

    from scrapy_rep.core.gate import OriginGate
    from scrapy_rep.crawl.fetch import RobotsFetcher
    from scrapy_rep.crawl.telemetry import Telemetry
    from scrapy_rep.runtime.clock import Clock
    from scrapy_rep.runtime.resolver import Resolver


class PolicyListener(FileListener):
    """Fetches robots.txt for this crawler; carries out each new policy of the resolver here."""

    fetcher: RobotsFetcher

    def __init__(
        self,
        crawler: Crawler,
        fetcher: RobotsFetcher,
        gate: OriginGate[Request],
        resolver: Resolver,
        telemetry: Telemetry,
        *,
        clock: Clock,
        token: str,
    ) -> None:
        super().__init__(fetcher, resolver, self._closed_or_closing)
        self.crawler = crawler
        self.gate = gate
        self.telemetry = telemetry
        self.clock = clock.now
        self.token = token
        #: where held requests wait, refetched through this listener
        self.holding = Holding(
            crawler, gate, resolver, telemetry, self.fetch, clock=clock, token=token
        )

    def _closed_or_closing(self) -> bool:
        return self.holding.closed or closing(self.crawler)

    def before_fetch(self, origin: str) -> None:
        held = self.gate.first_held(origin)
        if held is not None:  # a refetch for held requests: on their behalf
            self.fetcher.asking(origin, held)

    def heard(
        self, origin: str, old: Policy | None, new: Policy, result: FetchResult | None, here: bool
    ) -> None:
        """A new policy for ``origin``, from any crawler sharing the resolver."""
        holding = self.holding
        asked = self.fetcher.answered(origin)
        if holding.closed:
            if result is not None:
                self.telemetry.fetched(origin, result, None)
            return
        parsed = here and new.status is Status.OK and new.outcome != NOT_MODIFIED
        robots = self.resolver.cache.robots(new) if parsed else None
        # another crawler's origin, asked and held nothing here: not this crawler's to count
        ours = here or asked is not None or self.gate.holds(origin)
        if here:  # one fetch, one record: what was fetched and the policy it gave
            licenses = robots.licenses if robots is not None else ()
            self.telemetry.fetched(origin, result, new, licenses)
        elif ours:
            self.telemetry.reused(origin, new)
        effects = self.gate.on_policy(origin, old, new, self.clock())
        if ours:
            state = new.pause()
            if effects.paused and state is not None:
                self.telemetry.paused(origin, state, policy=new)
                self._send(rep_signals.origin_paused, origin, new)
            else:
                self.telemetry.standing(origin, new)
            if effects.resumed:  # no paused policy left to say what ended: ended now
                now = self.clock()
                ended = old.pause() if old is not None else None
                ended = ended or PauseState(now, ORIGIN_PAUSED, 0, new.url, None, 0, now)
                self.telemetry.resumed(origin, ended, policy=new)
                self._send(rep_signals.origin_resumed, origin, new)
            if robots is not None:  # parsed: a 304 renewed the copy in hand, parsing nothing
                self.telemetry.parsed(origin, robots.diagnostics)
                parser = RepRobotParser(robots, self.token)  # robots_parsed, as Scrapy sends it
                compat.send_robots_parsed(self.crawler, parser, asked or Request(new.url))
                robots.prepare(self.token)  # its requests are judged next: compiled now
        # the held requests of a given-up origin go back to be dropped, not released
        holding.carry_out(origin, effects, released=new.status is not Status.UNRESOLVED)

    def abandoned(self, origin: str, result: FetchResult | None) -> None:
        """A fetch ended with its crawler: fetch again for what this crawler holds."""
        self.fetcher.answered(origin)
        if result is not None:  # fetched, but no policy came of it
            self.telemetry.fetched(origin, result, None)
        if self.gate.holds(origin) and not self._closed_or_closing():
            self.resolver.resolve(origin, self.fetch)

    def _send(self, signal: object, origin: str, policy: Policy) -> None:
        self.crawler.signals.send_catch_log(
            signal=signal, origin=origin, policy=policy, spider=self.crawler.spider
        )
