"""A diagnostic scheduler queue for ``bench_scale.py --pick idle-first``: not a variant.

Scrapy's ``DownloaderAwarePriorityQueue`` builds an ``(active downloads,
host)`` tuple for every host with queued requests on every pick (~3,400 in
the 4,000-origin full frontier) and takes the least: about a quarter of
every variant's CPU there (``benchmarks/NOTEBOOK.md``). This queue picks the
same way, least active downloads first, without the scan: hosts are kept in
the order they were last picked, and the first idle one from the front is
taken (the least recently picked; a full scan only when no host is idle).
It shows what the benchmark's ratios become when Scrapy's pick is cheap.
For the benchmark's memory queues only: a JOBDIR's slot directories are not
reclaimed as Scrapy's queue reclaims them.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

from scrapy.pqueues import DownloaderAwarePriorityQueue


class IdleFirstQueue(DownloaderAwarePriorityQueue):
    """Least active downloads first, ties to the least recently picked host, no scan."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.pqueues = OrderedDict(self.pqueues)  # front: picked longest ago

    def _idle_first(self) -> str | None:
        """The first idle host from the front, else the least active; None when empty."""
        active = self._downloader_interface._active_downloads
        chosen, least = None, None
        for slot in self.pqueues:
            downloads = active(slot)
            if downloads == 0:
                return slot
            if least is None or downloads < least:
                chosen, least = slot, downloads
        return chosen

    def pop(self) -> Any:
        slot = self._idle_first()
        if slot is None:
            return None
        queue = self.pqueues[slot]
        request = queue.pop()
        if len(queue) == 0:
            del self.pqueues[slot]
            queue.close()
        else:
            self.pqueues.move_to_end(slot)
        return request

    def peek(self) -> Any:
        slot = self._idle_first()
        return None if slot is None else self.pqueues[slot].peek()
