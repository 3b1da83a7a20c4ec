"""The Scrapy side of :class:`~scrapy_rep.runtime.store.held.HeldLedger`.

With ``REP_STORE = "redis"`` and scrapy-redis's scheduler,
every request this worker parks is recorded in the queue's Redis, encoded by
the queue itself (``Request.to_dict``, the queue's serializer), so a survivor
can push it back into that queue unchanged when this worker dies; it is then
judged again like any request from the queue. Beside each goes what its
decision record needs (origin, token, why it was held, the policy it was held
under: :func:`held_fields`), as JSON, so the
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
from typing import TYPE_CHECKING, Any, cast

from scrapy import Request

from scrapy_rep.core.decision import (
    PARK,
    REQUEUE,
    REQUEUED_FROM_DEAD_DETAIL,
    UNRESOLVED,
    DecisionRecord,
    decision_record,
    unjudged,
)
from scrapy_rep.core.policy import Policy
from scrapy_rep.crawl import compat
from scrapy_rep.crawl import meta as M
from scrapy_rep.crawl.telemetry import Telemetry
from scrapy_rep.runtime.settings import RepSettings

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

    from scrapy_rep.runtime.store.held import HeldLedger

logger = logging.getLogger(__name__)

#: a dead worker's held request, requeued by this one
FROM_DEAD = "rep/cluster/requeued-from-dead-worker"
#: what a worker records beside each request it holds, so that a survivor requeueing it
#: after the worker's death can write its final answer: whose, why held, on what policy
HELD_FIELDS = (
    "origin",
    "product_token",
    "reason",
    "policy_status",
    "policy_http_status",
    "policy_fetched_at",
    "policy_digest",
    "policy_url",
    "policy_final_url",
)
_HELD_TEXT = ("origin", "product_token", "reason", "policy_status")


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
                on_requeued=lambda worker, moved: requeued(telemetry, worker, moved),
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
            self.telemetry.inc("rep/cluster/held-unrecorded")
            logger.debug(
                "scrapy-rep: cannot record held %(url)s in Redis: %(error)s",
                {"url": request.url, "error": f"{type(exc).__name__}: {exc}"},
            )
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


def held_fields(origin: str, token: str, policy: Policy | None, reason: str) -> dict[str, Any]:
    """What a request held for ``reason`` under ``policy`` needs recorded (:data:`HELD_FIELDS`)."""
    record = cast(dict[str, Any], unjudged(origin, token, "", policy, PARK, reason, ""))
    return {name: record[name] for name in HELD_FIELDS}


def requeued(telemetry: Telemetry, worker: str, moved: list[tuple[str, bytes]]) -> None:
    """Each request the ledger moved back into the queue gets its final answer, in the dead
    worker's stead: a ``requeue`` decision record from what that worker recorded; a bare
    ``requeued`` record where it recorded only the URL (an older version)."""
    telemetry.counts.requeued_from_dead += len(moved)
    logger.info(
        "scrapy-rep: %(n)d held requests of worker %(worker)s, whose lease expired, are back "
        "in the shared queue",
        {"n": len(moved), "worker": worker},
    )
    bare = 0
    for url, about in moved:
        try:
            held = json.loads(about) if about else None
        except ValueError:
            held = None
        record = requeued_from_dead(url, held, worker)
        if record is not None:
            telemetry.final(record["origin"], record, stat=FROM_DEAD)
            continue
        bare += 1
        telemetry.inc(FROM_DEAD)
        if telemetry.audit is not None:
            telemetry.audit.write(
                "requeued", {"url": url, "reason": "worker-lease-expired", "worker": worker}
            )
    if bare:
        logger.warning(
            "scrapy-rep: %(n)d requeued requests of worker %(worker)s came without their "
            "origin, token, reason or policy (a worker of an older scrapy-rep, or an "
            "unreadable record): no decision record for them, only a 'requeued' one",
            {"n": bare, "worker": worker},
        )


def requeued_from_dead(url: str, held: Any, worker: str) -> DecisionRecord | None:
    """The record of a dead worker's held request, requeued by this one; None if what it
    recorded (:func:`held_fields`) is missing or malformed (an older version's)."""
    if not isinstance(held, dict) or not all(
        isinstance(held.get(name), str) for name in _HELD_TEXT
    ):
        return None
    record = decision_record(
        held["origin"],
        held["product_token"],
        url,
        None,
        UNRESOLVED,
        UNRESOLVED,
        REQUEUE,
        held["reason"],
        REQUEUED_FROM_DEAD_DETAIL % worker,
        policy_status=held["policy_status"],
    )
    fields = cast(dict[str, Any], record)
    for name in HELD_FIELDS[4:]:  # the policy it was held under, as its worker knew it
        value = held.get(name)
        if value is None or isinstance(value, (str, int, float)):
            fields[name] = value
    return record
