"""The policy store a cluster of crawlers shares, in Redis (``REP_STORE = "redis"``).

Theory of operation. Each origin has one hash, ``{prefix}:v1:policy:{origin}``,
its one record: the *facts* of its latest robots.txt fetch (every :class:`Policy`
field, the body zlib-compressed, and a schema number: the fields of
:mod:`scrapy_rep.runtime.store.codec`, which the SQLite store shares) and, while one
lasts, its page pause (429, 503, a block) in the field ``pause``. It never holds a verdict,
so workers with different product tokens share one fetch and each judges for
itself. Freshness is the policy's own ``expires_at`` (for a paused origin: the
end of the pause, so every worker honours one pause and one back-off count);
the key's TTL is *retention* (default 30 days), much longer, so that a worker
can still fall back on the last good copy of an origin that has become
unreachable (RFC 9309 §2.3.1.4).

One worker fetches an origin at a time: ``SET {prefix}:v1:lock:{origin} token
NX PX ttl``. The lock outlives the longest fetch (the resolver passes the
TTL), expires by itself if its owner dies, and is deleted only by its owner
(compare-and-delete in Lua), so a late unlock never frees someone else's lock.

A page pause is published on ``{prefix}:v1:pause`` as it is saved, and its end
is indexed in the sorted set ``{prefix}:v1:pause-ends`` (origin by end): each save
of a pause deletes the ``pause`` field of those that ended, and the index expires
with the last pause. A policy saved keeps the origin's pause, and the hash lives at
least as long as it.

``forget`` and ``flush`` publish on ``{prefix}:v1:invalidate``; every store
subscribed there (it subscribes before its first load) drops the origin from
its worker's local cache, so the next request for it reads the store again and,
finding nothing, refetches once for the cluster.

Only ``redis.asyncio`` is used: nothing here blocks the reactor.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import secrets
import socket
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

try:
    import redis.asyncio as aioredis
    from redis.asyncio.retry import Retry
    from redis.backoff import ExponentialBackoff
except ImportError as exc:  # pragma: no cover - depends on the installation
    raise ImportError(
        "REP_STORE = 'redis' needs the redis package: pip install 'scrapy-rep[redis]'"
    ) from exc

from scrapy_rep.core.pause import PauseState
from scrapy_rep.core.policy import Policy
from scrapy_rep.robotstxt.text import printable
from scrapy_rep.runtime.store.base import Invalidated, Paused
from scrapy_rep.runtime.store.codec import SCHEMA as SCHEMA
from scrapy_rep.runtime.store.codec import StoreDataError as StoreDataError
from scrapy_rep.runtime.store.codec import as_text as _text
from scrapy_rep.runtime.store.codec import decode as decode
from scrapy_rep.runtime.store.codec import decode_pause, encode_pause, inspected, page_pause
from scrapy_rep.runtime.store.codec import encode as encode
from scrapy_rep.runtime.store.codec import readable as readable
from scrapy_rep.runtime.store.redis_pacing import SharedPacing

logger = logging.getLogger(__name__)

#: the key namespace version; part of every key, so a new layout never reads an old one
KEY_VERSION = "v1"
#: the field of an origin's hash holding its page pause (JSON), beside its policy's fields
PAUSE_FIELD = "pause"
DEFAULT_PREFIX = "scrapy-rep"
DEFAULT_URL = "redis://127.0.0.1:6379"
DEFAULT_RETENTION = 30 * 86_400.0
#: seconds a Redis command may take before the store counts as failed
DEFAULT_TIMEOUT = 5.0

_UNLOCK = """
if redis.call('get', KEYS[1]) == ARGV[1] then
    return redis.call('del', KEYS[1])
end
return 0
"""

#: a policy saved (KEYS: the origin's hash, the pauses' ends; ARGV: the origin, now,
#: milliseconds to keep it, then its fields and values): every field replaced (one that
#: became None must not survive) but a page pause that lasts (another worker may have
#: saved it), and the hash kept at least as long as that pause
_SAVE = """
local pause = redis.call('hget', KEYS[1], 'pause')
local ends = redis.call('zscore', KEYS[2], ARGV[1])
local ttl = redis.call('pttl', KEYS[1])
redis.call('del', KEYS[1])
redis.call('hset', KEYS[1], unpack(ARGV, 4))
local keep = tonumber(ARGV[3])
if pause and ends and tonumber(ends) > tonumber(ARGV[2]) then
    redis.call('hset', KEYS[1], 'pause', pause)
    keep = math.max(keep, ttl)
