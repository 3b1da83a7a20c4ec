"""The ``REP_*`` settings: one table, read once per crawler, with clear errors.

Each setting is one row of :class:`RepSettings`, spelled once::

    fetch_timeout = Setting("REP_FETCH_TIMEOUT", 30.0, seconds(low=0.001), "meaning ...")

The row gives the attribute (``config.fetch_timeout``), the setting's name, the
default the add-on installs, the reader that checks and converts the value
(raising :class:`SettingError` with one line naming the setting, the value and
what is accepted) and the meaning shown in the reference's settings table, which
the documentation build makes from :data:`SETTINGS` (``docs/_ext/repdocs.py``).

**Adding a setting** is adding one row to :class:`RepSettings`: pick a reader
below (:func:`seconds`, :func:`whole`, :func:`switch`, :func:`choice`,
:func:`path`, :func:`text`, :func:`optional_text`) or write one,
``(name, value, get) -> value``, where
``value`` has the default applied and ``get`` reads any other setting. Nothing
else lists settings: :data:`SETTINGS`, :data:`DEFAULTS`, the add-on's defaults
and the check that warns of a misspelt ``REP_*`` name (:func:`unknown_settings`)
all come from the rows.

A crawler's settings are read once (:meth:`RepSettings.of`) and shared by every
component, so start-up warnings are logged once.
"""

from __future__ import annotations

import difflib
import importlib
import json
import logging
import math
import os
import re
import weakref
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, Generic, TypeVar, overload

from scrapy_rep.core.policy import DEFAULT_ACTIONS, Action, PolicyConfig
from scrapy_rep.core.uses import USES, Declared
from scrapy_rep.robotstxt import InvalidProductToken, product_token, validate_token

logger = logging.getLogger(__name__)

DAY = 86_400.0
#: the longest any duration setting may be: finite, and far from overflowing a timestamp
MAX_SECONDS = 1e9

T = TypeVar("T")
#: a setting's getter: ``crawler.settings.get``, or a dict's ``get`` in tests
Getter = Callable[[str], Any]
#: a row's reader: ``(name, value with the default applied, get) -> checked value``
Reader = Callable[[str, Any, Getter], T]


class SettingError(ValueError):
    """A ``REP_*`` setting with a value scrapy-rep cannot use.

    The message is one line: the setting, the value, and what is accepted.
    """


# -- readers: check and convert one value -------------------------------------------------------

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


def switch(name: str, value: Any, get: Getter) -> bool:
    """Reader of a boolean switch (:func:`flag`)."""
    return flag(name, value)


def _number(kind: type[float] | type[int], low: float, seconds: bool) -> Reader[Any]:
    def read(name: str, raw: Any, get: Getter) -> Any:
        what = "a whole number" if kind is int else "a finite number"
        bounds = f"at least {low:g}"
        high = math.inf
        unit = ""
        if seconds:  # 1e308 s overflows like inf does
            high, bounds, unit = MAX_SECONDS, f"{bounds} and at most 1e9 (31 years)", " of seconds"
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

    return read


def seconds(low: float = 0) -> Reader[float]:
    """Reader of a duration: a finite number of seconds from ``low`` to 1e9."""
    return _number(float, low, seconds=True)


def whole(low: int = 0) -> Reader[int]:
    """Reader of a count: a whole number, at least ``low`` (``'7'`` and ``7.0`` are 7)."""
    return _number(int, low, seconds=False)


def choice(*options: str) -> Reader[str]:
    """Reader of one of ``options`` (any case, spaces around ignored)."""

    def read(name: str, raw: Any, get: Getter) -> str:
        chosen = str(raw).strip().lower()
        if chosen not in options:
            raise SettingError(f"{name} must be one of {options}, not {raw!r}")
        return chosen

    return read


def path(directory: bool) -> Reader[str | None]:
    """Reader of a file path (or a directory's); unset, ``False`` or ``''`` is ``None``."""

    def read(name: str, raw: Any, get: Getter) -> str | None:
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

    return read


def text(name: str, value: Any, get: Getter) -> str:
    """Reader of a string setting."""
    return str(value)


