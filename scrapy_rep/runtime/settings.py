"""The ``REP_*`` settings: their defaults, and reading them once, with clear errors.

:data:`DEFAULTS` is the one list of settings; the add-on installs it and the
README's settings table is checked against it by a test.
"""

from __future__ import annotations

import importlib
import json
import logging
import math
import os
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from scrapy_rep.core.policy import DEFAULT_ACTIONS, Action, PolicyConfig
from scrapy_rep.robotstxt import InvalidProductToken, product_token, validate_token

logger = logging.getLogger(__name__)

DAY = 86_400.0
#: the longest any duration setting may be: finite, and far from overflowing a timestamp
MAX_SECONDS = 1e9

#: name -> (default, meaning); the README's settings table
DEFAULTS: Mapping[str, tuple[Any, str]] = {
    "REP_ENABLED": (
        True,
        "switch scrapy-rep on or off; off, with the add-on, means no robots.txt handling at all "
        "(Scrapy's built-in stays disabled)",
    ),
    "REP_PRODUCT_TOKEN": (
        None,
        "token matched against `User-agent` lines; else taken from `ROBOTSTXT_USER_AGENT`, "
        "then `USER_AGENT`: their first product that is not a browser's "
        "(`Mozilla/5.0 (compatible; shopbot/1.0)` gives `shopbot`)",
    ),
    "REP_FETCH_TIMEOUT": (30.0, "seconds a robots.txt download may take"),
    "REP_MAX_REDIRECTS": (5, "redirect hops followed for robots.txt (RFC 9309: at least 5)"),
    "REP_CACHE_TTL": (DAY, "longest a policy is used before a refetch (RFC 9309 §2.4: 24 h)"),
    "REP_CACHE_MIN_TTL": (60.0, "shortest, even if `Cache-Control` says less"),
    "REP_CACHE_MAX_ORIGINS": (100_000, "origins kept in the local cache (LRU)"),
    "REP_STATUS_ACTIONS": (
        {},
        "override rows of the status table, e.g. `{'401': 'allow', '403': 'allow'}` "
        "(actions: rules, allow, disallow, pause)",
    ),
    "REP_PAUSE_INITIAL": (60.0, "first back-off of a paused origin, seconds; doubles per try"),
    "REP_PAUSE_MAX": (3600.0, "longest back-off, seconds"),
    "REP_PAUSE_MAX_TRIES": (5, "fetch attempts before a paused origin is given up"),
    "REP_RETRY_AFTER_MAX": (3600.0, "cap on a 429's `Retry-After`, seconds"),
    "REP_USE_STALE": (True, "use the last good copy while an origin is unreachable (§2.3.1.4)"),
    "REP_UNREACHABLE_MAX_AGE": (30 * DAY, "after this long unreachable, treat as unavailable"),
    "REP_PENDING_WAIT": (
        2.0,
        "seconds a request waits in the downloader for a fetch before it is parked instead",
    ),
    "REP_DISALLOWED_ACTION": ("drop", "`drop` or `park` a disallowed request"),
    "REP_PARK_MAX": (100_000, "requests held at most; more are dropped with `park-overflow`"),
    "REP_PARK_TIMEOUT": (DAY, "longest a request stays parked before `park-expired`"),
    "REP_COLLECTION_POLICY": (
        None,
        "import path of `callable(request, spider)` answering `approved`, `rejected` "
        "or `unresolved`",
    ),
    "REP_COLLECTION_UNRESOLVED_ACTION": (
        "drop",
        "`drop` or `park` what the hook leaves unresolved",
    ),
    "REP_CRAWL_DELAY_ENABLED": (True, "apply `Crawl-delay` / `Request-rate` to the download slot"),
    "REP_CRAWL_DELAY_MAX": (30.0, "cap on an applied Crawl-delay, seconds"),
    "REP_CRAWL_DELAY_SHARED": (
        True,
        "with `REP_STORE = 'redis'`: honour Crawl-delay for the whole cluster (send times "
        "reserved in Redis), not per worker",
    ),
    "REP_DECISION_LOG": (None, "path of a JSON Lines audit log of decisions and fetches"),
    "REP_POLICY_ARCHIVE": (
        None,
        "directory keeping each distinct robots.txt body once, as `<digest>.txt`",
    ),
    "REP_REPORT_ENABLED": (True, "log a per-origin summary (top origins, totals) at close"),
    "REP_STORE": (
        "auto",
        "`memory`; `redis` to share policies across a cluster; `sqlite` to keep them in a "
        "file; `auto`: `sqlite` with a JOBDIR, else `memory`",
    ),
    "REP_REDIS_URL": (None, "Redis URL for `REP_STORE = 'redis'`; falls back to `REDIS_URL`"),
    "REP_REDIS_PREFIX": ("scrapy-rep", "prefix of the shared store's Redis keys (`:v1:` follows)"),
    "REP_REDIS_RETENTION": (
        30 * DAY,
        "seconds Redis keeps an origin's last fetch; longer than freshness, so an unreachable "
        "origin can fall back to its last good copy",
    ),
    "REP_REQUEUE_PARKED": (
        True,
        "at close, push requests still parked back into a shared scrapy-redis queue "
        "(another worker takes them) instead of dropping them",
    ),
    "REP_SQLITE_PATH": (
        None,
        "SQLite file of `REP_STORE = 'sqlite'` (or `'auto'` with a JOBDIR); "
        "default `<JOBDIR>/rep-policies.sqlite`",
    ),
    "REP_SQLITE_RETENTION": (
        30 * DAY,
        "seconds the SQLite file keeps an origin's last fetch (like `REP_REDIS_RETENTION`)",
    ),
    "REP_REDIS_LOCK_TIMEOUT": (
        10.0,
        "seconds a dead worker's robots.txt fetch lock blocks the others (Redis, SQLite); "
        "a live worker renews it while its fetch runs",
    ),
    "REP_WORKER_LEASE": (
        30.0,
        "with `REP_STORE = 'redis'` and scrapy-redis: seconds a killed worker's held requests "
        "stay recorded in Redis before a survivor requeues them; renewed every third of that",
    ),
    "REP_WORKER_CHECK_INTERVAL": (
        10.0,
        "seconds between a worker's looks for the held requests of dead workers",
    ),
    "REP_PAGE_DIRECTIVES": (
        True,
        'obey page-level directives: `<meta name="robots">`, `X-Robots-Tag` (`nofollow`, '
        "`noindex`, `none`, `unavailable_after`)",
    ),
    "REP_PAGE_NOINDEX_ACTION": (
        "drop",
        "`drop` the items of a `noindex` page, or `keep` them (and only count them)",
    ),
    "REP_REL_NOFOLLOW": (
        False,
        'also drop requests for URLs a page links to only with `rel="nofollow"`',
    ),
    "REP_BROWSER_GUARD": (
        True,
        "with scrapy-playwright configured: judge every request the browser makes while "
        "rendering (images, scripts, iframes, fetch/XHR, redirect hops) and abort what "
        "robots.txt does not allow",
    ),
}


