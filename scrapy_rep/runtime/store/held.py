"""Held requests recorded in the shared queue's Redis, so that they outlive their worker.

A request parked for its origin (paused, pending, or held for a collection
answer) lives in one worker's memory, outside the scrapy-redis queue: killed
with that worker, it would be gone. So each worker records what it holds in
the Redis of the shared queue, under a lease:

- ``{base}:held:{worker}``, a hash: one field per held request, its value the
  request as the queue itself encodes it (with its score and URL in front);
  beside it ``~about:{id}``, what the worker knew of it (opaque here: the
  adapter's JSON of origin, token, why held, the policy), handed to whoever
  requeues it, so that its final answer can be recorded; ``~queue`` /
  ``~kind`` naming the queue it belongs in. Records of older versions have
  no ``~about`` field and are requeued all the same;
- ``{base}:lease:{worker}``, set for ``lease`` seconds and renewed every third
  of that while the worker lives (and with every write);
- ``{base}:holders``, the set of workers that have records.

Records are written in order by one task, batched into one pipeline per
burst (a park and its release never arrive swapped). When its owner releases
or drops a request, the record is deleted; at a graceful close the whole hash
is. Every ``check_interval`` seconds each worker looks for holders whose lease
has expired and moves their records into the queue with one script (check
the lease, push every record, delete the hash), so no record is moved twice
even when several survivors look at once. A dead worker's requests are back
in the queue at most ``lease + check_interval`` seconds after its last
renewal.

Only ``redis.asyncio``: nothing here blocks the reactor.
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from collections.abc import Callable
from typing import Any

import redis.asyncio as aioredis
from redis.asyncio import connection as aioconnection

logger = logging.getLogger(__name__)

#: queue kinds: a sorted set (scrapy-redis's PriorityQueue) or a list (Fifo, Lifo)
ZSET, LIST = "zset", "list"

#: KEYS: held hash, lease, holders; ARGV: the worker. Moves a dead worker's records.
_REQUEUE = """
if redis.call('EXISTS', KEYS[2]) == 1 then return {} end
local queue = redis.call('HGET', KEYS[1], '~queue')
local kind = redis.call('HGET', KEYS[1], '~kind')
local moved = {}
if queue then
    -- moved: URL, then what its worker recorded about it ('' when nothing), per request
    local all = redis.call('HGETALL', KEYS[1])
    for i = 1, #all, 2 do
        if string.sub(all[i], 1, 1) ~= '~' then
            local v = all[i + 1]
            local a = string.find(v, '\\n', 1, true)
            local b = string.find(v, '\\n', a + 1, true)
            local data = string.sub(v, b + 1)
            if kind == 'zset' then
                redis.call('ZADD', queue, string.sub(v, 1, a - 1), data)
            else
                redis.call('LPUSH', queue, data)
            end
            moved[#moved + 1] = string.sub(v, a + 1, b - 1)
            moved[#moved + 1] = redis.call('HGET', KEYS[1], '~about:' .. all[i]) or ''
        end
    end
end
redis.call('DEL', KEYS[1])
redis.call('SREM', KEYS[3], ARGV[1])
return moved
"""

#: (the dead worker, per request moved: its URL and what its worker recorded, b"" if nothing)
Requeued = Callable[[str, list[tuple[str, bytes]]], None]


class HeldLedger:
    """This worker's held requests in Redis, and the requeueing of dead workers' ones."""

    def __init__(
        self,
        client: aioredis.Redis,
        base: str,
        worker: str,
        queue: tuple[str, str],
        *,
        lease: float,
        check_interval: float,
        on_requeued: Requeued,
    ) -> None:
        self.client = client
        self.base = base
        self.worker = worker
        self.queue_key, self.queue_kind = queue
        self.lease = lease
        self.check_interval = check_interval
        self.on_requeued = on_requeued
        self._requeue = client.register_script(_REQUEUE)
        self._ops: list[tuple[str, str, bytes | None]] = []  # (op, id, value), in order
        self._writer: asyncio.Task[None] | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._down = False  # warn once per outage
        self._closed = False  # the loops end: a graceful close has begun
        self.counts: Counter[str] = Counter()

    def held_key(self, worker: str) -> str:
        return f"{self.base}:held:{worker}"

    def lease_key(self, worker: str) -> str:
        return f"{self.base}:lease:{worker}"

    @property
    def holders_key(self) -> str:
        return f"{self.base}:holders"

    # -- this worker's records ------------------------------------------------------------

    def start(self) -> None:
        """Take the lease, keep it, and look for dead workers' records (needs a running loop)."""
        self._kick()
        self._tasks = [
            asyncio.ensure_future(self._every(self.lease / 3, self._renew)),
            asyncio.ensure_future(self._every(self.check_interval, self.requeue_dead, now=True)),
        ]

    def add(self, held_id: str, url: str, score: float, data: bytes, about: bytes = b"") -> None:
        """Keep a held request (``data``: as the queue encodes it) until :meth:`forget`;
        ``about``: what a survivor requeueing it is given with its URL."""
        head = f"{score:g}\n{url.replace(chr(10), '%0A')}\n".encode()
        self._ops.append(("record", held_id, head + data))
        if about:
            self._ops.append(("record", f"~about:{held_id}", about))
        self._kick()

    def forget(self, held_id: str) -> None:
        """The request left this worker's hands (released, dropped): delete its record."""
        self._ops.append(("forget", held_id, None))
        self._kick()

    async def close(self) -> None:
        """A graceful close: the caller handed its requests over; delete every record.

        The lease keeper and the requeuer stop on ``_closed`` as well as on their
        cancellation: a cancellation can be lost (on Python 3.11, redis-py's
        ``asyncio.wait_for`` around a socket write returns the write's result when the
        cancellation lands just as the write ends), and a loop that relied on it alone
        would run on and keep this close, and the spider's, waiting for ever.
        """
        self._closed = True
        tasks = [t for t in (*self._tasks, self._writer) if t is not None]
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks)  # their own errors are theirs; a cancel of close is not
        self._ops.clear()
        try:
            async with self.client.pipeline(transaction=True) as pipe:
                pipe.delete(self.held_key(self.worker), self.lease_key(self.worker))
                pipe.srem(self.holders_key, self.worker)
                await pipe.execute()
        except Exception as exc:
            self._failed("close", exc)
        finally:
            await self.client.aclose()

    def _kick(self) -> None:
        if self._closed:
            return
        if self._writer is None or self._writer.done():
            self._writer = asyncio.ensure_future(self._write())

    async def _write(self) -> None:
        """Send the pending records and deletions, in order, one pipeline per batch."""
        while True:
            ops, self._ops = self._ops, []
            mine = self.held_key(self.worker)
            try:
                async with self.client.pipeline(transaction=False) as pipe:
                    pipe.set(self.lease_key(self.worker), self.worker, px=self._lease_ms)
                    recorded = False
                    for op, held_id, value in ops:
                        if op == "record":
                            pipe.hset(mine, held_id, value)
                            recorded = True
                        else:
                            pipe.hdel(mine, held_id, f"~about:{held_id}")
                    if recorded:
                        pipe.hset(
                            mine, mapping={"~queue": self.queue_key, "~kind": self.queue_kind}
                        )
                        pipe.sadd(self.holders_key, self.worker)
                    self.counts["round_trips"] += 1
                    await pipe.execute()
            except Exception as exc:
                self._ops[:0] = ops  # kept, in order: sent with the next renewal
                self._failed("record", exc)
                return
            self._answered()
            self.counts["recorded"] += sum(
                1 for op, held_id, _ in ops if op == "record" and not held_id.startswith("~")
            )
            if not self._ops or self._closed:
                return

    async def _renew(self) -> None:
        if self._ops:
            self._kick()  # a write that failed is retried with the lease
            return
        self.counts["round_trips"] += 1
        await self.client.set(self.lease_key(self.worker), self.worker, px=self._lease_ms)

    @property
    def _lease_ms(self) -> int:
        return max(1, int(self.lease * 1000))

    # -- dead workers ---------------------------------------------------------------------

    async def requeue_dead(self) -> int:
        """Move the records of every holder whose lease expired into their queue; how many."""
        self.counts["round_trips"] += 1
        holders = await self.client.smembers(self.holders_key)
        moved = 0
        for raw in holders:
            worker = raw.decode() if isinstance(raw, bytes) else str(raw)
            if worker == self.worker:
                continue
            self.counts["round_trips"] += 1
            found = await self._requeue(
                keys=[self.held_key(worker), self.lease_key(worker), self.holders_key],
                args=[worker],
            )
            if found:
                pairs = [(_text(found[i]), _octets(found[i + 1])) for i in range(0, len(found), 2)]
                moved += len(pairs)
                self.on_requeued(worker, pairs)
        return moved

    async def _every(self, seconds: float, job: Callable[[], Any], now: bool = False) -> None:
        if not now:
            await asyncio.sleep(seconds)
        while not self._closed:
            try:
                await job()
                self._answered()
            except Exception as exc:
                self._failed("lease" if job == self._renew else "requeue", exc)
            await asyncio.sleep(seconds)

    def _failed(self, what: str, exc: Exception) -> None:
        log = logger.debug if self._down else logger.warning
        self._down = True
        log(
            "scrapy-rep: cannot record held requests in the queue's Redis (%(what)s: %(error)s); "
            "they are lost if this worker dies before it answers again",
            {"what": what, "error": f"{type(exc).__name__}: {exc}"},
        )

    def _answered(self) -> None:
        if self._down:
            self._down = False
            logger.info("scrapy-rep: held requests are recorded in the queue's Redis again")


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _octets(value: Any) -> bytes:
    return value if isinstance(value, bytes) else str(value or "").encode()


def twin(server: Any, timeout: float = 5.0) -> aioredis.Redis:
    """An asyncio client to the server a synchronous redis-py client (scrapy-redis's) uses."""
    pool = server.connection_pool
    kind = getattr(aioconnection, pool.connection_class.__name__, aioconnection.Connection)
    names = ("host", "port", "db", "username", "password", "path", "client_name")
    kwargs = {k: v for k, v in pool.connection_kwargs.items() if k in names or k.startswith("ssl_")}
    return aioredis.Redis(
        connection_pool=aioredis.ConnectionPool(
            connection_class=kind,
            socket_timeout=timeout,
            socket_connect_timeout=timeout,
            **kwargs,
        )
    )
