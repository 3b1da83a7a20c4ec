"""The ``REP_*`` settings: their defaults, and reading them once, with clear errors.

:data:`DEFAULTS` is the one list of settings; the add-on installs it and the
README's settings table is checked against it by a test.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from scrapy_rep.policy import DEFAULT_ACTIONS, Action, PolicyConfig
from scrapy_rep.robotstxt import InvalidProductToken, product_token, validate_token

DAY = 86_400.0

#: name -> (default, meaning); the README's settings table
DEFAULTS: Mapping[str, tuple[Any, str]] = {
    "REP_ENABLED": (True, "switch scrapy-rep on or off"),
    "REP_PRODUCT_TOKEN": (
        None,
        "token matched against `User-agent` lines; falls back to `ROBOTSTXT_USER_AGENT`, "
        "then the first token of `USER_AGENT`",
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
    "REP_DECISION_LOG": (None, "path of a JSON Lines audit log of decisions and fetches"),
    "REP_POLICY_ARCHIVE": (
        None,
        "directory keeping each distinct robots.txt body once, as `<digest>.txt`",
    ),
    "REP_REPORT_ENABLED": (True, "log a per-origin summary (top origins, totals) at close"),
    "REP_STORE": ("memory", "`memory`, or `redis` to share policies across a cluster"),
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
}


class SettingError(ValueError):
    """A ``REP_*`` setting with a value scrapy-rep cannot use."""


@dataclass(frozen=True)
class RepSettings:
    """All ``REP_*`` settings of one crawler, read and checked once."""

    token: str
    policy: PolicyConfig
    fetch_timeout: float
    max_redirects: int
    cache_max_origins: int
    pending_wait: float
    disallowed_action: str
    park_max: int
    park_timeout: float
    collection_policy: str | None
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

    @classmethod
    def from_settings(cls, get: Callable[[str], Any]) -> RepSettings:
        """Read from a getter (``crawler.settings.get``); raise :class:`SettingError`."""

        def value(name: str) -> Any:
            found = get(name)
            return DEFAULTS[name][0] if found is None else found

        def number(name: str, kind: type[float] | type[int] = float, low: float = 0) -> Any:
            try:
                n = kind(value(name))
            except (TypeError, ValueError):
                raise SettingError(f"{name} must be a number, not {value(name)!r}") from None
            if n < low:
                raise SettingError(f"{name} must be at least {low}, not {n}")
            return n

        def choice(name: str, options: tuple[str, ...]) -> str:
            chosen = str(value(name)).lower()
            if chosen not in options:
                raise SettingError(f"{name} must be one of {options}, not {value(name)!r}")
            return chosen

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
            ttl=number("REP_CACHE_TTL", low=1),
            min_ttl=number("REP_CACHE_MIN_TTL"),
            pause_initial=number("REP_PAUSE_INITIAL", low=0.001),
            pause_max=number("REP_PAUSE_MAX", low=0.001),
            pause_max_tries=number("REP_PAUSE_MAX_TRIES", int, low=1),
            retry_after_max=number("REP_RETRY_AFTER_MAX"),
            use_stale=_flag(value("REP_USE_STALE")),
            unreachable_max_age=number("REP_UNREACHABLE_MAX_AGE"),
        )
        return cls(
            token=resolve_token(get),
            policy=policy,
            fetch_timeout=number("REP_FETCH_TIMEOUT", low=0.001),
            max_redirects=number("REP_MAX_REDIRECTS", int),
            cache_max_origins=number("REP_CACHE_MAX_ORIGINS", int, low=1),
            pending_wait=number("REP_PENDING_WAIT"),
            disallowed_action=choice("REP_DISALLOWED_ACTION", ("drop", "park")),
            park_max=number("REP_PARK_MAX", int),
            park_timeout=number("REP_PARK_TIMEOUT", low=0.001),
            collection_policy=value("REP_COLLECTION_POLICY"),
            collection_unresolved_action=choice(
                "REP_COLLECTION_UNRESOLVED_ACTION", ("drop", "park")
            ),
            crawl_delay_enabled=_flag(value("REP_CRAWL_DELAY_ENABLED")),
            crawl_delay_max=number("REP_CRAWL_DELAY_MAX"),
            decision_log=value("REP_DECISION_LOG") or None,
            policy_archive=value("REP_POLICY_ARCHIVE") or None,
            report_enabled=_flag(value("REP_REPORT_ENABLED")),
            store=choice("REP_STORE", ("memory", "redis")),
            redis_url=value("REP_REDIS_URL") or get("REDIS_URL") or None,
            redis_prefix=str(value("REP_REDIS_PREFIX")),
            redis_retention=number("REP_REDIS_RETENTION", low=1),
            requeue_parked=_flag(value("REP_REQUEUE_PARKED")),
            page_directives=_strict_flag("REP_PAGE_DIRECTIVES", value("REP_PAGE_DIRECTIVES")),
            page_noindex_action=choice("REP_PAGE_NOINDEX_ACTION", ("drop", "keep")),
            rel_nofollow=_strict_flag("REP_REL_NOFOLLOW", value("REP_REL_NOFOLLOW")),
        )


def _flag(value: Any) -> bool:
    """A boolean setting; ``-s NAME=False`` arrives as the string ``'False'``."""
    if isinstance(value, str):
        return value.strip().lower() not in ("", "0", "false", "no", "off")
    return bool(value)


_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")


def _strict_flag(name: str, value: Any) -> bool:
    """A boolean setting that refuses what is neither (``'maybe'``, ``2``) instead of guessing."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in _TRUE + _FALSE:
        return value.strip().lower() in _TRUE
    raise SettingError(f"{name} must be True or False, not {value!r}")


def resolve_token(get: Callable[[str], Any]) -> str:
    """REP_PRODUCT_TOKEN (strict), else the leading token of ROBOTSTXT_USER_AGENT or USER_AGENT."""
    token = get("REP_PRODUCT_TOKEN")
    if token:
        try:
            return validate_token(token)
        except InvalidProductToken as exc:
            raise SettingError(f"REP_PRODUCT_TOKEN: {exc}") from None
    for name in ("ROBOTSTXT_USER_AGENT", "USER_AGENT"):
        header = get(name)
        if header:
            token = product_token(str(header))
            if not token:
                raise SettingError(
                    f"{name} {header!r} does not start with a product token ([a-zA-Z_-]+); "
                    "set REP_PRODUCT_TOKEN"
                )
            return token
    raise SettingError("no product token: set REP_PRODUCT_TOKEN")