#: the values of REP_STORE
STORES = ("memory", "redis", "sqlite", "auto")


class SettingError(ValueError):
    """A ``REP_*`` setting with a value scrapy-rep cannot use.

    The message is one line: the setting, the value, and what is accepted.
    """


#: what a boolean switch accepts (``-s NAME=VALUE`` passes strings)
BOOLEANS = "True/False, 1/0, 'true'/'false', 'yes'/'no', 'on'/'off'"
_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"", "0", "false", "no", "off"})


def flag(name: str, value: Any) -> bool:
    """A boolean switch, read the one way every ``REP_*`` switch is read.

    ``-s NAME=False`` arrives as the string ``'False'``; anything that is not
    clearly on or off is a :class:`SettingError`, never a silent ``True``.
    """
    if isinstance(value, bool) or (isinstance(value, int) and value in (0, 1)):
        return bool(value)
    if isinstance(value, str):
        text = value.strip().lower()
        if text in _TRUE:
            return True
        if text in _FALSE:
            return False
    raise SettingError(f"{name} must be a boolean ({BOOLEANS}), not {value!r}")


def is_enabled(get: Callable[[str], Any]) -> bool:
    """``REP_ENABLED`` (default on), read as every other switch.

    The one reading of the switch: the middleware calls
    ``is_enabled(crawler.settings.get)`` before anything else, and
    :attr:`RepSettings.enabled` is the same answer. Raises :class:`SettingError`.
    """
    found = get("REP_ENABLED")
    return True if found is None else flag("REP_ENABLED", found)


#: what REP_COLLECTION_POLICY accepts
COLLECTION_POLICY_ACCEPTS = (
    "the import path of a callable(request, spider), e.g. 'myproject.scope.decide'"
)


