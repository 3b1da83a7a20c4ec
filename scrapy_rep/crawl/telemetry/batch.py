"""Stats increments, batched: one dict update per key per request, not a collector call.

Scrapy's stats collector is a method call per key; a judged request counts
three or four keys. The increments wait in a plain dict and are handed over
every :data:`FLUSH_EVERY` events, and at idle and close.
"""

from __future__ import annotations

from typing import Any

#: pending stats increments handed to Scrapy's collector at once
FLUSH_EVERY = 512


class StatsBatch:
    """Increments waiting for Scrapy's stats collector.

    The hot path may update ``pending`` itself and add to ``events``; every
    other caller uses :meth:`inc`.
    """

    #: weakly referable: Scrapy's signals hold ``flush`` weakly
    __slots__ = ("__weakref__", "events", "pending", "stats")

    def __init__(self, stats: Any) -> None:
        self.stats = stats
        self.pending: dict[str, int] = {}
        #: increments since the last flush
        self.events = 0

    def inc(self, key: str) -> None:
        pending = self.pending
        pending[key] = pending.get(key, 0) + 1
        self.events += 1
        if self.events >= FLUSH_EVERY:
            self.flush()

    def flush(self) -> None:
        """Hand the batched increments to Scrapy's stats collector."""
        pending, self.pending, self.events = self.pending, {}, 0
        for key, count in pending.items():
            self.stats.inc_value(key, count)
