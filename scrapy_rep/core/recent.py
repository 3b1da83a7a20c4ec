"""A map of the keys written last: per-origin memory a broad crawl keeps bounded. Pure."""

from __future__ import annotations

from collections import OrderedDict
from typing import TypeVar

K = TypeVar("K")
V = TypeVar("V")


class Recent(OrderedDict[K, V]):
    """At most ``size`` keys, the ones written last; beyond it the key written longest ago
    goes, in O(1). (A dict's first key is not O(1) once keys were deleted at its front: at a
    million keys, finding it took ~90 µs, against ~0.4 µs here.)"""

    def __init__(self, size: int) -> None:
        super().__init__()
        self.size = max(1, size)

    def put(self, key: K, value: V) -> None:
        """``key`` written now: the newest."""
        if key in self:
            self.move_to_end(key)
        self[key] = value
        if len(self) > self.size:
            self.popitem(last=False)
