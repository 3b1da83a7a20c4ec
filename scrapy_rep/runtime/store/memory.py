"""The in-process policy cache: LRU-bounded by bytes, each origin's parse kept with its policy
(so judging never parses again), shared by origins serving the same file, the body kept
once, compressed. Past the bounds an origin loses its parse, not its policy: with
``evicted_max`` it is kept compact and parsed again when it comes back, not refetched.
"""

from __future__ import annotations

import sys
import zlib
from collections import OrderedDict
from dataclasses import replace
from typing import Any
from weakref import WeakValueDictionary

from scrapy_rep.core.policy import Policy
from scrapy_rep.robotstxt import RobotsTxt, parse

#: evicted origins kept compact per cached one, without a shared store (each ~1.3 KiB,
#: sparing a refetch; 3 add at most ~2.5 times the cache's memory)
EVICTED_PER_CACHED = 3
#: the compiled window's budget (an eighth of ``REP_CACHE_MAX_BYTES``) in estimated bytes
#: (:attr:`RobotsTxt.footprint`): 256 MiB is ~9,000 real files
COMPILED_BYTES = 256 * 2**20
#: the cache's budget (``REP_CACHE_MAX_BYTES``)
MAX_BYTES = 2 * 2**30
#: a cached origin beside its compressed body (measured ~1.2 KiB on real files)
ORIGIN_BYTES = 1_536
#: an evicted origin kept compact beside its compressed body: its policy and slot
EVICTED_BYTES = 1_024


class _Entry:
    __slots__ = ("packed", "policy", "robots", "size")

    def __init__(self, policy: Policy, robots: Any, packed: bytes | None) -> None:
        self.policy = policy  # without its body
        self.robots = robots  # keeps the shared parse alive while this origin uses it
        self.packed = packed  # the body, compressed
        #: what the origin is counted as, in bytes (PolicyCache.max_bytes)
        self.size = ORIGIN_BYTES + (len(packed) if packed is not None else 0)
        if robots is not None and not isinstance(robots, RobotsTxt):
            self.size += getattr(robots, "footprint", 0)