def optional_text(name: str, value: Any, get: Getter) -> str | None:
    """Reader of a string setting where unset or empty means ``None``."""
    return str(value) if value else None


def as_is(name: str, value: Any, get: Getter) -> Any:
    """Reader that keeps the value as it is; unset or empty is ``None``."""
    return value or None


def status_actions(name: str, overrides: Any, get: Getter) -> dict[str, Action]:
    """Reader of ``REP_STATUS_ACTIONS``: the whole status table, the overrides applied."""
    actions = dict(DEFAULT_ACTIONS)
    if isinstance(overrides, str):  # from the command line: -s REP_STATUS_ACTIONS='{...}'
        try:
            overrides = json.loads(overrides or "{}")
        except ValueError:
            raise SettingError(f"{name} is not a JSON object: {overrides!r}") from None
    if not isinstance(overrides, Mapping):
        raise SettingError(f"{name} must be a dict, not {overrides!r}")
    for outcome, action in overrides.items():
        key = str(outcome)
        if key not in DEFAULT_ACTIONS:
            raise SettingError(
                f"{name}: unknown outcome {outcome!r}; known: {', '.join(DEFAULT_ACTIONS)}"
            )
        try:
            # str() of an Action is 'Action.ALLOW': take its value as it is
            actions[key] = action if isinstance(action, Action) else Action(str(action).lower())
        except ValueError:
            raise SettingError(
                f"{name}[{outcome!r}]: unknown action {action!r}; "
                f"known: {', '.join(a.value for a in Action)}"
            ) from None
    return actions


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


def _deprecated_count(name: str, value: Any, get: Getter) -> int | None:
    """Reader of ``REP_CACHE_COMPILED_ORIGINS``: read as before, with a one-line warning."""
    if value is None:
        return None
    found: int = whole(low=1)(name, value, get)
    logger.warning(
        "scrapy-rep: %(name)s is deprecated; use REP_CACHE_COMPILED_BYTES (bytes, not files)",
        {"name": name},
    )
    return found


def _token(name: str, value: Any, get: Getter) -> str:
    return resolve_token(get)


def _from_command_line(name: str, value: Any, kind: type) -> Any:
    """``-s NAME='["a"]'`` (JSON) or ``-s NAME=a,b`` arrives as a string."""
    if not isinstance(value, str):
        return value
    text = value.strip()
    if text[:1] in ("[", "{"):
        try:
            return json.loads(text)
        except ValueError:
            raise SettingError(f"{name} is not valid JSON: {value!r}") from None
    if kind is list:
        return [part.strip() for part in text.split(",") if part.strip()]
    return value


def read_uses(name: str, value: Any, get: Getter) -> tuple[str, ...]:
    """Reader of ``REP_USES``: a list of uses from :data:`~scrapy_rep.core.uses.USES`."""
    value = _from_command_line(name, value, list)
    if isinstance(value, str) or not isinstance(value, Iterable):
        raise SettingError(f"{name} must be a list of uses ({', '.join(USES)}), not {value!r}")
    found = tuple(dict.fromkeys(value))
    for use in found:
        if use not in USES:
            raise SettingError(f"{name}: unknown use {use!r}; known: {', '.join(USES)}")
    return found


def read_use_tokens(name: str, value: Any, get: Getter) -> dict[str, str]:
    """Reader of ``REP_USE_TOKENS``: use -> a policy token (RFC 9309 product token)."""
    value = _from_command_line(name, value, dict)
    if not isinstance(value, Mapping):
        raise SettingError(f"{name} must be a dict of use -> token, not {value!r}")
    tokens: dict[str, str] = {}
    for use, token in value.items():
        if use not in USES:
            raise SettingError(f"{name}: unknown use {use!r}; known: {', '.join(USES)}")
        try:
            tokens[use] = validate_token(token)
        except InvalidProductToken as exc:
            raise SettingError(f"{name}[{use!r}]: {exc}") from None
    return tokens


def _report_html(name: str, value: Any, get: Getter) -> str | None:
    found = path(directory=False)(name, value, get)
    if found is not None and not get("REP_DECISION_LOG"):
        raise SettingError(
            f"{name} needs REP_DECISION_LOG: the page {value!r} is made from the audit log"
        )
    return found


