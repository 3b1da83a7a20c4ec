"""The ``REP_*`` settings: one table, read once per crawler, with one-line errors.

Each row of :class:`RepSettings` is a :class:`Setting`: the name, the default the add-on
installs and a reader ``(name, value, get) -> value`` that raises :class:`SettingError`
naming the setting, the value and what is accepted. Meanings are in
``scrapy_rep/reference/settings.py``, off the crawl path.
"""

from __future__ import annotations

import difflib
import json
import logging
import math
import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any, Generic, TypeVar, overload

from scrapy_rep.core.decision import DROP
from scrapy_rep.core.exclusion import ExcludedSites, ExclusionError
from scrapy_rep.core.policy import DEFAULT_ACTIONS, Action, PolicyConfig
from scrapy_rep.core.pushback import DEFAULT_PAGE_ACTIONS, PAGE_ACTIONS, WALL, PushbackConfig
from scrapy_rep.core.uses import USES, Declared
from scrapy_rep.robotstxt import InvalidProductToken, product_token, validate_token
from scrapy_rep.robotstxt.agent import crawler_token
from scrapy_rep.runtime.clock import Clock, clock_of
from scrapy_rep.runtime.per_crawler import PerCrawler

logger = logging.getLogger(__name__)

DAY = 86_400.0
T = TypeVar("T")
V = TypeVar("V", bound="_Value[Any]")
#: a setting's getter: ``crawler.settings.get``, or a dict's ``get`` in tests
Getter = Callable[[str], Any]
Reader = Callable[[str, Any, Getter], T]


class SettingError(ValueError):
    """A ``REP_*`` setting with a value scrapy-rep cannot use; the message is one line."""


_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"", "0", "false", "no", "off"})


def switch(name: str, value: Any, get: Getter | None = None) -> bool:
    """A boolean, read as every switch is: ``-s NAME=False`` (a string) is off, and what is
    not clearly on or off is a :class:`SettingError`, never a silent ``True``."""
    if isinstance(value, bool) or (isinstance(value, int) and value in (0, 1)):
        return bool(value)
    text = value.strip().lower() if isinstance(value, str) else None
    if text in _TRUE or text in _FALSE:
        return text in _TRUE
    raise SettingError(
        f"{name} must be a boolean (True/False, 1/0, 'true'/'false', 'yes'/'no', 'on'/'off'), "
        f"not {value!r}"
    )


def _number(integer: bool, low: float, high: float) -> Reader[Any]:
    what = "a whole number" if integer else "a finite number of seconds"
    bounds = f"at least {low:g}" + (" and at most 1e9 (31 years)" if high < math.inf else "")

    def read(name: str, raw: Any, get: Getter) -> Any:
        problem = SettingError(f"{name} must be {what}, {bounds}; not {raw!r}")
        if isinstance(raw, bool):  # True is not a number of seconds
            raise problem
        try:
            n = float(raw)
        except (TypeError, ValueError, OverflowError):
            raise problem from None
        if not math.isfinite(n) or not low <= n <= high or (integer and not n.is_integer()):
            raise problem
        return (raw if isinstance(raw, int) else int(n)) if integer else n

    return read


def seconds(low: float = 0) -> Reader[float]:
    """A duration: a finite number of seconds from ``low`` to 1e9 (1e308 overflows as inf)."""
    return _number(False, low, 1e9)


def whole(low: int = 0) -> Reader[int]:
    """A count: a whole number, at least ``low`` (``'7'`` and ``7.0`` are 7)."""
    return _number(True, low, math.inf)


def choice(*options: str) -> Reader[str]:
    """One of ``options`` (any case, spaces around ignored)."""

    def read(name: str, raw: Any, get: Getter) -> str:
        chosen = str(raw).strip().lower()
        if chosen not in options:
            raise SettingError(f"{name} must be one of {options}, not {raw!r}")
        return chosen

    return read


