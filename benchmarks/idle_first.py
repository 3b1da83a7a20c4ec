"""A diagnostic scheduler queue for ``bench_scale.py --pick idle-first``: not a variant.

Scrapy's ``DownloaderAwarePriorityQueue`` builds an ``(active downloads,
host)`` tuple for every host with queued requests on every pick (~3,400 in
the 4,000-origin full frontier) and takes the least. That scan is most of a
broad crawl's CPU there, and the tuples it keeps alive when a young
collection runs are most of what brings the full collections (see
``docs/performance.md``), for every variant. This queue picks the same way,
least active downloads first, without the scan: hosts are kept in the order
they were last picked, and the first idle one from the front is taken (the
least recently picked; a full scan only when no host is idle). It shows what
the benchmark's ratios become when Scrapy's pick is cheap, the change that
belongs upstream.
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

    def pop(self) -> Any:
        queues = self.pqueues
        if not queues:
            return None
        active = self._downloader_interface._active_downloads
        chosen, least = None, None
        for slot in queues:
            downloads = active(slot)
            if downloads == 0:
                chosen = slot
                break
            if least is None or downloads < least:
                chosen, least = slot, downloads
        assert chosen is not None
        queue = queues[chosen]
        request = queue.pop()
        if len(queue) == 0:
            del queues[chosen]
            queue.close()
        else:
            queues.move_to_end(chosen)  # type: ignore[attr-defined]
        return request
