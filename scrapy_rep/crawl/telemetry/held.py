"""The sink's handlers for held requests: parked, released, restored after a stop,
requeued for a dead worker, or not recorded in the shared store."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from scrapy_rep.core.decision import requeued_from_dead
from scrapy_rep.core.events import HeldRestored, HeldUnrecorded, Parked, Released, RequeuedFromDead
from scrapy_rep.core.pushback import REASONS as PUSHBACK_REASONS

if TYPE_CHECKING:
    from scrapy_rep.crawl.telemetry.sink import Sink

logger = logging.getLogger(__package__)  # the sink's one logger, whichever part speaks

#: a dead worker's held request, requeued by this one
FROM_DEAD = "rep/cluster/requeued-from-dead-worker"


def parked(sink: Sink, event: Parked) -> None:
    origin, url, reason = event.origin, event.url, event.reason
    sink.inc("rep/parked")
    sink.inc(f"rep/parked/{reason}")
    if reason in PUSHBACK_REASONS:
        sink.inc(f"rep/pushback/held/{reason}")
    sink.counts.parked(origin)
    if sink.audit is not None:
        record: dict[str, Any] = {"url": url, "origin": origin, "reason": reason}
        pause = event.pause
        if pause is not None:  # what the page said: its status, Retry-After, the page itself
            record.update(pause.evidence())
        sink.audit.write("parked", record)


def released(sink: Sink, event: Released) -> None:
    origin, url = event.origin, event.url
    sink.inc("rep/released")
    if event.reason in PUSHBACK_REASONS:
        sink.inc(f"rep/pushback/released/{event.reason}")
    sink.counts.released(origin)
    if sink.audit is not None:
        record = {"url": url, "origin": origin}
        if event.reason:
            record["reason"] = event.reason
        sink.audit.write("released", record)


def requeued_from_dead_worker(sink: Sink, event: RequeuedFromDead) -> None:
    """Each request's final answer, in the dead worker's stead: a ``requeue`` decision
    record from what that worker recorded; a bare ``requeued`` record where it recorded
    only the URL (an older version)."""
    worker, urls = event.worker, event.urls
    sink.counts.requeued_dead(len(urls))
    logger.info(
        "scrapy-rep: %(n)d held requests of worker %(worker)s, whose lease expired, are back "
        "in the shared queue",
        {"n": len(urls), "worker": worker},
    )
    bare = 0
    for url, held in zip(urls, event.held, strict=True):
        record = requeued_from_dead(url, held, worker)
        if record is not None:
            sink.final(record["origin"], record, stat=FROM_DEAD)
            continue
        bare += 1
        sink.inc(FROM_DEAD)
        if sink.audit is not None:
            sink.audit.write(
                "requeued", {"url": url, "reason": "worker-lease-expired", "worker": worker}
            )
    if bare:
        logger.warning(
            "scrapy-rep: %(n)d requeued requests of worker %(worker)s came without their "
            "origin, token, reason or policy (a worker of an older scrapy-rep, or an "
            "unreadable record): no decision record for them, only a 'requeued' one",
            {"n": bare, "worker": worker},
        )


def held_restored(sink: Sink, event: HeldRestored) -> None:
    for _ in range(event.count):
        sink.inc("rep/held/restored")
    logger.info(
        "scrapy-rep: %(n)d requests held at the last stop are judged again",
        {"n": event.count},
    )


def held_unrecorded(sink: Sink, event: HeldUnrecorded) -> None:
    sink.inc("rep/cluster/held-unrecorded")
    logger.debug(
        "scrapy-rep: cannot record held %(url)s in Redis: %(error)s",
        {"url": event.url, "error": event.error},
    )


#: event class -> its handler here
ON: Mapping[type, Callable[[Sink, Any], None]] = {
    Parked: parked,
    Released: released,
    RequeuedFromDead: requeued_from_dead_worker,
    HeldRestored: held_restored,
    HeldUnrecorded: held_unrecorded,
}