def path(directory: bool) -> Reader[str | None]:
    """A file path (or a directory's); unset, ``False`` or ``''`` is ``None``."""
    kind = "a directory" if directory else "a file path"

    def read(name: str, raw: Any, get: Getter) -> str | None:
        if raw is None or raw is False or raw == "":
            return None
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


def _json(name: str, value: Any, opening: str = "[{") -> Any:
    """``value``, parsed if it is text opening a JSON value (``-s 'NAME=["a"]'``)."""
    text = value.strip() if isinstance(value, str) else ""
    if text[:1] and text[0] in opening:
        try:
            return json.loads(text)
        except ValueError:
            raise SettingError(f"{name} is not valid JSON: {value!r}") from None
    return value


def _each(
    name: str, value: Mapping[Any, Any], known: Iterable[str], what: str, read: Callable[..., T]
) -> dict[str, T]:
    """``value``'s entries, each key one of ``known``, each value read (``read(NAME[key], v)``)."""
    found: dict[str, T] = {}
    for key, raw in value.items():
        if str(key) not in known:
            raise SettingError(f"{name}: unknown {what} {key!r}; known: {', '.join(known)}")
        found[str(key)] = read(f"{name}[{key!r}]", raw)
    return found


def _table(name: str, overrides: Any) -> Mapping[Any, Any]:
    """A status table's overrides: a dict, or its JSON (``-s 'REP_STATUS_ACTIONS={...}'``)."""
    if isinstance(overrides, str):
        try:
            overrides = json.loads(overrides or "{}")
        except ValueError:
            raise SettingError(f"{name} is not a JSON object: {overrides!r}") from None
    if not isinstance(overrides, Mapping):
        raise SettingError(f"{name} must be a dict, not {overrides!r}")
    return overrides


def _action(where: str, action: Any) -> Action:
    try:  # str() of an Action is 'Action.ALLOW': take its value as it is
        return action if isinstance(action, Action) else Action(str(action).lower())
    except ValueError:
        known = ", ".join(a.value for a in Action)
        raise SettingError(f"{where}: unknown action {action!r}; known: {known}") from None


def status_actions(name: str, overrides: Any, get: Getter) -> dict[str, Action]:
    """``REP_STATUS_ACTIONS``: the robots.txt status table, the overrides applied."""
    table = _table(name, overrides)
    return {**DEFAULT_ACTIONS, **_each(name, table, DEFAULT_ACTIONS, "outcome", _action)}


def page_status_actions(name: str, overrides: Any, get: Getter) -> dict[str, str]:
    """``REP_PAGE_STATUS_ACTIONS``: the page status table, the overrides applied; any status
    from 400 to 599 may have a row, and only a wall's (402) is, and stays, ``wall``."""
    actions = dict(DEFAULT_PAGE_ACTIONS)
    for status, action in _table(name, overrides).items():
        key = str(status).strip()
        if not key.isascii() or not key.isdigit() or not 400 <= int(key) <= 599:
            raise SettingError(f"{name}: {status!r} is no HTTP status from 400 to 599")
        chosen = "off" if action is None or action is False else str(action).strip().lower()
        if chosen not in PAGE_ACTIONS:
            raise SettingError(
                f"{name}[{status!r}]: unknown action {action!r}; known: {', '.join(PAGE_ACTIONS)}"
            )
        if (chosen == WALL) != (DEFAULT_PAGE_ACTIONS.get(key) == WALL):
            raise SettingError(
                f"{name}[{status!r}]: {action!r}: only a licence wall's row (402) is `wall`, "
                "and it stays so"
            )
        actions[key] = chosen
    return actions


COLLECTION_POLICY_ACCEPTS = (
    "the import path of a callable(request, spider), e.g. 'myproject.scope.decide'"
)