end
redis.call('pexpire', KEYS[1], keep)
"""

#: a page pause saved (KEYS: the origin's hash, the pauses' ends; ARGV: origin, state, its
#: end, now, the channel, the message, the prefix of the origins' hashes): in the origin's
#: hash, which lives at least until it ends; published; the ``pause`` field of pauses
#: ended by now deleted (a bounded batch per save); the index expires with the last pause
_SAVE_PAUSE = """
local ms = math.ceil((tonumber(ARGV[3]) - tonumber(ARGV[4])) * 1000)
if ms > 0 then
    redis.call('hset', KEYS[1], 'pause', ARGV[2])
    if redis.call('pttl', KEYS[1]) < ms then  -- -1: a new hash, with no TTL yet
        redis.call('pexpire', KEYS[1], ms)
    end
end
redis.call('zadd', KEYS[2], ARGV[3], ARGV[1])
redis.call('publish', ARGV[5], ARGV[6])
local over = redis.call('zrangebyscore', KEYS[2], '-inf', ARGV[4], 'LIMIT', 0, 1000)
for i = 1, #over do
    redis.call('hdel', ARGV[7] .. over[i], 'pause')
    redis.call('zrem', KEYS[2], over[i])
end
local last = redis.call('zrange', KEYS[2], -1, -1, 'WITHSCORES')
if #last > 0 then
    local left = math.ceil((tonumber(last[2]) - tonumber(ARGV[4])) * 1000)
    if left > 0 then
        redis.call('pexpire', KEYS[2], left)
    end
end
return #over
"""

_RENEW = """
if redis.call('get', KEYS[1]) == ARGV[1] then
    return redis.call('pexpire', KEYS[1], ARGV[2])
