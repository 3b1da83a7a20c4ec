"""Why a request was not downloaded, as an exception Scrapy understands."""

from __future__ import annotations

from scrapy.exceptions import IgnoreRequest

from scrapy_rep.core.decision import DecisionRecord


class RepIgnoreRequest(IgnoreRequest):
    """A request scrapy-rep dropped; ``decision`` is the record that says why."""

    def __init__(self, decision: DecisionRecord) -> None:
        self.decision = decision
        super().__init__(f"{decision['reason']}: {decision['detail']}")


class PushbackHeld(Exception):
    """Fails a request taken out of its download slot's queue because its origin paused
    (a page said 429/503/403s); the pushback middleware hands it back to be held."""

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(reason)


class ParkedRequest(IgnoreRequest):
    """Raised from ``request_scheduled`` to keep a held request out of the scheduler."""
