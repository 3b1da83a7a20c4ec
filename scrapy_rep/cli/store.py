"""``scrapy-rep store show|forget|flush``: look at or clear the shared policy store.

The store is the cluster's Redis (``--redis-url``), or a SQLite file
(``--sqlite PATH``; a crawl's is ``REP_STORE = 'sqlite:<path>'``, by default
``<JOBDIR>/rep-policies.sqlite``). Without either option, inside a Scrapy
project whose settings choose the SQLite store, its file is used; else Redis.
``forget`` and ``flush`` also tell running crawls (Redis: pub/sub; a SQLite file:
within a second), so their next request for a forgotten origin refetches its
robots.txt (and its tdmrep.json, for a crawl that declares ``train-ai``), once
for all of them.
``show`` without an origin lists the origins of a SQLite file.

Which Redis: ``--redis-url``; else, run inside a Scrapy project (a
``scrapy.cfg`` here or above, or ``SCRAPY_SETTINGS_MODULE``), the project
settings' ``REP_STORE`` (a Redis URL), then ``REDIS_URL``, as a crawl reads them; else
``$REDIS_URL``; else redis://127.0.0.1:6379. The key prefix: ``--prefix``,
else the ``prefix`` of the project's ``REP_STORE`` URL, else ``scrapy-rep``. A spider's
``custom_settings`` are not read: pass ``--redis-url`` / ``--prefix`` for those.

Exit status: 0 done, 1 nothing stored (``show``, ``forget``), 2 an error.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from typing import TYPE_CHECKING, Any

from scrapy_rep.cli.subcommand import subcommand
from scrapy_rep.core.origin import NotAnOrigin, origin_of
from scrapy_rep.runtime.settings import RepSettings, SettingError
from scrapy_rep.runtime.store.factory import sqlite_path, store_kind
from scrapy_rep.runtime.tdmrep import tdm_key

if TYPE_CHECKING:
    from scrapy_rep.runtime.store.sqlite import SqliteStore

DEFAULT_URL = "redis://127.0.0.1:6379"
DEFAULT_PREFIX = "scrapy-rep"
EXIT_OK, EXIT_NOT_STORED, EXIT_ERROR = 0, 1, 2


class _ProjectError(Exception):
    """The Scrapy project's settings could not be read."""


def printable_json(value: Any) -> str:
    """``value`` as JSON whose every non-printable character is a JSON escape.

    ``ensure_ascii=False`` (text reads as written) lets NEL, U+2028, bidi overrides
    and lone surrogates pass raw; here each is ``\\uXXXX``, still the same JSON.
    """
    text = json.dumps(value, indent=2, ensure_ascii=False)
    # outside strings JSON is printable ASCII, spaces and the indent's newlines
    return "".join(ch if ch.isprintable() or ch == "\n" else _json_escape(ch) for ch in text)


def _json_escape(ch: str) -> str:
    code = ord(ch)
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    code -= 0x10000  # a surrogate pair, as JSON writes a character beyond the BMP
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def add_parser(subparsers: Any) -> None:
    """Register ``store`` on the ``scrapy-rep`` command's subparsers."""
    store = subcommand(
        subparsers,
        "store",
        "show or clear what the shared store (Redis or a SQLite file) holds",
        __doc__,
    )
    _connection_options(store, argparse.SUPPRESS)
    actions = store.add_subparsers(dest="store_command", required=True)
    show = actions.add_parser("show", help="print what is stored for an origin, as JSON")
    forget = actions.add_parser("forget", help="delete an origin's policy; workers refetch")
    flush = actions.add_parser("flush", help="delete every policy and lock of the prefix")
    show.add_argument(
        "origin",
        metavar="ORIGIN",
        nargs="?",
        help="origin or any URL on it (with --sqlite, none: list every origin)",
    )
    forget.add_argument("origin", metavar="ORIGIN", help="origin or any URL on it")
    for action in (show, forget, flush):
        # accepted before or after the action; SUPPRESS keeps an earlier value
        _connection_options(action, argparse.SUPPRESS)
    store.set_defaults(run=run)


