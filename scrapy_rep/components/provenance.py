"""Provenance on every item (``REP_ITEM_PROVENANCE``): what a reviewer needs, in the dataset.

A spider middleware the add-on enables beside the page directives middleware
(on its engine side, so it sees only what that one let through). With the
setting off it is not configured (``NotConfigured``): no signal receiver,
no hook, no cost.

Every item a callback yields (anything :mod:`itemadapter` knows: dict,
``scrapy.Item``, dataclass, attrs) gets, under the field the setting names
(:func:`provenance`):

- the page: ``url``, ``origin``, ``status``, ``served_from`` (``network``,
  or ``http-cache`` for a response Scrapy's ``HttpCacheMiddleware`` served,
  its ``cached`` flag), ``fetched_at`` (when the downloader received it, or
  for a cached page when the site served it: the stored ``Date`` header;
  epoch seconds, with ``fetched_at_iso``), the crawl's ``product_token``;
- ``decision``: the REP decision the request was let through by (its rule,
  line and group, the reason), or ``None`` for a request not judged
  (``dont_obey_robotstxt``, a ``data:`` URL); this crawl's, for a page from
  the cache too (the request is judged before the cache is asked);
- ``policy``: the robots.txt it rests on (status, HTTP status, digest, fetch
  time, URL) and, with ``REP_POLICY_ARCHIVE``, the archived file's path;
- ``uses``: each declared use's answer and its source after the page's own
  signals (:mod:`scrapy_rep.core.use_signals`), as ``rep_use`` answers them;
- ``page``: what the page's directives said (``response.meta["rep_page"]``),
  if anything.

An item type with fixed fields (``scrapy.Item``, dataclass, attrs) that
lacks the field is yielded unchanged, and one ERROR line per item type says
so and how to declare the field: the crawl and its other items go on, and the
log (and ``log_count/ERROR``) shows the dataset is missing evidence. No
sidecar file: provenance kept beside a dataset is provenance lost with it.
"""

from __future__ import annotations

import logging
import os
from collections.abc import AsyncIterator, Iterable, Iterator
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any
from weakref import WeakKeyDictionary

from itemadapter import ItemAdapter
from scrapy import Request, signals
from scrapy.exceptions import NotConfigured
from scrapy.http import HtmlResponse

from scrapy_rep.components.page_uses import response_answers
from scrapy_rep.core.directives import head_metas
from scrapy_rep.core.fields import field_lines
from scrapy_rep.core.policy import http_date
from scrapy_rep.core.use_signals import meta_names
from scrapy_rep.core.uses import uses_field
from scrapy_rep.crawl import meta as M
from scrapy_rep.runtime.clock import clock_of
from scrapy_rep.runtime.settings import RepSettings, is_enabled

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.http import Response

logger = logging.getLogger(__name__)


class ItemProvenanceMiddleware:
    """Puts the page's provenance on each item its callback yields."""

    def __init__(self, crawler: Crawler) -> None:
        # no message: Scrapy would log a warning for a setting that is off by default
        if not is_enabled(crawler.settings.get):
            raise NotConfigured
        config = RepSettings.of(crawler)
        if config.item_provenance is None:
            raise NotConfigured
        self.field: str = config.item_provenance
        self.source = ProvenanceSource(config)
        #: item types without the field, said once each
        self._missing: set[type] = set()
        self.clock = clock_of(crawler.settings.get("REP_CLOCK")).now
        #: each response's provenance, made at its first item; gone with the response
        self._made: WeakKeyDictionary[Response, dict[str, Any]] = WeakKeyDictionary()
        crawler.signals.connect(self._downloaded, signal=signals.response_downloaded)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> ItemProvenanceMiddleware:
        return cls(crawler)

    def _downloaded(self, response: Response, request: Request, spider: Any = None) -> None:
        request.meta[M.FETCHED_AT] = self.clock()

    # -- the spider middleware hooks ------------------------------------------------------------

    def process_spider_output(
        self, response: Response, result: Iterable[Any], spider: Any = None
    ) -> Iterator[Any]:
        for output in result:
            if not isinstance(output, Request):
                self._mark(response, output)
            yield output

    async def process_spider_output_async(
        self, response: Response, result: AsyncIterator[Any], spider: Any = None
    ) -> AsyncIterator[Any]:
        async for output in result:
            if not isinstance(output, Request):
                self._mark(response, output)
            yield output

    # -- the item -------------------------------------------------------------------------------

    def _mark(self, response: Response, item: Any) -> None:
        if not ItemAdapter.is_item(item):
            return
        made = self._made.get(response)
        if made is None:
            made = self._made[response] = provenance(self.source, response)
        adapter = ItemAdapter(item)
        try:
            adapter[self.field] = dict(made)  # one level copied: a pipeline may edit its own
        except KeyError:
            kind = type(item)
            if kind not in self._missing:
                self._missing.add(kind)
                logger.error(
                    "scrapy-rep: %s has no field %r for REP_ITEM_PROVENANCE: its items are "
                    "yielded without provenance; declare it (%s = scrapy.Field(), or a "
                    "dataclass/attrs field)",
                    kind.__name__,
                    self.field,
                    self.field,
                )