def hook_path(name: str, value: Any, get: Getter) -> str | Callable[..., Any] | None:
    """``REP_COLLECTION_POLICY``: an import path or a callable, only its shape checked
    (``scrapy_rep.crawl.collection`` imports it when the crawler starts)."""
    if value is None or value == "":
        return None
    if isinstance(value, str):
        return value.strip()
    if callable(value):
        return value  # type: ignore[no-any-return]
    raise SettingError(f"{name} must be {COLLECTION_POLICY_ACCEPTS}, not {value!r}")


def read_uses(name: str, value: Any, get: Getter) -> tuple[str, ...]:
    """``REP_USES``: a list of uses from :data:`~scrapy_rep.core.uses.USES` (``a,b`` too)."""
    value = _json(name, value)
    if isinstance(value, str):
        value = [part.strip() for part in value.split(",") if part.strip()]
    if not isinstance(value, Iterable):
        raise SettingError(f"{name} must be a list of uses ({', '.join(USES)}), not {value!r}")
    return tuple(_each(name, dict.fromkeys(value), USES, "use", lambda _, v: v))


def _token(where: str, raw: Any) -> str:
    """An RFC 9309 product token."""
    try:
        return validate_token(raw)
    except InvalidProductToken as exc:
        raise SettingError(f"{where}: {exc}") from None


def read_use_tokens(name: str, value: Any, get: Getter) -> dict[str, str]:
    """``REP_USE_TOKENS``: use -> a policy token."""
    value = _json(name, value)
    if not isinstance(value, Mapping):
        raise SettingError(f"{name} must be a dict of use -> token, not {value!r}")
    return _each(name, value, USES, "use", _token)


def read_report(name: str, value: Any, get: Getter) -> str | bool:
    """``REP_REPORT``: on, off, or the path of an HTML page (and the log summary)."""
    if isinstance(value, os.PathLike) or (
        isinstance(value, str) and value.strip().lower() not in _TRUE | _FALSE
    ):
        found = path(directory=False)(name, value, get)
        if found is not None and not get("REP_DECISION_LOG"):
            raise SettingError(
                f"{name} needs REP_DECISION_LOG: the page {value!r} is made from the audit log"
            )
        return found if found is not None else False
    try:
        return switch(name, value)
    except SettingError:
        raise SettingError(
            f"{name} must be True, False or the path of an HTML page, not {value!r}"
        ) from None


STORE_KINDS = ("memory", "redis", "sqlite", "auto")
#: the prefix of the shared store's Redis keys when ``REP_STORE`` names none
REDIS_PREFIX = "scrapy-rep"


@dataclass(frozen=True)
class StoreChoice:
    """``REP_STORE`` read: the kind; the Redis URL of ``REP_STORE`` (``url_given``), else
    ``REDIS_URL``; its ``?prefix=``; the file of ``sqlite:<path>``."""

    kind: str
    redis_url: str | None = None
    url_given: bool = False
    redis_prefix: str | None = None
    sqlite_path: str | None = None


def read_store(name: str, value: Any, get: Getter) -> StoreChoice:
    """``REP_STORE``: a kind (:data:`STORE_KINDS`), a Redis URL or ``sqlite:<path>``."""
    from urllib.parse import parse_qsl, urlencode

    accepted = (
        f"one of {STORE_KINDS}, a Redis URL (redis://host:6379/0?prefix=p) or "
        "sqlite:///abs/path, sqlite:relative/path"
    )
    text = str(value).strip()
    if text.lower() in STORE_KINDS:
        return StoreChoice(text.lower(), redis_url=get("REDIS_URL") or None)
    scheme, _, rest = text.partition(":")
    if scheme.lower() == "sqlite":
        if rest.startswith("//") and not rest.startswith("///"):
            raise SettingError(f"{name} = {value!r}: a sqlite: URL names no host; {accepted}")
        found = rest[2:] if rest.startswith("///") else rest  # ///abs: no host, a path
        if not found:
            raise SettingError(f"{name} = {value!r}: no file; {accepted}")
        return StoreChoice("sqlite", sqlite_path=found)
    if scheme.lower() in ("redis", "rediss", "unix") and rest.startswith("//"):
        url, _, query = text.partition("?")
        pairs = parse_qsl(query, keep_blank_values=True)
        prefixes = [v for k, v in pairs if k == "prefix"]
        if prefixes and not prefixes[-1]:
            raise SettingError(f"{name} = {value!r}: an empty prefix; {accepted}")
        if prefixes:  # the rest of the query is the client's (ssl_cert_reqs=..., ...)
            query = urlencode([(k, v) for k, v in pairs if k != "prefix"])
        url = f"{url}?{query}" if query else url
        return StoreChoice("redis", url, True, prefixes[-1] if prefixes else None)
    raise SettingError(f"{name} must be {accepted}; not {value!r}")


