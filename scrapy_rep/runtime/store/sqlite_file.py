"""The SQLite policy file itself: its layout, its checks, and every statement run on it.

This is the synchronous half of :class:`~scrapy_rep.runtime.store.sqlite.SqliteStore`:
:func:`connect` opens (or creates) a file and :class:`SqliteFile` runs the
store's statements on that connection. Nothing here knows about the event
loop; the store calls all of it on its one worker thread (see
:mod:`scrapy_rep.runtime.store.sqlite` for why one thread owns the connection).

Theory of operation. The file holds the same facts as the Redis store, in the
same form (:mod:`scrapy_rep.runtime.store.codec`): one row per origin in
``rep_policy``, its one record: one column per codec field (``NULL`` for a field
the codec leaves out, all of them for an origin with only a page pause), its page
pause (429, 503, a block: ``pause``, its JSON, and ``pause_until``, indexed; both
``NULL`` when there is none), plus ``keep_until``, the *retention* (default 30
days, and never before the policy's own ``expires_at`` nor its pause's end): a row
past it counts as missing and is purged now and then, as are ended pauses. A
policy saved leaves the row's pause as it is, and a pause saved the policy.
``rep_lock`` holds at most one lease per origin (token, expiry): ``acquire``
takes it if it is free or expired, ``renew`` extends it while the holder still
owns it, ``unlock`` deletes it only for its owner. ``forget`` and ``flush`` also
append to ``rep_invalidation``, which every store with an invalidation listener
polls, so a running crawl drops a forgotten origin from its local cache, as
Redis pub/sub does for a cluster.
``rep_meta`` names the application and the file's schema version
(:data:`SCHEMA_VERSION`, to be raised whenever the tables change); a file of
an older version is brought up to date in place (:data:`_MIGRATIONS`), one of
a newer or unknown version, another application's SQLite file or something that is not
SQLite at all is refused with a :class:`~scrapy_rep.runtime.settings.SettingError`
naming ``REP_STORE``.

Several processes may use one file (two crawls sharing a ``sqlite:`` file,
or the CLI while a crawl runs): the file is in WAL mode (readers do not block
the writer), each write is one statement or one ``BEGIN IMMEDIATE``
transaction, and a connection waits up to ``busy_timeout`` seconds for
another's write lock rather than failing at once. A failure after that
(``database is locked``, a full disk) is an exception the resolver treats like
a Redis outage: it warns and carries on with its local cache.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import time
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

from scrapy_rep.core.policy import Policy
from scrapy_rep.runtime.settings import SettingError
from scrapy_rep.runtime.store.codec import FIELDS, encode, inspected, page_pause

# the store's logger: everything the SQLite store says goes under one name
logger = logging.getLogger(__name__)

#: a row as the codec reads it: field name -> bytes, NULL columns left out
Stored = dict[bytes | str, bytes | str]

#: the layout of the file's tables; a file with another number is refused
SCHEMA_VERSION = 3
#: the page pause's index: the rows with a pause, by its end
_PAUSE_INDEX = (
    "CREATE INDEX rep_policy_pause_until ON rep_policy (pause_until) WHERE pause_until IS NOT NULL"
)
#: what brings a file of an older version up to date (version -> its statements)
_MIGRATIONS: dict[int, tuple[str, ...]] = {
    1: (
        'ALTER TABLE rep_policy ADD COLUMN "etag" BLOB',
        'ALTER TABLE rep_policy ADD COLUMN "last_modified" BLOB',
    ),
    # the page pause moves into its origin's row (the pauses of the old table are dropped)
    2: (
        "ALTER TABLE rep_policy ADD COLUMN pause_until REAL",
        "ALTER TABLE rep_policy ADD COLUMN pause TEXT",
        _PAUSE_INDEX,
        "DROP TABLE IF EXISTS rep_pause",
    ),
}
APPLICATION = "scrapy-rep policy store"
DEFAULT_RETENTION = 30 * 86_400.0
#: seconds a connection waits for another process's write lock
DEFAULT_BUSY_TIMEOUT = 10.0
#: seconds between purges of rows past their retention (and dead locks)
PURGE_INTERVAL = 3_600.0
SETTING = "REP_STORE"

_COLUMNS = ", ".join(f'"{name}"' for name in FIELDS)
_PLACEHOLDERS = ", ".join("?" for _ in FIELDS)
_CREATE = (
    "CREATE TABLE rep_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE rep_policy (origin TEXT PRIMARY KEY, keep_until REAL NOT NULL, "
    + ", ".join(f'"{name}" BLOB' for name in FIELDS)
    + ", pause_until REAL, pause TEXT)",
    "CREATE INDEX rep_policy_keep_until ON rep_policy (keep_until)",
    _PAUSE_INDEX,
    "CREATE TABLE rep_lock (origin TEXT PRIMARY KEY, token TEXT NOT NULL, "
    "expires_at REAL NOT NULL)",
    # what ``forget`` and ``flush`` did (origin NULL: everything), for running crawls
    "CREATE TABLE rep_invalidation (seq INTEGER PRIMARY KEY AUTOINCREMENT, origin TEXT, "
    "at REAL NOT NULL)",
)


def connect(path: str, *, busy_timeout: float, create: bool) -> sqlite3.Connection:
    """An autocommit connection to a checked store file (made if new and ``create``).

    Every way the file can be unusable is a :class:`SettingError` naming
    ``REP_STORE``; the connection is closed again on any failure.
    """
    if sqlite3.sqlite_version_info < (3, 24, 0):  # upsert
        raise SettingError(
            f"{SETTING}: the SQLite store needs SQLite 3.24 or later; this Python has "
            f"{sqlite3.sqlite_version}"
        )
    if not create and not os.path.exists(path):
        raise SettingError(f"{SETTING}: {path} does not exist")
    parent = os.path.dirname(os.path.abspath(path))
    try:
        os.makedirs(parent, exist_ok=True)
    except OSError as exc:
        raise SettingError(f"{SETTING}: cannot create the directory of {path}: {exc}") from None
    try:
        # autocommit: transactions are explicit
        db = sqlite3.connect(path, timeout=busy_timeout, isolation_level=None)
    except sqlite3.Error as exc:
        raise SettingError(f"{SETTING}: cannot open {path}: {exc}") from None
    try:
        _prepare(db, path)
    except BaseException as exc:
        db.close()
        if isinstance(exc, sqlite3.DatabaseError):
            raise _unusable(path, exc) from None
        raise
    return db


def _unusable(path: str, exc: BaseException) -> SettingError:
    return SettingError(
        f"{SETTING}: {path} is not a usable scrapy-rep policy store "
        f"({type(exc).__name__}: {exc}); delete it or point {SETTING} elsewhere"
    )


def _prepare(db: sqlite3.Connection, path: str) -> None:
    """WAL mode; the tables of a new file, or the checks of an existing one."""
    mode = db.execute("PRAGMA journal_mode=WAL").fetchone()[0]
    if str(mode).lower() != "wal":
        logger.warning(
            "scrapy-rep: %(path)s cannot use WAL mode (journal mode %(mode)s); "
            "concurrent crawls on it will wait for each other more",
            {"path": path, "mode": mode},
        )
    db.execute("PRAGMA synchronous=NORMAL")  # safe in WAL; a power cut may lose a save
    db.execute("BEGIN IMMEDIATE")  # two processes creating one new file: one creates
    try:
        tables = {
            name
            for (name,) in db.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
            )
        }
        if "rep_meta" not in tables:
            if tables:
                raise SettingError(
                    f"{SETTING}: {path} is a SQLite database of something else "
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
                    f"{SETTING}: {path} is a SQLite database of something else "
                    f"(application {meta.get('application')!r}); point {SETTING} elsewhere"
                )
            _migrate(db, meta)
            if meta.get("schema_version") != str(SCHEMA_VERSION):
                raise SettingError(
                    f"{SETTING}: {path} has schema version "
                    f"{meta.get('schema_version')}, this scrapy-rep reads version "
                    f"{SCHEMA_VERSION}; delete the file (it is a cache) or point "
                    f"{SETTING} elsewhere"
                )
        db.execute("COMMIT")
    except BaseException:
        if db.in_transaction:
            db.execute("ROLLBACK")
        raise


def _migrate(db: sqlite3.Connection, meta: dict[str, str]) -> None:
    """Bring an older file up to :data:`SCHEMA_VERSION` in place (columns are only added)."""
    version = meta.get("schema_version", "")
    while version.isdigit() and int(version) in _MIGRATIONS:
        for statement in _MIGRATIONS[int(version)]:
            db.execute(statement)
        version = str(int(version) + 1)
        db.execute("UPDATE rep_meta SET value = ? WHERE key = 'schema_version'", (version,))
        meta["schema_version"] = version


class SqliteFile:
    """One open connection to a policy file and every statement the store runs on it.

    Synchronous: make it, call it and close it on one thread (``sqlite3``
    refuses a connection from another thread). Opening purges what outlived
    its retention, and so does a ``save`` every :data:`PURGE_INTERVAL` seconds
    at most; ``counts["purged"]`` (the store's counter, shared) adds them up.
    """

    def __init__(
        self,
        path: str,
        *,
        retention: float = DEFAULT_RETENTION,
        busy_timeout: float = DEFAULT_BUSY_TIMEOUT,
        clock: Callable[[], float] = time.time,
        create: bool = True,
        counts: Counter[str] | None = None,
    ) -> None:
        self.path = path
        self.retention = retention
        self.clock = clock
        self.counts: Counter[str] = Counter() if counts is None else counts
        self._last_purge = float("-inf")
        self._db: sqlite3.Connection | None = connect(
            path, busy_timeout=busy_timeout, create=create
        )
        try:
            self.purge()
        except BaseException as exc:
            self.close()
            if isinstance(exc, sqlite3.DatabaseError):
                raise _unusable(path, exc) from None
            raise

    @property
    def db(self) -> sqlite3.Connection:
        assert self._db is not None, "used before open or after close"
        return self._db

    def close(self) -> None:
        if self._db is not None:
            self._db.close()  # the last connection checkpoints and removes the WAL
            self._db = None

    # -- the SharedStore's statements -----------------------------------------------------

    def load(self, origin: str) -> tuple[Stored | None, str | None]:
        """The stored fields of ``origin`` if it is within its retention (None if it has
        none), and its page pause if one lasts: one row."""
        now = self.clock()
        row = self.db.execute(
            f"SELECT {_COLUMNS}, pause_until, pause FROM rep_policy "
            "WHERE origin = ? AND keep_until >= ?",
            (origin, now),
        ).fetchone()
        if row is None:
            return None, None
        *columns, until, pause = row
        lasting = pause is not None and until is not None and until > now
        return _stored(columns) or None, str(pause) if lasting else None

    def save(self, origin: str, policy: Policy) -> None:
        now = self.clock()
        keep_until = now + max(self.retention, policy.expires_at - now + 60.0)
        fields = encode(policy, saved_at=now)
        values = [fields.get(name) for name in FIELDS]
        # every column of the policy replaced (a field that became None goes); the row's
        # page pause, which another crawl may have saved, stays, and the row with it
        self.db.execute(
            f"INSERT INTO rep_policy (origin, keep_until, {_COLUMNS}) "
            f"VALUES (?, ?, {_PLACEHOLDERS}) ON CONFLICT (origin) DO UPDATE SET "
            "keep_until = max(excluded.keep_until, coalesce(rep_policy.pause_until, 0)), "
            + ", ".join(f'"{name}" = excluded."{name}"' for name in FIELDS),
            (origin, keep_until, *values),
        )
        if now - self._last_purge >= PURGE_INTERVAL:
            self.purge()

    def save_pause(self, origin: str, until: float, state: str) -> None:
        """The origin's page pause into its row (made if it has none), kept until it ends."""
        now = self.clock()
        db = self.db
        # a row past its retention, not yet purged, is not brought back by a pause
        db.execute("DELETE FROM rep_policy WHERE origin = ? AND keep_until < ?", (origin, now))
        db.execute(
            "INSERT INTO rep_policy (origin, keep_until, pause_until, pause) VALUES (?, ?, ?, ?) "
            "ON CONFLICT (origin) DO UPDATE SET pause_until = excluded.pause_until, "
            "pause = excluded.pause, keep_until = max(rep_policy.keep_until, excluded.keep_until)",
            (origin, until, until, state),
        )
        if now - self._last_purge >= PURGE_INTERVAL:
            self.purge()

    def load_pauses(self) -> list[tuple[str, str]]:
        """The pauses not over yet, by origin (through their index)."""
        return list(
            self.db.execute(
                "SELECT origin, pause FROM rep_policy WHERE pause_until > ?", (self.clock(),)
            )
        )

    def acquire(self, origin: str, token: str, ttl: float) -> bool:
        now = self.clock()
        # one statement: insert, or take over a lease that has expired
        cursor = self.db.execute(
            "INSERT INTO rep_lock (origin, token, expires_at) VALUES (?, ?, ?) "
            "ON CONFLICT (origin) DO UPDATE SET token = excluded.token, "
            "expires_at = excluded.expires_at WHERE rep_lock.expires_at <= ?",
            (origin, token, now + ttl, now),
        )
        return cursor.rowcount == 1

    def renew(self, origin: str, token: str, ttl: float) -> bool:
        now = self.clock()
        cursor = self.db.execute(
            "UPDATE rep_lock SET expires_at = ? WHERE origin = ? AND token = ? AND expires_at > ?",
            (now + ttl, origin, token, now),
        )
        return cursor.rowcount == 1

    def unlock(self, origin: str, token: str) -> bool:
        """Delete our lease; False if it had expired first."""
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

    # -- administration and invalidation --------------------------------------------------

    def forget(self, origin: str | None, locks: bool = False) -> int:
        db = self.db
        db.execute("BEGIN IMMEDIATE")
        try:
            # an origin's row: its policy and its page pause
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

    def flush(self) -> int:
        return self.forget(None, locks=True)

    def last_invalidation(self) -> int:
        row = self.db.execute("SELECT max(seq) FROM rep_invalidation").fetchone()
        return int(row[0] or 0)

    def invalidations(self, after: int) -> list[tuple[int, str | None]]:
        rows = self.db.execute(
            "SELECT seq, origin FROM rep_invalidation WHERE seq > ? ORDER BY seq", (after,)
        ).fetchall()
        return [(int(seq), origin) for seq, origin in rows]

    def purge(self) -> int:
        now = self.clock()
        self._last_purge = now
        db = self.db
        # a page pause that ended holds nothing back any more
        deleted = db.execute(
            "UPDATE rep_policy SET pause_until = NULL, pause = NULL WHERE pause_until <= ?", (now,)
        ).rowcount
        # a row past its retention, or left with neither a policy nor a pause
        deleted += db.execute(
            "DELETE FROM rep_policy WHERE keep_until < ? OR (schema IS NULL AND pause IS NULL)",
            (now,),
        ).rowcount
        # a lease an hour past its expiry belongs to a crawl that died
        deleted += db.execute(
            "DELETE FROM rep_lock WHERE expires_at < ?", (now - PURGE_INTERVAL,)
        ).rowcount
        # a crawl polls every second or so: an hour-old invalidation has been seen
        db.execute("DELETE FROM rep_invalidation WHERE at < ?", (now - PURGE_INTERVAL,))
        if deleted:
            self.counts["purged"] += deleted
        return deleted

    def show(self, origin: str) -> dict[str, Any]:
        now = self.clock()
        info: dict[str, Any] = {"origin": origin, "path": self.path}
        row = self.db.execute(
            f"SELECT keep_until, pause_until, pause, {_COLUMNS} FROM rep_policy WHERE origin = ?",
            (origin,),
        ).fetchone()
        kept = row is not None and row[0] >= now
        fields = _stored(row[3:]) if row is not None and kept else {}
        info["stored"] = bool(fields)
        if fields:
            info["retained_for_s"] = round(row[0] - now, 3)
            info.update(inspected(fields, now))
        lock = self.db.execute(
            "SELECT token, expires_at FROM rep_lock WHERE origin = ? AND expires_at > ?",
            (origin, now),
        ).fetchone()
        if lock is not None:
            info["lock"] = {"owner": lock[0], "expires_in_s": round(lock[1] - now, 3)}
        if kept and row[2] is not None and row[1] > now:
            info["page_pause"] = page_pause(row[2], now)
        return info

    def entries(self) -> list[dict[str, Any]]:
        """One line per origin with a policy or a page pause, sorted by origin."""
        now = self.clock()
        rows = self.db.execute(
            "SELECT p.origin, p.status, p.expires_at, p.schema, l.token, p.pause_until, p.pause "
            "FROM rep_policy p "
            "LEFT JOIN rep_lock l ON l.origin = p.origin AND l.expires_at > ? "
            "WHERE p.keep_until >= ? AND (p.schema IS NOT NULL OR p.pause_until > ?) "
            "ORDER BY p.origin",
            (now, now, now),
        ).fetchall()
        return [_entry(row, now) for row in rows]


def _entry(row: Sequence[Any], now: float) -> dict[str, Any]:
    """One line of :meth:`SqliteFile.entries` from its row (its policy, its page pause)."""
    origin, status, expires_at, schema, owner, pause_until, pause = row
    entry: dict[str, Any] = {"origin": origin}
    if schema is not None:  # not a row with only a page pause
        try:
            expires = float(bytes(expires_at))
            entry["status"] = bytes(status).decode("utf-8", "replace")
            entry["fresh"] = now < expires
            entry["expires_in_s"] = round(expires - now, 3)
        except (TypeError, ValueError):
            entry["error"] = f"unreadable entry (schema {schema!r})"
        if owner is not None:
            entry["locked_by"] = owner
    if pause is not None and pause_until is not None and pause_until > now:
        entry["page_pause"] = page_pause(pause, now)
    return entry


def _stored(values: Sequence[Any]) -> Stored:
    """The codec's fields from the columns of :data:`FIELDS`, NULL ones left out."""
    return {name: bytes(v) for name, v in zip(FIELDS, values, strict=True) if v is not None}