def _connection_options(parser: argparse.ArgumentParser, default: Any) -> None:
    parser.add_argument(
        "--redis-url",
        default=default,
        metavar="URL",
        help="Redis to use (default: the project's REP_STORE URL or REDIS_URL, "
        f"else $REDIS_URL, else {DEFAULT_URL})",
    )
    parser.add_argument(
        "--prefix",
        default=default,
        help="key prefix (default: the prefix of the project's REP_STORE URL, "
        f"else {DEFAULT_PREFIX})",
    )
    parser.add_argument(
        "--sqlite",
        default=default,
        metavar="PATH",
        help="use this SQLite policy file (REP_STORE = 'sqlite:PATH') instead of Redis "
        "(default: the project's, if its settings choose one)",
    )


def _project_settings() -> tuple[Any, str] | None:
    """The Scrapy project's settings and where they are, when run inside a project."""
    from scrapy.utils.conf import closest_scrapy_cfg
    from scrapy.utils.project import ENVVAR, get_project_settings

    where = closest_scrapy_cfg() or os.environ.get(ENVVAR)
    if not where:
        return None
    try:
        return get_project_settings(), where
    except Exception as exc:  # the project's settings module failed to import
        raise _ProjectError(
            f"cannot read the Scrapy project's settings ({where}): {type(exc).__name__}: {exc}; "
            "pass --redis-url and --prefix"
        ) from exc


def connection(redis_url: str | None, prefix: str | None) -> tuple[str, str, str]:
    """The Redis URL, the key prefix, and where the URL came from (for messages)."""
    if redis_url and prefix:
        return redis_url, prefix, "--redis-url"
    project = _project_settings()
    url, source = redis_url, "--redis-url"
    if project is not None:
        settings, where = project
        try:  # as a crawl reads them: REP_STORE's URL, else REDIS_URL
            config = RepSettings.from_settings(settings.get)
        except SettingError as exc:
            raise _ProjectError(f"the project's settings ({where}): {exc}") from exc
        if not url and config.redis_url:
            name = "REDIS_URL" if config.redis_url == settings.get("REDIS_URL") else "REP_STORE"
            url, source = config.redis_url, f"{name} of the project at {where}"
        prefix = prefix or config.redis_prefix
    if not url and os.environ.get("REDIS_URL"):
        url, source = os.environ["REDIS_URL"], "$REDIS_URL"
    if not url:
        url, source = DEFAULT_URL, "the default; no project REDIS_URL or $REDIS_URL"
    return url, str(prefix or DEFAULT_PREFIX), source


def run(args: argparse.Namespace) -> int:
    sqlite = getattr(args, "sqlite", None)
    if sqlite is None and getattr(args, "redis_url", None) is None:
        try:
            sqlite = _project_sqlite()
        except Exception as exc:  # a SettingError, or a settings module that fails to import
            print(
                f"scrapy-rep: error: the project's settings: {type(exc).__name__}: {exc}",
                file=sys.stderr,
            )
            return EXIT_ERROR
    url = prefix = source = ""
    if sqlite is None:
        try:
            url, prefix, source = connection(
                getattr(args, "redis_url", None), getattr(args, "prefix", None)
            )
        except _ProjectError as exc:
            print(f"scrapy-rep: error: {exc}", file=sys.stderr)
            return EXIT_ERROR
        if source != "--redis-url":
            print(f"scrapy-rep: Redis at {url} ({source}), prefix {prefix!r}", file=sys.stderr)
    origin = None
    if args.store_command in ("show", "forget"):
        if args.origin is None and sqlite is None:
            print("scrapy-rep: error: show needs an ORIGIN (listing: --sqlite)", file=sys.stderr)
            return EXIT_ERROR
        try:
            origin = None if args.origin is None else origin_of(args.origin)
        except NotAnOrigin as exc:
            print(f"scrapy-rep: error: {exc}", file=sys.stderr)
            return EXIT_ERROR
    if sqlite is not None:
        return _run_sqlite(args.store_command, sqlite, origin)
    try:
        return asyncio.run(_run(args.store_command, url, prefix, origin))
    except ImportError as exc:
        print(f"scrapy-rep: error: {exc}", file=sys.stderr)
    except Exception as exc:  # redis errors: one line, no traceback
        print(
            f"scrapy-rep: error: Redis at {url} ({source}): {type(exc).__name__}: {exc}",
            file=sys.stderr,
        )
    return EXIT_ERROR


