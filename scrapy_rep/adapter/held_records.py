"""The Scrapy side of :class:`~scrapy_rep.runtime.store.held.HeldLedger`.

With ``REP_STORE = "redis"``, scrapy-redis's scheduler and ``REP_REQUEUE_PARKED``,
every request this worker parks is recorded in the queue's Redis, encoded by
the queue itself (``Request.to_dict``, the queue's serializer), so a survivor
can push it back into that queue unchanged when this worker dies; it is then
judged again like any request from the queue. Records go when the request is
released or dropped, and all at once at a graceful close (which hands the
requests over itself, :mod:`scrapy_rep.adapter.handover`).
"""

from __future__ import annotations

import logging
import os
import secrets
import socket
from typing import TYPE_CHECKING, Any

from scrapy import Request

from scrapy_rep.adapter import compat
from scrapy_rep.adapter import meta as M
from scrapy_rep.adapter.telemetry import Telemetry
from scrapy_rep.core.events import RequeuedFromDead
from scrapy_rep.runtime.settings import RepSettings

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

    from scrapy_rep.runtime.store.held import HeldLedger

logger = logging.getLogger(__name__)


class HeldRecords:
    """Records this worker's held requests in Redis; requeues those of dead workers."""

    def __init__(self, ledger: HeldLedger, queue: Any, telemetry: Telemetry) -> None:
        self.ledger = ledger
        self.queue = queue  # scrapy-redis's queue: its encoding, its key
        self.scored = ledger.queue_kind == "zset"
        self.telemetry = telemetry

    @classmethod
    def open(
        cls, crawler: Crawler, config: RepSettings, telemetry: Telemetry
    ) -> HeldRecords | None:
        """Records for this crawl, started; None unless the store and queue are Redis's."""
        if config.store != "redis" or not config.requeue_parked:
            return None
        try:
            from scrapy_redis import queue as redis_queues
            from scrapy_redis.scheduler import Scheduler as RedisScheduler

            from scrapy_rep.runtime.store.held import LIST, ZSET, HeldLedger, twin
        except ImportError:
            return None
        scheduler = compat.scheduler_of(crawler.engine)
        if not isinstance(scheduler, RedisScheduler):
            return None
        queue = getattr(scheduler, "queue", None)
        if isinstance(queue, redis_queues.PriorityQueue):
            kind = ZSET
        elif isinstance(queue, (redis_queues.FifoQueue, redis_queues.LifoQueue)):
            kind = LIST
        else:
            logger.warning(
                "scrapy-rep: held requests are not recorded in Redis for the queue class "
                "%(cls)s (known: scrapy-redis's Priority, Fifo and Lifo queues); they are lost "
                "if this worker is killed",
                {"cls": type(queue).__name__},
            )
            return None
        assert queue is not None
        worker = f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"
        records = cls(
            HeldLedger(
                twin(scheduler.server),
                f"{config.redis_prefix}:v1",
                worker,
                (queue.key, kind),
                lease=config.worker_lease,
                check_interval=config.worker_check_interval,
                on_requeued=lambda worker, urls: telemetry.record(RequeuedFromDead(worker, urls)),
            ),
            queue,
            telemetry,
        )
        records.ledger.start()
        return records

    def parked(self, request: Request) -> None:
        """``request`` is held here now: record it (as the queue would encode it)."""
        request.meta.pop(M.HELD_ID, None)
        try:
            data = self.queue._encode_request(request.replace(dont_filter=True))
        except Exception as exc:  # a lambda callback, an unpicklable meta value, ...
            self.telemetry.inc("rep/cluster/held-unrecorded")
            logger.debug(
                "scrapy-rep: cannot record held %(url)s in Redis: %(error)s",
                {"url": request.url, "error": f"{type(exc).__name__}: {exc}"},
            )
            return
        held_id = secrets.token_hex(8)
        request.meta[M.HELD_ID] = held_id
        self.ledger.record(held_id, request.url, -request.priority if self.scored else 0, data)

    def left(self, request: Request) -> None:
        """``request`` is released or dropped: its record goes."""
        held_id = request.meta.pop(M.HELD_ID, None)
        if held_id is not None:
            self.ledger.forget(held_id)

    async def close(self) -> None:
        await self.ledger.close()