#: ``REP_IDENTITY_ACTION``'s parts (the reasons of their drops) and their defaults
IDENTITY_ACTIONS: Mapping[str, str] = {"token-missing": "warn", "identity-changed": "drop"}


def read_identity_action(name: str, value: Any, get: Getter) -> dict[str, str]:
    """``REP_IDENTITY_ACTION``: one action for both parts, or a dict of some."""
    value = _json(name, value, "{")
    one = choice("warn", "drop", "off")
    if not isinstance(value, Mapping):
        return dict.fromkeys(IDENTITY_ACTIONS, one(name, value, get))
    some = _each(name, value, IDENTITY_ACTIONS, "part", lambda where, v: one(where, v, get))
    return {**IDENTITY_ACTIONS, **some}


def read_exclude(name: str, value: Any, get: Getter) -> ExcludedSites | None:
    """``REP_EXCLUDE``: a list of domains, or the path of a file of them, one a line
    (``#`` comments); on the command line, a JSON list or a path."""
    if value is None or value == "" or value is False:
        return None
    value = _json(name, value, "[")
    try:
        if isinstance(value, (str, os.PathLike)):
            with open(found := os.fspath(value), encoding="utf-8") as f:
                return ExcludedSites.parse(f, source=str(found)) or None
        if isinstance(value, Iterable) and not isinstance(value, (bytes, Mapping)):
            return ExcludedSites.parse(list(value)) or None
    except OSError as exc:
        raise SettingError(
            f"{name} = {value!r}: cannot read the list of excluded sites "
            f"({exc.strerror or exc}); give a file of domains or a list"
        ) from None
    except UnicodeDecodeError:
        raise SettingError(f"{name} = {value!r}: the file is not UTF-8 text") from None
    except ExclusionError as exc:
        raise SettingError(f"{name}: {exc}") from None
    raise SettingError(f"{name} must be a list of domains or a file path, not {value!r}")


def read_provenance(name: str, value: Any, get: Getter) -> str | None:
    """``REP_ITEM_PROVENANCE``: the item field to fill (``True`` is ``'_rep'``), or off."""
    if isinstance(value, str) and value.strip().lower() in _TRUE | _FALSE:
        value = value.strip().lower() in _TRUE
    if value is None or value is False:
        return None
    if value is True or (isinstance(value, str) and value.strip().isidentifier()):
        return "_rep" if value is True else value.strip()
    raise SettingError(
        f"{name} must be an item field name (e.g. '_rep'), True (for '_rep') or off, not {value!r}"
    )


#: ``REP_SPIDERMON``'s thresholds and their defaults (the last two in whole percent)
SPIDERMON_THRESHOLDS: Mapping[str, int] = {
    "not_allowed": 0,
    "held_at_close": 0,
    "blocked_origins": 10,
    "uses_refused": 50,
    "items_dropped": 50,
}


