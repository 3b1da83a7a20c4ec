"""The Scrapy side of :class:`~scrapy_rep.runtime.store.held.HeldLedger`.

With ``REP_STORE = "redis"`` and scrapy-redis's scheduler,
every request this worker parks is recorded in the queue's Redis, encoded by
the queue itself (``Request.to_dict``, the queue's serializer), so a survivor
can push it back into that queue unchanged when this worker dies; it is then
judged again like any request from the queue. Beside each goes what its
decision record needs (origin, token, why it was held, the policy it was held
under: :func:`~scrapy_rep.core.decision.held_fields`), as JSON, so the
survivor writes the request's final answer in this worker's stead. Records go when the request is
released or dropped, and all at once at a graceful close (which hands the
requests over itself, :mod:`scrapy_rep.crawl.handover`).
"""

from __future__ import annotations

import json
import logging
import os
import secrets
import socket
from typing import TYPE_CHECKING, Any

from scrapy import Request

from scrapy_rep.core.decision import held_fields
from scrapy_rep.core.events import HeldUnrecorded, RequeuedFromDead
from scrapy_rep.core.policy import Policy
from scrapy_rep.crawl import compat
from scrapy_rep.crawl import meta as M
from scrapy_rep.crawl.telemetry import Telemetry
from scrapy_rep.runtime.settings import RepSettings

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

    from scrapy_rep.runtime.store.held import HeldLedger

logger = logging.getLogger(__name__)


class HeldRecords:
    """Records this worker's held requests in Redis; requeues those of dead workers."""

    def __init__(self, ledger: HeldLedger, queue: Any, telemetry: Telemetry, *, token: str) -> None:
        self.ledger = ledger
        self.token = token  # this crawl's product token, for what the records say
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
                on_requeued=lambda worker, moved: telemetry.emit(requeued_event(worker, moved)),
            ),
            queue,
            telemetry,
            token=config.token,
        )
        records.ledger.start()
        return records

    def parked(self, request: Request, origin: str, reason: str, policy: Policy | None) -> None:
        """``request`` is held here now, for ``reason`` under ``policy``: record it (as the
        queue would encode it) with what its decision record will need."""
        request.meta.pop(M.HELD_ID, None)
        try:
            data = compat.encode_for_queue(self.queue, request.replace(dont_filter=True))
        except Exception as exc:  # a lambda callback, an unpicklable meta value, ...
            error = f"{type(exc).__name__}: {exc}"
            self.telemetry.emit(HeldUnrecorded(request.url, error))
            return
        held_id = secrets.token_hex(8)
        request.meta[M.HELD_ID] = held_id
        about = json.dumps(held_fields(origin, self.token, policy, reason)).encode()
        score = -request.priority if self.scored else 0
        self.ledger.add(held_id, request.url, score, data, about)

    def left(self, request: Request) -> None:
        """``request`` is released or dropped: its record goes."""
        held_id = request.meta.pop(M.HELD_ID, None)
        if held_id is not None:
            self.ledger.forget(held_id)

    async def close(self) -> None:
        await self.ledger.close()


def requeued_event(worker: str, moved: list[tuple[str, bytes]]) -> RequeuedFromDead:
    """What the ledger moved back into the queue, with what each request's worker recorded
    (None where nothing readable was: a worker of an older version)."""
    held: list[Any] = []
    for _url, about in moved:
        try:
            held.append(json.loads(about) if about else None)
        except ValueError:
            held.append(None)
    return RequeuedFromDead(worker, [url for url, _ in moved], held)