def _redis_url(name: str, value: Any, get: Getter) -> str | None:
    return value or get("REDIS_URL") or None


# -- the table ----------------------------------------------------------------------------------


class Setting(Generic[T]):
    """One row of the table: a ``REP_*`` setting, its default, its reader and its meaning.

    Declared in the body of :class:`RepSettings`, the row is also the
    attribute that holds the checked value.
    """

    def __init__(self, name: str, default: Any, read: Reader[T], meaning: str) -> None:
        self.name = name
        self.default = default
        self.read = read
        self.meaning = meaning
        self.attribute = ""

    def __set_name__(self, owner: type, attribute: str) -> None:
        self.attribute = attribute

    def value(self, get: Getter) -> T:
        """This setting's checked value; raises :class:`SettingError`."""
        found = get(self.name)
        return self.read(self.name, self.default if found is None else found, get)

    @overload
    def __get__(self, instance: None, owner: type) -> Setting[T]: ...
    @overload
    def __get__(self, instance: RepSettings, owner: type) -> T: ...
    def __get__(self, instance: RepSettings | None, owner: type) -> Setting[T] | T:
        if instance is None:
            return self
        return instance._values[self.attribute]  # type: ignore[no-any-return]

    def __set__(self, instance: RepSettings, value: T) -> None:
        raise AttributeError(f"{self.name} is read once; RepSettings are frozen")

    def __repr__(self) -> str:
        return f"Setting({self.name!r}, {self.default!r})"


#: crawlers' settings, read once each (see :meth:`RepSettings.of`)
_READ: weakref.WeakKeyDictionary[Any, RepSettings] = weakref.WeakKeyDictionary()


