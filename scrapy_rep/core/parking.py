"""Requests held for an origin that cannot be judged yet, outside Scrapy's queues.

The lot only keeps count (the gate decides). It is fair (max-min): when full, a request
of an origin holding fewer than the one holding the most takes the place of that
origin's newest request (dropped, ``park-overflow``); origins are bucketed by count, so O(1).
An origin's items leave oldest first, but one parked ``first`` (a request its site refused:
the retry it asked for) goes before them.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Generic, TypeVar

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Held(Generic[T]):
    item: T
    origin: str
    since: float
    reason: str


@dataclass(frozen=True, slots=True)
class Parked(Generic[T]):
    """What :meth:`ParkingLot.park` did: held the item or not, and the item it displaced
    (to drop)."""

    held: bool
    displaced: Held[T] | None = None

    def __bool__(self) -> bool:
        return self.held


class ParkingLot(Generic[T]):
    """Held items by origin, at most ``capacity`` in all, shared fairly (see the module)."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._by_origin: dict[str, deque[Held[T]]] = {}
        self._count = 0
        #: how many an origin holds -> the origins holding that many (an ordered set)
        self._sizes: dict[int, dict[str, None]] = {}
        #: the most any origin holds (0: none)
        self._most = 0

    def _resized(self, origin: str, old: int, new: int) -> None:
        """``origin`` held ``old`` items and now holds ``new``: its bucket follows."""
        if old:
            bucket = self._sizes[old]
            del bucket[origin]
            if not bucket:
                del self._sizes[old]
        if new:
            self._sizes.setdefault(new, {})[origin] = None
            self._most = max(self._most, new)
        while self._most and self._most not in self._sizes:  # amortised: it rose one by one
            self._most -= 1

    def __len__(self) -> int:
        return self._count

    def __contains__(self, origin: object) -> bool:
        return origin in self._by_origin

    def origins(self) -> list[str]:
        return list(self._by_origin)

    def first(self, origin: str) -> T | None:
        """The oldest item held for ``origin``, left in the lot; None if none."""
        held = self._by_origin.get(origin)
        return held[0].item if held else None

    def oldest(self) -> float | None:
        """When the oldest held item was parked; None if none."""
        return min((held[0].since for held in self._by_origin.values()), default=None)

    def by_origin(self) -> dict[str, tuple[int, float]]:
        """Origin -> (requests held, when the latest of them was parked), most held first."""
        found = {o: (len(h), max(x.since for x in h)) for o, h in self._by_origin.items()}
        return dict(sorted(found.items(), key=lambda item: -item[1][0]))

    def park(
        self, origin: str, item: T, now: float, reason: str, *, first: bool = False
    ) -> Parked[T]:
        """Hold ``item`` (``first``: before the origin's others); false when the lot is full
        and ``origin`` holds its share."""
        displaced = None
        if self._count >= self.capacity:
            held = self._by_origin.get(origin)
            if not self.capacity or (len(held) if held else 0) + 1 >= self._most:
                return Parked(False)
            victim = next(iter(self._sizes[self._most]))
            queue = self._by_origin[victim]
            displaced = queue.pop()
            self._count -= 1
            self._resized(victim, len(queue) + 1, len(queue))
        queue = self._by_origin.setdefault(origin, deque())
        (queue.appendleft if first else queue.append)(Held(item, origin, now, reason))
        self._count += 1
        self._resized(origin, len(queue) - 1, len(queue))
        return Parked(True, displaced)

    def take(self, origin: str, count: int | None = None) -> list[Held[T]]:
        """Everything held for ``origin`` (at most ``count``), oldest first, removed."""
        held = self._by_origin.get(origin)
        if held is None:
            return []
        if count is None or count >= len(held):
            del self._by_origin[origin]
            self._count -= len(held)
            self._resized(origin, len(held), 0)
            return list(held)
        taken = [held.popleft() for _ in range(max(0, count))]
        self._count -= len(taken)
        self._resized(origin, len(held) + len(taken), len(held))
        return taken

    def expire(self, deadline: float) -> list[Held[T]]:
        expired: list[Held[T]] = []
        for origin in list(self._by_origin):
            held = self._by_origin[origin]
            before = len(held)
            while held and held[0].since < deadline:
                expired.append(held.popleft())
            if len(held) != before:
                self._resized(origin, before, len(held))
            if not held:
                del self._by_origin[origin]
        self._count -= len(expired)
        return expired

    def drain(self) -> Iterator[Held[T]]:
        for origin in list(self._by_origin):
            yield from self.take(origin)
