"""The sink's handlers for pauses, one family whatever the cause: an origin paused or
blocked, resumed (robots.txt's pauses said by :mod:`.origins`, a page's here), and the
requests whose responses pushed back, held again instead of retried."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from scrapy_rep.core.events import PageRefused, Paused, Resumed
from scrapy_rep.core.pause import BLOCKED, ORIGIN_PAUSED
from scrapy_rep.core.pushback import Pause
from scrapy_rep.crawl.telemetry.origins import clock_time, robots_paused, robots_resumed
from scrapy_rep.robotstxt.text import printable

if TYPE_CHECKING:
    from scrapy_rep.core.pause import PauseState
    from scrapy_rep.crawl.telemetry.sink import Sink

logger = logging.getLogger(__package__)  # the sink's one logger, whichever part speaks


def paused(sink: Sink, event: Paused) -> None:
    """An origin paused: said and counted by its cause."""
    if event.state.cause == ORIGIN_PAUSED:
        if event.policy is not None:
            robots_paused(sink, event.origin, event.policy)
    elif event.page is not None:
        _page_paused(sink, event.page, event.shared)


def resumed(sink: Sink, event: Resumed) -> None:
    """An origin's pause ended: said and counted by its cause."""
    if event.state.cause == ORIGIN_PAUSED:
        if event.policy is not None:
            robots_resumed(sink, event.origin, event.policy)
    else:
        _page_resumed(sink, event.origin, event.state)


def _page_paused(sink: Sink, pause: Pause, shared: bool) -> None:
    state = pause.state
    sink.inc(f"rep/pushback/pauses/{state.cause}")
    sink.counts.page_paused(pause.origin, state.cause)
    if state.cause == BLOCKED:
        statuses = "/".join(str(s) for s in pause.statuses) or str(state.status)
        logger.warning(
            "scrapy-rep: %(origin)s is blocked: it answered %(statuses)s to %(n)s pages in a "
            "row (first %(first)s, last %(last)s); no more requests are "
            "sent to it until %(until)s. Stop and diagnose: the site refuses this crawler; do "
            "not change its identity to get past it",
            {
                "origin": pause.origin,
                "statuses": statuses,
                "n": pause.refusals,
                "first": printable(pause.first_url or state.url),
                "last": printable(pause.last_url or state.url),
                "until": clock_time(state.until),
            },
        )
    else:
        hint = "none" if state.retry_after is None else f"{state.retry_after:g}s"
        logger.info(
            "scrapy-rep: %(origin)s paused until %(until)s (%(cause)s): it answered %(status)d "
            "to %(url)s (Retry-After: %(hint)s)%(shared)s",
            {
                "origin": pause.origin,
                "until": clock_time(state.until),
                "cause": state.cause,
                "status": state.status,
                "url": printable(state.url),
                "hint": hint,
                "shared": ", seen by another worker" if shared else "",
            },
        )
    if sink.audit is not None:
        sink.audit.write(
            "page_pause",
            {
                "origin": pause.origin,
                **state.to_dict(),
                "statuses": list(pause.statuses),
                "first_url": pause.first_url or None,
                "last_url": pause.last_url or None,
                "shared": shared,
            },
        )


def _page_resumed(sink: Sink, origin: str, state: PauseState) -> None:
    sink.inc(f"rep/pushback/resumes/{state.cause}")
    logger.info(
        "scrapy-rep: %(origin)s resumed after its pause (%(cause)s): one request in flight, "
        "more as healthy responses come back",
        {"origin": origin, "cause": state.cause},
    )
    if sink.audit is not None:
        sink.audit.write(
            "page_resume",
            {
                "origin": origin,
                "cause": state.cause,
                "started": state.started,
                "until": state.until,
            },
        )


def page_refused(sink: Sink, event: PageRefused) -> None:
    if event.unsent:
        sink.inc("rep/pushback/unsent")
    else:
        sink.inc(f"rep/pushback/refused/{event.status}")


#: event class -> its handler here
ON: Mapping[type, Callable[[Sink, Any], None]] = {
    Paused: paused,
    Resumed: resumed,
    PageRefused: page_refused,
}
