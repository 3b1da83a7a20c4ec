"""SqliteStore on real files: its rows, schema version, refused files, leases on its clock,
processes (what every store promises: test_store_contract.py).

Coroutines run on the asyncio reactor and are awaited through :func:`aio`; the
store's own calls run on its worker thread. Concurrency is tested with real
processes (``tests/support/sqlite_worker.py``) on one file, and the CLI as an operator
runs it.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sqlite3
import subprocess
import sys
import time
import zlib
from collections.abc import Awaitable
from dataclasses import replace
from pathlib import Path
from typing import Any, TypeVar

import pytest
import pytest_twisted
from twisted.internet.defer import Deferred

from scrapy_rep.core.policy import Status
from scrapy_rep.runtime.settings import TUNE, RepSettings, SettingError
from scrapy_rep.runtime.store import open_store
from scrapy_rep.runtime.store.sqlite import SqliteStore
from scrapy_rep.runtime.tdmrep import tdm_key
from tests.support import processes
from tests.support import sqlite as sqlite_fixtures
from tests.support.clock import ManualClock
from tests.support.policies import BODY, bare_policy, full_policy
from tests.support.store_cli import store_cli

path = sqlite_fixtures.path  # the fixtures, by their names here
raw = sqlite_fixtures.raw

T = TypeVar("T")
ROOT = Path(__file__).resolve().parents[2]
ORIGIN = "https://example.com:443"


def aio(coro: Awaitable[T]) -> Deferred[T]:
    """Await an asyncio coroutine from a pytest-twisted test."""
    return Deferred.fromFuture(asyncio.ensure_future(coro))


def column(db: sqlite3.Connection, origin: str, name: str) -> Any:
    row = db.execute(f'SELECT "{name}" FROM rep_policy WHERE origin = ?', (origin,)).fetchone()
    return None if row is None else row[0]


# -- what is stored --------------------------------------------------------------------


# What every shared store does is in test_store_contract.py; here, how SQLite keeps it.


@pytest_twisted.ensureDeferred
async def test_a_policy_is_one_row_with_its_body_compressed(path: Path) -> None:
    store = SqliteStore(path)
    try:
        await aio(store.save(ORIGIN, full_policy()))
        await aio(store.save("http://h:80", bare_policy()))
        empty = replace(bare_policy(), status=Status.OK, body=b"", digest=None)
        await aio(store.save("http://empty:80", empty))
    finally:
        await aio(store.close())
    db = sqlite3.connect(path)
    try:
        assert column(db, ORIGIN, "schema") == b"1"
        assert zlib.decompress(column(db, ORIGIN, "body")) == BODY
        assert len(column(db, ORIGIN, "body")) < len(BODY) / 5  # stored compressed
        assert column(db, "http://h:80", "body") is None  # None is NULL, not b""
        assert column(db, "http://h:80", "http_status") is None
        assert column(db, "http://empty:80", "body") == zlib.compress(b"")
    finally:
        db.close()


@pytest_twisted.ensureDeferred
async def test_a_version_1_file_gains_the_validator_columns(
    path: Path, raw: sqlite3.Connection
) -> None:
    """A file written before validators were kept opens, keeps its rows and stores them."""
    policy = full_policy()
    store = SqliteStore(path)
    try:
        await aio(store.save(ORIGIN, replace(policy, etag=None, last_modified=None)))
    finally:
        await aio(store.close())
    _as_version_2(raw)
    for name in ("etag", "last_modified"):
        raw.execute(f'ALTER TABLE rep_policy DROP COLUMN "{name}"')
    raw.execute("UPDATE rep_meta SET value = '1' WHERE key = 'schema_version'")
    store = SqliteStore(path)
    try:
        assert await aio(store.load(ORIGIN)) == replace(policy, etag=None, last_modified=None)
        await aio(store.save(ORIGIN, policy))
        assert await aio(store.load(ORIGIN)) == policy
    finally:
        await aio(store.close())
    meta = dict(raw.execute("SELECT key, value FROM rep_meta").fetchall())
    assert meta["schema_version"] == "3"


def _as_version_2(raw: sqlite3.Connection) -> None:
    """Make the file the layout of version 2: page pauses in a table of their own."""
    raw.execute("DROP INDEX rep_policy_pause_until")
    for name in ("pause", "pause_until"):
        raw.execute(f'ALTER TABLE rep_policy DROP COLUMN "{name}"')
    raw.execute(
        "CREATE TABLE rep_pause (origin TEXT PRIMARY KEY, until REAL NOT NULL, state TEXT NOT NULL)"
    )
    raw.execute("INSERT INTO rep_pause VALUES ('http://h:80', 1e12, '{}')")
    raw.execute("UPDATE rep_meta SET value = '2' WHERE key = 'schema_version'")


@pytest_twisted.ensureDeferred
async def test_a_version_2_file_keeps_page_pauses_in_the_origins_row(
    path: Path, raw: sqlite3.Connection
) -> None:
    """A file of the layout before (page pauses in their own table) opens: its policies kept,
    its pauses table gone, and a page pause saved goes into the origin's row."""
    from scrapy_rep.core.pushback import PauseState

    store = SqliteStore(path)
    try:
        await aio(store.save(ORIGIN, full_policy()))
    finally:
        await aio(store.close())
    _as_version_2(raw)
    store = SqliteStore(path)
    try:
        assert await aio(store.load(ORIGIN)) == full_policy()
        now = time.time()
        state = PauseState(now + 60, "rate-limited", 429, f"{ORIGIN}/x", 60.0, 1, now)
        await aio(store.save_pause(ORIGIN, state))
        assert await aio(store.load_pauses()) == {ORIGIN: state}
    finally:
        await aio(store.close())
    tables = {name for (name,) in raw.execute("SELECT name FROM sqlite_master")}
    assert "rep_pause" not in tables
    assert column(raw, ORIGIN, "pause") is not None
    meta = dict(raw.execute("SELECT key, value FROM rep_meta").fetchall())
    assert meta["schema_version"] == "3"