def read_spidermon(name: str, value: Any, get: Getter) -> dict[str, int] | None:
    """``REP_SPIDERMON``: off (``None``), on with the default thresholds, or a dict of the
    thresholds to change (:data:`SPIDERMON_THRESHOLDS`); a JSON dict on the command line."""
    value = _json(name, value, "{")
    if not isinstance(value, Mapping):
        return dict(SPIDERMON_THRESHOLDS) if value is not None and switch(name, value) else None
    found = dict(SPIDERMON_THRESHOLDS)
    for key, raw in value.items():
        if key not in SPIDERMON_THRESHOLDS:
            known = ", ".join(SPIDERMON_THRESHOLDS)
            raise SettingError(f"{name}: no threshold {key!r}; the thresholds are {known}")
        found[key] = whole()(f"{name}[{key!r}]", raw, get)
        if key in ("uses_refused", "items_dropped") and found[key] > 100:
            raise SettingError(
                f"{name}[{key!r}] is a whole number of percent, 0 to 100; not {raw!r}"
            )
    return found


def read_token(name: str, value: Any, get: Getter) -> str:
    """``REP_PRODUCT_TOKEN`` (strict), else the first product of ``ROBOTSTXT_USER_AGENT``,
    then of ``USER_AGENT``, that is not a browser's (:func:`crawler_token`), as Scrapy's
    built-in matches ``Mozilla/5.0 (compatible; shopbot/1.0)`` with ``User-agent: shopbot``."""
    if value:
        return _token(name, value)
    agent = next((n for n in ("ROBOTSTXT_USER_AGENT", "USER_AGENT") if get(n)), None)
    if agent is None:
        raise SettingError("no product token: set REP_PRODUCT_TOKEN = 'yourbot'")
    header = str(get(agent))
    found = crawler_token(header)
    if found:
        return found
    leading = product_token(header)
    if not leading:
        raise SettingError(
            f"{agent} {header!r} names no product token ([a-zA-Z_-]+); "
            "set REP_PRODUCT_TOKEN = 'yourbot'"
        )
    logger.warning(
        "scrapy-rep: %(name)s %(header)r names no crawler product token (a [a-zA-Z_-]+ "
        "name that is not a browser's), so robots.txt groups are matched as %(token)r; "
        "set REP_PRODUCT_TOKEN = 'yourbot' (and put yourbot in USER_AGENT)",
        {"name": agent, "header": header, "token": leading},
    )
    return leading


class _Value(Generic[T]):
    """An attribute of :class:`RepSettings`: a value each instance holds, set once."""

    attribute = ""

    def __set_name__(self, owner: type, attribute: str) -> None:
        self.attribute = attribute

    @overload
    def __get__(self: V, instance: None, owner: type) -> V: ...
    @overload
    def __get__(self, instance: RepSettings, owner: type) -> T: ...
    def __get__(self: V, instance: RepSettings | None, owner: type) -> V | T:
        if instance is None:  # on an instance, the value it holds wins over this descriptor
            return self
        raise AttributeError(self.attribute)


class Setting(_Value[T]):
    """A row of the table: a ``REP_*`` setting, its default and its reader."""

    def __init__(self, name: str, default: Any, read: Reader[T]) -> None:
        self.name, self.default, self.read = name, default, read

    def value(self, get: Getter) -> T:
        """This setting's checked value; raises :class:`SettingError`."""
        found = get(self.name)
        return self.read(self.name, self.default if found is None else found, get)


class Made(_Value[T]):
    """A value made from the rows, not a setting; a test may replace it (:data:`TUNE`)."""

    def __init__(self, make: Callable[[RepSettings], T]) -> None:
        self.make = make


def _read(crawler: Any) -> RepSettings:
    found = RepSettings.from_settings(crawler.settings.get)
    warn_unknown(crawler.settings)  # once a crawler, however many components ask
    return found


#: not for users, a test's seam: a dict replacing :class:`Made` values, by attribute
#: (``"max_redirects"``) or a field of one (``"policy.min_ttl"``, ``"pushback.backoff_start"``)
TUNE = "_REP_TUNE"


