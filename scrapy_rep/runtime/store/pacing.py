"""The next allowed send time per key, reserved for a whole cluster in Redis (N workers
pacing alone would send N times as often as a site asks), or in one worker's memory.
Redis's own ``TIME`` is read, so the workers' clocks need not agree (docs/distributed.md).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any, NamedTuple

#: reserve a send on KEYS[1] ARGV[1] ms after the one before (KEYS[2]: the moment reserved
#: last; ARGV[2] "1": join, at least the gap the cluster keeps, the last reservation's;
#: KEYS[3]: the latest moments reserved, newest first; ARGV[3]: the worker's own last one,
#: 0: none): returns the wait, the spacing the site will see (ms; -1: none known), the gap
#: kept (0: joined a cluster that keeps none, nothing reserved), the moment reserved, and
#: how long before it the other workers' sends since the worker's own last were reserved
_RESERVE = """
if redis.replicate_commands then redis.replicate_commands() end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local after = tonumber(redis.call('GET', KEYS[1]))
local last = tonumber(redis.call('GET', KEYS[2]))
local gap = tonumber(ARGV[1])
if ARGV[2] == '1' and after and last and after - last > gap then gap = after - last end
if gap <= 0 then return {0, -1, 0, 0, {}} end
local at = math.max(now, after or 0)
local keep = at + gap - now + 60000
redis.call('SET', KEYS[1], at + gap, 'PX', keep)
redis.call('SET', KEYS[2], at, 'PX', keep)
local mine = tonumber(ARGV[3])
local others = {}
for _, moment in ipairs(redis.call('LRANGE', KEYS[3], 0, ARGV[4] - 1)) do
    if tonumber(moment) <= mine then break end
    others[#others + 1] = at - tonumber(moment)
end
redis.call('LPUSH', KEYS[3], at)
redis.call('LTRIM', KEYS[3], 0, ARGV[4] - 1)
redis.call('PEXPIRE', KEYS[3], keep)
local spacing = -1
if last then spacing = at - last end
return {at - now, spacing, gap, at, others}
"""

#: the moments of the latest sends kept per key, for the workers' windows (core/pace.py)
RECENT = 32


class Reserved(NamedTuple):
    """A send's reserved moment: seconds to ``wait`` for it, the ``spacing`` the site will
    see (since the send reserved before it, by any worker; None: none known), the ``gap``
    it keeps before the next (0: nothing reserved); in a cluster, the moment ``at``
    (Redis's milliseconds, 0: none) and, in seconds before it, the ``others``: the other
    workers' sends since this worker's own last."""

    wait: float
    spacing: float | None
    gap: float
    at: int = 0
    others: tuple[float, ...] = ()


class SharedPacing:
    """Send times per download slot, reserved atomically in the cluster's Redis."""

    def __init__(self, client: Any, base: str, counts: Counter[str]) -> None:
        self.base = base
        self._reserve = client.register_script(_RESERVE)
        #: shared with the store's counts: ``round_trips`` and ``pace``
        self.counts = counts

    async def reserve_spaced(
        self, slot: str, gap: float, join: bool = False, mine: int = 0
    ) -> Reserved:
        """The moment of a send on ``slot``, the next one ``gap`` s later; ``join``: at least
        the gap the cluster keeps there (a worker with no pace of its own for the origin,
        which the other workers pace: nothing reserved when none does); ``mine``: this
        worker's last moment reserved there (:attr:`Reserved.at`)."""
        self.counts["round_trips"] += 1
        self.counts["pace"] += 1
        key = f"{self.base}:pace:{slot}"
        wait_ms, spacing_ms, kept_ms, at, others = await self._reserve(
            keys=[key, f"{key}:last", f"{key}:sends"],
            args=[max(1, int(gap * 1000)) if gap > 0 else 0, int(join), mine, RECENT],
        )
        spacing = None if int(spacing_ms) < 0 else int(spacing_ms) / 1000.0
        return Reserved(
            max(0, int(wait_ms)) / 1000.0,
            spacing,
            int(kept_ms) / 1000.0,
            int(at),
            tuple(int(before) / 1000.0 for before in others),
        )


class LocalPacing:
    """Send times per key in this worker alone, reserved as :class:`SharedPacing` reserves
    them: without a cluster's store, or while its Redis fails."""

    def __init__(self, now: Callable[[], float], remember: int) -> None:
        self.now = now
        self.remember = max(1, remember)  # the keys reserved last are kept
        self._next: dict[str, tuple[float, float]] = {}  # key -> (next allowed, last)

    def free(self, slot: str) -> bool:
        """Whether a send on ``slot`` may go now."""
        kept = self._next.get(slot)
        return kept is None or self.now() >= kept[0]

    def reserve(self, slot: str, gap: float) -> Reserved:
        """:meth:`SharedPacing.reserve_spaced`, without a round trip (or a cluster to join)."""
        now = self.now()
        kept = self._next.pop(slot, None)
        at = now if kept is None else max(now, kept[0])
        if len(self._next) >= self.remember:  # the key reserved longest ago goes
            del self._next[next(iter(self._next))]
        self._next[slot] = (at + gap, at)
        return Reserved(at - now, None if kept is None else at - kept[1], gap)