# -- leases ----------------------------------------------------------------------------


@pytest_twisted.ensureDeferred
async def test_a_lease_expires_unless_renewed(path: Path) -> None:
    clock = ManualClock(1_800_000_000.0)
    holder, waiter = SqliteStore(path, clock=clock.now), SqliteStore(path, clock=clock.now)
    try:
        token = await aio(holder.acquire(ORIGIN, 10))
        assert token is not None
        clock.advance(9)
        assert await aio(holder.renew(ORIGIN, token, 10)) is True  # now until +19
        clock.advance(9)
        assert await aio(waiter.acquire(ORIGIN, 10)) is None  # renewed: still held
        clock.advance(1.5)  # past the renewed expiry
        assert await aio(holder.renew(ORIGIN, token, 10)) is False  # too late
        taken = await aio(waiter.acquire(ORIGIN, 10))
        assert taken is not None
        # the first holder coming back late frees nothing
        await aio(holder.unlock(ORIGIN, token))
        assert await aio(holder.renew(ORIGIN, token, 10)) is False
        assert await aio(holder.acquire(ORIGIN, 10)) is None
        assert (await aio(waiter.show(ORIGIN)))["lock"]["owner"] == taken
        assert holder.counts["lock_lost"] == 3  # a late renew, a late release, a late renew
        assert holder.counts["lock_renewed"] == 1
    finally:
        await aio(holder.close())
        await aio(waiter.close())


