"""tdmrep.json for a crawl that declares ``train-ai``: fetched, counted, asked per request.

The file is fetched and kept as robots.txt is (a
:class:`~scrapy_rep.crawl.wellknown.FileListener` on a resolver of its own,
:data:`~scrapy_rep.runtime.tdmrep.TDMREP`: the project's downloader middlewares,
redirects followed here, the 500 KiB cap), once per origin and TTL, and only by
crawls whose ``REP_USES`` names ``train-ai``. A request waits for its origin's
file before it is judged, as TDMRep asks ("before it starts scraping"); the
fetch starts together with the robots.txt fetch.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING

from scrapy_rep.core.decision import DOWNLOAD, DROP, USE_REFUSED, DecisionRecord
from scrapy_rep.core.policy import FetchResult, Policy, classify
from scrapy_rep.core.tdmrep import TdmRules
from scrapy_rep.core.use_signals import request_answers
from scrapy_rep.core.uses import REFUSED, UNKNOWN, UseAnswer, combine, uses_field
from scrapy_rep.crawl.fetch import RobotsFetcher
from scrapy_rep.crawl.telemetry import fetch_record
from scrapy_rep.crawl.wellknown import FileListener
from scrapy_rep.runtime.resolver import FetchAbandoned, SharedResolvers
from scrapy_rep.runtime.tdmrep import TDMREP, tdm_answer, tdm_rules

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

    from scrapy_rep.crawl.telemetry import Telemetry
    from scrapy_rep.runtime.resolver import Resolver, ResolverSpec
    from scrapy_rep.runtime.settings import RepSettings


class TdmRep(FileListener):
    """The crawl's tdmrep.json files: :meth:`answer` for a URL, fetching the file if needed."""

    fetcher: RobotsFetcher

    def __init__(
        self,
        crawler: Crawler,
        config: RepSettings,
        telemetry: Telemetry,
        resolver: Resolver,
        closing: Callable[[], bool],
        *,
        leave: Callable[[], object],
    ) -> None:
        """``resolver``: the tdmrep.json one (:data:`TDMREP`); ``closing``: whether the
        crawler is closing (a fetch then is abandoned); ``leave``: gives the shared resolver
        back at close (before the robots.txt one, whose store it uses)."""
        fetcher = RobotsFetcher(
            crawler,
            config.fetch_timeout,
            config.max_redirects,
            config.token,
            file=TDMREP,
            check_agent=False,  # the robots.txt fetcher says it once, if need be
            excluded=config.exclude,
        )
        super().__init__(fetcher, resolver, closing)
        self.telemetry = telemetry
        self.clock = resolver.clock
        self.drop = config.use_action == "drop"
        self._leave_shared = leave

    @classmethod
    def beside(
        cls,
        crawler: Crawler,
        config: RepSettings,
        telemetry: Telemetry,
        robots: Resolver,
        spec: ResolverSpec,
        closing: Callable[[], bool],
    ) -> TdmRep:
        """The crawl's tdmrep.json files, on the shared resolver made beside ``robots`` (the
        robots.txt one, whose store and leases it uses) for crawlers of equal ``spec``."""
        resolver = SharedResolvers.acquire(spec, partial(robots.for_file, TDMREP), TDMREP)
        leave = partial(SharedResolvers.leave, spec, TDMREP)
        return cls(crawler, config, telemetry, resolver, closing, leave=leave)

    def use_own_slot(self) -> None:
        """Fetch in a download slot of its own, as robots.txt does beside a browser render."""
        self.fetcher.own_slot = True

    def fresh(self, origin: str) -> Policy | None:
        """The origin's tdmrep.json policy if it is fresh; no I/O."""
        policy = self.resolver.current(origin)
        return policy if policy is not None and policy.fresh(self.clock()) else None

    def start(self, origin: str) -> None:
        """Fetch the origin's file now unless it is fresh or on its way (beside its robots.txt)."""
        if self.fresh(origin) is None and not self.closing():
            self.resolver.resolve(origin, self.fetch)

    def answer_now(self, origin: str, url: str) -> UseAnswer | bool | None:
        """The file's answer, if its policy is fresh; False when it must be fetched first."""
        policy = self.fresh(origin)
        if policy is None:
            return False
        return tdm_answer(self.resolver, policy, url)

    async def answer(self, origin: str, url: str) -> UseAnswer | None:
        """The file's ``train-ai`` answer for ``url``, fetching the file first if not fresh."""
        policy = self.fresh(origin)
        if policy is None:
            task = self.resolver.resolve(origin, self.fetch)
            try:
                policy = await asyncio.shield(task)
            except FetchAbandoned:
                return None  # the crawl is closing: the request goes nowhere
        return tdm_answer(self.resolver, policy, url)

    async def join(self, origin: str, url: str, record: DecisionRecord) -> None:
        """Add the file's answer to a download's decision record (combined last).

        Under ``REP_USE_ACTION = "drop"`` a path the file reserves is then not
        fetched (``use-refused``), so a ``tdm-reservation: 0`` header that would
        have lifted the reservation for that response is never seen.
        """
        if record["action"] != DOWNLOAD:
            return  # not fetched anyway: no reason to fetch the file for it
        found = self.answer_now(origin, url)
        if found is False:
            found = await self.answer(origin, url)
        if found is None or found is True:
            return
        uses = record.get("uses") or {}
        before, earlier = request_answers(uses)
        if earlier is not None:  # joined already (decide() after a hand-back)
            return
        # last, as robots_answers' "more" would be; an unknown first, so that when nothing
        # else is known the record says why the file did not answer
        combined = combine([found, *before] if found.answer == UNKNOWN else [*before, found])
        record["uses"] = {**uses, **uses_field({found.use: combined[found.use]})}
        if self.drop and combined[found.use] is found and found.answer == REFUSED:
            record["action"] = DROP
            record["reason"] = USE_REFUSED
            record["detail"] = f"refused for {found.use} by {found.source}"

    # -- the resolver's listener ----------------------------------------------------------------

    def heard(
        self, origin: str, old: Policy | None, new: Policy, result: FetchResult | None, here: bool
    ) -> None:
        if not here:
            return  # fetched by another crawler (or found in the shared store): said there
        self._said(origin, result, new, tdm_rules(self.resolver, new))

    def abandoned(self, origin: str, result: FetchResult | None) -> None:
        """Nothing is held for a tdmrep.json: the next request asks again."""
        if result is not None:  # fetched, but no policy came of it
            self._said(origin, result, None)

    def _said(
        self,
        origin: str,
        result: FetchResult | None,
        policy: Policy | None,
        rules: TdmRules | None = None,
    ) -> None:
        """A tdmrep.json fetch this crawler made, its policy and what the file says: to the
        crawl's sink (stats, the audit log, a warning an origin)."""
        sink = self.telemetry
        if result is not None:
            sink.inc("rep/tdmrep/fetch/count")
            outcome = classify(result)
            sink.inc(f"rep/tdmrep/fetch/outcome/{outcome}")
        if policy is None:
            return
        if rules is None:
            sink.inc("rep/tdmrep/unknown")  # 5xx, network: nothing known until the next TTL
        elif len(rules):
            sink.inc("rep/tdmrep/with_rules")
        if rules is not None and rules.diagnostics and _html(result):
            # a soft 404 (an HTML page for any path, as many sites answer): no file, said
            # once a crawl at close, not a warning an origin
            sink.inc("rep/tdmrep/html")
            if len(sink.tdmrep_html) < _HTML_NAMED:
                sink.tdmrep_html.append(origin)
            sink.tdmrep_html_count += 1
        elif rules is not None and rules.diagnostics:
            sink.inc("rep/tdmrep/with_diagnostics")
            more = len(rules.diagnostics) - 1
            text = rules.diagnostics[0] + (f" (and {more} more)" if more else "")
            sink.note_once(f"tdmrep {origin}", origin, logging.WARNING, f"tdmrep.json {text}")
        if sink.audit is not None:
            sink.audit.write(
                "tdmrep",
                {
                    **fetch_record(origin, policy),
                    "rules": len(rules) if rules is not None else None,
                    "diagnostics": list(rules.diagnostics) if rules is not None else [],
                },
            )

    def close(self) -> None:
        """At the spider's close (the service's, before the robots.txt resolver is left)."""
        self.leave()
        self._leave_shared()


#: origins named in the close's line on tdmrep.json answered by an HTML page
_HTML_NAMED = 5


def _html(result: FetchResult | None) -> bool:
    """Whether a fetched file came as an HTML page (``Content-Type: text/html``, XHTML)."""
    if result is None:
        return False
    media = result.headers.get("content-type", "").split(";")[0].strip().lower()
    return media in ("text/html", "application/xhtml+xml")
