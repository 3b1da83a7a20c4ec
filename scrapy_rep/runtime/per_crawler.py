"""One object per crawler (its settings, its sink, its graph), made on first use, shared by
all its components and gone with the crawler.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any, Generic, TypeVar

T = TypeVar("T")


class PerCrawler(Generic[T]):
    """``make(crawler)``, once a crawler; an optional component fills its slot in the object
    now or once it is made, so the object never imports it and a crawl without it never
    loads it."""

    def __init__(self, make: Callable[[Any], T]) -> None:
        self.make = make
        self._made: weakref.WeakKeyDictionary[Any, T] = weakref.WeakKeyDictionary()
        self._fills: weakref.WeakKeyDictionary[Any, list[Callable[[T], None]]] = (
            weakref.WeakKeyDictionary()
        )

    def of(self, crawler: Any) -> T:
        found = self._made.get(crawler)
        if found is None:
            found = self._made[crawler] = self.make(crawler)
            for fill in self._fills.pop(crawler, ()):
                fill(found)
        return found

    def when_made(self, crawler: Any, fill: Callable[[T], None]) -> None:
        found = self._made.get(crawler)
        if found is not None:
            fill(found)
        else:
            self._fills.setdefault(crawler, []).append(fill)

    def running(self, crawler: Any) -> T | None:
        """The crawler's object if something made it, else None."""
        return self._made.get(crawler)