@pytest_twisted.ensureDeferred
async def test_an_expired_release_is_reported_lost(
    path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    clock = ManualClock(1_800_000_000.0)
    store = SqliteStore(path, clock=clock.now)
    try:
        token = await aio(store.acquire(ORIGIN, 5))
        assert token is not None
        clock.advance(6)
        with caplog.at_level(logging.INFO, logger="scrapy_rep.runtime.store.sqlite"):
            await aio(store.unlock(ORIGIN, token))
        assert store.counts["lock_lost"] == 1 and "expired before the fetch" in caplog.text
        assert "lock" not in await aio(store.show(ORIGIN))
    finally:
        await aio(store.close())


# -- retention, forget, flush, show ----------------------------------------------------


@pytest_twisted.ensureDeferred
async def test_retention_outlives_freshness_and_rows_are_purged(
    path: Path, raw: sqlite3.Connection
) -> None:
    clock = ManualClock(1_800_000_000.0)
    store = SqliteStore(path, clock=clock.now, retention=3600)
    try:
        now = clock.time
        fresh_for_a_minute = replace(full_policy(), fetched_at=now, expires_at=now + 60)
        paused_for_two_hours = replace(bare_policy(), fetched_at=now, expires_at=now + 7200)
        await aio(store.save(ORIGIN, fresh_for_a_minute))
        await aio(store.save("http://h:80", paused_for_two_hours))
        clock.advance(600)  # stale, but kept: an unreachable origin may fall back on it
        assert await aio(store.load(ORIGIN)) == fresh_for_a_minute
        clock.time = now + 3601  # past the retention
        assert await aio(store.load(ORIGIN)) is None
        assert (await aio(store.show(ORIGIN)))["stored"] is False
        # a pause longer than the retention is kept until it ends
        assert await aio(store.load("http://h:80")) == paused_for_two_hours
        assert raw.execute("SELECT count(*) FROM rep_policy").fetchone()[0] == 2
        assert await aio(store.purge()) == 1
        assert raw.execute("SELECT origin FROM rep_policy").fetchall() == [("http://h:80",)]
        clock.time = now + 7261
        assert await aio(store.purge()) == 1
        assert store.counts["purged"] == 2
    finally:
        await aio(store.close())


@pytest_twisted.ensureDeferred
async def test_forgetting_every_origin_keeps_the_locks(path: Path, raw: sqlite3.Connection) -> None:
    store = SqliteStore(path)
    try:
        for origin in (ORIGIN, "http://h:80", "http://i:80"):
            await aio(store.save(origin, bare_policy()))
        await aio(store.acquire("http://i:80", 30))
        assert await aio(store.forget(None)) == 3  # every policy; the lock stays
        assert await aio(store.acquire("http://i:80", 30)) is None
        await aio(store.save(ORIGIN, bare_policy()))
        assert await aio(store.flush()) == 2  # a policy and a lock
        assert raw.execute("SELECT count(*) FROM rep_policy").fetchone()[0] == 0
        assert raw.execute("SELECT count(*) FROM rep_lock").fetchone()[0] == 0
        assert await aio(store.acquire("http://i:80", 30)) is not None
    finally:
        await aio(store.close())


@pytest_twisted.ensureDeferred
async def test_show_and_entries(path: Path) -> None:
    clock = ManualClock(1_700_000_100.0)
    store = SqliteStore(path, clock=clock.now)
    try:
        assert (await aio(store.show(ORIGIN)))["stored"] is False
        assert await aio(store.entries()) == []
        await aio(store.save(ORIGIN, full_policy()))
        await aio(store.save("http://h:80", replace(bare_policy(), expires_at=clock.time + 60)))
        token = await aio(store.acquire(ORIGIN, 30))
        info = await aio(store.show(ORIGIN))
        assert info["stored"] is True and info["path"] == str(path)
        assert info["fields"]["body"] == BODY.decode()
        assert info["fields"]["body_bytes"] == len(BODY)
        assert info["fields"]["http_status"] == "503"
        assert info["fresh"] is True and info["expires_in_s"] == 260.5
        assert info["lock"] == {"owner": token, "expires_in_s": 30.0}
        assert await aio(store.entries()) == [
            {"origin": "http://h:80", "status": "paused", "fresh": True, "expires_in_s": 60.0},
            {
                "origin": ORIGIN,
                "status": "ok",
                "fresh": True,
                "expires_in_s": 260.5,
                "locked_by": token,
            },
        ]
    finally:
        await aio(store.close())


@pytest_twisted.ensureDeferred
async def test_forget_in_another_process_reaches_a_running_crawl(path: Path) -> None:
    crawl = SqliteStore(path, poll_interval=0.05)
    quiet = SqliteStore(path, poll_interval=0.05)  # no listener: no polling at all
    heard: list[str | None] = []
    crawl.on_invalidate(heard.append)
    try:
        await aio(crawl.save(ORIGIN, full_policy()))
        await aio(crawl.forget("http://before-the-first-load:80"))  # not news to this crawl
        assert await aio(crawl.load(ORIGIN)) == full_policy()  # the first load starts polling
        await aio(quiet.load(ORIGIN))
        forgot = store_cli("forget", ORIGIN, "--sqlite", str(path))
        assert forgot.returncode == 0, forgot.stderr
        assert store_cli("flush", "--sqlite", str(path)).returncode == 0
        deadline = time.monotonic() + 5
        while len(heard) < 3 and time.monotonic() < deadline:
            await aio(asyncio.sleep(0.02))
        # the origin's robots.txt and tdmrep.json, then everything (None)
        assert heard == [ORIGIN, tdm_key(ORIGIN), None]
        assert crawl.counts["invalidations"] == 3
        assert quiet.counts["invalidations"] == 0 and quiet._poller.task is None
    finally:
        await aio(crawl.close())
        await aio(quiet.close())
    assert crawl._poller.task is None  # stopped with the store


# -- off the event loop, and waiting for another process's write -----------------------


@pytest_twisted.ensureDeferred
async def test_a_busy_file_is_waited_for_off_the_loop(path: Path, raw: sqlite3.Connection) -> None:
    """Another connection holds the write lock: the save waits (busy timeout), the loop runs."""
    store = SqliteStore(path, busy_timeout=10)
    impatient = SqliteStore(path, busy_timeout=0.2)
    ticks = 0

    async def tick() -> None:
        nonlocal ticks
        while True:
            await asyncio.sleep(0.01)
            ticks += 1

    ticker = asyncio.ensure_future(tick())
    try:
        raw.execute("BEGIN IMMEDIATE")
        raw.execute("DELETE FROM rep_lock")
        with pytest.raises(sqlite3.OperationalError, match="locked"):
            await aio(impatient.save(ORIGIN, bare_policy()))
        saving = asyncio.ensure_future(store.save(ORIGIN, full_policy()))
        await aio(asyncio.sleep(0.5))
        assert not saving.done()  # waiting for the lock ...
        assert ticks > 10  # ... without blocking the event loop
        loading = asyncio.ensure_future(store.load(ORIGIN))
        await aio(asyncio.sleep(0.1))
        assert not loading.done()  # queued behind the save, on the store's one thread
        raw.execute("COMMIT")
        await aio(asyncio.wait_for(saving, 10))
        assert await aio(asyncio.wait_for(loading, 10)) == full_policy()  # in order
        assert await aio(impatient.load(ORIGIN)) == full_policy()
    finally:
        ticker.cancel()
        if raw.in_transaction:
            raw.execute("ROLLBACK")
        await aio(store.close())
        await aio(impatient.close())


# -- two crawls on one file ------------------------------------------------------------


def start_workers(tmp_path: Path, path: Path, count: int, iterations: int) -> list[Any]:
    """``count`` processes of ``tests/support/sqlite_worker.py`` on ``path``, all started."""
    guards = tmp_path / "guards"
    guards.mkdir(exist_ok=True)
    workers = []
    for n in range(count):
        config = {
            "path": str(path),
            "origins": ["http://a:80", "http://b:80"],
            "iterations": iterations,
            "guards": str(guards),
            "ready": str(tmp_path / f"ready{n}"),
            "go": str(tmp_path / "go"),
            "out": str(tmp_path / f"out{n}.json"),
        }
        workers.append(
            subprocess.Popen(
                [sys.executable, "-m", "tests.support.sqlite_worker", json.dumps(config)],
                cwd=ROOT,
                env={**os.environ, "PYTHONPATH": str(ROOT)},
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
            )
        )
    deadline = time.monotonic() + 60
    try:
        while not all((tmp_path / f"ready{n}").exists() for n in range(count)):
            assert time.monotonic() < deadline, "the workers did not open the store"
            assert all(w.poll() is None for w in workers), "a worker died at start"
            time.sleep(0.02)
    except BaseException:
        for w in workers:
            w.kill()
            w.wait()
        raise
    (tmp_path / "go").touch()
    return workers


@pytest_twisted.ensureDeferred
async def test_concurrent_processes_neither_corrupt_the_file_nor_share_a_lock(
    tmp_path: Path,
) -> None:
    path = tmp_path / "shared.sqlite"
    origins = ["http://a:80", "http://b:80"]
    workers = start_workers(tmp_path, path, 3, iterations=300)
    try:
        for w in workers:
            output, _ = w.communicate(timeout=120)
            assert w.returncode == 0, output.decode(errors="replace")
    finally:
        for w in workers:
            if w.poll() is None:
                w.kill()
                w.wait()
    reports = [json.loads((tmp_path / f"out{n}.json").read_text()) for n in range(3)]
    for report in reports:
        assert report["errors"] == []
        assert report["violations"] == []
    assert sum(r["acquired"] for r in reports) >= 2  # the lock changed hands ...
    assert sum(r["busy"] for r in reports) >= 1  # ... and was contended
    assert sum(r["saves"] for r in reports) == 3 * 300
    db = sqlite3.connect(path)
    try:
        assert db.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        assert db.execute("SELECT count(*) FROM rep_lock").fetchone()[0] == 0  # all released
        stored = [o for (o,) in db.execute("SELECT origin FROM rep_policy ORDER BY origin")]
    finally:
        db.close()
    assert set(stored) <= {*origins, *(o + "/unlocked" for o in origins)}
    store = SqliteStore(path)
    try:
        for origin in stored:  # every row reads back whole
            assert await aio(store.load(origin)) is not None
    finally:
        await aio(store.close())


@pytest_twisted.ensureDeferred
async def test_a_process_killed_mid_write_leaves_a_sound_file(tmp_path: Path) -> None:
    """SIGKILL while writing and holding locks: the file checks out, the lease ends on time."""
    path = tmp_path / "shared.sqlite"
    locked: list[str] = []
    for _attempt in range(5):  # the lease seen held may be let go before the kill lands
        (tmp_path / "ready0").unlink(missing_ok=True)
        (victim,) = start_workers(tmp_path, path, 1, iterations=1_000_000)
        try:
            deadline = time.monotonic() + 30
            held = 0
            while held == 0 and time.monotonic() < deadline:  # kill it while it holds a lease
                time.sleep(0.01)
                db = sqlite3.connect(path)
                held = db.execute("SELECT count(*) FROM rep_lock").fetchone()[0]
                db.close()
            assert held and victim.poll() is None
            victim.kill()
            victim.wait(timeout=10)
        finally:
            if victim.poll() is None:
                victim.kill()
                victim.wait()
        db = sqlite3.connect(path)
        try:
            assert db.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
            locked = [o for (o,) in db.execute("SELECT origin FROM rep_lock")]
        finally:
            db.close()
        if locked:
            break
    assert locked  # the dead process's lease is still there ...
    now = SqliteStore(path)
    later = SqliteStore(path, clock=lambda: time.time() + 5.5)  # the worker's ttl is 5 s
    try:
        assert await aio(now.acquire(locked[0], 5)) is None  # ... and holds for its ttl
        assert await aio(later.acquire(locked[0], 5)) is not None  # ... and no longer
        for origin in await aio(now.entries()):
            assert await aio(now.load(origin["origin"])) is not None
    finally:
        await aio(now.close())
        await aio(later.close())


# -- choosing a store ------------------------------------------------------------------


def settings(**values: Any) -> RepSettings:
    return RepSettings.from_settings({"REP_PRODUCT_TOKEN": "testbot", **values}.get)


@pytest_twisted.ensureDeferred
async def test_open_store_follows_rep_store_and_jobdir(tmp_path: Path) -> None:
    jobdir = str(tmp_path / "job")
    assert open_store(settings(), None) is None  # the default, auto, is memory without JOBDIR
    assert open_store(settings(REP_STORE="memory"), jobdir) is None
    assert open_store(settings(REP_STORE="auto"), None) is None
    assert open_store(settings(REP_STORE="auto"), "") is None
    opened: list[Any] = []
    try:
        auto = open_store(settings(REP_STORE="AUTO"), jobdir)
        opened.append(auto)
        assert isinstance(auto, SqliteStore)
        assert auto.path == os.path.join(jobdir, "rep-policies.sqlite")
        assert Path(auto.path).exists()
        explicit = open_store(
            settings(
                REP_STORE=f"sqlite:{tmp_path / 'mine.sqlite'}",
                **{TUNE: {"store_retention": 60}},
            ),
            jobdir,
        )
        opened.append(explicit)
        assert isinstance(explicit, SqliteStore)
        assert explicit.path == str(tmp_path / "mine.sqlite") and explicit.retention == 60
        heard: list[str | None] = []
        redis = open_store(
            settings(REP_STORE="redis://127.0.0.1:1/0"),
            jobdir,
            on_invalidate=heard.append,
        )
        opened.append(redis)
        from scrapy_rep.runtime.store.redis import RedisStore

        assert isinstance(redis, RedisStore) and redis._listeners == [heard.append]
        assert explicit._listeners == []  # nobody asked
        watched = open_store(
            settings(REP_STORE="auto"), str(tmp_path / "job2"), on_invalidate=heard.append
        )
        opened.append(watched)
        assert isinstance(watched, SqliteStore) and watched._listeners == [heard.append]
        with pytest.raises(SettingError, match="needs a JOBDIR, or a file"):
            open_store(settings(REP_STORE="sqlite"), None)
        (tmp_path / "bad.sqlite").write_bytes(b"\0" * 4096)
        with pytest.raises(SettingError, match="REP_STORE"):
            open_store(settings(REP_STORE=f"sqlite:{tmp_path / 'bad.sqlite'}"), None)
    finally:
        for store in opened:
            await aio(store.close())


# -- the CLI ---------------------------------------------------------------------------


@pytest_twisted.ensureDeferred
async def test_cli_show_forget_flush(tmp_path: Path) -> None:
    path = tmp_path / "rep-policies.sqlite"
    missing = store_cli("show", "--sqlite", str(path))
    assert missing.returncode == 2 and "does not exist" in missing.stderr
    assert not path.exists()  # the CLI never creates a file

    store = SqliteStore(path)
    await aio(store.save(ORIGIN, full_policy()))
    await aio(store.save("http://h:80", replace(bare_policy(), expires_at=time.time() + 600)))
    await aio(store.acquire("http://h:80", 60))
    await aio(store.close())
    listed = store_cli("show", "--sqlite", str(path))
    assert listed.returncode == 0, listed.stderr
    entries = json.loads(listed.stdout)
    assert [e["origin"] for e in entries] == ["http://h:80", ORIGIN]
    assert entries[0]["fresh"] is True and "locked_by" in entries[0]
    shown = store_cli("--sqlite", str(path), "show", "https://EXAMPLE.com/any/page")
    assert shown.returncode == 0, shown.stderr
    info = json.loads(shown.stdout)
    assert info["fields"]["http_status"] == "503" and info["fields"]["body"] == BODY.decode()
    assert store_cli("show", "http://nothing.here", "--sqlite", str(path)).returncode == 1
    forgot = store_cli("forget", ORIGIN, "--sqlite", str(path))
    assert forgot.returncode == 0 and f"forgot {ORIGIN}" in forgot.stdout
    assert store_cli("forget", ORIGIN, "--sqlite", str(path)).returncode == 1
    flushed = store_cli("flush", "--sqlite", str(path))
    assert flushed.returncode == 0 and "deleted 2 rows" in flushed.stdout  # a policy, a lock
    assert store_cli("show", "--sqlite", str(path)).returncode == 1  # nothing left to list
    path.write_bytes(b"not a database, really" * 100)
    broken = store_cli("flush", "--sqlite", str(path))
    assert broken.returncode == 2 and "REP_STORE" in broken.stderr
    assert "Traceback" not in broken.stderr
    no_origin = store_cli("show", "--redis-url", "redis://127.0.0.1:1")
    assert no_origin.returncode == 2 and "needs an ORIGIN" in no_origin.stderr


@pytest_twisted.ensureDeferred
async def test_cli_finds_the_projects_sqlite_file(tmp_path: Path) -> None:
    """Inside a Scrapy project whose settings choose the SQLite store, no option is needed."""
    project = tmp_path / "project"
    (project / "proj").mkdir(parents=True)
    (project / "scrapy.cfg").write_text("[settings]\ndefault = proj.settings\n")
    (project / "proj" / "__init__.py").write_text("")
    path = tmp_path / "crawl" / "policies.sqlite"
    settings_py = project / "proj" / "settings.py"
    settings_py.write_text(f"REP_STORE = {'sqlite:' + str(path)!r}\n")
    store = SqliteStore(path)
    await aio(store.save(ORIGIN, full_policy()))
    await aio(store.close())

    def run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
        env = {k: v for k, v in os.environ.items() if k != "SCRAPY_SETTINGS_MODULE"}
        env.update(PYTHONPATH=str(ROOT), REDIS_URL="redis://127.0.0.1:1")  # nobody there
        return processes.run("scrapy_rep.cli", ["store", *args], cwd=cwd, env=env, timeout=30)

    shown = run("show", ORIGIN, cwd=project / "proj")  # scrapy.cfg is found upwards
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)["path"] == str(path)
    # JOBDIR and the default file name, with REP_STORE = "auto"
    jobdir = tmp_path / "job"
    settings_py.write_text(f"REP_STORE = 'auto'\nJOBDIR = {str(jobdir)!r}\n")
    missing = run("show", ORIGIN, cwd=project)
    assert missing.returncode == 2
    assert f"{jobdir / 'rep-policies.sqlite'} does not exist" in missing.stderr
    # a project that keeps policies in memory: Redis, as without a project
    settings_py.write_text("REP_STORE = 'memory'\n")
    redis = run("flush", cwd=project)
    assert redis.returncode == 2 and "Redis at redis://127.0.0.1:1" in redis.stderr
    # a project whose settings cannot be read: one line, no traceback
    settings_py.write_text("REP_STORE = 'sqlite'\nREP_FETCH_TIMEOUT = 'forever'\n")
    unusable = run("flush", cwd=project)
    assert unusable.returncode == 2 and "Traceback" not in unusable.stderr
    assert "the project's settings: SettingError: REP_FETCH_TIMEOUT" in unusable.stderr
    # an explicit option wins over the project
    other = tmp_path / "other.sqlite"
    store = SqliteStore(other)
    await aio(store.close())
    assert "from " + str(other) in run("flush", "--sqlite", str(other), cwd=project).stdout