def load_collection_policy(path: Any) -> Callable[..., Any] | None:
    """The callable ``REP_COLLECTION_POLICY`` names, imported; ``None`` when unset.

    ``path`` is the setting's value: an import path (``'pkg.module.func'``) or
    the callable itself. Anything that cannot be imported or called is a
    :class:`SettingError` naming the setting, the value and what is accepted.
    """
    if path is None or path == "":
        return None
    if callable(path):
        return path  # type: ignore[no-any-return]
    name = "REP_COLLECTION_POLICY"
    if not isinstance(path, str):
        raise SettingError(f"{name} must be {COLLECTION_POLICY_ACCEPTS}, not {path!r}")
    module_name, _, attribute = path.strip().rpartition(".")
    if not module_name or not attribute:
        raise SettingError(
            f"{name} = {path!r}: not a full import path; expected {COLLECTION_POLICY_ACCEPTS}"
        )
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise SettingError(
            f"{name} = {path!r}: cannot import {module_name!r} ({exc}); "
            f"expected {COLLECTION_POLICY_ACCEPTS}"
        ) from exc
    except Exception as exc:  # the module itself failed: keep its error as the cause
        raise SettingError(
            f"{name} = {path!r}: importing {module_name!r} failed with {type(exc).__name__}: {exc}"
        ) from exc
    try:
        found = getattr(module, attribute)
    except AttributeError:
        raise SettingError(
            f"{name} = {path!r}: module {module_name!r} has no {attribute!r}; "
            f"expected {COLLECTION_POLICY_ACCEPTS}"
        ) from None
    if not callable(found):
        raise SettingError(
            f"{name} = {path!r}: that is a {type(found).__name__}, not a callable; "
            f"expected {COLLECTION_POLICY_ACCEPTS}"
        )
    return found  # type: ignore[no-any-return]


