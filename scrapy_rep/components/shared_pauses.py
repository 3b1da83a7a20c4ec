"""``SharedPauseStore``: the extension that shares a page's pause through the shared store.

With Redis a page's pause is the cluster's; with SQLite it outlives the crawl
(:class:`~scrapy_rep.crawl.shared_pauses.SharedPauses`). A crawl whose store is
memory only has nobody to share with: the add-on installs this extension only
with a store that may be shared (:func:`~scrapy_rep.crawl.parts.shared_store_wanted`),
so a default crawl never loads it. It fills the graph's slot as the crawler is made.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from scrapy.exceptions import NotConfigured

from scrapy_rep.crawl import graph
from scrapy_rep.crawl.parts import shared_store_wanted
from scrapy_rep.crawl.shared_pauses import SharedPauses

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

    from scrapy_rep.crawl.service import RobotsService


class SharedPauseStore:
    """Fills the service's shared-pauses slot, when pages may pause and the store keeps them."""

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> SharedPauseStore:
        if not shared_store_wanted(crawler.settings):
            raise NotConfigured("REP_STORE keeps nothing beyond this crawl")
        extension = cls()
        graph.when_built(crawler, extension.fill)
        return extension

    def fill(self, service: RobotsService) -> None:
        shared, pushback = service.resolver.shared, service.pushback
        if pushback is None or shared is None or not hasattr(shared, "save_pause"):
            return  # every row of the page status table off, or a store without pauses
        pauses = service.pauses = SharedPauses(shared)
        pushback.share = pauses.save
        pauses.listen(pushback.adopt, pushback.forgotten)
