"""What differs between the Scrapy versions scrapy-rep supports (2.14 and later), found by
feature detection, one function per difference (a missing feature degrades to the nearest
thing); and the only place Scrapy's private parts are reached.
"""

from __future__ import annotations

import inspect
import logging
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

import scrapy
from scrapy import signals
from scrapy.core.downloader import Slot
from scrapy.core.engine import ExecutionEngine
from scrapy.settings import BaseSettings
from scrapy.utils.misc import load_object

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

SCRAPY_VERSION: str = scrapy.__version__
#: Scrapy's ``robots_parsed`` signal (Scrapy 2.18+), or None
ROBOTS_PARSED: object | None = getattr(signals, "robots_parsed", None)

#: download slots take a ``jitter`` (Scrapy 2.19+); before, a ``randomize_delay`` flag
SLOT_JITTER: bool = "jitter" in inspect.signature(Slot.__init__).parameters
#: component priority dicts merged with their ``_BASE`` by what the keys load (Scrapy 2.15+)
PRIORITY_DICT_WITH_BASE: bool = hasattr(BaseSettings, "get_component_priority_dict_with_base")


def component_priority_dict(settings: Any, name: str) -> Any:
    """``name`` merged with ``name_BASE``, as the Scrapy installed builds its components."""
    if PRIORITY_DICT_WITH_BASE:
        return settings.get_component_priority_dict_with_base(name)
    return settings.getwithbase(name)


def disable_component(settings: Any, name: str, cls: type) -> None:
    """Switch ``cls`` off in the component priority dict ``name``, its ``_BASE`` included
    (before Scrapy 2.15 a class key does not override the same class's import path)."""
    settings.set_in_component_priority_dict(name, cls, None)
    if PRIORITY_DICT_WITH_BASE:
        return
    paths = [
        key
        for key in settings.getdict(f"{name}_BASE")
        if isinstance(key, str) and load_object(key) is cls
    ]
    if paths:
        components = settings.getdict(name)
        components.update(dict.fromkeys(paths))
        settings.set(name, components, settings.getpriority(name) or 0)


#: the engine's public ``scheduler`` property (Scrapy 2.19+)
ENGINE_SCHEDULER: bool = isinstance(getattr(ExecutionEngine, "scheduler", None), property)


def scheduler_of(engine: Any) -> Any:
    """The engine's scheduler, or None (no engine, or its spider not open)."""
    if engine is None:
        return None
    if ENGINE_SCHEDULER:
        return engine.scheduler
    return getattr(getattr(engine, "_slot", None), "scheduler", None)


def engine_slot(engine: Any) -> Any:
    """The engine's private slot (its in-progress set, ``closing``), or None."""
    return getattr(engine, "_slot", None)


def downloader_enqueue(downloader: Any) -> Any:
    """The downloader's private ``_enqueue_request`` (into a download slot), or None."""
    return getattr(downloader, "_enqueue_request", None)


def _slot_queues(engine: Any) -> Iterator[Any]:
    """The download slots' queues (private: each a deque of ``(request, deferred)``), the
    empty ones left out."""
    slots: Mapping[str, Any] = getattr(getattr(engine, "downloader", None), "slots", {})
    for slot in list(slots.values()):
        queue = getattr(slot, "queue", None)
        if queue:
            yield queue


def take_queued(engine: Any, take: Callable[[Any], bool]) -> list[tuple[Any, Any]]:
    """Take the requests ``take`` picks out of the download slots' queues, never one in
    flight; what was taken."""
    taken: list[tuple[Any, Any]] = []
    for queue in _slot_queues(engine):
        kept: deque[Any] = deque()
        for entry in queue:
            (taken if take(entry[0]) else kept).append(entry)
        if len(kept) != len(queue):
            queue.clear()
            queue.extend(kept)
    return taken


def queued(engine: Any) -> Iterator[Any]:
    """The requests waiting in the download slots' queues, not yet sent."""
    for queue in _slot_queues(engine):
        for entry in queue:
            yield entry[0]


def downloading(engine: Any) -> set[Any] | None:
    """The requests inside the downloader now, its middlewares included; None: this Scrapy
    keeps no such set."""
    active = getattr(getattr(engine, "downloader", None), "active", None)
    return active if isinstance(active, set) else None


def encode_for_queue(queue: Any, request: Any) -> Any:
    """A request as scrapy-redis's queue stores it (its private ``_encode_request``)."""
    return queue._encode_request(request)


def missing_features() -> list[str]:
    """What this Scrapy lacks, one line each; empty when nothing is missing."""
    if ROBOTS_PARSED is None:
        return ["Scrapy's robots_parsed signal is not sent (it needs Scrapy >= 2.18)"]
    return []


_told = False  # missing_features() is logged once a process, by the first middleware


def log_missing_features(log: logging.Logger) -> None:
    """Say at INFO, once a process, what this Scrapy lacks (nothing when it lacks nothing)."""
    global _told
    missing = missing_features()
    if _told or not missing:
        return
    _told = True
    log.info(
        "scrapy-rep: on Scrapy %(version)s, %(n)d feature(s) need a newer Scrapy: %(missing)s",
        {"version": SCRAPY_VERSION, "n": len(missing), "missing": "; ".join(missing)},
    )


def send_robots_parsed(crawler: Crawler, robotparser: Any, request: Any) -> None:
    """Send Scrapy's ``robots_parsed`` where this Scrapy has it; else nothing."""
    if ROBOTS_PARSED is None:
        return
    crawler.signals.send_catch_log(
        signal=ROBOTS_PARSED,
        robotparser=robotparser,
        request=request,
        spider=crawler.spider,
    )


def no_jitter_slot_settings(slot_settings: dict[str, Any]) -> None:
    """Make a new download slot built from ``slot_settings`` keep its delay exactly."""
    if SLOT_JITTER:
        slot_settings["jitter"] = 0.0
    else:
        slot_settings["randomize_delay"] = False


def no_jitter_slot(slot: Any) -> None:
    """Make a live download slot wait its delay exactly, never 0.5-1.5 times it."""
    if SLOT_JITTER:
        slot.jitter = 0.0
    else:
        slot.randomize_delay = False
