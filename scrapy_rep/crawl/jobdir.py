"""Held requests kept across a pause: written to the JOBDIR at close, read back on resume.

Scrapy persists its scheduler in the JOBDIR, but it closes the scheduler
before ``spider_closed``, and held requests are not in it anyway: they wait
outside Scrapy's queues. So scrapy-rep keeps them itself, in
``<JOBDIR>/rep-held.pickle``, through Scrapy's own request serialisation
(callbacks as spider methods, ``meta`` pickled), with the reason and time
they were held. A resumed crawl gives them back to the engine, marked not to
be filtered as duplicates (the dupefilter saw them in the first run), to be
judged against the policy current then. A request that cannot be serialised
is returned to the caller, to be dropped with reason ``unserializable``.
"""

from __future__ import annotations

import os
import pickle
from typing import Any

from scrapy import Request
from scrapy.utils.request import request_from_dict

from scrapy_rep.core.parking import Held

FILE = "rep-held.pickle"
#: what the file holds; a file of another version is not read (and is kept)
VERSION = 1


class HeldRequestFile:
    """The held requests of one JOBDIR."""

    def __init__(self, jobdir: str) -> None:
        self.path = os.path.join(jobdir, FILE)

    def save(self, held: list[Held[Request]], spider: Any) -> list[Held[Request]]:
        """Write ``held`` (replacing what was there); return those that cannot be serialised."""
        kept: list[tuple[bytes, str, float, str]] = []
        failed: list[Held[Request]] = []
        for each in held:
            try:
                data = pickle.dumps(each.item.to_dict(spider=spider), protocol=4)
            except Exception:  # a lambda callback, an unpicklable meta value, ...
                failed.append(each)
                continue
            kept.append((data, each.origin, each.since, each.reason))
        if kept:
            partial = f"{self.path}.{os.getpid()}.part"
            with open(partial, "wb") as f:
                pickle.dump({"version": VERSION, "held": kept}, f, protocol=4)
            os.replace(partial, self.path)  # a reader never sees half a file
        elif os.path.exists(self.path):
            os.remove(self.path)
        return failed

    def load(self, spider: Any) -> list[Held[Request]]:
        """The requests held at the last stop, removed from the JOBDIR; [] if none."""
        try:
            with open(self.path, "rb") as f:
                saved = pickle.load(f)
        except FileNotFoundError:
            return []
        if not isinstance(saved, dict) or saved.get("version") != VERSION:
            raise ValueError(f"{self.path} is not a scrapy-rep held-request file of version 1")
        held = [
            Held(request_from_dict(pickle.loads(data), spider=spider), origin, since, reason)
            for data, origin, since, reason in saved["held"]
        ]
        os.remove(self.path)
        return held