@dataclass(frozen=True)
class RepSettings:
    """All ``REP_*`` settings of one crawler, read and checked once."""

    enabled: bool
    token: str
    policy: PolicyConfig
    fetch_timeout: float
    max_redirects: int
    cache_max_origins: int
    pending_wait: float
    disallowed_action: str
    park_max: int
    park_timeout: float
    #: the setting's value: an import path (or a callable), for display
    collection_policy: Any
    #: the hook itself, imported by :func:`load_collection_policy`
    collection_hook: Callable[..., Any] | None
    collection_unresolved_action: str
    crawl_delay_enabled: bool
    crawl_delay_max: float
    decision_log: str | None
    policy_archive: str | None
    report_enabled: bool
    store: str
    redis_url: str | None
    redis_prefix: str
    redis_retention: float
    requeue_parked: bool
    page_directives: bool
    page_noindex_action: str
    rel_nofollow: bool
    sqlite_path: str | None = None
    sqlite_retention: float = 30 * DAY
    lock_timeout: float = 10.0
    crawl_delay_shared: bool = True
    worker_lease: float = 30.0
    worker_check_interval: float = 10.0

    @classmethod
    def from_settings(cls, get: Callable[[str], Any]) -> RepSettings:
        """Read from a getter (``crawler.settings.get``); raise :class:`SettingError`."""

        def value(name: str) -> Any:
            found = get(name)
            return DEFAULTS[name][0] if found is None else found

        def number(
            name: str, kind: type[float] | type[int] = float, low: float = 0, unit: str = ""
        ) -> Any:
            raw = value(name)
            what = "a whole number" if kind is int else "a finite number"
            bounds = f"at least {low:g}"
            high = math.inf
            if unit == "seconds":  # 1e308 s overflows like inf does
                high, bounds = MAX_SECONDS, f"{bounds} and at most 1e9 (31 years)"
            unit = f" of {unit}" if unit else ""
            problem = SettingError(f"{name} must be {what}{unit}, {bounds}; not {raw!r}")
            if isinstance(raw, bool):  # True is not a number of seconds
                raise problem
            try:
                n = float(raw)
            except (TypeError, ValueError, OverflowError):
                raise problem from None
            if not math.isfinite(n) or not low <= n <= high:  # nan, inf, -inf, out of range
                raise problem
            if kind is int:
                if not n.is_integer():
                    raise problem
                return raw if isinstance(raw, int) else int(n)
            return n

        def choice(name: str, options: tuple[str, ...]) -> str:
            chosen = str(value(name)).strip().lower()
            if chosen not in options:
                raise SettingError(f"{name} must be one of {options}, not {value(name)!r}")
            return chosen

        def switch(name: str) -> bool:
            return flag(name, value(name))

        def path(name: str, directory: bool) -> str | None:
            raw = value(name)
            if raw is None or raw is False or raw == "":
                return None
            kind = "a directory" if directory else "a file path"
            if not isinstance(raw, (str, os.PathLike)):
                raise SettingError(f"{name} must be {kind}, not {raw!r}")
            found = os.fspath(raw)
            if not isinstance(found, str):
                raise SettingError(f"{name} must be {kind} given as text, not {raw!r}")
            if directory and os.path.exists(found) and not os.path.isdir(found):
                raise SettingError(f"{name} must be a directory, not the file {found!r}")
            if not directory and os.path.isdir(found):
                raise SettingError(f"{name} must be a file path, not the directory {found!r}")
            return found

        actions = dict(DEFAULT_ACTIONS)
        overrides = value("REP_STATUS_ACTIONS")
        if isinstance(overrides, str):  # from the command line: -s REP_STATUS_ACTIONS='{...}'
            try:
                overrides = json.loads(overrides or "{}")
            except ValueError:
                raise SettingError(
                    f"REP_STATUS_ACTIONS is not a JSON object: {overrides!r}"
                ) from None
        if not isinstance(overrides, Mapping):
            raise SettingError(f"REP_STATUS_ACTIONS must be a dict, not {overrides!r}")
        for outcome, action in overrides.items():
            key = str(outcome)
            if key not in DEFAULT_ACTIONS:
                raise SettingError(
                    f"REP_STATUS_ACTIONS: unknown outcome {outcome!r}; "
                    f"known: {', '.join(DEFAULT_ACTIONS)}"
                )
            try:
                # str() of an Action is 'Action.ALLOW': take its value as it is
                actions[key] = action if isinstance(action, Action) else Action(str(action).lower())
            except ValueError:
                raise SettingError(
                    f"REP_STATUS_ACTIONS[{outcome!r}]: unknown action {action!r}; "
                    f"known: {', '.join(a.value for a in Action)}"
                ) from None

        policy = PolicyConfig(
            actions=actions,
            ttl=number("REP_CACHE_TTL", low=1, unit="seconds"),
            min_ttl=number("REP_CACHE_MIN_TTL", unit="seconds"),
            pause_initial=number("REP_PAUSE_INITIAL", low=0.001, unit="seconds"),
            pause_max=number("REP_PAUSE_MAX", low=0.001, unit="seconds"),
            pause_max_tries=number("REP_PAUSE_MAX_TRIES", int, low=1),
            retry_after_max=number("REP_RETRY_AFTER_MAX", unit="seconds"),
            use_stale=switch("REP_USE_STALE"),
            unreachable_max_age=number("REP_UNREACHABLE_MAX_AGE", unit="seconds"),
        )
        collection_policy = value("REP_COLLECTION_POLICY") or None
        return cls(
            enabled=is_enabled(get),
            token=resolve_token(get),
            policy=policy,
            fetch_timeout=number("REP_FETCH_TIMEOUT", low=0.001, unit="seconds"),
            max_redirects=number("REP_MAX_REDIRECTS", int),
            cache_max_origins=number("REP_CACHE_MAX_ORIGINS", int, low=1),
            pending_wait=number("REP_PENDING_WAIT", unit="seconds"),
            disallowed_action=choice("REP_DISALLOWED_ACTION", ("drop", "park")),
            park_max=number("REP_PARK_MAX", int),
            park_timeout=number("REP_PARK_TIMEOUT", low=0.001, unit="seconds"),
            collection_policy=collection_policy,
            collection_hook=load_collection_policy(collection_policy),
            collection_unresolved_action=choice(
                "REP_COLLECTION_UNRESOLVED_ACTION", ("drop", "park")
            ),
            crawl_delay_enabled=switch("REP_CRAWL_DELAY_ENABLED"),
            crawl_delay_max=number("REP_CRAWL_DELAY_MAX", unit="seconds"),
            decision_log=path("REP_DECISION_LOG", directory=False),
            policy_archive=path("REP_POLICY_ARCHIVE", directory=True),
            report_enabled=switch("REP_REPORT_ENABLED"),
            store=choice("REP_STORE", STORES),
            redis_url=value("REP_REDIS_URL") or get("REDIS_URL") or None,
            redis_prefix=str(value("REP_REDIS_PREFIX")),
            redis_retention=number("REP_REDIS_RETENTION", low=1, unit="seconds"),
            requeue_parked=switch("REP_REQUEUE_PARKED"),
            sqlite_path=str(value("REP_SQLITE_PATH")) if value("REP_SQLITE_PATH") else None,
            sqlite_retention=number("REP_SQLITE_RETENTION", low=1, unit="seconds"),
            lock_timeout=number("REP_REDIS_LOCK_TIMEOUT", low=0.1, unit="seconds"),
            crawl_delay_shared=switch("REP_CRAWL_DELAY_SHARED"),
            worker_lease=number("REP_WORKER_LEASE", low=0.3, unit="seconds"),
            worker_check_interval=number("REP_WORKER_CHECK_INTERVAL", low=0.05, unit="seconds"),
            page_directives=switch("REP_PAGE_DIRECTIVES"),
            page_noindex_action=choice("REP_PAGE_NOINDEX_ACTION", ("drop", "keep")),
            rel_nofollow=switch("REP_REL_NOFOLLOW"),
        )