async def _show(store: Any, origin: str) -> int:
    """What a store keeps for one origin (its policy, lock and page pause), as JSON;
    EXIT_NOT_STORED when it keeps nothing."""
    info = await store.show(origin)
    print(printable_json(info))  # stored bodies, ETags and hosts are the sites' text
    return EXIT_OK if info["stored"] or "page_pause" in info else EXIT_NOT_STORED


async def _forget(store: Any, origin: str) -> tuple[bool, int]:
    """Forget the origin's robots.txt policy and its tdmrep.json one: whether either was
    kept, and how many workers heard (Redis; each hears of both)."""
    robots = await store.forget(origin)
    told = int(store.counts.get("notified", 0))
    tdmrep = await store.forget(tdm_key(origin))
    return bool(robots or tdmrep), told


async def _run(command: str, url: str, prefix: str, origin: str | None) -> int:
    from scrapy_rep.runtime.store.redis import RedisStore  # redis is an optional dependency

    store = RedisStore.from_url(url, prefix=prefix)
    try:
        if command == "show":
            assert origin is not None
            return await _show(store, origin)
        if command == "forget":
            assert origin is not None
            existed, told = await _forget(store, origin)
            print(f"{'forgot' if existed else 'nothing stored for'} {origin}; {told} workers told")
            return EXIT_OK if existed else EXIT_NOT_STORED
        deleted = await store.flush()
        told = store.counts["notified"]
        print(f"deleted {deleted} keys under {store.base}:; {told} workers told")
        return EXIT_OK
    finally:
        await store.close()


def _project_sqlite() -> str | None:
    """The SQLite file of the Scrapy project around the current directory, if it uses one."""
    project = _project_settings()
    if project is None:
        return None
    settings = project[0]
    config = RepSettings.from_settings(settings.get)
    jobdir = settings.get("JOBDIR") or None
    if store_kind(config, jobdir) != "sqlite":
        return None
    return sqlite_path(config, jobdir)


def _run_sqlite(command: str, path: str, origin: str | None) -> int:
    from scrapy_rep.runtime.store.sqlite import SqliteStore

    try:
        store = SqliteStore(path, create=False)
    except SettingError as exc:
        print(f"scrapy-rep: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    try:
        return asyncio.run(_sqlite(store, command, origin))
    except Exception as exc:  # sqlite3 errors (a locked or broken file): one line
        print(f"scrapy-rep: error: {path}: {type(exc).__name__}: {exc}", file=sys.stderr)
        return EXIT_ERROR


async def _sqlite(store: SqliteStore, command: str, origin: str | None) -> int:
    try:
        if command == "show":
            if origin is None:
                entries = await store.entries()
                print(printable_json(entries))
                return EXIT_OK if entries else EXIT_NOT_STORED
            return await _show(store, origin)
        if command == "forget":
            assert origin is not None
            existed, _ = await _forget(store, origin)
            print(f"{'forgot' if existed else 'nothing stored for'} {origin} in {store.path}")
            return EXIT_OK if existed else EXIT_NOT_STORED
        deleted = await store.flush()
        print(f"deleted {deleted} rows (policies and locks) from {store.path}")
        return EXIT_OK
    finally:
        await store.close()
