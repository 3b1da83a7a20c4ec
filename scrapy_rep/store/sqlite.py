"""Policies in a SQLite file (``REP_STORE = "sqlite"``): they survive a stop, a crash, a resume.

Theory of operation. The file holds the same facts as the Redis store, in the
same form (:mod:`scrapy_rep.store.codec`): one row per origin in
``rep_policy``, one column per codec field (``NULL`` for a field the codec
leaves out), plus ``keep_until``, the *retention* (default 30 days, and never
before the policy's own ``expires_at``): a row past it counts as missing and
is purged now and then. ``rep_lock`` holds at most one lease per origin
(token, expiry): ``acquire`` takes it if it is free or expired, ``renew``
extends it while the holder still owns it, ``release`` deletes it only for its
owner. ``forget`` and ``flush`` also append to ``rep_invalidation``, which
every store with an :meth:`~SqliteStore.on_invalidate` listener polls (one
indexed query a second, started by its first load), so a running crawl drops
a forgotten origin from its local cache, as Redis pub/sub does for a cluster.
``rep_meta`` names the application and the file's schema version; a
file of another version, another application's SQLite file or something that
is not SQLite at all is refused with a :class:`~scrapy_rep.settings.SettingError`
naming ``REP_SQLITE_PATH``.

Several processes may use one file (two crawls sharing a ``REP_SQLITE_PATH``,
or the CLI while a crawl runs): the file is in WAL mode (readers do not block
the writer), each write is one statement or one ``BEGIN IMMEDIATE``
transaction, and a connection waits up to ``busy_timeout`` seconds for
another's write lock rather than failing at once. A failure after that
(``database is locked``, a full disk) is an exception the resolver treats like
a Redis outage: it warns and carries on with its local cache.

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
import sqlite3
import time
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from scrapy_rep.policy import Policy
from scrapy_rep.settings import SettingError
from scrapy_rep.store.codec import FIELDS, StoreDataError, decode, encode, readable

logger = logging.getLogger(__name__)

T = TypeVar("T")
#: a row as the codec reads it: field name -> bytes, NULL columns left out
Stored = dict[bytes | str, bytes | str]
Invalidated = Callable[[str | None], None]

#: the layout of the file's tables; a file with another number is refused
SCHEMA_VERSION = 1
APPLICATION = "scrapy-rep policy store"
DEFAULT_FILENAME = "rep-policies.sqlite"
DEFAULT_RETENTION = 30 * 86_400.0
#: seconds a connection waits for another process's write lock
DEFAULT_BUSY_TIMEOUT = 10.0
#: seconds between purges of rows past their retention (and dead locks)
PURGE_INTERVAL = 3_600.0
SETTING = "REP_SQLITE_PATH"

_COLUMNS = ", ".join(f'"{name}"' for name in FIELDS)
_PLACEHOLDERS = ", ".join("?" for _ in FIELDS)
_CREATE = (
    "CREATE TABLE rep_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE rep_policy (origin TEXT PRIMARY KEY, keep_until REAL NOT NULL, "
    + ", ".join(f'"{name}" BLOB' for name in FIELDS)
    + ")",
    "CREATE INDEX rep_policy_keep_until ON rep_policy (keep_until)",
    "CREATE TABLE rep_lock (origin TEXT PRIMARY KEY, token TEXT NOT NULL, "
    "expires_at REAL NOT NULL)",
    # what ``forget`` and ``flush`` did (origin NULL: everything), for running crawls
    "CREATE TABLE rep_invalidation (seq INTEGER PRIMARY KEY AUTOINCREMENT, origin TEXT, "
    "at REAL NOT NULL)",
)


def default_path(jobdir: str) -> str:
    """Where the store lives in a JOBDIR when ``REP_SQLITE_PATH`` is not set."""
    return os.path.join(jobdir, DEFAULT_FILENAME)


class SqliteStore:
    """The :class:`~scrapy_rep.store.base.SharedStore` of one machine, in a SQLite file.

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
        self.retention = retention
        self.busy_timeout = busy_timeout
        self.clock = clock
        #: what this store did, for stats and benchmarks (the Redis store's names)
        self.counts: Counter[str] = Counter()
        self.poll_interval = poll_interval
        self._listeners: list[Invalidated] = []
        self._watcher: asyncio.Task[None] | None = None
        self._watching = False
        self._closed = False
        self._last_purge = float("-inf")
        self._seen = 0  # the last invalidation handed to the listeners
        self._db: sqlite3.Connection | None = None  # used on the worker thread only
        self._executor = concurrent.futures.ThreadPoolExecutor(
            max_workers=1, thread_name_prefix="scrapy-rep-sqlite"
        )
        try:
            self._executor.submit(self._open, create).result()
        except BaseException:
            self._executor.shutdown(wait=False)
            self._closed = True
            raise

    # -- SharedStore --------------------------------------------------------------------

    async def load(self, origin: str) -> Policy | None:
        await self._watch()
        self.counts["load"] += 1
        row = await self._call(self._load, origin)
        if row is None:
            return None
        try:
            policy = decode(row)
        except StoreDataError as exc:
            self.counts["unreadable"] += 1
            logger.warning(
                "scrapy-rep: ignoring the stored policy of %(origin)s in %(path)s: %(error)s",
                {"origin": origin, "path": self.path, "error": exc},
            )
            return None
        self.counts["found"] += 1
        return policy

    async def save(self, origin: str, policy: Policy) -> None:
        self.counts["save"] += 1
        await self._call(self._save, origin, policy)

    async def acquire(self, origin: str, ttl: float) -> str | None:
        token = f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(8)}"
        got = await self._call(self._acquire, origin, token, ttl)
        self.counts["lock_acquired" if got else "lock_busy"] += 1
        return token if got else None

    async def renew(self, origin: str, token: str, ttl: float) -> bool:
        """Extend a lease to ``ttl`` seconds from now; False if it expired or is not ours."""
        renewed = await self._call(self._renew, origin, token, ttl)
        self.counts["lock_renewed" if renewed else "lock_lost"] += 1
        return renewed

    async def release(self, origin: str, token: str) -> None:
        released = await self._call(self._release, origin, token)
        if not released:
            self.counts["lock_lost"] += 1
            logger.info(
                "scrapy-rep: the robots.txt fetch lock of %(origin)s expired before the fetch "
                "ended",
                {"origin": origin},
            )

    async def close(self) -> None:
        if self._closed:
            return
        if self._watcher is not None:
            self._watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._watcher
            self._watcher = None
        try:
            await self._call(self._close)
        finally:
            self._closed = True
            self._executor.shutdown(wait=False)

    # -- administration (the CLI's ``scrapy-rep store --sqlite PATH``) -----------------

    async def forget(self, origin: str | None) -> int:
        """Delete the policy of ``origin`` (``None``: every policy); how many went.

        Running crawls on the file hear of it (:meth:`on_invalidate`).
        """
        return await self._call(self._forget, origin)

    async def flush(self) -> int:
        """Delete every policy and every lock; how many rows went. Running crawls hear of it."""
        return await self._call(self._flush)

    async def show(self, origin: str) -> dict[str, Any]:
        """What the file holds for ``origin``, readable (body as text), with its lock."""
        return await self._call(self._show, origin)

    async def entries(self) -> list[dict[str, Any]]:
        """One line per stored origin: status, freshness, lock; sorted by origin."""
        return await self._call(self._entries)

    async def purge(self) -> int:
        """Delete rows past their retention and locks long expired; how many went."""
        return await self._call(self._purge)

    # -- invalidation -------------------------------------------------------------------

    def on_invalidate(self, listener: Invalidated) -> None:
        """Call ``listener(origin)`` (``None``: everything) when an operator forgets policies.

        Forgetting in any process (``scrapy-rep store forget --sqlite``) counts;
        it is noticed within ``poll_interval`` seconds once this store has loaded.
        """
        self._listeners.append(listener)

    async def _watch(self) -> None:
        """Start polling for invalidations, before anything from the file is cached locally."""
        if not self._listeners or self._watching or self._closed:
            return
        self._watching = True
        try:
            # queued on the store's thread before the load that asked: nothing is missed
            self._seen = await self._call(self._last_invalidation)
        except BaseException:
            self._watching = False
            raise
        self._watcher = asyncio.ensure_future(self._poll())

    async def _poll(self) -> None:
        failing = False
        while not self._closed:
            await asyncio.sleep(self.poll_interval)
            try:
                found = await self._call(self._invalidations, self._seen)
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

    # -- the worker thread --------------------------------------------------------------

    async def _call(self, fn: Callable[..., T], *args: Any) -> T:
        if self._closed:
            raise RuntimeError(f"the SQLite policy store {self.path} is closed")
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, functools.partial(fn, *args))

    @property
    def db(self) -> sqlite3.Connection:
        assert self._db is not None, "used before open or after close"
        return self._db

    def _open(self, create: bool) -> None:
        if sqlite3.sqlite_version_info < (3, 24, 0):  # upsert
            raise SettingError(
                f"{SETTING}: the SQLite store needs SQLite 3.24 or later; this Python has "
                f"{sqlite3.sqlite_version}"
            )
        if not create and not os.path.exists(self.path):
            raise SettingError(f"{SETTING}: {self.path} does not exist")
        parent = os.path.dirname(os.path.abspath(self.path))
        try:
            os.makedirs(parent, exist_ok=True)
        except OSError as exc:
            raise SettingError(
                f"{SETTING}: cannot create the directory of {self.path}: {exc}"
            ) from None
        try:
            db = sqlite3.connect(
                self.path, timeout=self.busy_timeout, isolation_level=None
            )  # autocommit: transactions are explicit
        except sqlite3.Error as exc:
            raise SettingError(f"{SETTING}: cannot open {self.path}: {exc}") from None
        try:
            self._prepare(db)
            self._db = db
            self._purge()
        except BaseException as exc:
            self._db = None
            db.close()
            if isinstance(exc, sqlite3.DatabaseError):
                raise SettingError(
                    f"{SETTING}: {self.path} is not a usable scrapy-rep policy store "
                    f"({type(exc).__name__}: {exc}); delete it or point {SETTING} elsewhere"
                ) from None
            raise

    def _prepare(self, db: sqlite3.Connection) -> None:
        """WAL mode; the tables of a new file, or the checks of an existing one."""
        mode = db.execute("PRAGMA journal_mode=WAL").fetchone()[0]
        if str(mode).lower() != "wal":
            logger.warning(
                "scrapy-rep: %(path)s cannot use WAL mode (journal mode %(mode)s); "
                "concurrent crawls on it will wait for each other more",
                {"path": self.path, "mode": mode},
            )
        db.execute("PRAGMA synchronous=NORMAL")  # safe in WAL; a power cut may lose a save
        db.execute("BEGIN IMMEDIATE")  # two processes creating one new file: one creates
        try:
            tables = {
                name
                for (name,) in db.execute(
                    "SELECT name FROM sqlite_master WHERE type = 'table' "
                    "AND name NOT LIKE 'sqlite_%'"
                )
            }
            if "rep_meta" not in tables:
                if tables:
                    raise SettingError(
                        f"{SETTING}: {self.path} is a SQLite database of something else "
                        f"(tables: {', '.join(sorted(tables))}); point {SETTING} elsewhere"
                    )
                for statement in _CREATE:
                    db.execute(statement)
                db.executemany(
                    "INSERT INTO rep_meta (key, value) VALUES (?, ?)",
                    [("application", APPLICATION), ("schema_version", str(SCHEMA_VERSION))],
                )
            else:
                meta = dict(db.execute("SELECT key, value FROM rep_meta").fetchall())
                if meta.get("application") != APPLICATION:
                    raise SettingError(
                        f"{SETTING}: {self.path} is a SQLite database of something else "
                        f"(application {meta.get('application')!r}); point {SETTING} elsewhere"
                    )
                if meta.get("schema_version") != str(SCHEMA_VERSION):
                    raise SettingError(
                        f"{SETTING}: {self.path} has schema version "
                        f"{meta.get('schema_version')}, this scrapy-rep reads version "
                        f"{SCHEMA_VERSION}; delete the file (it is a cache) or point "
                        f"{SETTING} elsewhere"
                    )
            db.execute("COMMIT")
        except BaseException:
            if db.in_transaction:
                db.execute("ROLLBACK")
            raise

    def _close(self) -> None:
        if self._db is not None:
            self._db.close()  # the last connection checkpoints and removes the WAL
            self._db = None

    def _load(self, origin: str) -> Stored | None:
        row = self.db.execute(
            f"SELECT {_COLUMNS} FROM rep_policy WHERE origin = ? AND keep_until >= ?",
            (origin, self.clock()),
        ).fetchone()
        if row is None:
            return None
        return _stored(row)

    def _save(self, origin: str, policy: Policy) -> None:
        now = self.clock()
        keep_until = now + max(self.retention, policy.expires_at - now + 60.0)
        fields = encode(policy, saved_at=now)
        values = [fields.get(name) for name in FIELDS]
        # one statement replaces the whole row: a field that became None goes
        self.db.execute(
            f"INSERT OR REPLACE INTO rep_policy (origin, keep_until, {_COLUMNS}) "
            f"VALUES (?, ?, {_PLACEHOLDERS})",
            (origin, keep_until, *values),
        )
        if now - self._last_purge >= PURGE_INTERVAL:
            self._purge()

    def _acquire(self, origin: str, token: str, ttl: float) -> bool:
        now = self.clock()
        # one statement: insert, or take over a lease that has expired
        cursor = self.db.execute(
            "INSERT INTO rep_lock (origin, token, expires_at) VALUES (?, ?, ?) "
            "ON CONFLICT (origin) DO UPDATE SET token = excluded.token, "
            "expires_at = excluded.expires_at WHERE rep_lock.expires_at <= ?",
            (origin, token, now + ttl, now),
        )
        return cursor.rowcount == 1

    def _renew(self, origin: str, token: str, ttl: float) -> bool:
        now = self.clock()
        cursor = self.db.execute(
            "UPDATE rep_lock SET expires_at = ? WHERE origin = ? AND token = ? AND expires_at > ?",
            (now + ttl, origin, token, now),
        )
        return cursor.rowcount == 1

    def _release(self, origin: str, token: str) -> bool:
        now = self.clock()
        cursor = self.db.execute(
            "DELETE FROM rep_lock WHERE origin = ? AND token = ? AND expires_at > ?",
            (origin, token, now),
        )
        if cursor.rowcount == 1:
            return True
        # our lease expired: nobody has taken it over if it is still there; tidy it up
        self.db.execute("DELETE FROM rep_lock WHERE origin = ? AND token = ?", (origin, token))
        return False

    def _forget(self, origin: str | None, locks: bool = False) -> int:
        db = self.db
        db.execute("BEGIN IMMEDIATE")
        try:
            if origin is None:
                deleted = db.execute("DELETE FROM rep_policy").rowcount
            else:
                deleted = db.execute("DELETE FROM rep_policy WHERE origin = ?", (origin,)).rowcount
            if locks:
                deleted += db.execute("DELETE FROM rep_lock").rowcount
            db.execute(
                "INSERT INTO rep_invalidation (origin, at) VALUES (?, ?)", (origin, self.clock())
            )
            db.execute("COMMIT")
        except BaseException:
            if db.in_transaction:
                db.execute("ROLLBACK")
            raise
        return deleted

    def _flush(self) -> int:
        return self._forget(None, locks=True)

    def _last_invalidation(self) -> int:
        row = self.db.execute("SELECT max(seq) FROM rep_invalidation").fetchone()
        return int(row[0] or 0)

    def _invalidations(self, after: int) -> list[tuple[int, str | None]]:
        rows = self.db.execute(
            "SELECT seq, origin FROM rep_invalidation WHERE seq > ? ORDER BY seq", (after,)
        ).fetchall()
        return [(int(seq), origin) for seq, origin in rows]

    def _purge(self) -> int:
        now = self.clock()
        self._last_purge = now
        db = self.db
        deleted = db.execute("DELETE FROM rep_policy WHERE keep_until < ?", (now,)).rowcount
        # a lease an hour past its expiry belongs to a crawl that died
        deleted += db.execute(
            "DELETE FROM rep_lock WHERE expires_at < ?", (now - PURGE_INTERVAL,)
        ).rowcount
        # a crawl polls every second or so: an hour-old invalidation has been seen
        db.execute("DELETE FROM rep_invalidation WHERE at < ?", (now - PURGE_INTERVAL,))
        if deleted:
            self.counts["purged"] += deleted
        return deleted

    def _show(self, origin: str) -> dict[str, Any]:
        now = self.clock()
        info: dict[str, Any] = {"origin": origin, "path": self.path}
        row = self.db.execute(
            f"SELECT keep_until, {_COLUMNS} FROM rep_policy WHERE origin = ?", (origin,)
        ).fetchone()
        info["stored"] = row is not None and row[0] >= now
        if row is not None and info["stored"]:
            fields: Stored = {
                n: bytes(v) for n, v in zip(FIELDS, row[1:], strict=True) if v is not None
            }
            info["retained_for_s"] = round(row[0] - now, 3)
            info["fields"] = readable(fields)
            try:
                policy = decode(fields)
            except StoreDataError as exc:
                info["error"] = str(exc)
            else:
                info["fresh"] = policy.fresh(now)
                info["expires_in_s"] = round(policy.expires_at - now, 3)
        lock = self.db.execute(
            "SELECT token, expires_at FROM rep_lock WHERE origin = ? AND expires_at > ?",
            (origin, now),
        ).fetchone()
        if lock is not None:
            info["lock"] = {"owner": lock[0], "expires_in_s": round(lock[1] - now, 3)}
        return info

    def _entries(self) -> list[dict[str, Any]]:
        now = self.clock()
        rows = self.db.execute(
            "SELECT p.origin, p.status, p.expires_at, p.schema, l.token FROM rep_policy p "
            "LEFT JOIN rep_lock l ON l.origin = p.origin AND l.expires_at > ? "
            "WHERE p.keep_until >= ? ORDER BY p.origin",
            (now, now),
        ).fetchall()
        out = []
        for origin, status, expires_at, schema, owner in rows:
            entry: dict[str, Any] = {"origin": origin}
            try:
                expires = float(bytes(expires_at))
                entry["status"] = bytes(status).decode("utf-8", "replace")
                entry["fresh"] = now < expires
                entry["expires_in_s"] = round(expires - now, 3)
            except (TypeError, ValueError):
                entry["error"] = f"unreadable entry (schema {schema!r})"
            if owner is not None:
                entry["locked_by"] = owner
            out.append(entry)
        return out


def _stored(values: Sequence[Any]) -> Stored:
    """The codec's fields from the columns of :data:`FIELDS`, NULL ones left out."""
    return {name: bytes(v) for name, v in zip(FIELDS, values, strict=True) if v is not None}
