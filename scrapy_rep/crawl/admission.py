"""The one admission path: what a request of this crawl may do, and its decision record.

Data flows one way: request -> origin -> resolver (cache, or one shared fetch) -> policy
-> :class:`~scrapy_rep.core.gate.OriginGate` (judge, wait or hold) ->
:func:`~scrapy_rep.core.decision.judge_record` -> the sink (``Telemetry``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from scrapy import Request

from scrapy_rep.core.decision import (
    APPROVED,
    DOWNLOAD,
    DROP,
    PARK,
    DecisionRecord,
    excluded_site,
    judge_record,
    unjudged,
)
from scrapy_rep.core.gate import JUDGE, WAIT, OriginGate
from scrapy_rep.core.origin import origin_of
from scrapy_rep.core.policy import Policy, Status
from scrapy_rep.crawl import meta as M
from scrapy_rep.crawl import oneshot
from scrapy_rep.crawl.fetch import RobotsFetcher, cached_robots_response
from scrapy_rep.crawl.telemetry import Telemetry
from scrapy_rep.runtime.resolver import Fetch, Resolver, policy_within
from scrapy_rep.runtime.settings import RepSettings

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.http import Response

    from scrapy_rep.crawl.collection import CollectionHook
    from scrapy_rep.crawl.tdmrep import TdmRep


@dataclass(eq=False)
class AdmissionPath:
    """Answers what a request may do and builds its record; the crawl's parts are given."""

    crawler: Crawler
    config: RepSettings
    gate: OriginGate[Request]
    resolver: Resolver
    fetcher: RobotsFetcher
    fetch: Fetch
    telemetry: Telemetry
    #: ``scrapy fetch`` and the like: wait for the whole fetch, then answer; hold nothing
    one_shot: str | None
    #: slots filled only when asked for, so a crawl without them never loads them:
    #: tdmrep.json (a declared ``train-ai``), the scope hook (REP_COLLECTION_POLICY)
    tdmrep: TdmRep | None = field(default=None, init=False)
    collection: CollectionHook | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        self.token = self.config.token
        self.timers = self.config.clock
        self.clock = self.config.clock.now
        #: REP_EXCLUDE: sites dropped before any fetch (None: no list, no cost)
        self.excluded = self.config.exclude

    async def answer(
        self, origin: str, request: Request, *, downloader: bool = False
    ) -> tuple[DecisionRecord, Policy | None]:
        """The decision record for ``request`` and the policy it rests on.

        ``downloader``: the crawl downloads it next, so it holds a downloader slot while
        it waits, its answer is recorded here, and a held one comes back as ``park``.
        Any other request (a browser's sub-request) takes no slot, a held one is
        dropped, and its client records it.
        """
        if self.excluded is not None:
            excluded = self.excluded_record(origin, request, downloader)
            if excluded is not None:
                return excluded, None
        policy = self.resolver.current(origin)
        now = self.clock()
        cache = "miss" if policy is None else "hit" if policy.fresh(now) else "expired"
        fetch_since = self.resolver.pending_since(origin)
        admission = self.gate.admit(origin, policy, fetch_since, now)
        if admission.action == WAIT:
            if self.tdmrep is not None:
                self.tdmrep.start(origin)  # beside the robots.txt fetch, not after it
            if not downloader:
                policy = await self._wait_for_fetch(origin, admission.budget, request)
            else:  # it takes a downloader slot while it waits: the room says how long
                budget = self.gate.room.wait_budget(admission.budget, now)
                with self.gate.room.enter(now):
                    policy = await self._wait_for_fetch(origin, budget, request)
            if policy is not None:  # the fetch ended: how long fetches take now
                self.gate.room.fetched(self.clock() - (now if fetch_since is None else fetch_since))
            admission = self.gate.admit_fetched(policy)
        if admission.action != JUDGE:
            return self._held(origin, request, policy, admission.reason, downloader), policy
        assert policy is not None
        if self.collection is None and self.tdmrep is None:  # no await on the hot path
            record = self._record(origin, request.url, policy)
        else:
            record = await self._decide(origin, request, policy)
        if downloader:
            self.telemetry.answered_again(origin, request)
            request.meta[M.DECISION] = record
            if self.one_shot is not None and record["action"] not in (DOWNLOAD, DROP):
                record["action"] = DROP  # a one-shot command holds nothing
            self.telemetry.judged(origin, record, cache)
            if self.one_shot is not None and record["action"] == DROP:
                oneshot.say(record)
        return record, policy

    def excluded_record(
        self, origin: str, request: Request, downloader: bool
    ) -> DecisionRecord | None:
        """The record of a request to a site on ``REP_EXCLUDE`` (recorded for the downloader),
        or None; a ``dont_obey_robotstxt`` request is asked too: it opts out of robots.txt,
        not of the list."""
        assert self.excluded is not None
        found = self.excluded.match_origin(origin)
        if found is None:
            return None
        record = excluded_site(
            origin, self.token, request.url, found.entry, found.line, found.where()
        )
        if downloader:
            request.meta[M.DECISION] = record
            self.telemetry.final(origin, record)
            if self.one_shot is not None:
                oneshot.say(record)
        return record

    def _held(
        self, origin: str, request: Request, policy: Policy | None, reason: str, downloader: bool
    ) -> DecisionRecord:
        """The record of a request the gate holds: ``park`` it (downloader), else drop it; a
        one-shot command holds nothing: dropped now, saying why."""
        if not downloader or self.one_shot is None:
            action = PARK if downloader else DROP
            detail = self.gate.detail(origin, reason, self.clock())
            return unjudged(origin, self.token, request.url, policy, action, reason, detail)
        policy = self.resolver.current(origin)
        detail = oneshot.held_detail(self.gate, origin, reason, policy, self.clock(), self.one_shot)
        record = unjudged(origin, self.token, request.url, policy, DROP, reason, detail)
        request.meta[M.DECISION] = record
        self.telemetry.final(origin, record)
        oneshot.say(record)
        return record

    async def _wait_for_fetch(self, origin: str, budget: float, request: Request) -> Policy | None:
        """The new policy, if the origin's fetch (for ``request``) ends within ``budget`` s."""
        task = self.resolver.resolve(origin, self.fetch)
        if not task.done():
            self.fetcher.asking(origin, request)
        return await policy_within(task, budget, self.timers)

    async def _decide(self, origin: str, request: Request, policy: Policy) -> DecisionRecord:
        """The decision record for ``request`` (asking the collection hook, if there is one)."""
        if self.collection is None or policy.status not in (Status.OK, Status.UNAVAILABLE):
            record = self._record(origin, request.url, policy)
        else:
            collection, problem = await self.collection(request, self.crawler.spider)
            record = self._record(origin, request.url, policy, collection)
            if problem is not None:
                record["detail"] = problem
        if self.tdmrep is not None:
            await self.tdmrep.join(origin, request.url, record)
        return record

    def _record(
        self, origin: str, url: str, policy: Policy, collection: str = APPROVED
    ) -> DecisionRecord:
        robots = self.resolver.cache.robots(policy) if policy.status is Status.OK else None
        return judge_record(
            origin,
            self.token,
            url,
            policy,
            robots,
            collection=collection,
            disallowed_action=self.config.disallowed_action,
            unresolved_collection_action=self.config.collection_unresolved_action,
            declared=self.config.declared,
        )

    async def robots_for_spider(self, origin: str, request: Request) -> Response | None:
        """A spider's own robots.txt request, answered from the cache when it is fresh and ok."""
        if self.excluded is not None and self.excluded.match_origin(origin) is not None:
            return None  # not fetched: answer() drops it, as every request to the site
        policy = self.resolver.current(origin)
        if policy is None or not policy.fresh(self.clock()):
            policy = await self._wait_for_fetch(origin, self.config.pending_wait, request)
        kept = self.resolver.cache.with_body(origin)
        robots = self.resolver.cache.robots(policy) if policy is not None else None
        if kept is None or kept.status is not Status.OK or kept.body is None or robots is None:
            return None  # 404, paused, unreachable, pending: to the network, as without us
        self.telemetry.inc("rep/robots/served_from_cache")
        return cached_robots_response(request, kept.body, robots.sitemaps)

    async def ask(self, url: str) -> tuple[DecisionRecord, Policy | None]:
        """The answer a crawl would give for ``url`` now, recording nothing (``scrapy robots``)."""
        origin = origin_of(url)
        if self.excluded is not None:
            excluded = self.excluded_record(origin, Request(url), downloader=False)
            if excluded is not None:
                return excluded, None
        policy = self.resolver.current(origin)
        if policy is None or not policy.fresh(self.clock()):
            policy = await self.resolver.resolve(origin, self.fetch)
        return await self._decide(origin, Request(url), policy), policy