# -- the product token --------------------------------------------------------------------------

#: product names of browsers and their engines: never a crawler's own token
BROWSER_PRODUCTS = frozenset(
    {
        *("mozilla", "applewebkit", "webkit", "khtml", "gecko", "trident", "presto", "blink"),
        *("chrome", "chromium", "headlesschrome", "crios", "safari", "mobilesafari", "version"),
        *("firefox", "fxios", "edge", "edg", "edga", "edgios", "opr", "opt", "opera", "msie"),
        *("mobile", "vivaldi", "brave", "yabrowser", "samsungbrowser", "ucbrowser", "silk"),
        *("electron", "android", "linux", "windows", "macintosh", "compatible", "like"),
    }
)
_TOKEN = re.compile(r"[a-zA-Z_-]+")
#: a comment ``( ... )`` (also one left open), or a word outside comments
_UA_PART = re.compile(r"\(([^()]*)\)?|([^\s()]+)")
_COMMENT_PRODUCT = re.compile(r"([^\s/;]+)/\S*")


def _products(header: str) -> Iterator[str]:
    """The product names of a ``User-Agent`` header, in order: ``Foo/1.0`` and ``(...; Foo/1.0)``.

    The first word counts even without a version (``mybot``); later words and
    the ``;``-separated items of comments only as ``name/version``, so
    ``(KHTML, like Gecko)`` or ``(Linux; Android 14)`` name no product.
    """
    for index, match in enumerate(_UA_PART.finditer(header)):
        comment, word = match.groups()
        if word is not None:
            name, slash, _version = word.partition("/")
            if slash or index == 0:
                yield name
        else:
            for item in (comment or "").split(";"):
                found = _COMMENT_PRODUCT.fullmatch(item.strip())
                if found:
                    yield found[1]


def crawler_token(header: str) -> str | None:
    """The crawler's own product token in a ``User-Agent`` header, if it names one.

    The first product that is a valid RFC 9309 token and not a browser's:

    >>> crawler_token("shopbot/1.0 (+https://shop.example/bot)")
    'shopbot'
    >>> crawler_token("Mozilla/5.0 (compatible; shopbot/1.0; +https://shop.example/bot)")
    'shopbot'
    >>> crawler_token("Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko)")
    """
    for name in _products(header):
        if _TOKEN.fullmatch(name) and name.lower() not in BROWSER_PRODUCTS:
            return name
    return None


def resolve_token(get: Callable[[str], Any]) -> str:
    """The product token: ``REP_PRODUCT_TOKEN`` (strict), else from a User-Agent string.

    ``ROBOTSTXT_USER_AGENT``, then ``USER_AGENT``: the first product that is
    not a browser's (:func:`crawler_token`), as Scrapy's built-in middleware
    would match ``Mozilla/5.0 (compatible; shopbot/1.0)`` against a
    ``User-agent: shopbot`` group. A string naming only browser products gives
    its leading token (``Mozilla``), with a warning saying how to set
    ``REP_PRODUCT_TOKEN``.
    """
    token = get("REP_PRODUCT_TOKEN")
    if token:
        try:
            return validate_token(token)
        except InvalidProductToken as exc:
            raise SettingError(f"REP_PRODUCT_TOKEN: {exc}") from None
    for name in ("ROBOTSTXT_USER_AGENT", "USER_AGENT"):
        header = get(name)
        if not header:
            continue
        header = str(header)
        found = crawler_token(header)
        if found:
            return found
        leading = product_token(header)
        if not leading:
            raise SettingError(
                f"{name} {header!r} names no product token ([a-zA-Z_-]+); "
                "set REP_PRODUCT_TOKEN = 'yourbot'"
            )
        logger.warning(
            "scrapy-rep: %(name)s %(header)r names no crawler product token (a [a-zA-Z_-]+ "
            "name that is not a browser's), so robots.txt groups are matched as %(token)r; "
            "set REP_PRODUCT_TOKEN = 'yourbot' (and put yourbot in USER_AGENT)",
            {"name": name, "header": header, "token": leading},
        )
        return leading
    raise SettingError("no product token: set REP_PRODUCT_TOKEN = 'yourbot'")