class PolicyCache:
    """Policies by origin, at most ``max_origins`` and ``max_bytes``, least recently used
    out first. The files asked last stay compiled within ``compiled_bytes`` (plus the very
    last, whatever its size); the others are compacted, compiled again when next asked."""

    def __init__(
        self,
        max_origins: int = 1_000_000,
        evicted_max: int = 0,
        *,
        max_bytes: int = MAX_BYTES,
        compiled_bytes: int = COMPILED_BYTES,
        evicted_bytes: int | None = None,
    ) -> None:
        self.max_origins = max_origins
        self.max_bytes = max_bytes
        #: the compiled window's budget, in estimated bytes
        self.compiled_bytes = compiled_bytes
        #: robots.txt file -> its footprint when last weighed; their sum (the file asked last
        #: may have compiled since)
        self._compiled: OrderedDict[RobotsTxt, int] = OrderedDict()
        self.window_bytes = 0
        #: the file handed out last: weighed again at the next call (compiled since)
        self._handed: RobotsTxt | None = None
        #: the cached origins' bytes, and the evicted ones'
        self._bytes = 0
        self._evicted_bytes = 0
        #: the evicted keep's budget (default: as much as the cache's)
        self.evicted_bytes = evicted_bytes if evicted_bytes is not None else max_bytes
        #: the entry used last: the parse a judgement asks for next
        self._last: _Entry | None = None
        #: evicted origins kept compact (policy and compressed body), least recent dropped
        self.evicted_max = evicted_max
        self._entries: OrderedDict[str, _Entry] = OrderedDict()
        self._evicted: OrderedDict[str, tuple[Policy, bytes | None]] = OrderedDict()
        self._parsed: WeakValueDictionary[str, Any] = WeakValueDictionary()
        self.evictions = 0
        #: evicted origins brought back from their compact form (parsed again)
        self.restored = 0

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def evicted(self) -> int:
        """Evicted origins kept in compact form now."""
        return len(self._evicted)

    def get(self, origin: str) -> Policy | None:
        """The origin's policy (without its body)."""
        entry = self._entry(origin)
        return entry.policy if entry is not None else None

    def with_body(self, origin: str) -> Policy | None:
        """The origin's policy with its body restored: for a new policy to fall back on."""
        entry = self._entry(origin)
        if entry is None or entry.packed is None:
            return entry.policy if entry is not None else None
        return replace(entry.policy, body=zlib.decompress(entry.packed))

    def _entry(self, origin: str) -> _Entry | None:
        """The origin's entry, used now: brought back from the compact form if evicted."""
        entry = self._entries.get(origin)
        if entry is not None:
            self._entries.move_to_end(origin)
            self._last = entry
            return entry
        kept = self._evicted.pop(origin, None)
        if kept is None:
            return None
        policy, packed = kept
        self._evicted_bytes -= _kept_size(packed)
        robots = None
        if policy.digest is not None and packed is not None:
            robots = self._parse(policy.digest, zlib.decompress(packed), packed)
        self.restored += 1
        entry = self._last = self._entries[origin] = _Entry(policy, robots, packed)
        self._bytes += entry.size
        self._bound()
        return entry

    def put(self, origin: str, policy: Policy) -> None:
        robots = packed = None
        if policy.digest is not None:
            old = self._entry(origin)
            if old is not None and old.policy.digest == policy.digest and old.packed is not None:
                robots, packed = old.robots, old.packed  # the same file (a 304, a stale copy)
            elif policy.body is not None:
                robots = self._parse(policy.digest, policy.body)
                # one compressed copy, shared with the parsed file (which keeps it)
                packed = robots.packed() if isinstance(robots, RobotsTxt) else None
                packed = packed or zlib.compress(policy.body)
            policy = replace(policy, body=None) if policy.body is not None else policy
        policy = _compact(policy)
        self.forget(origin)  # its size no longer counted; cached or kept compact
        entry = self._entries[origin] = self._last = _Entry(policy, robots, packed)
        self._bytes += entry.size
        self._bound()

    def _bound(self) -> None:
        """Evict past ``max_origins`` or ``max_bytes`` (never the origin used last): into
        the compact form, if there is room for one."""
        entries = self._entries
        while len(entries) > self.max_origins or (
            self._bytes > self.max_bytes and len(entries) > 1
        ):
            origin, entry = entries.popitem(last=False)
            self._bytes -= entry.size
            self.evictions += 1
            if self.evicted_max > 0:
                self._evicted[origin] = (entry.policy, entry.packed)
                self._evicted_bytes += _kept_size(entry.packed)
                while self._evicted and (
                    len(self._evicted) > self.evicted_max
                    or self._evicted_bytes > self.evicted_bytes
                ):
                    self._evicted_bytes -= _kept_size(self._evicted.popitem(last=False)[1][1])

    @property
    def size(self) -> int:
        """The bytes the cache counts now: cached origins, the evicted keep, the window."""
        return self._bytes + self._evicted_bytes + self.window_bytes

    def forget(self, origin: str | None = None) -> None:
        """Drop one origin, or everything."""
        self._last = None
        if origin is None:
            self._entries.clear()
            self._evicted.clear()
            self._bytes = self._evicted_bytes = self.window_bytes = 0
            self._handed = None
            self._compiled.clear()
        else:
            entry = self._entries.pop(origin, None)
            if entry is not None:
                self._bytes -= entry.size
            kept = self._evicted.pop(origin, None)
            if kept is not None:
                self._evicted_bytes -= _kept_size(kept[1])

    def robots(self, policy: Policy) -> RobotsTxt | None:
        """The parsed file behind an ``ok`` policy; asking joins it to the compiled window."""
        last = self._last
        if last is not None and last.policy is policy and last.robots is not None:
            robots: RobotsTxt | None = last.robots  # the origin just looked up
        elif policy.digest is None:
            return None
        else:
            robots = self._parsed.get(policy.digest)
            if robots is None and policy.body is not None:  # a policy not (yet) cached
                robots = self._parse(policy.digest, policy.body)
        window = self._compiled
        if isinstance(robots, RobotsTxt):  # another file (tdmrep.json) has nothing to release
            handed = self._handed
            if handed is not None and handed is not robots:
                # compiled since it was handed out: weighed again (one sum of a few ints)
                was = window.get(handed)
                if was is not None:
                    now = handed.footprint
                    window[handed] = now
                    self.window_bytes += now - was
            size = robots.footprint
            was = window.pop(robots, None)
            window[robots] = size
            self.window_bytes += size - (was or 0)
            self._handed = robots
            while len(window) > 1 and self.window_bytes > self.compiled_bytes:
                compacted, weighed = window.popitem(last=False)
                self.window_bytes -= weighed
                compacted.compact()
                if compacted is self._handed:
                    self._handed = None
        return robots

    @property
    def compiled(self) -> int:
        """Parsed files compiled now."""
        return sum(robots.compiled for robots in self._compiled)

    def _parse(self, digest: str, body: bytes, packed: bytes | None = None) -> Any:
        parsed = self._parsed.get(digest)
        if parsed is None:
            parsed = self._parsed[digest] = self.read(body)
            if packed is not None and isinstance(parsed, RobotsTxt):
                parsed.adopt(packed)
        return parsed

    def read(self, body: bytes) -> Any:
        """What a body is parsed into: a robots.txt here, another file in a subclass."""
        return parse(body)


def _kept_size(packed: bytes | None) -> int:
    """What an evicted origin kept compact is counted as, in bytes."""
    return EVICTED_BYTES + (len(packed) if packed is not None else 0)


def _compact(policy: Policy) -> Policy:
    """The policy with its repeated strings shared: most reasons and both URLs are alike."""
    reason, url, final_url = policy.reason, policy.url, policy.final_url
    shared_reason = sys.intern(reason)
    shared_final = url if final_url == url else final_url
    if shared_reason is reason and shared_final is final_url:
        return policy
    return replace(policy, reason=shared_reason, final_url=shared_final)