class RepSettings:
    """All ``REP_*`` settings of one crawler, read and checked once, frozen: the rows, in
    the order of the reference's table, then the values made from them."""

    enabled = Setting("REP_ENABLED", True, switch)
    token = Setting("REP_PRODUCT_TOKEN", None, read_token)
    fetch_timeout = Setting("REP_FETCH_TIMEOUT", 30.0, seconds(low=0.001))
    cache_ttl = Setting("REP_CACHE_TTL", DAY, seconds(low=1))
    cache_max_bytes = Setting("REP_CACHE_MAX_BYTES", 2 * 2**30, whole(low=1))
    status_actions = Setting("REP_STATUS_ACTIONS", {}, status_actions)
    pause_initial = Setting("REP_PAUSE_INITIAL", 60.0, seconds(low=0.001))
    pause_max = Setting("REP_PAUSE_MAX", 3600.0, seconds(low=0.001))
    page_status_actions = Setting("REP_PAGE_STATUS_ACTIONS", {}, page_status_actions)
    block_after = Setting("REP_BLOCK_AFTER", 3, whole(low=1))
    pending_wait = Setting("REP_PENDING_WAIT", 2.0, seconds())
    park_max = Setting("REP_PARK_MAX", 100_000, whole())
    park_timeout = Setting("REP_PARK_TIMEOUT", DAY, seconds(low=0.001))
    collection_policy = Setting("REP_COLLECTION_POLICY", None, hook_path)
    collection_unresolved_action = Setting(
        "REP_COLLECTION_UNRESOLVED_ACTION", "drop", choice("drop", "park")
    )
    crawl_delay_max = Setting("REP_CRAWL_DELAY_MAX", 30.0, seconds())
    decision_log = Setting("REP_DECISION_LOG", None, path(directory=False))
    policy_archive = Setting("REP_POLICY_ARCHIVE", None, path(directory=True))
    report = Setting("REP_REPORT", True, read_report)
    store_choice = Setting("REP_STORE", "auto", read_store)
    worker_lease = Setting("REP_WORKER_LEASE", 30.0, seconds(low=0.3))
    page_directives = Setting("REP_PAGE_DIRECTIVES", True, switch)
    page_noindex_action = Setting("REP_PAGE_NOINDEX_ACTION", "drop", choice("drop", "keep"))
    rel_nofollow = Setting("REP_REL_NOFOLLOW", False, switch)
    uses = Setting("REP_USES", [], read_uses)
    use_action = Setting("REP_USE_ACTION", "record", choice("record", "drop"))
    use_tokens = Setting("REP_USE_TOKENS", {}, read_use_tokens)
    browser_guard = Setting("REP_BROWSER_GUARD", True, switch)
    identity_action = Setting("REP_IDENTITY_ACTION", dict(IDENTITY_ACTIONS), read_identity_action)
    exclude = Setting("REP_EXCLUDE", None, read_exclude)
    item_provenance = Setting("REP_ITEM_PROVENANCE", None, read_provenance)
    spidermon = Setting("REP_SPIDERMON", None, read_spidermon)

    #: the clock ``REP_CLOCK`` names (a test's), else the wall clock
    clock: Clock
    policy = Made(
        lambda c: PolicyConfig(
            actions=c.status_actions,
            ttl=c.cache_ttl,
            pause_initial=c.pause_initial,
            pause_max=c.pause_max,
            retry_after_max=c.pause_max,
        )
    )
    pushback = Made(
        lambda c: PushbackConfig(
            actions=c.page_status_actions,
            floor=min(PushbackConfig.floor, c.pause_max),
            pause_max=c.pause_max,
            block_after=c.block_after,
        )
    )
    declared = Made(lambda c: Declared(c.uses, c.use_action == "drop", c.use_tokens))
    disallowed_action = Made(lambda c: DROP)
    requeue_parked = Made(lambda c: True)
    max_redirects = Made(lambda c: 5)  # RFC 9309 §2.3.1.2: at least five
    #: as long as a last good copy may stand in for an unreachable origin's robots.txt
    store_retention = Made(lambda c: c.policy.unreachable_max_age)
    crawl_delay_enabled = Made(lambda c: c.crawl_delay_max > 0)
    worker_check_interval = Made(lambda c: c.worker_lease / 3)
    #: one per 2 KiB: the least an origin is counted in the cache (1.5 KiB) and its report
    #: counters (~0.4 KiB)
    cache_max_origins = Made(lambda c: max(1, c.cache_max_bytes // 2048))
    cache_compiled_bytes = Made(lambda c: max(1, c.cache_max_bytes // 8))
    store = Made(lambda c: c.store_choice.kind)
    redis_url = Made(lambda c: c.store_choice.redis_url)
    redis_prefix = Made(lambda c: c.store_choice.redis_prefix or REDIS_PREFIX)
    sqlite_path = Made(lambda c: c.store_choice.sqlite_path)
    #: the shared store's robots.txt fetch lock, renewed every third of itself
    lock_timeout = Made(lambda c: max(1.0, c.fetch_timeout / 3))
    report_enabled = Made(lambda c: c.report is not False)
    report_html = Made(lambda c: c.report if isinstance(c.report, str) else None)

    def __init__(
        self, values: Mapping[str, Any], clock: Any = None, tune: Mapping[str, Any] | None = None
    ) -> None:
        held = vars(self)
        held.update(values, clock=clock_of(clock))
        for made in MADE.values():
            held[made.attribute] = made.make(self)
        for key, value in (tune or {}).items():
            attribute, _, field = key.partition(".")
            if attribute not in MADE:
                raise SettingError(f"{TUNE}: no value {attribute!r} to tune")
            held[attribute] = replace(held[attribute], **{field: value}) if field else value

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"RepSettings are read once and frozen: cannot set {name!r}")

    @classmethod
    def from_settings(cls, get: Getter) -> RepSettings:
        """Read from a getter (``crawler.settings.get``); raise :class:`SettingError`, also
        for a removed name still set (:data:`REMOVED`)."""
        for name, instead in REMOVED.items():
            if get(name) is not None:
                raise SettingError(f"{name} was removed: {instead}")
        return cls({row.attribute: row.value(get) for row in SETTINGS}, get("REP_CLOCK"), get(TUNE))

    #: the crawler's settings, read on first use and shared by all its components: every
    #: component has the same clock
    of = staticmethod(PerCrawler(_read).of)


#: the rows, in the order of the reference's settings table
SETTINGS: tuple[Setting[Any], ...] = tuple(
    row for row in vars(RepSettings).values() if isinstance(row, Setting)
)
#: attribute -> how it is made, in the order made (one may read one made before it)
MADE: Mapping[str, Made[Any]] = {
    row.attribute: row for row in vars(RepSettings).values() if isinstance(row, Made)
}
#: name -> default, as the add-on installs them
DEFAULTS: Mapping[str, Any] = {row.name: row.default for row in SETTINGS}


#: ``is_enabled(crawler.settings.get)``: ``REP_ENABLED``, read before anything else, the
#: same answer as :attr:`RepSettings.enabled`; raises :class:`SettingError`
is_enabled = RepSettings.enabled.value


#: the names removed before the first release, and what replaces each (the one line a
#: crawl that still sets one stops with)
REMOVED: Mapping[str, str] = {
    "REP_CACHE_MIN_TTL": "a policy is now kept at least 60 s; remove it",
    "REP_USE_STALE": "the last good copy now always stands in for an unreachable robots.txt; "
    "remove it",
    "REP_UNREACHABLE_MAX_AGE": "an origin unreachable for 30 days is now treated as unavailable; "
    "remove it",
    "REP_REQUEUE_PARKED": "requests still parked at close now always go back into a shared "
    "scrapy-redis queue; remove it",
    "REP_DISALLOWED_ACTION": "a disallowed request is now always dropped; remove it",
    "REP_MAX_REDIRECTS": "5 redirect hops are now followed for robots.txt; remove it",
    "REP_PAUSE_MAX_TRIES": "a paused origin is now given up after 5 robots.txt fetches; remove it",
    "REP_PAGE_PAUSE_MIN": "a page's pause now lasts at least 1 s; remove it",
    "REP_PAGE_BACKOFF_START": "a page's back-off now starts at 5 s; remove it",
    "REP_PAGE_BACKOFF_FACTOR": "a page's back-off now doubles per pushback in a row; remove it",
    "REP_PAGE_BACKOFF_RESET": "a page's back-off now starts over after 10 healthy responses; "
    "remove it",
    "REP_BLOCK_PAUSE": "a blocked origin now stops for 6 h; remove it",
    "REP_RETRY_AFTER_MAX": "use REP_PAUSE_MAX, which caps a Retry-After",
    "REP_CRAWL_DELAY_ENABLED": "use REP_CRAWL_DELAY_MAX = 0 to turn Crawl-delay off",
    "REP_CRAWL_DELAY_SHARED": "Crawl-delay is now shared whenever REP_STORE is Redis; remove it",
    "REP_WORKER_CHECK_INTERVAL": "use REP_WORKER_LEASE (dead workers are looked for every third "
    "of it)",
    "REP_CACHE_MAX_ORIGINS": "use REP_CACHE_MAX_BYTES (one origin per 2 KiB of it)",
    "REP_CACHE_COMPILED_ORIGINS": "use REP_CACHE_MAX_BYTES (an eighth of it is for compiled rules)",
    "REP_CACHE_COMPILED_BYTES": "use REP_CACHE_MAX_BYTES (an eighth of it is for compiled rules)",
    "REP_STORE_RETENTION": "the shared store now keeps an origin's last fetch 30 days; remove it",
    "REP_REDIS_RETENTION": "the shared store now keeps an origin's last fetch 30 days; remove it",
    "REP_SQLITE_RETENTION": "the shared store now keeps an origin's last fetch 30 days; remove it",
    "REP_STORE_LOCK_TIMEOUT": "use REP_FETCH_TIMEOUT (the fetch lock is a third of it)",
    "REP_REDIS_LOCK_TIMEOUT": "use REP_FETCH_TIMEOUT (the fetch lock is a third of it)",
    "REP_REDIS_URL": "use REP_STORE = 'redis://host:6379/0' (or REP_STORE = 'redis' and REDIS_URL)",
    "REP_REDIS_PREFIX": "use REP_STORE = 'redis://host:6379/0?prefix=...'",
    "REP_SQLITE_PATH": "use REP_STORE = 'sqlite:///abs/path.sqlite'",
    "REP_REPORT_HTML": "use REP_REPORT = 'path.html'",
    "REP_REPORT_ENABLED": "use REP_REPORT (False: no summary at close)",
    "REP_IDENTITY_TOKEN_ACTION": "use REP_IDENTITY_ACTION = {'token-missing': ...}",
    "REP_IDENTITY_CHANGE_ACTION": "use REP_IDENTITY_ACTION = {'identity-changed': ...}",
}


def unknown_settings(names: Iterable[str]) -> list[tuple[str, str | None]]:
    """The ``REP_*`` names that are no setting, each with the closest known name, if any
    (``REP_CLOCK``, a test's, is read outside the table)."""
    return [
        (name, next(iter(difflib.get_close_matches(name, DEFAULTS, n=1, cutoff=0.6)), None))
        for name in sorted(set(names))
        if name.startswith("REP_") and name not in {*DEFAULTS, *REMOVED, "REP_CLOCK"}
    ]


def warn_unknown(names: Iterable[str]) -> None:
    """Log one warning per misspelt or unknown ``REP_*`` name: it would be ignored silently."""
    for name, closest in unknown_settings(names):
        hint = f"did you mean {closest}?" if closest else "see docs/reference.md for the settings"
        logger.warning(
            "scrapy-rep: unknown setting %(name)s is ignored; %(hint)s",
            {"name": name, "hint": hint},
        )
