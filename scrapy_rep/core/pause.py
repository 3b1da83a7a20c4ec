"""One pause: an origin not sent to until a moment, for a cause; and its back-off. Pure.

Every reason an origin is not sent to for a while is a :class:`PauseState` with a cause:
its robots.txt could not be read (:mod:`~scrapy_rep.core.policy`), a page said 429 or 503,
or a wall of refusals (:mod:`~scrapy_rep.core.pushback`). Both sides wait by one
:class:`Backoff`.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass, replace
from typing import Any

from scrapy_rep.core.pace import COARSE, DECAY, MAX_GAP

#: the causes of a pause (the reasons of the requests it holds): robots.txt unreadable; a
#: page said 429; 503 (or another ``pause`` row); a wall of 401/403s or licence walls
ORIGIN_PAUSED = "origin-paused"
RATE_LIMITED, SERVICE_UNAVAILABLE, BLOCKED = "rate-limited", "service-unavailable", "blocked"
#: the causes a page's answer gives
PAGE_CAUSES = (RATE_LIMITED, SERVICE_UNAVAILABLE, BLOCKED)
CAUSES = (ORIGIN_PAUSED, *PAGE_CAUSES)


@dataclass(frozen=True, slots=True)
class Backoff:
    """``start`` x ``factor`` ** (n - 1) s after the n-th failure in a row, at most ``cap``,
    given up at the ``tries``-th; a ``Retry-After`` is clamped to ``[floor, hint_cap]``."""

    start: float
    factor: float = 2.0
    cap: float = 3_600.0
    tries: int = 5
    floor: float = 1.0
    #: None: ``cap``
    hint_cap: float | None = None

    def wait(self, n: int) -> float:
        """Seconds to wait after the ``n``-th failure in a row (1, 2, ...)."""
        try:
            grown = self.start * math.pow(self.factor, max(n - 1, 0))
        except OverflowError:
            return self.cap
        return min(self.cap, grown)

    def gives_up(self, n: int) -> bool:
        return n >= self.tries

    def left(self, n: int) -> float:
        """Seconds of the waits still to come after the ``n``-th failure, if each fails."""
        return sum(self.wait(k) for k in range(n + 1, self.tries))

    def clamp(self, seconds: float) -> float:
        """A wait a ``Retry-After`` gave, within ``[floor, hint_cap]``."""
        cap = self.cap if self.hint_cap is None else self.hint_cap
        return min(max(seconds, self.floor), cap)


@dataclass(frozen=True, slots=True)
class PauseState:
    """An origin's pause (JSON-able, a cluster shares it): until when, why, what said so."""

    until: float
    #: one of :data:`CAUSES`: the reason of the requests it holds
    cause: str
    #: the status that said so (0: no HTTP answer, a network error)
    status: int
    #: the page (or robots.txt) that said so
    url: str
    #: seconds the response's ``Retry-After`` gave (None: absent, unreadable, or not kept)
    retry_after: float | None
    #: failures in a row so far (the back-off's exponent)
    level: int
    started: float
    #: the pace learnt: seconds between sends after the pause (0: none), and how far the
    #: learning is (COARSE, FINE, SETTLED)
    gap: float = 0.0
    stage: int = 0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> PauseState | None:
        """The state a store kept; None if it is not one (written by something else)."""
        try:
            hint = data.get("retry_after")
            state = cls(
                float(data["until"]),
                str(data["cause"]),
                int(data["status"]),
                str(data["url"]),
                None if hint is None else float(hint),
                int(data["level"]),
                float(data["started"]),
                float(data.get("gap") or 0.0),
                int(data.get("stage") or 0),
            )
        except (KeyError, TypeError, ValueError, AttributeError):
            return None
        if state.cause not in CAUSES or not math.isfinite(state.until):
            return None
        if not 0.0 <= state.gap <= MAX_GAP or state.stage not in DECAY:  # not a pace
            state = replace(state, gap=0.0, stage=COARSE)
        return state

    def lasts(self, now: float) -> bool:
        return now < self.until

    @property
    def hint(self) -> str:
        return "none" if self.retry_after is None else f"{self.retry_after:g}s"

    def describe(self) -> str:
        """The pause in words, for the record of a request it holds."""
        try:
            end = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(self.until))
        except (OverflowError, OSError, ValueError):
            end = f"{self.until:.0f}"
        return (
            f"the origin answered {self.status} to {self.url} (Retry-After: {self.hint}); "
            f"{self.cause} until {end} ({self.until - self.started:g}s)"
        )

    def evidence(self) -> dict[str, Any]:
        """What said so, for the ``parked`` audit record."""
        return {
            "status": self.status,
            "retry_after": self.retry_after,
            "page": self.url,
            "until": self.until,
        }


def longest(*pauses: PauseState | None) -> PauseState | None:
    """Of the pauses that hold an origin, the one that ends last (None: none)."""
    found = [p for p in pauses if p is not None]
    return max(found, key=lambda p: p.until) if found else None
