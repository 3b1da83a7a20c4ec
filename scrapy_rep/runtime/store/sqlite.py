"""Policies in a SQLite file (``REP_STORE = "sqlite"``): they survive a stop, a crash, a resume.

Two halves. :mod:`scrapy_rep.runtime.store.sqlite_file` is the file: its tables, its
schema version, WAL mode and sharing between processes, and every SQL
statement, all synchronous (:class:`~scrapy_rep.runtime.store.sqlite_file.SqliteFile`).
This module is the asynchronous :class:`SqliteStore` the resolver and the CLI
use: it only moves each call onto the file's thread, keeps the counts, and
tells :meth:`~SqliteStore.on_invalidate` listeners what an operator forgot
(:class:`_InvalidationPoller`: one indexed query a second, started by the
first load, so a running crawl drops a forgotten origin from its local cache,
as Redis pub/sub does for a cluster).

Threading. ``sqlite3`` blocks, so every call runs off the event loop on **one
dedicated worker thread that owns the store's only connection** (a
single-thread executor), rather than ``asyncio.to_thread``: a ``sqlite3``
connection may only be used by the thread that made it, and ``to_thread``
would spread calls over the loop's shared default pool, needing a connection
per thread (each with its own open, pragmas and cold page cache) or a lock
around one. One thread keeps one warm connection, runs the calls in the order
they were made (a ``save`` is visible to the next ``load``), and never competes
with the DNS lookups that also use the default pool. The constructor opens
the file on that thread and waits for it, so a bad path fails at start-up, not
at the first request.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import functools
import logging
import os
import secrets
import socket
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from scrapy_rep.core.pause import PauseState
from scrapy_rep.core.policy import Policy
from scrapy_rep.robotstxt.text import printable
from scrapy_rep.runtime.store.base import Invalidated, Paused
from scrapy_rep.runtime.store.codec import StoreDataError, decode, decode_pause, encode_pause
from scrapy_rep.runtime.store.sqlite_file import (
    APPLICATION,
    DEFAULT_BUSY_TIMEOUT,
    DEFAULT_RETENTION,
    PURGE_INTERVAL,
    SCHEMA_VERSION,
    SETTING,
    SqliteFile,
)

__all__ = [
    "APPLICATION",
    "DEFAULT_BUSY_TIMEOUT",
    "DEFAULT_FILENAME",
    "DEFAULT_RETENTION",
    "PURGE_INTERVAL",
    "SCHEMA_VERSION",
    "SETTING",
    "Invalidated",
    "SqliteStore",
    "default_path",
]

logger = logging.getLogger(__name__)

T = TypeVar("T")

DEFAULT_FILENAME = "rep-policies.sqlite"


def default_path(jobdir: str) -> str:
    """Where the store lives in a JOBDIR when ``REP_STORE`` names no file."""
    return os.path.join(jobdir, DEFAULT_FILENAME)


class SqliteStore:
    """The :class:`~scrapy_rep.runtime.store.base.SharedStore` of one machine, in a SQLite file.

    ``create=False`` refuses a missing file instead of making one (the CLI).
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        retention: float = DEFAULT_RETENTION,
        busy_timeout: float = DEFAULT_BUSY_TIMEOUT,
        clock: Callable[[], float] = time.time,
        create: bool = True,
        poll_interval: float = 1.0,
    ) -> None:
        self.path = os.fspath(path)
        self.busy_timeout = busy_timeout
        #: what this store did, for stats and benchmarks (the Redis store's names)
        self.counts: Counter[str] = Counter()
        self._listeners: list[Invalidated] = []
        self._pause_listeners: list[Paused] = []
        self._closed = False
        self._executor = concurrent.futures.ThreadPoolExecutor(
            max_workers=1, thread_name_prefix="scrapy-rep-sqlite"
        )
        open_file = functools.partial(
            SqliteFile,
            self.path,
            retention=retention,
            busy_timeout=busy_timeout,
            clock=clock,
            create=create,
            counts=self.counts,
        )
        try:
            # made on the worker thread: the connection belongs to it
            self._file = self._executor.submit(open_file).result()
        except BaseException:
            self._executor.shutdown(wait=False)
            self._closed = True
            raise
        self._poller = _InvalidationPoller(
            path=self.path,
            counts=self.counts,
            listeners=self._listeners,
            interval=poll_interval,
            last=lambda: self._call(self._file.last_invalidation),
            after=lambda seen: self._call(self._file.invalidations, seen),
        )

    @property
    def retention(self) -> float:
        """Seconds a row outlives its policy's expiry (the file's setting)."""
        return self._file.retention

    # -- SharedStore --------------------------------------------------------------------

    async def load(self, origin: str) -> Policy | None:
        """The stored policy of ``origin``; its page pause, if one lasts, told to the pause
        listeners: one row (a crawl reads the pauses of the origins it asks for, as it
        first asks, never all of them)."""
        await self._poller.start()
        self.counts["load"] += 1
        row, paused = await self._call(self._file.load, origin)
        state = decode_pause(paused) if paused is not None and self._pause_listeners else None
        if state is not None:
            self.counts["pause_found"] += 1
            for listener in list(self._pause_listeners):
                listener(origin, state)
        if row is None:
            return None
        try:
            policy = decode(row)
        except StoreDataError as exc:
            self.counts["unreadable"] += 1
            logger.warning(
                "scrapy-rep: ignoring the stored policy of %(origin)s in %(path)s: %(error)s",
                {"origin": printable(origin), "path": self.path, "error": exc},
            )
            return None
        self.counts["found"] += 1
        return policy

    async def save(self, origin: str, policy: Policy) -> None:
        self.counts["save"] += 1
        await self._call(self._file.save, origin, policy)

    async def acquire(self, origin: str, ttl: float) -> str | None:
        token = f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(8)}"
        got = await self._call(self._file.acquire, origin, token, ttl)
        self.counts["lock_acquired" if got else "lock_busy"] += 1
        return token if got else None

    async def renew(self, origin: str, token: str, ttl: float) -> bool:
        """Extend a lease to ``ttl`` seconds from now; False if it expired or is not ours."""
        renewed = await self._call(self._file.renew, origin, token, ttl)
        self.counts["lock_renewed" if renewed else "lock_lost"] += 1
        return renewed

    async def unlock(self, origin: str, token: str) -> None:
        released = await self._call(self._file.unlock, origin, token)
        if not released:
            self.counts["lock_lost"] += 1
            logger.info(
                "scrapy-rep: the robots.txt fetch lock of %(origin)s expired before the fetch "
                "ended",
                {"origin": printable(origin)},
            )

    async def close(self) -> None:
        if self._closed:
            return
        await self._poller.stop()
        try:
            await self._call(self._file.close)
        finally:
            self._closed = True
            self._executor.shutdown(wait=False)

    # -- page pauses ---------------------------------------------------------------------

    async def save_pause(self, origin: str, state: PauseState) -> None:
        """Kept in the file (a restarted crawl honours it); this process's crawls told."""
        self.counts["pause_saved"] += 1
        await self._call(self._file.save_pause, origin, state.until, encode_pause(state))
        for listener in list(self._pause_listeners):
            listener(origin, state)

    async def load_pauses(self) -> dict[str, PauseState]:
        """The pauses not over yet: the CLI's listing; a crawl reads an origin's with its
        policy (:meth:`load`)."""
        found: dict[str, PauseState] = {}
        for origin, text in await self._call(self._file.load_pauses):
            state = decode_pause(text)
            if state is not None:
                found[origin] = state
        return found

    def on_pause(self, listener: Paused) -> None:
        self._pause_listeners.append(listener)

    # -- administration (the CLI's ``scrapy-rep store --sqlite PATH``) -----------------

    async def forget(self, origin: str | None) -> int:
        """Delete the policy and page pause of ``origin`` (``None``: all); how many went.

        Running crawls on the file hear of it (:meth:`on_invalidate`).
        """
        return await self._call(self._file.forget, origin)

    async def flush(self) -> int:
        """Delete every policy, page pause and lock; how many rows went. Running crawls hear
        of it."""
        return await self._call(self._file.flush)

    async def show(self, origin: str) -> dict[str, Any]:
        """What the file holds for ``origin``, readable (body as text), with its lock."""
        return await self._call(self._file.show, origin)

    async def entries(self) -> list[dict[str, Any]]:
        """One line per stored origin: status, freshness, lock; sorted by origin."""
        return await self._call(self._file.entries)

    async def purge(self) -> int:
        """Delete rows past their retention and locks long expired; how many went."""
        return await self._call(self._file.purge)

    # -- invalidation -------------------------------------------------------------------

    def on_invalidate(self, listener: Invalidated) -> None:
        """Call ``listener(origin)`` (``None``: everything) when an operator forgets policies.

        Forgetting in any process (``scrapy-rep store forget --sqlite``) counts;
        it is noticed within ``poll_interval`` seconds once this store has loaded.
        """
        self._listeners.append(listener)

    # -- the worker thread --------------------------------------------------------------

    async def _call(self, fn: Callable[..., T], *args: Any) -> T:
        """``fn(*args)`` on the worker thread, after every call made before it."""
        if self._closed:
            raise RuntimeError(f"the SQLite policy store {self.path} is closed")
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, functools.partial(fn, *args))


