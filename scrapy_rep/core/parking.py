"""Requests held for an origin that cannot be judged yet, outside Scrapy's queues.

A parked request occupies neither the scheduler nor the downloader, so a
paused origin never takes concurrency from a healthy one. The lot is bounded
and pure (no Scrapy import); :mod:`scrapy_rep.core.gate` decides when to park and
when to take requests out, and the lot only keeps count, so nothing leaves it
unaccounted for.
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


class ParkingLot(Generic[T]):
    """Held items by origin, at most ``capacity`` in all."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._by_origin: dict[str, deque[Held[T]]] = {}
        self._count = 0

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
        """When the longest-held item at the head of an origin's queue was parked; None if none.

        The heads are what :meth:`expire` looks at, so this is when it next takes one.
        """
        return min((held[0].since for held in self._by_origin.values()), default=None)

    def by_origin(self) -> dict[str, tuple[int, float]]:
        """Origin -> (requests held, when the latest of them was parked), most held first."""
        found = {o: (len(h), max(x.since for x in h)) for o, h in self._by_origin.items()}
        return dict(sorted(found.items(), key=lambda item: -item[1][0]))

    def park(self, origin: str, item: T, now: float, reason: str) -> bool:
        """Hold ``item``; False when the lot is full (the caller drops it, with a reason)."""
        if self._count >= self.capacity:
            return False
        self._by_origin.setdefault(origin, deque()).append(Held(item, origin, now, reason))
        self._count += 1
        return True

    def take(self, origin: str, count: int | None = None) -> list[Held[T]]:
        """Everything held for ``origin`` (at most ``count``), oldest first, removed."""
        held = self._by_origin.get(origin)
        if held is None:
            return []
        if count is None or count >= len(held):
            del self._by_origin[origin]
            self._count -= len(held)
            return list(held)
        taken = [held.popleft() for _ in range(max(0, count))]
        self._count -= len(taken)
        return taken

    def expire(self, deadline: float) -> list[Held[T]]:
        """Everything parked before ``deadline``, removed from the lot."""
        expired: list[Held[T]] = []
        for origin in list(self._by_origin):
            held = self._by_origin[origin]
            while held and held[0].since < deadline:
                expired.append(held.popleft())
            if not held:
                del self._by_origin[origin]
        self._count -= len(expired)
        return expired

    def drain(self) -> Iterator[Held[T]]:
        """Empty the lot (at close), yielding what it held."""
        for origin in list(self._by_origin):
            yield from self.take(origin)
