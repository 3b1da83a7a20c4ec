"""The cluster's send times: each reservation one Lua script in the shared Redis (N workers
pacing alone would send N times as often as a site asks). Redis's own ``TIME`` is read, so
the workers' clocks need not agree (docs/distributed.md).
"""

from __future__ import annotations

import secrets
from collections import Counter
from typing import Any

from scrapy_rep.core.pace import Spacing
from scrapy_rep.core.recent import Recent
from scrapy_rep.runtime.store.pacing import Reserved

#: reserve a send on KEYS[1] (the next allowed moment) ARGV[1] ms after the one before;
#: KEYS[2]: the latest moments reserved, newest first; ARGV[2] "1": join, at least the gap
#: the last reservation kept; ARGV[3]: the worker's own last moment (0: none); KEYS[3]:
#: each worker's (ARGV[5]) pages served before its first pushback, its own ARGV[6] (0:
#: none); KEYS[4]: the worker leading a first contact nobody paces, for ARGV[7] ms;
#: ARGV[8]: at most this times the gap the last reservation kept, if that one was made at
#: most ARGV[10] ms ago, not below ARGV[9] ms (the cluster's pace steps down per send).
#: Returns the wait (ms), the gap kept (0: joined a cluster that keeps none: nothing
#: reserved; the wait is then what is left of another worker's lead), the moment, how long
#: before it the others' moments since the worker's own last were, and the pages every
#: worker was served before its first pushback
_RESERVE = """
if redis.replicate_commands then redis.replicate_commands() end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local after = tonumber(redis.call('GET', KEYS[1]))
local recent = redis.call('LRANGE', KEYS[2], 0, ARGV[4] - 1)
local last = tonumber(recent[1])
local gap = tonumber(ARGV[1])
if ARGV[2] == '1' and after and last and after - last > gap then gap = after - last end
local step = tonumber(ARGV[8])
if gap > 0 and step < 1 and after and last and now - last <= tonumber(ARGV[10]) then
    gap = math.max(math.min(gap, math.floor((after - last) * step)), tonumber(ARGV[9]), 1)
end
if gap <= 0 then
    if ARGV[2] == '1' and not redis.call('SET', KEYS[4], ARGV[5], 'NX', 'PX', ARGV[7])
        and redis.call('GET', KEYS[4]) ~= ARGV[5] then
        return {math.max(0, redis.call('PTTL', KEYS[4])), 0, 0, {}, 0}
    end
    return {0, 0, 0, {}, 0}
end
if ARGV[6] ~= '0' then redis.call('HSET', KEYS[3], ARGV[5], ARGV[6]) end
local heard = 0
for _, pages in ipairs(redis.call('HVALS', KEYS[3])) do heard = heard + tonumber(pages) end
local at = math.max(now, after or 0)
local keep = at + gap - now + 60000
redis.call('SET', KEYS[1], at + gap, 'PX', keep)
local others = {}
for _, moment in ipairs(recent) do
    if tonumber(moment) <= tonumber(ARGV[3]) then break end
    others[#others + 1] = at - tonumber(moment)
end
redis.call('LPUSH', KEYS[2], at)
redis.call('LTRIM', KEYS[2], 0, ARGV[4] - 1)
redis.call('PEXPIRE', KEYS[2], keep)
redis.call('PEXPIRE', KEYS[3], keep)
return {at - now, gap, at, others, heard}
"""

#: the moments of the latest sends kept per key, for the workers' windows (core/pace.py)
RECENT = 32
#: seconds the first worker to meet an origin nobody paces leads its first contact alone:
#: the others' first sends wait for what its ramp learns (a pause, shared), as one worker's
#: ramp would (N workers each sending one at once is N in flight before any answer). Short:
#: a broad crawl's workers meet many origins together, and each waiting send holds a
#: download slot (a lead of 1 s cost three workers on 30 small origins 30% of their pages/s)
LEAD = 0.25


class SharedPacing:
    """Send times per download slot, reserved atomically in the cluster's Redis."""

    def __init__(self, client: Any, base: str, counts: Counter[str], remember: int) -> None:
        """``remember``: the slots whose last moment this worker keeps (the latest), as many
        as its policy cache holds origins."""
        self.base = base
        self._reserve = client.register_script(_RESERVE)
        #: shared with the store's counts: ``round_trips`` and ``pace``
        self.counts = counts
        #: slot -> this worker's last moment reserved there (0: none yet, asked to join)
        self._mine: Recent[str, int] = Recent(remember)
        self.worker = secrets.token_hex(8)  # this worker's field in a slot's pages heard
        self.lead = LEAD

    def first(self, slot: str) -> bool:
        """Whether this worker asks about ``slot`` for the first time (then no more)."""
        if slot in self._mine:
            return False
        self._mine.put(slot, 0)
        return True

    async def reserve_spaced(self, slot: str, spacing: Spacing) -> Reserved:
        """The moment of a send on ``slot``, the next one ``spacing.gap`` s later, or less:
        stepped down from the gap the last send kept, as :class:`~scrapy_rep.core.pace.Spacing`
        says. ``spacing.join``: at least the gap the cluster keeps there (a worker with no
        pace of its own for the origin, which the other workers pace: nothing reserved when
        none does, and it waits while another worker leads its first contact);
        ``spacing.heard``: the pages this worker was served there before its first pushback
        (0: none), which the cluster sums."""
        self.counts["round_trips"] += 1
        self.counts["pace"] += 1
        key = f"{self.base}:pace:{slot}"
        gap = spacing.gap
        wait_ms, kept_ms, at, others, told = await self._reserve(
            keys=[key, f"{key}:sends", f"{key}:heard", f"{key}:lead"],
            args=[
                max(1, int(gap * 1000)) if gap > 0 else 0,
                int(spacing.join),
                self._mine.get(slot, 0),
                RECENT,
                self.worker,
                max(0, int(spacing.heard)),
                max(1, int(self.lead * 1000)),
                repr(min(1.0, max(0.0, spacing.faster))),
                int(spacing.floor * 1000),
                int(spacing.window * 1000),
            ],
        )
        if at:
            self._mine.put(slot, int(at))
        return Reserved(
            max(0, int(wait_ms)) / 1000.0,
            int(kept_ms) / 1000.0,
            int(at),
            tuple(int(before) / 1000.0 for before in others),
            int(told),
        )
