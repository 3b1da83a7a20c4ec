"""One fetch of a well-known file per origin at a time, shared by everyone who asks.

Knows nothing of Scrapy: it is handed a ``fetch`` coroutine function and a clock (a
test's moves its waits by hand). A shared store is asked before fetching and holds a
per-origin lock while a worker fetches, so a cluster fetches each file once.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field, fields
from functools import partial
from typing import Any, ClassVar, Protocol, TypeVar

from scrapy_rep.core.origin import robots_url
from scrapy_rep.core.policy import (
    Conditional,
    FetchResult,
    Policy,
    PolicyConfig,
    Status,
    conditional,
    next_policy,
)
from scrapy_rep.robotstxt.text import printable
from scrapy_rep.runtime.clock import WALL_CLOCK, Clock, clock_of, sleep
from scrapy_rep.runtime.logs import Outage
from scrapy_rep.runtime.settings import RepSettings
from scrapy_rep.runtime.store.base import SharedStore
from scrapy_rep.runtime.store.factory import sqlite_path, store_kind
from scrapy_rep.runtime.store.memory import PolicyCache

logger = logging.getLogger(__name__)

#: ``fetch(origin, validators)``: with validators, a 304 may answer for the copy in hand
Fetch = Callable[[str, Conditional | None], Awaitable[FetchResult]]
Now = Callable[[], float]
T = TypeVar("T")
F = TypeVar("F")


@dataclass(frozen=True)
class WellKnownFile:
    """A file every origin may serve at a path of its own, fetched and kept by a resolver."""

    #: what the logs call it
    name: str
    url_of: Callable[[str], str]
    #: what its key in the shared store ends with after the origin ("" for robots.txt)
    store_suffix: str
    #: its status table, from robots.txt's
    config_of: Callable[[PolicyConfig], PolicyConfig]
    #: its local cache, which reads its body
    cache: Callable[[int], PolicyCache] = PolicyCache

    def key(self, origin: str) -> str:
        return origin + self.store_suffix

    def origin_of(self, key: str) -> str | None:
        """The origin of a store key of this file's; None: another file's."""
        if not key.endswith(self.store_suffix):
            return None
        return key[: len(key) - len(self.store_suffix)]


#: the file a crawl's resolver is made for; others are made beside it (:meth:`for_file`)
ROBOTS_TXT = WellKnownFile("robots.txt", robots_url, "", lambda config: config)


class FetchAbandoned(Exception):
    """A fetch that ended because its crawler closed: nothing is learnt about the origin."""


class Listener(Protocol):
    """A crawler following the policies of a shared resolver."""

    def on_policy(
        self, origin: str, old: Policy | None, new: Policy, fetched: Fetch | None
    ) -> None:
        """A new policy; ``fetched`` is the fetch that made it (None: from the store)."""

    def on_abandoned(self, origin: str) -> None:
        """A fetch for ``origin`` ended without an answer (its crawler closed)."""


async def policy_within(
    task: asyncio.Future[Policy], seconds: float, timers: Clock = WALL_CLOCK
) -> Policy | None:
    """The policy of an origin's shared fetch, if it ends within ``seconds``; never cancels
    it. ``wait_for(shield(task))`` in fewer objects: thousands of requests wait so."""
    if not task.done():
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        wake = partial(_wake, waiter)
        task.add_done_callback(wake)
        timer = timers.call_later(max(seconds, 0.0), wake, task)
        try:
            await waiter
        finally:
            timer.cancel()
            task.remove_done_callback(wake)
        if not task.done():
            return None  # not within ``seconds``
    if task.cancelled():
        return None  # the fetch was given up
    try:
        return task.result()
    except FetchAbandoned:
        return None


def _wake(waiter: asyncio.Future[None], _: object) -> None:
    if not waiter.done():
        waiter.set_result(None)


class Resolver:
    """Current policies by origin: from the cache, the shared store, or a fetch."""

    def __init__(
        self,
        cache: PolicyCache,
        config: PolicyConfig,
        clock: Clock | Now,
        shared: SharedStore | None = None,
        lock_ttl: float = 10.0,
        poll_interval: float = 0.1,
        fetch_budget: float = 60.0,
        file: WellKnownFile = ROBOTS_TXT,
    ) -> None:
        self.file = file
        self.cache = cache
        self.config = config
        #: the time and the timers its waits end on (a plain callable: the loop's timers)
        self.timers = clock_of(clock)
        self.clock: Now = self.timers.now
        self.shared = shared
        #: the shared store's lock is a lease of this many seconds, renewed while fetching
        self.lock_ttl = lock_ttl
        self.poll_interval = poll_interval
        #: longest a live fetch may take (all hops): how long to wait for another worker's
        self.fetch_budget = fetch_budget
        self._inflight: dict[str, asyncio.Task[Policy]] = {}
        self._started: dict[str, float] = {}
        self._outage = Outage(
            logger,
            "scrapy-rep: shared policy store failed (%(what)s: %(error)s)",
            "using the local cache",
            "scrapy-rep: the shared policy store answers again",
        )
        #: exception names a failed fetch was logged with (a traceback once for each)
        self._failures_logged: set[str] = set()
        #: the crawlers told of every new policy
        self.listeners: list[Listener] = []

    def for_file(self, file: WellKnownFile) -> Resolver:
        """A resolver of another file beside this one: its settings, timers and shared store
        (keyed apart), a cache of its own."""
        resolver = Resolver(
            file.cache(self.cache.max_origins),
            file.config_of(self.config),
            self.timers,
            shared=self.shared,
            lock_ttl=self.lock_ttl,
            poll_interval=self.poll_interval,
            fetch_budget=self.fetch_budget,
            file=file,
        )
        if self.shared is not None:  # an operator's ``store forget`` reaches its cache too
            self.shared.on_invalidate(resolver.forgotten)
        return resolver

    def forgotten(self, key: str | None) -> None:
        """The shared store forgot ``key`` (None: every key): so does the cache, if ours."""
        origin = None if key is None else self.file.origin_of(key)
        if key is None or origin is not None:
            self.cache.forget(origin)

    def current(self, origin: str) -> Policy | None:
        """The cached policy, fresh or not; no I/O."""
        return self.cache.get(origin)

    def pending_since(self, origin: str) -> float | None:
        return self._started.get(origin)

    def resolve(self, origin: str, fetch: Fetch) -> asyncio.Task[Policy]:
        """The task that yields a fresh policy for ``origin``; started if none is running."""
        task = self._inflight.get(origin)
        if task is None:
            task = asyncio.ensure_future(self._refresh(origin, fetch))
            self._inflight[origin] = task
            self._started[origin] = self.clock()
            task.add_done_callback(lambda done: self._done(origin, done))
        return task

    def _done(self, origin: str, task: asyncio.Task[Policy]) -> None:
        """A fetch task ended: without an answer, the listeners hear so."""
        self._inflight.pop(origin, None)
        self._started.pop(origin, None)
        if task.cancelled() or isinstance(task.exception(), FetchAbandoned):
            for listener in list(self.listeners):
                _tell(listener.on_abandoned, origin)

    async def _refresh(self, origin: str, fetch: Fetch) -> Policy:
        """A fetch ends in a policy (or FetchAbandoned): an unforeseen exception is a network
        error (RFC 9309 §2.3.1.4), so waiting requests get an answer."""
        previous = self.cache.with_body(origin)  # its last good copy may stand in
        try:
            return await self._refresh_from(origin, previous, fetch)
        except FetchAbandoned:
            raise
        except Exception as exc:
            policy = self._failed(origin, previous, exc)
            return self._adopt(origin, previous, policy, fetch)

    def _failed(self, origin: str, previous: Policy | None, exc: Exception) -> Policy:
        """The policy of a fetch that raised: a network error named after the exception."""
        name = type(exc).__name__
        log = logger.debug if name in self._failures_logged else logger.warning
        self._failures_logged.add(name)
        url = self.file.url_of(origin)
        log(
            "scrapy-rep: the fetch of %(url)s failed with %(error)s; treated as a network error",
            {"url": printable(url), "error": printable(f"{name}: {exc}")},
            exc_info=exc,
        )
        result = FetchResult(url, url, error=name)
        try:
            return next_policy(previous, result, self.clock(), self.config)
        except Exception:  # the status table itself failed: hold the origin for a while
            now, wait = self.clock(), self.config.pause_initial
            reason = f"{self.file.name} {name}: paused for {wait:g}s"
            return Policy(
                Status.PAUSED, "network", None, now, now + wait, url, url, reason, failures=1
            )

    async def _refresh_from(self, origin: str, previous: Policy | None, fetch: Fetch) -> Policy:
        shared, ttl = self.shared, self.lock_ttl
        if shared is None:
            return self._adopt(origin, previous, await self._fetch(origin, previous, fetch), fetch)
        deadline = self.clock() + self.fetch_budget * 2
        pause = self.poll_interval / 8  # most fetches are short: look again soon, then less often
        while True:
            stored = await self._ask("load", None, shared.load, origin)
            if stored is not None and stored.fresh(self.clock()):
                return self._adopt(origin, previous, stored, None)
            # None: another worker holds the lock; UNSHARED: the store failed, so this
            # worker fetches on its own rather than wait on it
            token = await self._ask("lock", UNSHARED, lambda key: shared.acquire(key, ttl), origin)
            if token is not None or self.clock() >= deadline:
                break
            await sleep(self.timers, pause)
            pause = min(pause * 2, self.poll_interval)
        held = token if isinstance(token, str) else None  # a lock the store gave: keep it
        lease = asyncio.ensure_future(self._keep_lease(origin, held)) if held else None
        try:
            # another worker may have just finished
            stored = await self._ask("load", None, shared.load, origin)
            if stored is not None and stored.fresh(self.clock()):
                return self._adopt(origin, previous, stored, None)
            policy = await self._fetch(origin, stored or previous, fetch)
            await self._ask("save", None, lambda key: shared.save(key, policy), origin)
            return self._adopt(origin, previous, policy, fetch)
        finally:
            if lease is not None:
                lease.cancel()
            if held is not None:
                await self._ask("unlock", None, lambda key: shared.unlock(key, held), origin)

    async def _keep_lease(self, origin: str, token: str) -> None:
        """Renew the fetch lock while the fetch runs: a live worker keeps it, a dead one not."""
        shared, ttl = self.shared, self.lock_ttl
        assert shared is not None
        while True:
            await sleep(self.timers, ttl / 3)
            renewed = await self._ask("renew", None, lambda k: shared.renew(k, token, ttl), origin)
            if not renewed:
                if renewed is False:
                    logger.info(
                        "scrapy-rep: lost the %(file)s fetch lock of %(origin)s; "
                        "another worker may fetch it too",
                        {"file": self.file.name, "origin": printable(origin)},
                    )
                return

    async def _fetch(self, origin: str, previous: Policy | None, fetch: Fetch) -> Policy:
        result = await fetch(origin, conditional(previous))
        return next_policy(previous, result, self.clock(), self.config)

    def _adopt(self, origin: str, old: Policy | None, new: Policy, fetch: Fetch | None) -> Policy:
        self.cache.put(origin, new)
        # no longer pending, before the listeners run: what they release must not re-park
        self._started.pop(origin, None)
        for listener in list(self.listeners):
            _tell(listener.on_policy, origin, old, new, fetch)
        return new

    async def _ask(
        self, what: str, failed: F, call: Callable[[str], Awaitable[T]], origin: str
    ) -> T | F:
        """The shared store's answer to ``call`` of the origin's key, or ``failed`` if it
        raised: the local cache carries on without it."""
        try:
            answer = await call(self.file.key(origin))
        except Exception as exc:
            self._outage.failed(exc, what=what)
            return failed
        if what == "load":
            self._outage.answered()
        return answer


#: the lock of a fetch the store could not be asked about: no token to renew or free
UNSHARED = object()


def _tell(hear: Callable[..., None], *args: Any) -> None:
    """Tell one listener; one that raises must not keep the news from the others."""
    try:
        hear(*args)
    except Exception:
        logger.exception("scrapy-rep: a policy listener failed")


@dataclass(frozen=True)
class ResolverSpec:
    """Every setting a resolver uses: crawlers with equal specs share one resolver."""

    policy: PolicyConfig = field(compare=False)
    clock: Clock
    cache_max_origins: int
    cache_max_bytes: int
    cache_compiled_bytes: int
    #: ``memory``, ``redis`` or ``sqlite``, and where
    store: str
    store_address: tuple[Any, ...]
    retention: float
    lock_ttl: float
    #: how long one fetch may take, redirects included
    fetch_budget: float
    policy_key: tuple[Any, ...] = field(init=False)

    @classmethod
    def of(cls, config: RepSettings, clock: Clock | Now, jobdir: str | None) -> ResolverSpec:
        """The spec of a crawler's settings (and JOBDIR, which may choose the store)."""
        kind = store_kind(config, jobdir)
        address: tuple[Any, ...] = ()
        retention = 0.0
        if kind == "redis":
            address, retention = (config.redis_url, config.redis_prefix), config.store_retention
        elif kind == "sqlite":
            address, retention = (sqlite_path(config, jobdir),), config.store_retention
        return cls(
            config.policy,
            clock_of(clock),
            cache_max_origins=config.cache_max_origins,
            cache_max_bytes=config.cache_max_bytes,
            cache_compiled_bytes=config.cache_compiled_bytes,
            store=kind,
            store_address=address,
            retention=retention,
            lock_ttl=config.lock_timeout,
            fetch_budget=config.fetch_timeout * (config.max_redirects + 1) + 5,
        )

    def __post_init__(self) -> None:
        key = tuple(
            tuple(sorted((str(k), str(v)) for k, v in value.items()))
            if isinstance(value, Mapping)
            else value
            for value in (getattr(self.policy, f.name) for f in fields(self.policy))
        )
        object.__setattr__(self, "policy_key", key)


class SharedResolvers:
    """Resolvers shared by the crawlers of one process with equal specs, one per file (even
    with different tokens); one lives while a crawler uses it: sequential crawls start fresh.
    """

    #: (spec, file name) -> the resolver, and how many crawlers use it
    _resolvers: ClassVar[dict[tuple[ResolverSpec, str], tuple[Resolver, int]]] = {}

    @classmethod
    def acquire(
        cls, spec: ResolverSpec, make: Callable[[], Resolver], file: WellKnownFile = ROBOTS_TXT
    ) -> Resolver:
        resolver, users = cls._resolvers.get((spec, file.name)) or (make(), 0)
        cls._resolvers[spec, file.name] = (resolver, users + 1)
        return resolver

    @classmethod
    def leave(cls, spec: ResolverSpec, file: WellKnownFile = ROBOTS_TXT) -> bool:
        """True when that was the last user (who then closes the store)."""
        resolver, users = cls._resolvers[spec, file.name]
        if users <= 1:
            del cls._resolvers[spec, file.name]
            return True
        cls._resolvers[spec, file.name] = (resolver, users - 1)
        return False