class RepSettings:
    """All ``REP_*`` settings of one crawler, read and checked once: the table's rows."""

    enabled = Setting(
        "REP_ENABLED",
        True,
        switch,
        "switch scrapy-rep on or off; off, with the add-on, means no robots.txt handling at all "
        "(Scrapy's built-in stays disabled)",
    )
    token = Setting(
        "REP_PRODUCT_TOKEN",
        None,
        _token,
        "token matched against `User-agent` lines; else taken from `ROBOTSTXT_USER_AGENT`, "
        "then `USER_AGENT`: their first product that is not a browser's "
        "(`Mozilla/5.0 (compatible; shopbot/1.0)` gives `shopbot`)",
    )
    fetch_timeout = Setting(
        "REP_FETCH_TIMEOUT", 30.0, seconds(low=0.001), "seconds a robots.txt download may take"
    )
    max_redirects = Setting(
        "REP_MAX_REDIRECTS",
        5,
        whole(),
        "redirect hops followed for robots.txt (RFC 9309: at least 5)",
    )
    cache_ttl = Setting(
        "REP_CACHE_TTL",
        DAY,
        seconds(low=1),
        "longest a policy is used before a refetch (RFC 9309 §2.4: 24 h)",
    )
    cache_min_ttl = Setting(
        "REP_CACHE_MIN_TTL", 60.0, seconds(), "shortest, even if `Cache-Control` says less"
    )
    cache_max_origins = Setting(
        "REP_CACHE_MAX_ORIGINS",
        1_000_000,
        whole(low=1),
        "origins kept in the local cache (LRU), each with its policy and compressed "
        "robots.txt (~1.6 KiB on real files), and their per-origin report counters "
        "(~0.4 KiB): ~2 GiB when full at the default; without a shared store, up to 3 "
        "times as many evicted ones are kept (~1.3 KiB each) and parsed again when they "
        "come back, so none is fetched again within its TTL",
    )
    cache_max_bytes = Setting(
        "REP_CACHE_MAX_BYTES",
        2 * 2**30,
        whole(low=1),
        "bytes the local cache's origins may take, whatever their files: each counts ~1.5 "
        "KiB plus its compressed robots.txt (at most ~520 KiB, an incompressible 500 KiB "
        "file), least recently used evicted first; the evicted ones kept compact have as "
        "much again. 2 GiB holds ~1,000,000 real files, ~4,000 hostile ones",
    )
    cache_compiled_bytes = Setting(
        "REP_CACHE_COMPILED_BYTES",
        256 * 2**20,
        whole(low=1),
        "bytes of compiled rules kept, the files judged most recently (each counted by an "
        "upper estimate: ~29 KiB for a mean real file holding ~11 KiB; at most ~36 MiB for "
        "a hostile 500 KiB one; the window may pass it by the file judged last); the others "
        "are compiled again when next judged (~0.1 ms for a median file, ~0.7 ms on "
        "average): 256 MiB keeps ~9,000 real files",
    )
    cache_compiled_origins = Setting(
        "REP_CACHE_COMPILED_ORIGINS",
        None,
        _deprecated_count,
        "deprecated (a count of files bounds no memory): use `REP_CACHE_COMPILED_BYTES`; "
        "when set, also caps the number of files kept compiled",
    )
    status_actions = Setting(
        "REP_STATUS_ACTIONS",
        {},
        status_actions,
        "override rows of the status table, e.g. `{'401': 'allow', '403': 'allow'}` "
        "(actions: rules, allow, disallow, pause)",
    )
    pause_initial = Setting(
        "REP_PAUSE_INITIAL",
        60.0,
        seconds(low=0.001),
        "first back-off of a paused origin, seconds; doubles per try",
    )
    pause_max = Setting("REP_PAUSE_MAX", 3600.0, seconds(low=0.001), "longest back-off, seconds")
    pause_max_tries = Setting(
        "REP_PAUSE_MAX_TRIES", 5, whole(low=1), "fetch attempts before a paused origin is given up"
    )
    retry_after_max = Setting(
        "REP_RETRY_AFTER_MAX", 3600.0, seconds(), "cap on a 429's `Retry-After`, seconds"
    )
    use_stale = Setting(
        "REP_USE_STALE",
        True,
        switch,
        "use the last good copy while an origin is unreachable (§2.3.1.4)",
    )
    unreachable_max_age = Setting(
        "REP_UNREACHABLE_MAX_AGE",
        30 * DAY,
        seconds(),
        "after this long unreachable, treat as unavailable",
    )
    pending_wait = Setting(
        "REP_PENDING_WAIT",
        2.0,
        seconds(),
        "seconds a request waits in the downloader for a fetch before it is parked instead",
    )
    disallowed_action = Setting(
        "REP_DISALLOWED_ACTION",
        "drop",
        choice("drop", "park"),
        "`drop` or `park` a disallowed request",
    )
    park_max = Setting(
        "REP_PARK_MAX",
        100_000,
        whole(),
        "requests held at most; more are dropped with `park-overflow`",
    )
    park_timeout = Setting(
        "REP_PARK_TIMEOUT",
        DAY,
        seconds(low=0.001),
        "longest a request stays parked before `park-expired`",
    )
    #: the setting's value: an import path (or a callable), for display; the hook is
    #: :attr:`collection_hook`
    collection_policy = Setting(
        "REP_COLLECTION_POLICY",
        None,
        as_is,
        "import path of `callable(request, spider)` answering `approved`, `rejected` "
        "or `unresolved`",
    )
    collection_unresolved_action = Setting(
        "REP_COLLECTION_UNRESOLVED_ACTION",
        "drop",
        choice("drop", "park"),
        "`drop` or `park` what the hook leaves unresolved",
    )
    crawl_delay_enabled = Setting(
        "REP_CRAWL_DELAY_ENABLED",
        True,
        switch,
        "apply `Crawl-delay` / `Request-rate` to the download slot",
    )
    crawl_delay_max = Setting(
        "REP_CRAWL_DELAY_MAX", 30.0, seconds(), "cap on an applied Crawl-delay, seconds"
    )
    crawl_delay_shared = Setting(
        "REP_CRAWL_DELAY_SHARED",
        True,
        switch,
        "with `REP_STORE = 'redis'`: honour Crawl-delay for the whole cluster (send times "
        "reserved in Redis), not per worker",
    )
    decision_log = Setting(
        "REP_DECISION_LOG",
        None,
        path(directory=False),
        "path of a JSON Lines audit log of decisions and fetches",
    )
    policy_archive = Setting(
        "REP_POLICY_ARCHIVE",
        None,
        path(directory=True),
        "directory keeping each distinct robots.txt body once, as `<digest>.txt`",
    )
    report_enabled = Setting(
        "REP_REPORT_ENABLED",
        True,
        switch,
        "log a per-origin summary (top origins, totals) at close",
    )
    report_html = Setting(
        "REP_REPORT_HTML",
        None,
        _report_html,
        "path of an HTML page written at close from this crawl's audit log records "
        "(`scrapy-rep report`); needs `REP_DECISION_LOG`",
    )
    store = Setting(
        "REP_STORE",
        "auto",
        choice("memory", "redis", "sqlite", "auto"),
        "`memory`; `redis` to share policies across a cluster; `sqlite` to keep them in a "
        "file; `auto`: `sqlite` with a JOBDIR, else `memory`",
    )
    redis_url = Setting(
        "REP_REDIS_URL",
        None,
        _redis_url,
        "Redis URL for `REP_STORE = 'redis'`; falls back to `REDIS_URL`",
    )
    redis_prefix = Setting(
        "REP_REDIS_PREFIX",
        "scrapy-rep",
        text,
        "prefix of the shared store's Redis keys (`:v1:` follows)",
    )
    redis_retention = Setting(
        "REP_REDIS_RETENTION",
        30 * DAY,
        seconds(low=1),
        "seconds Redis keeps an origin's last fetch; longer than freshness, so an unreachable "
        "origin can fall back to its last good copy",
    )
    requeue_parked = Setting(
        "REP_REQUEUE_PARKED",
        True,
        switch,
        "at close, push requests still parked back into a shared scrapy-redis queue "
        "(another worker takes them) instead of dropping them",
    )
    sqlite_path = Setting(
        "REP_SQLITE_PATH",
        None,
        optional_text,
        "SQLite file of `REP_STORE = 'sqlite'` (or `'auto'` with a JOBDIR); "
        "default `<JOBDIR>/rep-policies.sqlite`",
    )
    sqlite_retention = Setting(
        "REP_SQLITE_RETENTION",
        30 * DAY,
        seconds(low=1),
        "seconds the SQLite file keeps an origin's last fetch (like `REP_REDIS_RETENTION`)",
    )
    lock_timeout = Setting(
        "REP_REDIS_LOCK_TIMEOUT",
        10.0,
        seconds(low=0.1),
        "seconds a dead worker's robots.txt fetch lock blocks the others (Redis, SQLite); "
        "a live worker renews it while its fetch runs",
    )
    worker_lease = Setting(
        "REP_WORKER_LEASE",
        30.0,
        seconds(low=0.3),
        "with `REP_STORE = 'redis'` and scrapy-redis: seconds a killed worker's held requests "
        "stay recorded in Redis before a survivor requeues them; renewed every third of that",
    )
    worker_check_interval = Setting(
        "REP_WORKER_CHECK_INTERVAL",
        10.0,
        seconds(low=0.05),
        "seconds between a worker's looks for the held requests of dead workers",
    )
    page_directives = Setting(
        "REP_PAGE_DIRECTIVES",
        True,
        switch,
        'obey page-level directives: `<meta name="robots">`, `X-Robots-Tag` (`nofollow`, '
        "`noindex`, `none`, `unavailable_after`)",
    )
    page_noindex_action = Setting(
        "REP_PAGE_NOINDEX_ACTION",
        "drop",
        choice("drop", "keep"),
        "`drop` the items of a `noindex` page, or `keep` them (and only count them)",
    )
    rel_nofollow = Setting(
        "REP_REL_NOFOLLOW",
        False,
        switch,
        'also drop requests for URLs a page links to only with `rel="nofollow"`',
    )
    uses = Setting(
        "REP_USES",
        [],
        read_uses,
        "what the crawl collects for: any of `train-ai`, `ai-input`, `search`; each request is "
        "answered for them (see docs/uses.md)",
    )
    use_action = Setting(
        "REP_USE_ACTION",
        "record",
        choice("record", "drop"),
        "`record` the use answers, or `drop` a request robots.txt refuses for a declared use",
    )
    use_tokens = Setting(
        "REP_USE_TOKENS",
        {},
        read_use_tokens,
        "per use, a policy token whose robots.txt group gives the site's rule for that use, "
        "e.g. `{'train-ai': 'shopbot-training'}`",
    )
    browser_guard = Setting(
        "REP_BROWSER_GUARD",
        True,
        switch,
        "with scrapy-playwright configured: judge every request the browser makes while "
        "rendering (images, scripts, iframes, fetch/XHR, redirect hops) and abort what "
        "robots.txt does not allow",
    )

    # -- made from the rows, not settings of their own --------------------------------------

    _values: dict[str, Any]
    #: the status table and back-off, for the pure core
    policy: PolicyConfig
    #: the hook :attr:`collection_policy` names, imported once
    collection_hook: Callable[..., Any] | None
    #: the uses declared, for the pure core (``REP_USES``, ``REP_USE_ACTION``, ``REP_USE_TOKENS``)
    declared: Declared

    def __init__(self, values: Mapping[str, Any]) -> None:
        object.__setattr__(self, "_values", dict(values))
        object.__setattr__(
            self,
            "policy",
            PolicyConfig(
                actions=self.status_actions,
                ttl=self.cache_ttl,
                min_ttl=self.cache_min_ttl,
                pause_initial=self.pause_initial,
                pause_max=self.pause_max,
                pause_max_tries=self.pause_max_tries,
                retry_after_max=self.retry_after_max,
                use_stale=self.use_stale,
                unreachable_max_age=self.unreachable_max_age,
            ),
        )
        hook = load_collection_policy(self.collection_policy)
        object.__setattr__(self, "collection_hook", hook)
        declared = Declared(self.uses, self.use_action == "drop", self.use_tokens)
        object.__setattr__(self, "declared", declared)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"RepSettings are read once and frozen: cannot set {name!r}")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, RepSettings) and self._values == other._values

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"RepSettings({self._values!r})"

    @classmethod
    def from_settings(cls, get: Getter) -> RepSettings:
        """Read from a getter (``crawler.settings.get``); raise :class:`SettingError`."""
        return cls({row.attribute: row.value(get) for row in SETTINGS})

    @classmethod
    def of(cls, crawler: Any) -> RepSettings:
        """The crawler's settings, read on first use and shared by all its components.

        Reading once means a start-up warning is logged once, and the
        collection hook imported once, however many components ask.
        """
        found = _READ.get(crawler)
        if found is None:
            found = _READ[crawler] = cls.from_settings(crawler.settings.get)
            warn_unknown(crawler.settings)
        return found


