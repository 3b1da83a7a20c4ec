"""Where held requests go when the spider closes, and where they come back from.

In order: back into a shared scrapy-redis queue (if the scheduler is one), so
another worker takes them; else into the JOBDIR (:mod:`scrapy_rep.crawl.jobdir`),
for the resumed crawl; else nowhere, and the caller drops them with a reason.

Only a crawl with somewhere to hand them over has one: the handover component
(``components/handover.py``, which the add-on installs with a ``JOBDIR`` or a
scrapy-redis scheduler) fills :class:`~scrapy_rep.crawl.holding.Holding`'s slot with it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from scrapy import Request

from scrapy_rep.core.decision import KEEP, REQUEUE, DecisionRecord, unjudged
from scrapy_rep.core.parking import Held
from scrapy_rep.core.policy import Policy
from scrapy_rep.crawl import compat
from scrapy_rep.crawl.held_records import HeldRecords
from scrapy_rep.crawl.jobdir import HeldRequestFile
from scrapy_rep.crawl.telemetry import Telemetry

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)


class Handover:
    """Hands held requests over at close (shared queue, JOBDIR); restores them on resume."""

    def __init__(
        self,
        crawler: Crawler,
        telemetry: Telemetry,
        requeue_parked: bool,
        jobdir: str | None,
        *,
        token: str,
        policy_of: Callable[[str], Policy | None],
        records: Callable[[], HeldRecords | None] | None = None,
    ) -> None:
        self.crawler = crawler
        self.telemetry = telemetry
        #: the product token and the origins' current policies, for the decision records
        self.token = token
        self.policy_of = policy_of
        self.requeue_parked = requeue_parked
        self.held_file = HeldRequestFile(jobdir) if jobdir else None
        #: opens the held requests' records in scrapy-redis's Redis, once the spider is open
        self.records = records

    def open(self) -> HeldRecords | None:
        """The spider opened: the held requests' records (scrapy-redis's Redis, if that is
        the queue), and what the last run kept in the JOBDIR goes to be judged."""
        records = self.records() if self.records is not None else None
        self.restore()
        return records

    def take(self, held: list[Held[Request]]) -> list[tuple[Held[Request], str]]:
        """Hand over what can be; the rest, each with the reason to drop it."""
        queue = self._shared_queue() if held else None
        left = [each for each in held if queue is None or not self._requeue(queue, each)]
        if self.held_file is None or not left:
            return [(each, "spider-closed") for each in left]
        try:
            unserializable = self.held_file.save(left, self.crawler.spider)
        except OSError as exc:
            logger.error(
                "scrapy-rep: cannot keep held requests in the JOBDIR: %(error)s", {"error": exc}
            )
            return [(each, "spider-closed") for each in left]
        refused = {id(each) for each in unserializable}
        kept = 0
        for each in left:
            if id(each) not in refused:
                self._handed_over(each, KEEP)
                kept += 1
        if kept:
            logger.info(
                "scrapy-rep: %(n)d held requests kept in %(path)s for the resumed crawl",
                {"n": kept, "path": self.held_file.path},
            )
        return [(each, "unserializable") for each in unserializable]

    def restore(self, spider: Any = None) -> None:
        """On resume (``spider_opened``): the requests held at the last stop go to be judged."""
        if self.held_file is None:
            return
        try:
            held = self.held_file.load(self.crawler.spider)
        except Exception as exc:
            logger.error(
                "scrapy-rep: cannot read the held requests of the last run (%(error)s); "
                "they are not restored",
                {"error": f"{type(exc).__name__}: {exc}"},
            )
            return
        engine = self.crawler.engine
        assert engine is not None
        for each in held:
            engine.crawl(each.item.replace(dont_filter=True))  # the dupefilter saw it last run
        if held:
            for _ in held:
                self.telemetry.inc("rep/held/restored")
            logger.info(
                "scrapy-rep: %(n)d requests held at the last stop are judged again",
                {"n": len(held)},
            )

    def _shared_queue(self) -> Any:
        """A scrapy-redis scheduler, whose queue the cluster shares, or None.

        Held requests live in this worker's memory. When it closes with some
        still held, they go back into the shared queue, so another worker takes
        them (and parks them again while their origin is paused).
        """
        if not self.requeue_parked:
            return None
        try:
            from scrapy_redis.scheduler import Scheduler as RedisScheduler
        except ImportError:
            return None
        scheduler = compat.scheduler_of(self.crawler.engine)
        return scheduler if isinstance(scheduler, RedisScheduler) else None

    def _requeue(self, scheduler: Any, held: Held[Request]) -> bool:
        try:
            scheduler.enqueue_request(held.item.replace(dont_filter=True))
        except Exception as exc:
            logger.warning(
                "scrapy-rep: could not push a held request back to the shared queue: %(error)s",
                {"error": f"{type(exc).__name__}: {exc}"},
            )
            return False
        self._handed_over(held, REQUEUE)
        return True

    def _handed_over(self, held: Held[Request], action: str) -> None:
        """The request's final answer in this crawl: one decision record, ``requeue`` or
        ``keep``. Not put in its ``meta``: the request lives on, to be judged again."""
        origin = held.origin
        record = handed_over(
            origin, self.token, held.item.url, self.policy_of(origin), action, held.reason
        )
        self.telemetry.final(origin, record)


#: what became of a held request handed over at close (its reason: why it was held)
HANDED_OVER_DETAIL = {
    REQUEUE: "held at this worker's close: pushed back into the shared scrapy-redis queue "
    "for another worker",
    KEEP: "held at a graceful stop: kept in the JOBDIR, to be judged again on resume",
}


def handed_over(
    origin: str, token: str, url: str, policy: Policy | None, action: str, held_reason: str
) -> DecisionRecord:
    """The record of a held request requeued or kept at close (``action``: REQUEUE or KEEP):
    its final answer in this crawl, not a drop; ``reason`` is why it was held."""
    return unjudged(origin, token, url, policy, action, held_reason, HANDED_OVER_DETAIL[action])
