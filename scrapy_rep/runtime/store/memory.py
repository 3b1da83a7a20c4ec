"""The in-process policy cache: LRU-bounded, each origin's parsed file kept with its policy.

A broad crawl visits thousands of origins round-robin. The parsed (and, on
first use per token, compiled) robots.txt of an origin therefore lives as
long as its policy does: judging a request never parses a file again while
the origin is cached, however many origins are active. Origins serving the
same file share one parse (looked up by body digest, held weakly, so a parse
lives while some origin uses it).

The body itself is not needed to judge, so the cached policy carries none;
one zlib-compressed copy, shared with the parsed file (which parses it again
when its groups are asked), is kept beside it for the few readers that need
it later (:meth:`PolicyCache.with_body`): the last good copy that RFC 9309
§2.3.1.4 lets a crawler use while the origin is unreachable, a conditional
refetch renewing it, and a shared store saving that copy.

Past ``max_origins`` the least recently used origin loses its parse, not its
policy: with ``evicted_max`` (the middleware sets it when there is no shared
store to ask), up to that many evicted origins are kept compact, the policy
and the compressed body only, and parsed again when they come back, so a
crawl with more active origins than the bound does not fetch their robots.txt
again within its TTL.
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

#: evicted origins kept compact per cached one, without a shared store: an evicted
#: origin costs ~1.3 KiB on real files, a cached one not compiled ~1.6 KiB, so each
#: spares a refetch for little less than a cached origin costs; 3 per cached origin add
#: at most ~2.5 times the cache's memory
EVICTED_PER_CACHED = 3
#: parsed files kept compiled, the most recently asked (``REP_CACHE_COMPILED_ORIGINS``);
#: the others are released to the compact form and compiled again when next asked
COMPILED_ORIGINS = 10_000


class _Entry:
    __slots__ = ("packed", "policy", "robots")

    def __init__(self, policy: Policy, robots: RobotsTxt | None, packed: bytes | None) -> None:
        self.policy = policy  # without its body
        self.robots = robots  # keeps the shared parse alive while this origin uses it
        self.packed = packed  # the body, compressed


class PolicyCache:
    """Policies by origin, at most ``max_origins``; least recently used go first.

    Of the parsed files, only the ``compiled_max`` asked for most recently
    (:meth:`robots`) stay compiled; the others are released
    (:meth:`RobotsTxt.release`) and compiled again on their next judgement.
    """

    #: the window's size unless given; None: the parsed files are not robots.txt, kept as read
    COMPILED_MAX: int | None = COMPILED_ORIGINS

    def __init__(
        self, max_origins: int = 1_000_000, evicted_max: int = 0, compiled_max: int | None = None
    ) -> None:
        self.max_origins = max_origins
        #: parsed files kept compiled (the most recently asked), or None for no window
        self.compiled_max = compiled_max if compiled_max is not None else self.COMPILED_MAX
        self._compiled: OrderedDict[RobotsTxt, None] | None = (
            OrderedDict() if self.compiled_max is not None else None
        )
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
        robots = None
        if policy.digest is not None and packed is not None:
            robots = self._parse(policy.digest, zlib.decompress(packed), packed)
        self.restored += 1
        entry = self._last = self._entries[origin] = _Entry(policy, robots, packed)
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
        self._evicted.pop(origin, None)
        self._entries[origin] = self._last = _Entry(policy, robots, packed)
        self._entries.move_to_end(origin)
        self._bound()

    def _bound(self) -> None:
        """Evict past ``max_origins``: into the compact form, if there is room for one."""
        while len(self._entries) > self.max_origins:
            origin, entry = self._entries.popitem(last=False)
            self.evictions += 1
            if self.evicted_max > 0:
                self._evicted[origin] = (entry.policy, entry.packed)
                if len(self._evicted) > self.evicted_max:
                    self._evicted.popitem(last=False)

    def forget(self, origin: str | None = None) -> None:
        """Drop one origin, or everything."""
        self._last = None
        if origin is None:
            self._entries.clear()
            self._evicted.clear()
            if self._compiled is not None:
                self._compiled.clear()
        else:
            self._entries.pop(origin, None)
            self._evicted.pop(origin, None)

    def robots(self, policy: Policy) -> RobotsTxt | None:
        """The parsed file behind an ``ok`` policy (parsed when the policy was cached).

        Asking counts as using it: the file joins the compiled window.
        """
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
        if window is not None and robots is not None:
            try:
                window.move_to_end(robots)
            except KeyError:
                window[robots] = None
                if len(window) > self.compiled_max:  # type: ignore[operator]
                    window.popitem(last=False)[0].release()
        return robots

    @property
    def compiled(self) -> int:
        """Parsed files compiled now (at most ``compiled_max`` while only the cache asks)."""
        window = self._compiled
        return sum(robots.compiled for robots in window) if window is not None else 0

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


def _compact(policy: Policy) -> Policy:
    """The policy with its repeated strings shared: most reasons and both URLs are alike."""
    reason, url, final_url = policy.reason, policy.url, policy.final_url
    shared_reason = sys.intern(reason)
    shared_final = url if final_url == url else final_url
    if shared_reason is reason and shared_final is final_url:
        return policy
    return replace(policy, reason=shared_reason, final_url=shared_final)