end
return 0
"""


class RedisStore:
    """The :class:`~scrapy_rep.runtime.store.base.SharedStore` of a cluster, in Redis."""

    def __init__(
        self,
        client: aioredis.Redis,
        prefix: str = DEFAULT_PREFIX,
        retention: float = DEFAULT_RETENTION,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.client = client
        self.base = f"{prefix}:{KEY_VERSION}"
        self.retention = retention
        self.clock = clock
        self.channel = f"{self.base}:invalidate"
        #: page pauses (429, 503, blocks), each in its origin's hash: the index of their
        #: ends (origin by ``until``: the ended ones are found and deleted), their channel
        self.pause_ends_key = f"{self.base}:pause-ends"
        self.pause_channel = f"{self.base}:pause"
        self._pause_listeners: list[Paused] = []
        self._unlock_script = client.register_script(_UNLOCK)
        self._renew = client.register_script(_RENEW)
        self._save = client.register_script(_SAVE)
        self._save_pause = client.register_script(_SAVE_PAUSE)
        self._listeners: list[Invalidated] = []
        #: what this store did, for stats and benchmarks; ``round_trips`` counts
        #: requests sent to Redis (a pipeline is one)
        self.counts: Counter[str] = Counter()
        self._subscription = _Subscription(
            client,
            channel=self.channel,
            pause_channel=self.pause_channel,
            listeners=self._listeners,
            pause_listeners=self._pause_listeners,
            counts=self.counts,
        )

    @classmethod
    def from_url(
        cls,
        url: str | None = None,
        *,
        prefix: str = DEFAULT_PREFIX,
        retention: float = DEFAULT_RETENTION,
        timeout: float = DEFAULT_TIMEOUT,
    ) -> RedisStore:
        """A store on its own connection pool; nothing connects until the first command."""
        client = aioredis.Redis.from_url(
            url or DEFAULT_URL,
            socket_timeout=timeout,
            socket_connect_timeout=timeout,
            # one quick retry: a pooled connection broken by a Redis restart is
            # replaced, while a Redis that is down fails at once (then the
            # resolver carries on with its local cache)
            retry=Retry(ExponentialBackoff(cap=0.2, base=0.05), 1),
            health_check_interval=30,
        )
        return cls(client, prefix=prefix, retention=retention)

    def pacing(self, remember: int) -> SharedPacing:
        """Crawl-delay for the whole cluster, on this store's Redis (round trips counted here),
        for a worker that keeps its moments on the ``remember`` slots reserved last."""
        return SharedPacing(self.client, self.base, self.counts, remember)

    # -- keys ---------------------------------------------------------------------------

    def policy_key(self, origin: str) -> str:
        return f"{self.base}:policy:{origin}"

    def lock_key(self, origin: str) -> str:
        return f"{self.base}:lock:{origin}"

    # -- SharedStore --------------------------------------------------------------------

    async def load(self, origin: str) -> Policy | None:
        """The stored policy of ``origin``; its page pause, if one lasts, told to the pause
        listeners: one record, one round trip (a worker reads the pauses of the origins it
        asks for, as it first asks, never all of them)."""
        await self._subscription.start()
        self.counts["round_trips"] += 1
        self.counts["load"] += 1
        fields = await self.client.hgetall(self.policy_key(origin))
        paused = _pop_pause(fields)
        if paused is not None and self._pause_listeners:
            self._tell_pause(origin, paused)
        if not fields:
            return None
        try:
            policy = decode(fields)
        except StoreDataError as exc:
            self.counts["unreadable"] += 1
            logger.warning(
                "scrapy-rep: ignoring the stored policy of %(origin)s: %(error)s",
                {"origin": printable(origin), "error": exc},
            )
            return None
        self.counts["found"] += 1
        return policy

    async def save(self, origin: str, policy: Policy) -> None:
        """The policy into the origin's hash, in one script (:data:`_SAVE`): the origin's page
        pause, saved by any worker, stays."""
        now = self.clock()
        keep = max(self.retention, policy.expires_at - now + 60.0)
        self.counts["round_trips"] += 1
        self.counts["save"] += 1
        fields = encode(policy, saved_at=now)
        await self._save(
            keys=[self.policy_key(origin), self.pause_ends_key],
            args=[origin, repr(now), max(1, int(keep * 1000)), *_pairs(fields)],
        )

    async def acquire(self, origin: str, ttl: float) -> str | None:
        token = f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(8)}"
        self.counts["round_trips"] += 1
        got = await self.client.set(
            self.lock_key(origin), token, nx=True, px=max(1, int(ttl * 1000))
        )
        self.counts["lock_acquired" if got else "lock_busy"] += 1
        return token if got else None

    async def renew(self, origin: str, token: str, ttl: float) -> bool:
        """Extend this worker's lock by ``ttl`` seconds; False if it is not ours any more."""
        self.counts["round_trips"] += 1
        renewed = await self._renew(
            keys=[self.lock_key(origin)], args=[token, max(1, int(ttl * 1000))]
        )
        self.counts["lock_renewed" if renewed else "lock_lost"] += 1
        return bool(renewed)

    async def unlock(self, origin: str, token: str) -> None:
        self.counts["round_trips"] += 1
        released = await self._unlock_script(keys=[self.lock_key(origin)], args=[token])
        if not released:
            self.counts["lock_lost"] += 1
            logger.info(
                "scrapy-rep: the robots.txt fetch lock of %(origin)s expired before the fetch "
                "ended (a third of REP_FETCH_TIMEOUT, renewed while the fetch runs)",
                {"origin": printable(origin)},
            )

    async def close(self) -> None:
        await self._subscription.stop()
        await self.client.aclose()

    # -- page pauses ---------------------------------------------------------------------

    async def save_pause(self, origin: str, state: PauseState) -> None:
        """One round trip: the pause into the origin's hash, published to every worker; pauses
        ended by now deleted, the index set to expire with the last pause (:data:`_SAVE_PAUSE`)."""
        text = encode_pause(state)
        self.counts["round_trips"] += 1
        self.counts["pause_saved"] += 1
        pruned = await self._save_pause(
            keys=[self.policy_key(origin), self.pause_ends_key],
            args=[
                origin,
                text,
                repr(state.until),
                repr(self.clock()),
                self.pause_channel,
                f"{origin}\n{text}",
                self.policy_key(""),
            ],
        )
        self.counts["pause_pruned"] += int(pruned)

    def _tell_pause(self, origin: str, value: Any) -> None:
        """A stored pause of ``origin``, read with its policy: told to the listeners if it
        lasts."""
        state = decode_pause(value)
        if state is None or state.until <= self.clock():
            return
        self.counts["pause_found"] += 1
        for listener in list(self._pause_listeners):
            listener(origin, state)

    async def load_pauses(self) -> dict[str, PauseState]:
        """The pauses not over yet, found through their index: the CLI's listing; a crawl
        reads an origin's with its policy (:meth:`load`)."""
        await self._subscription.start()
        self.counts["round_trips"] += 2
        now = self.clock()
        lasting: list[Any] = await self.client.zrangebyscore(
            self.pause_ends_key, f"({now!r}", "+inf"
        )
        origins = [_text(origin) for origin in lasting]
        async with self.client.pipeline(transaction=False) as pipe:
            for origin in origins:
                pipe.hget(self.policy_key(origin), PAUSE_FIELD)
            values = await pipe.execute()
        found: dict[str, PauseState] = {}
        for origin, value in zip(origins, values, strict=True):
            state = decode_pause(value) if value is not None else None
            if state is not None and state.until > now:
                found[origin] = state
        return found

    def on_pause(self, listener: Paused) -> None:
        self._pause_listeners.append(listener)

    # -- administration (the CLI's ``scrapy-rep store``) -------------------------------

    async def forget(self, origin: str) -> bool:
        """Delete what is stored for ``origin`` and tell the workers; True if it existed."""
        self.counts["round_trips"] += 1
        async with self.client.pipeline(transaction=True) as pipe:
            pipe.delete(self.policy_key(origin))  # its page pause too: the operator says so
            pipe.zrem(self.pause_ends_key, origin)
            pipe.publish(self.channel, origin)
            deleted, _, notified = await pipe.execute()
        self.counts["notified"] += notified
        return bool(deleted)

    async def flush(self) -> int:
        """Delete every key of this prefix and version, tell the workers; the number deleted."""
        deleted = 0
        batch: list[str | bytes] = []
        async for key in self.client.scan_iter(match=f"{_glob_escape(self.base)}:*", count=500):
            batch.append(key)
            if len(batch) >= 500:
                deleted += await self.client.delete(*batch)
                batch.clear()
        if batch:
            deleted += await self.client.delete(*batch)
        self.counts["notified"] += await self.client.publish(self.channel, "*")
        return deleted

    async def show(self, origin: str) -> dict[str, Any]:
        """What the store holds for ``origin``, readable (body as text), with lock and TTLs."""
        key, lock = self.policy_key(origin), self.lock_key(origin)
        async with self.client.pipeline(transaction=False) as pipe:
            pipe.hgetall(key)
            pipe.pttl(key)
            pipe.get(lock)
            pipe.pttl(lock)
            fields, key_ttl, owner, lock_ttl = await pipe.execute()
        paused = _pop_pause(fields)
        info: dict[str, Any] = {"origin": origin, "key": key, "stored": bool(fields)}
        if fields:
            info["retained_for_s"] = key_ttl / 1000 if key_ttl >= 0 else None
            info.update(inspected(fields, self.clock()))
        if owner is not None:
            info["lock"] = {"owner": _text(owner), "expires_in_s": lock_ttl / 1000}
        if paused is not None:
            now = self.clock()
            pause = page_pause(_text(paused), now)
            if pause.get("ends_in_s", 1) > 0:  # ended, not yet deleted: nothing holds
                info["page_pause"] = pause
        return info

    # -- invalidation -------------------------------------------------------------------

    def on_invalidate(self, listener: Invalidated) -> None:
        """Call ``listener(origin)`` (``None``: everything) when an operator forgets a policy."""
        self._listeners.append(listener)


