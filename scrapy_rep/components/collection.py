"""``CollectionPolicy``: the extension that puts ``REP_COLLECTION_POLICY``'s hook on the
admission path.

The add-on installs it only when the setting names a hook, so a crawl without
one never loads :mod:`scrapy_rep.crawl.collection`. The hook is imported when
the extension is made, before the crawl's graph is: what cannot be imported
stops the crawl with the setting's one-line error, and nothing opened is left
behind (a shared resolver, a store's connections).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from scrapy.exceptions import NotConfigured

from scrapy_rep.crawl import graph
from scrapy_rep.crawl.collection import CollectionHook, load_collection_policy
from scrapy_rep.runtime.settings import RepSettings

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

    from scrapy_rep.crawl.service import RobotsService


class CollectionPolicy:
    """Fills the admission path's collection slot with the application's scope hook."""

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> CollectionPolicy:
        hook = load_collection_policy(RepSettings.of(crawler).collection_policy)
        if hook is None:
            raise NotConfigured("REP_COLLECTION_POLICY is not set")
        extension = cls(CollectionHook(hook))
        graph.when_built(crawler, extension.fill)
        return extension

    def __init__(self, hook: CollectionHook) -> None:
        self.hook = hook

    def fill(self, service: RobotsService) -> None:
        service.admission.collection = self.hook
