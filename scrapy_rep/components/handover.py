"""``HeldHandover``: the extension that gives the crawl somewhere to hand held requests over.

Held requests wait outside Scrapy's queues. At close they go back into a
shared scrapy-redis queue (and, while the crawl runs, are recorded in its
Redis), or into the ``JOBDIR`` for the resumed crawl
(:class:`~scrapy_rep.crawl.handover.Handover`). A crawl with neither has
nowhere to put them: the add-on installs this extension only with a
``JOBDIR`` or a scheduler other than Scrapy's own
(:func:`~scrapy_rep.crawl.parts.handover_wanted`), so a default crawl never loads
that machinery. It fills the
graph's slot (``Holding.handover``) as the crawler is made, before ``spider_opened``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from scrapy.exceptions import NotConfigured

from scrapy_rep.crawl import graph
from scrapy_rep.crawl.handover import Handover
from scrapy_rep.crawl.held_records import HeldRecords
from scrapy_rep.crawl.parts import handover_wanted

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

    from scrapy_rep.crawl.service import RobotsService


class HeldHandover:
    """Fills the crawl's handover slot: held requests kept in the JOBDIR or requeued."""

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.jobdir: str | None = crawler.settings.get("JOBDIR") or None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> HeldHandover:
        if not handover_wanted(crawler.settings):
            raise NotConfigured("no JOBDIR and no shared scheduler: nowhere to hand over")
        extension = cls(crawler)
        graph.when_built(crawler, extension.fill)
        return extension

    def fill(self, service: RobotsService) -> None:
        crawler, config, telemetry = self.crawler, service.config, service.telemetry
        service.holding.handover = Handover(
            crawler,
            telemetry,
            config.requeue_parked,
            self.jobdir,
            token=config.token,
            policy_of=service.resolver.current,
            records=lambda: HeldRecords.open(crawler, config, telemetry),
        )