class _Subscription:
    """The store's one pub/sub connection: what other workers publish, told to the listeners.

    Forgotten origins (``forget``, ``flush``) and page pauses arrive on it. Its
    own class because it has a life of its own beside the store's commands:
    opened by the first load, and only if someone listens; lost with the
    connection and opened again by the next load; stopped at close.
    """

    def __init__(
        self,
        client: aioredis.Redis,
        *,
        channel: str,
        pause_channel: str,
        listeners: list[Invalidated],
        pause_listeners: list[Paused],
        counts: Counter[str],
    ) -> None:
        self.client = client
        self.channel = channel
        self.pause_channel = pause_channel
        # the store's lists: listeners added later count
        self._listeners = listeners
        self._pause_listeners = pause_listeners
        self.counts = counts
        self._task: asyncio.Task[None] | None = None
        self._subscribing = asyncio.Lock()  # concurrent first loads subscribe once
        self._closed = False

    async def start(self) -> None:
        """Subscribe, before anything from the store is cached locally.

        A failure to subscribe fails the load that asked (the resolver then carries
        on locally); the next load tries again. Invalidations published while a
        worker is not subscribed are missed: its copy then lives until it expires.
        """
        listening = self._listeners or self._pause_listeners
        if not listening or self._task is not None or self._closed:
            return
        async with self._subscribing:
            if self._task is not None:
                return
            pubsub = self.client.pubsub(ignore_subscribe_messages=True)
            try:
                self.counts["round_trips"] += 1
                await pubsub.subscribe(self.channel, self.pause_channel)
            except BaseException:
                # redis < 8.2 leaves aclose untyped; 8.2 types it: the ignore holds on both.
                await pubsub.aclose()  # type: ignore[no-untyped-call, unused-ignore]
                raise
            self._task = asyncio.ensure_future(self._listen(pubsub))

    async def stop(self) -> None:
        self._closed = True
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task
            self._task = None

    async def _listen(self, pubsub: Any) -> None:
        try:
            while not self._closed:
                try:
                    message = await pubsub.get_message(timeout=1.0)
                except (aioredis.ConnectionError, aioredis.TimeoutError, OSError) as exc:
                    logger.warning(
                        "scrapy-rep: lost the shared store's invalidation channel (%(error)s); "
                        "resubscribing on the next load",
                        {"error": f"{type(exc).__name__}: {exc}"},
                    )
                    return
                if message is None or message.get("type") != "message":
                    continue
                if _text(message.get("channel", b"")) == self.pause_channel:
                    self._heard_pause(_text(message["data"]))
                    continue
                origin = _text(message["data"])
                self.counts["invalidations"] += 1
                logger.info(
                    "scrapy-rep: %(what)s forgotten in the shared store; refetching when next "
                    "needed",
                    {"what": "every origin" if origin == "*" else origin},
                )
                for listener in list(self._listeners):
                    listener(None if origin == "*" else origin)
        finally:
            self._task = None
            with contextlib.suppress(Exception):
                await pubsub.aclose()

    def _heard_pause(self, data: str) -> None:
        origin, _, text = data.partition("\n")
        state = decode_pause(text)
        if state is None:
            return
        self.counts["pause_heard"] += 1
        for listener in list(self._pause_listeners):
            try:
                listener(origin, state)
            except Exception:
                logger.exception("scrapy-rep: a page pause listener failed")


def _pairs(fields: dict[str, bytes]) -> list[str | bytes]:
    """A hash's fields as a script's arguments: name, value, name, value..."""
    return [part for pair in fields.items() for part in pair]


def _pop_pause(fields: dict[Any, Any]) -> Any:
    """The page pause of an origin's hash, taken out of it (the rest is its policy)."""
    paused = fields.pop(PAUSE_FIELD.encode(), None)
    return fields.pop(PAUSE_FIELD, None) if paused is None else paused


def _glob_escape(text: str) -> str:
    """``text`` matched literally by a Redis glob pattern."""
    return "".join("\\" + c if c in "*?[]\\" else c for c in text)