class ProvenanceSource:
    """What a provenance is made with: the crawl's token, uses and policy archive."""

    def __init__(self, config: RepSettings) -> None:
        self.token = config.token
        self.uses: tuple[str, ...] = tuple(config.uses)
        self.meta_names = meta_names(config.token)
        self.archive = config.policy_archive
        self._archived: dict[str, str | None] = {}

    def archived(self, digest: str | None) -> str | None:
        """The archived robots.txt's path for ``digest``, if ``REP_POLICY_ARCHIVE`` kept it."""
        if self.archive is None or digest is None:
            return None
        try:
            return self._archived[digest]
        except KeyError:
            path = os.path.join(self.archive, f"{digest}.txt")
            found = self._archived[digest] = path if os.path.exists(path) else None
            return found


#: the decision record's fields a reviewer reads, under their provenance names
_DECISION = (
    ("rep_decision", "rep_decision"),
    ("action", "action"),
    ("reason", "reason"),
    ("rule", "matched_rule"),
    ("line", "matched_line"),
    ("group", "group"),
    ("collection_decision", "collection_decision"),
    ("detail", "detail"),
)
_POLICY = (
    ("status", "policy_status"),
    ("http_status", "policy_http_status"),
    ("digest", "policy_digest"),
    ("fetched_at", "policy_fetched_at"),
    ("url", "policy_url"),
    ("final_url", "policy_final_url"),
)


#: ``served_from``: the network, or Scrapy's HTTP cache (``HttpCacheMiddleware``)
NETWORK, HTTP_CACHE = "network", "http-cache"


def provenance(mw: ProvenanceSource, response: Response) -> dict[str, Any]:
    """The provenance of ``response``'s items (see the module's docstring)."""
    meta = response.meta
    decision = meta.get(M.DECISION)
    # HttpCacheMiddleware flags what it serves "cached"; no download, no response_downloaded
    cached = "cached" in response.flags
    fetched_at = _served_at(response) if cached else meta.get(M.FETCHED_AT)
    found: dict[str, Any] = {
        "url": response.url,
        "origin": decision.get("origin") if decision else None,
        "status": response.status,
        "product_token": mw.token,
        "served_from": HTTP_CACHE if cached else NETWORK,
        "fetched_at": fetched_at,
        "fetched_at_iso": _iso(fetched_at),
        "decision": None,
        "policy": None,
        "uses": _uses(mw, response),
    }
    if decision:
        found["decision"] = {name: decision.get(key) for name, key in _DECISION}
        policy = {name: decision.get(key) for name, key in _POLICY}
        policy["fetched_at_iso"] = _iso(policy["fetched_at"])
        policy["archived"] = mw.archived(policy["digest"])
        found["policy"] = policy
    else:
        request = response.request
        found["not_judged"] = (
            "dont_obey_robotstxt" if request is not None and M.exempt(request.meta) else "no rule"
        )
    page = meta.get(M.PAGE)
    if page:
        found["page"] = page
    return found


def _uses(mw: ProvenanceSource, response: Response) -> dict[str, dict[str, str]]:
    """Each declared use's answer and source after the page's own signals: the page
    directives middleware's and the media middleware's answer (``response_answers``)."""
    if not mw.uses:
        return {}
    html = isinstance(response, HtmlResponse)
    metas = head_metas(response.body, mw.meta_names) if html else None
    return uses_field(response_answers(mw.token, mw.uses, response, response.request, metas))


def _served_at(response: Response) -> float | None:
    """When the site served a cached response: its stored ``Date`` header, if readable."""
    date = field_lines(response.headers.getlist(b"Date"))
    return http_date(date[-1].decode("latin-1")) if date else None


def _iso(when: Any) -> str | None:
    if not isinstance(when, (int, float)):
        return None
    return datetime.fromtimestamp(when, timezone.utc).isoformat(timespec="seconds")