class _InvalidationPoller:
    """Reads the file's invalidations every ``interval`` seconds and tells the listeners.

    Started by the store's first load (not before: what was forgotten before
    anything was cached locally is not news), and only if someone listens.
    ``last`` and ``after`` read the file (on the store's thread): the newest
    invalidation's number, and those after a number.
    """

    def __init__(
        self,
        *,
        path: str,
        counts: Counter[str],
        listeners: list[Invalidated],
        interval: float,
        last: Callable[[], Awaitable[int]],
        after: Callable[[int], Awaitable[list[tuple[int, str | None]]]],
    ) -> None:
        self.path = path
        self.counts = counts
        self.interval = interval
        self._listeners = listeners  # the store's list: listeners added later count
        self._last = last
        self._after = after
        self._started = False
        self._stopped = False
        self._seen = 0  # the last invalidation handed to the listeners
        #: the polling task while it runs
        self.task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        """Start polling, before anything from the file is cached locally."""
        if not self._listeners or self._started or self._stopped:
            return
        self._started = True
        try:
            # queued on the store's thread before the load that asked: nothing is missed
            self._seen = await self._last()
        except BaseException:
            self._started = False
            raise
        if not self._stopped:  # the store may have closed meanwhile
            self.task = asyncio.ensure_future(self._poll())

    async def stop(self) -> None:
        self._stopped = True
        if self.task is not None:
            self.task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self.task
            self.task = None

    async def _poll(self) -> None:
        failing = False
        while not self._stopped:
            await asyncio.sleep(self.interval)
            try:
                found = await self._after(self._seen)
            except Exception as exc:
                if not failing:
                    logger.warning(
                        "scrapy-rep: cannot read invalidations from %(path)s (%(error)s); "
                        "trying again",
                        {"path": self.path, "error": f"{type(exc).__name__}: {exc}"},
                    )
                failing = True
                continue
            failing = False
            for seq, origin in found:
                self._seen = seq
                self.counts["invalidations"] += 1
                logger.info(
                    "scrapy-rep: %(what)s forgotten in %(path)s; refetching when next needed",
                    {"what": "every origin" if origin is None else origin, "path": self.path},
                )
                for listener in list(self._listeners):
                    listener(origin)
