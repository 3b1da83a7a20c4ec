"""How much of the downloader requests waiting for their origin's robots.txt may take.

They count in ``CONCURRENT_REQUESTS``: origins whose robots.txt hangs would otherwise
take all of it and stall every healthy origin.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

#: seconds within which a robots.txt fetch always counts as quick (WaitingRoom.quick_fetch)
QUICK_FETCH = 0.25
#: a fetch is slow once it takes this many times what fetches lately took
SLOW_FETCH = 2.0
#: the weight of the newest fetch in what fetches lately took (a moving average)
FETCH_WEIGHT = 1 / 8


class WaitingRoom:
    """The requests waiting in the downloader for a fetch, and how long one more may wait."""

    def __init__(self, pending_wait: float, max_waiting: int | None = None) -> None:
        self.pending_wait = pending_wait
        #: requests that may wait in the downloader for a fetch at once (None: any number)
        self.max_waiting = max_waiting
        #: when each request waiting in the downloader for a fetch began
        self._waiting_since: list[float] = []
        #: how long the fetches requests waited for have lately taken (a moving average, s)
        self._fetch_time: float | None = None

    def wait_budget(self, budget: float, now: float) -> float:
        """How long one more request may wait in the downloader for its origin's fetch.

        ``max_waiting`` requests may wait their whole ``budget``; past them, one waits at
        most :attr:`quick_fetch`, and only while no waiting request has waited longer
        (else it is parked at once): quick fetches park nothing, hung ones take little.
        """
        if self.max_waiting is None or len(self._waiting_since) < self.max_waiting:
            return budget
        quick = self.quick_fetch
        waited = now - min(self._waiting_since)
        return min(budget, quick) if waited < quick else 0.0

    @property
    def quick_fetch(self) -> float:
        """How long a fetch may take and still count as quick: twice what fetches lately
        took, within ``[QUICK_FETCH, pending_wait]``. A busy machine answers every fetch
        late and its requests should wait; a hung fetch never ends, so never lengthens it.
        """
        lately = self._fetch_time or 0.0
        return min(max(QUICK_FETCH, SLOW_FETCH * lately), self.pending_wait)

    def fetched(self, seconds: float) -> None:
        """A fetch a request waited for ended, ``seconds`` after it started."""
        lately = self._fetch_time
        self._fetch_time = seconds if lately is None else lately + (seconds - lately) * FETCH_WEIGHT

    @contextmanager
    def enter(self, now: float) -> Iterator[None]:
        """Count a request as waiting in the downloader (since ``now``) while the block runs."""
        self._waiting_since.append(now)
        try:
            yield
        finally:
            self._waiting_since.remove(now)


def waiting_bound(concurrent_requests: int) -> int | None:
    """Requests that may wait in the downloader for robots.txt their whole budget: half of
    ``CONCURRENT_REQUESTS``, the rest left to requests judged now (None: unbounded)."""
    return max(1, concurrent_requests // 2) if concurrent_requests > 0 else None
