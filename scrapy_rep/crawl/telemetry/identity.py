"""The sink's handler for requests leaving under the wrong identity (``components/identity.py``)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from scrapy_rep.core.events import IdentityMismatch
from scrapy_rep.robotstxt.text import printable

if TYPE_CHECKING:
    from scrapy_rep.crawl.telemetry.sink import Sink

logger = logging.getLogger(__package__)  # the sink's one logger, whichever part speaks


def identity_mismatch(sink: Sink, event: IdentityMismatch) -> None:
    """``rep/identity/<reason>`` for each request; one WARNING per origin and reason."""
    sink.inc(f"rep/identity/{event.reason}")
    if event.first:
        done = "stopped" if event.action == "drop" else "sent anyway"
        logger.warning(
            "scrapy-rep: %(origin)s: %(reason)s, %(done)s (%(url)s): %(detail)s; said once "
            "per origin, see the stats rep/identity/*",
            {
                "origin": event.origin,
                "reason": event.reason,
                "done": done,
                "url": printable(event.url),
                "detail": printable(event.detail),
            },
        )
    if sink.audit is not None:
        sink.audit.write(
            "identity",
            {
                "origin": event.origin,
                "url": event.url,
                "reason": event.reason,
                "action": event.action,
                "user_agent": event.user_agent,
                "detail": event.detail,
            },
        )


ON: Mapping[type, Callable[[Sink, Any], None]] = {IdentityMismatch: identity_mismatch}