#: the table, in the order of the reference's settings table
SETTINGS: tuple[Setting[Any], ...] = tuple(
    row for row in vars(RepSettings).values() if isinstance(row, Setting)
)
#: name -> (default, meaning), for the add-on's defaults and the settings tables
DEFAULTS: Mapping[str, tuple[Any, str]] = {row.name: (row.default, row.meaning) for row in SETTINGS}


#: ``REP_*`` names read outside the table: not for users, so not in it
INTERNAL = frozenset({"REP_CLOCK"})


def unknown_settings(names: Iterable[str]) -> list[tuple[str, str | None]]:
    """The ``REP_*`` names that are no setting, each with the closest known name, if any."""
    known = [row.name for row in SETTINGS]
    return [
        (name, next(iter(difflib.get_close_matches(name, known, n=1, cutoff=0.6)), None))
        for name in sorted(set(names))
        if name.startswith("REP_") and name not in DEFAULTS and name not in INTERNAL
    ]


def warn_unknown(names: Iterable[str]) -> None:
    """Log one warning per misspelt or unknown ``REP_*`` name: it would be ignored silently."""
    for name, closest in unknown_settings(names):
        hint = f"did you mean {closest}?" if closest else "see docs/reference.md for the settings"
        logger.warning(
            "scrapy-rep: unknown setting %(name)s is ignored; %(hint)s",
            {"name": name, "hint": hint},
        )


def is_enabled(get: Getter) -> bool:
    """``REP_ENABLED`` (default on), read as every other switch.

    The one reading of the switch: the middleware calls
    ``is_enabled(crawler.settings.get)`` before anything else, and
    :attr:`RepSettings.enabled` is the same answer. Raises :class:`SettingError`.
    """
    return RepSettings.enabled.value(get)


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
