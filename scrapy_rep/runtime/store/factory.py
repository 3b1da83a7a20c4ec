"""Which shared store a crawl uses: ``REP_STORE`` (memory, redis, sqlite, auto) read
together with ``JOBDIR`` (``auto`` is sqlite in the JOBDIR when there is one).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from scrapy_rep.runtime.settings import RepSettings, SettingError
from scrapy_rep.runtime.store.base import SharedStore

if TYPE_CHECKING:
    from scrapy_rep.runtime.store.redis_pacing import SharedPacing


def store_kind(config: RepSettings, jobdir: str | None) -> str:
    """``memory``, ``redis`` or ``sqlite``: what ``REP_STORE`` means with this JOBDIR."""
    if config.store == "auto":
        return "sqlite" if jobdir else "memory"
    return config.store


def sqlite_path(config: RepSettings, jobdir: str | None) -> str:
    """The SQLite file: ``REP_STORE = 'sqlite:<path>'``, else the default one in the JOBDIR."""
    from scrapy_rep.runtime.store.sqlite import default_path

    if config.sqlite_path:
        return config.sqlite_path
    if jobdir:
        return default_path(jobdir)
    raise SettingError(
        "REP_STORE = 'sqlite' needs a JOBDIR, or a file: REP_STORE = 'sqlite:///path/to/file'"
    )


def open_store(
    config: RepSettings,
    jobdir: str | None,
    *,
    on_invalidate: Callable[[str | None], None] | None = None,
) -> SharedStore | None:
    """The store ``config`` asks for, opened, or None for memory only; :class:`SettingError`
    if unusable. ``on_invalidate(origin)`` (``None``: every origin) hears an operator's
    ``scrapy-rep store forget``."""
    kind = store_kind(config, jobdir or None)
    if kind == "redis":
        from scrapy_rep.runtime.store.redis import RedisStore  # redis is an optional dependency

        try:
            redis = RedisStore.from_url(
                config.redis_url, prefix=config.redis_prefix, retention=config.store_retention
            )
        except ValueError as exc:  # the client's reading of the URL: scheme, port, options
            name = "REP_STORE" if config.store_choice.url_given else "REDIS_URL"
            raise SettingError(f"{name} = {config.redis_url!r}: {exc}") from None
        if on_invalidate is not None:
            redis.on_invalidate(on_invalidate)
        return redis
    if kind == "sqlite":
        from scrapy_rep.runtime.store.sqlite import SqliteStore

        sqlite = SqliteStore(sqlite_path(config, jobdir or None), retention=config.store_retention)
        if on_invalidate is not None:
            sqlite.on_invalidate(on_invalidate)
        return sqlite
    return None


def shared_pacing(store: SharedStore | None, remember: int) -> SharedPacing | None:
    """The cluster-wide Crawl-delay of a store that offers one (Redis); None otherwise."""
    pacing = getattr(store, "pacing", None)
    return pacing(remember) if callable(pacing) else None
