"""The next allowed send time per key, reserved in one worker's memory; for a whole
cluster, :mod:`scrapy_rep.runtime.store.redis_pacing` reserves it in Redis.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

from scrapy_rep.core.recent import Recent


class Reserved(NamedTuple):
    """A send's reserved moment: seconds to ``wait`` for it, the ``gap`` it keeps before
    the next (0: nothing reserved); in a cluster, the moment ``at`` (Redis's milliseconds,
    0: none) and how many seconds before it the ``others``, the other workers' sends since
    this worker's own last, were reserved (newest first); the pages ``told`` served to every
    worker before its first pushback (their sum: the site's bucket held them all)."""

    wait: float
    gap: float
    at: int = 0
    others: tuple[float, ...] = ()
    told: int = 0


class LocalPacing:
    """Send times per key in this worker alone, reserved as the cluster's are: without a
    cluster's store, or while its Redis fails."""

    def __init__(self, now: Callable[[], float], remember: int) -> None:
        self.now = now
        self._next: Recent[str, float] = Recent(remember)  # key -> next allowed, the latest

    def free(self, slot: str) -> bool:
        """Whether a send on ``slot`` may go now."""
        kept = self._next.get(slot)
        return kept is None or self.now() >= kept

    def reserve(self, slot: str, gap: float) -> Reserved:
        """The moment of a send on ``slot``, the next one ``gap`` s later."""
        now = self.now()
        kept = self._next.get(slot)
        at = now if kept is None else max(now, kept)
        self._next.put(slot, at + gap)  # the key reserved longest ago goes
        return Reserved(at - now, gap)
