"""tdmrep.json for a crawl that declares ``train-ai``: fetched, counted, asked per request.

The file is fetched through Scrapy as robots.txt is (:class:`RobotsFetcher`:
the project's downloader middlewares, redirects followed here, the 500 KiB
cap), once per origin and TTL (:class:`~scrapy_rep.runtime.tdmrep.TdmFiles`),
and only by crawls whose ``REP_USES`` names ``train-ai``. A request waits for
its origin's file before it is judged, as TDMRep asks ("before it starts
scraping"); the fetch starts together with the robots.txt fetch.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from scrapy import signals

from scrapy_rep.adapter.fetch import RobotsFetcher
from scrapy_rep.core.decision import DOWNLOAD, DROP, USE_REFUSED, DecisionRecord
from scrapy_rep.core.events import TdmrepFetched
from scrapy_rep.core.policy import Conditional, FetchResult, Policy
from scrapy_rep.core.tdmrep import tdmrep_url
from scrapy_rep.core.use_signals import request_answers
from scrapy_rep.core.uses import REFUSED, UNKNOWN, UseAnswer, combine, uses_field
from scrapy_rep.runtime.resolver import Fetch, FetchAbandoned
from scrapy_rep.runtime.tdmrep import TdmFiles, origin_of_key

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

    from scrapy_rep.adapter.telemetry import Telemetry
    from scrapy_rep.runtime.resolver import Resolver
    from scrapy_rep.runtime.settings import RepSettings

logger = logging.getLogger(__name__)


class TdmRep:
    """The crawl's tdmrep.json files: :meth:`answer` for a URL, fetching the file if needed."""

    def __init__(
        self,
        crawler: Crawler,
        config: RepSettings,
        telemetry: Telemetry,
        resolver: Resolver,
        closing: Callable[[], bool],
    ) -> None:
        """``resolver``: the robots.txt one, whose store the files share; ``closing``: whether
        the crawler is closing (a fetch then is abandoned)."""
        self.crawler = crawler
        self.telemetry = telemetry
        self._closing = closing
        #: the resolver's fetch for this crawler: one object, whose identity in a policy's
        #: ``fetched`` says this crawler made it
        self.fetch: Fetch = self._fetch_file
        self.fetcher = RobotsFetcher(
            crawler,
            config.fetch_timeout,
            config.max_redirects,
            config.token,
            url_of=tdmrep_url,
            check_agent=False,  # the robots.txt fetcher says it once, if need be
            excluded=config.exclude,
        )
        self.files = TdmFiles(resolver)
        #: key -> this crawler's fetch result, until the policy it gives is recorded with it
        self._results: dict[str, FetchResult] = {}
        self.drop = config.use_action == "drop"
        self.files.resolver.listeners.append(self)
        crawler.signals.connect(self._on_closed, signal=signals.spider_closed)

    def use_own_slot(self) -> None:
        """Fetch in a download slot of its own, as robots.txt does beside a browser render."""
        self.fetcher.use_own_slot()

    def start(self, origin: str) -> None:
        """Fetch the origin's file now unless it is fresh or on its way (beside its robots.txt)."""
        if self.files.fresh(origin) is None and not self._closing():
            self.files.fetch(origin, self.fetch)

    def answer_now(self, origin: str, url: str) -> UseAnswer | bool | None:
        """The file's answer, if its policy is fresh; False when it must be fetched first."""
        policy = self.files.fresh(origin)
        if policy is None:
            return False
        return self.files.answer(policy, url)

    async def answer(self, origin: str, url: str) -> UseAnswer | None:
        """The file's ``train-ai`` answer for ``url``, fetching the file first if not fresh."""
        policy = self.files.fresh(origin)
        if policy is None:
            task = self.files.fetch(origin, self.fetch)
            try:
                policy = await asyncio.shield(task)
            except FetchAbandoned:
                return None  # the crawl is closing: the request goes nowhere
        return self.files.answer(policy, url)

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

    async def _fetch_file(self, key: str, validators: Conditional | None = None) -> FetchResult:
        """The resolver's fetch for ``key`` (an origin's tdmrep.json); conditional on a refetch."""
        if self._closing():
            raise FetchAbandoned(key)
        result = await self.fetcher(origin_of_key(key), validators)
        if result.error and self._closing():
            raise FetchAbandoned(key)
        self._results[key] = result  # recorded with the policy it gives (on_policy)
        return result

    # -- the resolver's listener ----------------------------------------------------------------

    def on_policy(self, key: str, old: Policy | None, new: Policy, fetched: Fetch | None) -> None:
        if fetched is not self.fetch:
            return  # fetched by another crawler (or found in the shared store): said there
        origin = origin_of_key(key)
        rules = self.files.rules(new)
        self.telemetry.emit(TdmrepFetched(origin, self._results.pop(key, None), new, rules))

    def on_abandoned(self, key: str) -> None:
        """Nothing is held for a tdmrep.json: the next request asks again."""
        result = self._results.pop(key, None)
        if result is not None:  # fetched, but no policy came of it
            self.telemetry.emit(TdmrepFetched(origin_of_key(key), result, None))

    def _on_closed(self, spider: Any = None, reason: str = "") -> None:
        if self in self.files.resolver.listeners:
            self.files.resolver.listeners.remove(self)
