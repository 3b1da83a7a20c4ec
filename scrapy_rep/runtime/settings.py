"""The ``REP_*`` settings: one table, read once per crawler, with clear errors.

Each setting is one row of :class:`RepSettings`, spelled once::

    fetch_timeout = Setting("REP_FETCH_TIMEOUT", 30.0, seconds(low=0.001))

The row gives the attribute (``config.fetch_timeout``), the setting's name, the
default the add-on installs, the reader that checks and converts the value
(raising :class:`SettingError` with one line naming the setting, the value and
what is accepted). Its meaning, shown in the reference's settings table, is in
``scrapy_rep/reference/settings.py`` (never imported by a crawl).

**Adding a setting** is adding one row to :class:`RepSettings` and its meaning: pick a reader
below (:func:`seconds`, :func:`whole`, :func:`switch`, :func:`choice`,
:func:`path`) or write one,
``(name, value, get) -> value``, where
``value`` has the default applied and ``get`` reads any other setting. Nothing
else lists settings: :data:`SETTINGS`, :data:`DEFAULTS`, the add-on's defaults
and the check that warns of a misspelt ``REP_*`` name (:func:`unknown_settings`)
all come from the rows.

**Removing a setting** is deleting its row and adding its name to
:data:`REMOVED` with what replaces it: until the first release there is no
deprecation layer, and a removed name still set stops the crawl at start-up
with that one line.

A crawler's settings are read once (:meth:`RepSettings.of`) and shared by every
component, so start-up warnings are logged once.
"""

from __future__ import annotations

import difflib
import json
import logging
import math
import os
import weakref
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any, Generic, TypeVar, cast, overload

from scrapy_rep.core.decision import DROP
from scrapy_rep.core.exclusion import ExcludedSites, ExclusionError
from scrapy_rep.core.policy import DEFAULT_ACTIONS, Action, PolicyConfig
from scrapy_rep.core.pushback import DEFAULT_PAGE_ACTIONS, PAGE_ACTIONS, WALL, PushbackConfig
from scrapy_rep.core.uses import USES, Declared
from scrapy_rep.robotstxt import InvalidProductToken, product_token, validate_token
from scrapy_rep.robotstxt.agent import crawler_token
from scrapy_rep.runtime.clock import Clock, clock_of

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


def _table(name: str, overrides: Any) -> Mapping[Any, Any]:
    """A status table's overrides: a dict, or its JSON from the command line
    (``-s REP_STATUS_ACTIONS='{"404": "pause"}'``)."""
    if isinstance(overrides, str):
        try:
            overrides = json.loads(overrides or "{}")
        except ValueError:
            raise SettingError(f"{name} is not a JSON object: {overrides!r}") from None
    if not isinstance(overrides, Mapping):
        raise SettingError(f"{name} must be a dict, not {overrides!r}")
    return overrides


def status_actions(name: str, overrides: Any, get: Getter) -> dict[str, Action]:
    """Reader of ``REP_STATUS_ACTIONS``: the whole status table, the overrides applied."""
    actions = dict(DEFAULT_ACTIONS)
    overrides = _table(name, overrides)
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


def page_status_actions(name: str, overrides: Any, get: Getter) -> dict[str, str]:
    """Reader of ``REP_PAGE_STATUS_ACTIONS``: the page status table, the overrides applied.

    Any HTTP status from 400 to 599 may have a row (``pause``, ``block`` or ``off``); a
    wall's row (``402``) stays ``wall``, and no other row is one.
    """
    actions = dict(DEFAULT_PAGE_ACTIONS)
    overrides = _table(name, overrides)
    for status, action in overrides.items():
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


#: what REP_COLLECTION_POLICY accepts
COLLECTION_POLICY_ACCEPTS = (
    "the import path of a callable(request, spider), e.g. 'myproject.scope.decide'"
)


def hook_path(name: str, value: Any, get: Getter) -> str | Callable[..., Any] | None:
    """Reader of ``REP_COLLECTION_POLICY``: an import path or a callable, unset ``None``.

    Only the shape is checked here; the adapter imports the hook when the
    crawler starts (``scrapy_rep.crawl.collection.load_collection_policy``).
    """
    if value is None or value == "":
        return None
    if callable(value):
        return value  # type: ignore[no-any-return]
    if not isinstance(value, str):
        raise SettingError(f"{name} must be {COLLECTION_POLICY_ACCEPTS}, not {value!r}")
    return value.strip()


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


def read_report(name: str, value: Any, get: Getter) -> str | bool:
    """Reader of ``REP_REPORT``: on, off, or the path of an HTML page (the log summary too)."""
    if isinstance(value, (str, os.PathLike)) and not (
        isinstance(value, str) and value.strip().lower() in _TRUE | _FALSE
    ):
        found = _report_html(name, value, get)
        return found if found is not None else False
    try:
        return flag(name, value)
    except SettingError:
        raise SettingError(
            f"{name} must be True, False or the path of an HTML page, not {value!r}"
        ) from None


#: ``REP_STORE``'s kinds; the URL forms are ``redis://``, ``rediss://``, ``unix://``, ``sqlite:``
STORE_KINDS = ("memory", "redis", "sqlite", "auto")
_REDIS_SCHEMES = ("redis", "rediss", "unix")
#: the prefix of the shared store's Redis keys when ``REP_STORE`` names none
REDIS_PREFIX = "scrapy-rep"


@dataclass(frozen=True)
class StoreChoice:
    """``REP_STORE`` read: the kind, and where when the value said (else ``None``)."""

    kind: str
    #: the Redis URL given in ``REP_STORE``, else ``REDIS_URL``, else ``None`` (the default)
    redis_url: str | None = None
    #: the URL was given in ``REP_STORE`` itself (it wins over any other)
    url_given: bool = False
    #: ``?prefix=`` of the URL
    redis_prefix: str | None = None
    #: the file of ``sqlite:<path>``
    sqlite_path: str | None = None


def read_store(name: str, value: Any, get: Getter) -> StoreChoice:
    """Reader of ``REP_STORE``: a kind (:data:`STORE_KINDS`), a Redis URL or ``sqlite:<path>``."""
    from urllib.parse import parse_qsl, urlencode

    accepted = (
        f"one of {STORE_KINDS}, a Redis URL (redis://host:6379/0?prefix=p) or "
        "sqlite:///abs/path, sqlite:relative/path"
    )
    text = str(value).strip()
    kind = text.lower()
    if kind in STORE_KINDS:
        return StoreChoice(kind, redis_url=get("REDIS_URL") or None)
    scheme, _, rest = text.partition(":")
    scheme = scheme.lower()
    if scheme == "sqlite":
        if rest.startswith("///"):
            found = rest[2:]  # sqlite:///abs/path: an empty authority, an absolute path
        elif rest.startswith("//"):
            raise SettingError(f"{name} = {value!r}: a sqlite: URL names no host; {accepted}")
        else:
            found = rest
        if not found:
            raise SettingError(f"{name} = {value!r}: no file; {accepted}")
        return StoreChoice("sqlite", sqlite_path=found)
    if scheme in _REDIS_SCHEMES and rest.startswith("//"):
        url, _, query = text.partition("?")
        pairs = parse_qsl(query, keep_blank_values=True)
        prefixes = [v for k, v in pairs if k == "prefix"]
        if prefixes and not prefixes[-1]:
            raise SettingError(f"{name} = {value!r}: an empty prefix; {accepted}")
        if prefixes:  # the rest of the query is the client's (ssl_cert_reqs=..., ...)
            others = urlencode([(k, v) for k, v in pairs if k != "prefix"])
            query = others
        return StoreChoice(
            "redis",
            redis_url=f"{url}?{query}" if query else url,
            url_given=True,
            redis_prefix=prefixes[-1] if prefixes else None,
        )
    raise SettingError(f"{name} must be {accepted}; not {value!r}")


#: ``REP_IDENTITY_ACTION``'s parts (the reasons of their drops) and their defaults
IDENTITY_ACTIONS: Mapping[str, str] = {"token-missing": "warn", "identity-changed": "drop"}
_IDENTITY_CHOICES = ("warn", "drop", "off")


def read_identity_action(name: str, value: Any, get: Getter) -> dict[str, str]:
    """Reader of ``REP_IDENTITY_ACTION``: one action for both parts, or a dict of some."""
    one = choice(*_IDENTITY_CHOICES)
    if isinstance(value, str) and value.strip()[:1] == "{":
        value = _from_command_line(name, value, dict)
    if not isinstance(value, Mapping):
        chosen = one(name, value, get)
        return dict.fromkeys(IDENTITY_ACTIONS, chosen)
    found = dict(IDENTITY_ACTIONS)
    for part, action in value.items():
        if part not in IDENTITY_ACTIONS:
            raise SettingError(
                f"{name}: unknown part {part!r}; known: {', '.join(IDENTITY_ACTIONS)}"
            )
        found[part] = one(f"{name}[{part!r}]", action, get)
    return found


# -- REP_EXCLUDE, REP_ITEM_PROVENANCE (the dataset builder's settings) ------------------------


def read_exclude(name: str, value: Any, get: Getter) -> ExcludedSites | None:
    """Reader of ``REP_EXCLUDE``: a list of domains, or the path of a file of them.

    A file holds one domain a line; ``#`` comments and blank lines are skipped.
    On the command line, a JSON list (``-s 'REP_EXCLUDE=["a.example"]'``) or a path.
    """
    if value is None or value == "" or value is False:
        return None
    if isinstance(value, str) and value.strip()[:1] == "[":
        value = _from_command_line(name, value, list)
    try:
        if isinstance(value, (str, os.PathLike)):
            found = os.fspath(value)
            try:
                with open(found, encoding="utf-8") as f:
                    sites = ExcludedSites.parse(f, source=str(found))
            except OSError as exc:
                raise SettingError(
                    f"{name} = {value!r}: cannot read the list of excluded sites "
                    f"({exc.strerror or exc}); give a file of domains or a list"
                ) from None
            except UnicodeDecodeError:
                raise SettingError(f"{name} = {value!r}: the file is not UTF-8 text") from None
        elif isinstance(value, Iterable) and not isinstance(value, (bytes, Mapping)):
            sites = ExcludedSites.parse(list(value))
        else:
            raise SettingError(f"{name} must be a list of domains or a file path, not {value!r}")
    except ExclusionError as exc:
        raise SettingError(f"{name}: {exc}") from None
    return sites or None


def read_provenance(name: str, value: Any, get: Getter) -> str | None:
    """Reader of ``REP_ITEM_PROVENANCE``: the item field to fill, or off."""
    if value is None or value is False or value == "":
        return None
    if value is True:
        return "_rep"
    if isinstance(value, str):
        text = value.strip()
        if text.lower() in _FALSE:
            return None
        if text.lower() in _TRUE:
            return "_rep"
        if text.isidentifier():
            return text
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
_PERCENT_THRESHOLDS = frozenset({"uses_refused", "items_dropped"})


def read_spidermon(name: str, value: Any, get: Getter) -> dict[str, int] | None:
    """Reader of ``REP_SPIDERMON``: off (None), on with the default thresholds, or a dict
    of thresholds to change (:data:`SPIDERMON_THRESHOLDS`); a JSON dict on the command line."""
    if isinstance(value, str) and value.strip()[:1] == "{":
        value = _from_command_line(name, value, dict)
    if not isinstance(value, Mapping):
        if value is None or not flag(name, value):
            return None
        return dict(SPIDERMON_THRESHOLDS)
    found = dict(SPIDERMON_THRESHOLDS)
    for key, raw in value.items():
        if key not in SPIDERMON_THRESHOLDS:
            known = ", ".join(SPIDERMON_THRESHOLDS)
            raise SettingError(f"{name}: no threshold {key!r}; the thresholds are {known}")
        number: int = whole()(f"{name}[{key!r}]", raw, get)
        if key in _PERCENT_THRESHOLDS and number > 100:
            raise SettingError(
                f"{name}[{key!r}] is a whole number of percent, 0 to 100; not {raw!r}"
            )
        found[key] = number
    return found


# -- the table ----------------------------------------------------------------------------------


class Setting(Generic[T]):
    """One row of the table: a ``REP_*`` setting, its default and its reader.

    Declared in the body of :class:`RepSettings`, the row is also the
    attribute that holds the checked value.
    """

    def __init__(self, name: str, default: Any, read: Reader[T]) -> None:
        self.name = name
        self.default = default
        self.read = read
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
_READ: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()
R = TypeVar("R", bound="ReadOnce")


class ReadOnce:
    """How the table is read: once per crawler, checked, frozen; and what is made from it.

    :class:`RepSettings` holds the rows; this holds the reading and the
    values made from the rows, which are not settings of their own
    (:func:`derived`).
    """

    _values: dict[str, Any]
    #: the test seam (:data:`TUNE`): made values replaced
    _tune: dict[str, Any]
    #: the clock ``REP_CLOCK`` names (not for users: a test's), read once for every component
    clock: Clock
    #: the status table and back-off, for the pure core
    policy: PolicyConfig
    #: page-level pushback, for the pure core (its ramp_max is the crawl's, see pushback_for)
    pushback: PushbackConfig
    #: the uses declared, for the pure core (``REP_USES``, ``REP_USE_ACTION``, ``REP_USE_TOKENS``)
    declared: Declared
    #: fixed (a test may change them through :data:`TUNE`)
    disallowed_action: str
    requeue_parked: bool
    crawl_delay_shared: bool
    cache_compiled_origins: int | None
    max_redirects: int
    store_retention: float
    #: from ``REP_CRAWL_DELAY_MAX``
    crawl_delay_enabled: bool
    #: from ``REP_WORKER_LEASE``
    worker_check_interval: float
    #: from ``REP_CACHE_MAX_BYTES``
    cache_max_origins: int
    cache_compiled_bytes: int
    #: from ``REP_STORE``: ``memory``, ``redis``, ``sqlite`` or ``auto``, and where
    store: str
    redis_url: str | None
    redis_prefix: str
    sqlite_path: str | None
    #: the shared store's robots.txt fetch lock, from ``REP_FETCH_TIMEOUT``
    lock_timeout: float
    #: from ``REP_REPORT``: the summary in the log, and the HTML page's path
    report_enabled: bool
    report_html: str | None
    #: from ``REP_IDENTITY_ACTION``
    identity_token_action: str
    identity_change_action: str

    def __init__(
        self, values: Mapping[str, Any], clock: Any = None, tune: Mapping[str, Any] | None = None
    ) -> None:
        object.__setattr__(self, "_values", dict(values))
        object.__setattr__(self, "_tune", dict(tune or {}))
        object.__setattr__(self, "clock", clock_of(clock))
        made = tuned(derived(cast("RepSettings", self)), self._tune)
        for attribute, value in made.items():
            object.__setattr__(self, attribute, value)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"RepSettings are read once and frozen: cannot set {name!r}")

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, ReadOnce)
            and self._values == other._values
            and self._tune == other._tune
        )

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"RepSettings({self._values!r})"

    @classmethod
    def from_settings(cls: type[R], get: Getter) -> R:
        """Read from a getter (``crawler.settings.get``); raise :class:`SettingError`.

        A removed name still set is a :class:`SettingError` naming what replaces it
        (:func:`check_removed`).
        """
        check_removed(get)
        values = {row.attribute: row.value(get) for row in SETTINGS}
        return cls(values, get("REP_CLOCK"), get(TUNE))

    @classmethod
    def of(cls: type[R], crawler: Any) -> R:
        """The crawler's settings, read on first use and shared by all its components.

        Reading once means a start-up warning is logged once, and every
        component has the same clock, however many ask.
        """
        found = _READ.get(crawler)
        if found is None:
            found = _READ[crawler] = cls.from_settings(crawler.settings.get)
            warn_unknown(crawler.settings)
        return found


class RepSettings(ReadOnce):
    """All ``REP_*`` settings of one crawler, read and checked once: the table's rows."""

    enabled = Setting("REP_ENABLED", True, switch)
    token = Setting("REP_PRODUCT_TOKEN", None, _token)
    fetch_timeout = Setting("REP_FETCH_TIMEOUT", 30.0, seconds(low=0.001))
    cache_ttl = Setting("REP_CACHE_TTL", DAY, seconds(low=1))
    cache_max_bytes = Setting("REP_CACHE_MAX_BYTES", 2 * 2**30, whole(low=1))
    status_actions = Setting("REP_STATUS_ACTIONS", {}, status_actions)
    pause_initial = Setting("REP_PAUSE_INITIAL", 60.0, seconds(low=0.001))
    pause_max = Setting("REP_PAUSE_MAX", 3600.0, seconds(low=0.001))
    # -- what pages say while they are crawled (429, 503, 401/403): core/pushback.py --
    page_status_actions = Setting("REP_PAGE_STATUS_ACTIONS", {}, page_status_actions)
    block_after = Setting("REP_BLOCK_AFTER", 3, whole(low=1))
    pending_wait = Setting("REP_PENDING_WAIT", 2.0, seconds())
    park_max = Setting("REP_PARK_MAX", 100_000, whole())
    park_timeout = Setting("REP_PARK_TIMEOUT", DAY, seconds(low=0.001))
    #: an import path (or a callable); imported by ``crawl/collection.py``
    collection_policy = Setting("REP_COLLECTION_POLICY", None, hook_path)
    collection_unresolved_action = Setting(
        "REP_COLLECTION_UNRESOLVED_ACTION", "drop", choice("drop", "park")
    )
    crawl_delay_max = Setting("REP_CRAWL_DELAY_MAX", 30.0, seconds())
    decision_log = Setting("REP_DECISION_LOG", None, path(directory=False))
    policy_archive = Setting("REP_POLICY_ARCHIVE", None, path(directory=True))
    report = Setting("REP_REPORT", True, read_report)
    #: read into a kind and an address; ``config.store`` is the kind (:func:`derived`)
    store_choice = Setting("REP_STORE", "auto", read_store)
    worker_lease = Setting("REP_WORKER_LEASE", 30.0, seconds(low=0.3))
    page_directives = Setting("REP_PAGE_DIRECTIVES", True, switch)
    page_noindex_action = Setting("REP_PAGE_NOINDEX_ACTION", "drop", choice("drop", "keep"))
    rel_nofollow = Setting("REP_REL_NOFOLLOW", False, switch)
    uses = Setting("REP_USES", [], read_uses)
    use_action = Setting("REP_USE_ACTION", "record", choice("record", "drop"))
    use_tokens = Setting("REP_USE_TOKENS", {}, read_use_tokens)
    browser_guard = Setting("REP_BROWSER_GUARD", True, switch)

    # -- identity: components/identity.py, core/identity.py
    identity_action = Setting("REP_IDENTITY_ACTION", dict(IDENTITY_ACTIONS), read_identity_action)

    # -- excluded sites: core/exclusion.py
    exclude = Setting("REP_EXCLUDE", None, read_exclude)

    # -- provenance on every item: components/provenance.py
    item_provenance = Setting("REP_ITEM_PROVENANCE", None, read_provenance)

    # -- monitors: integrations/monitors.py, the spidermon extra
    spidermon = Setting("REP_SPIDERMON", None, read_spidermon)


#: the table, in the order of the reference's settings table
SETTINGS: tuple[Setting[Any], ...] = tuple(
    row for row in vars(RepSettings).values() if isinstance(row, Setting)
)
#: name -> default, as the add-on installs them
DEFAULTS: Mapping[str, Any] = {row.name: row.default for row in SETTINGS}


#: the local cache's origins: one per this many bytes of ``REP_CACHE_MAX_BYTES``, the least
#: an origin is counted in it (``ORIGIN_BYTES``, 1.5 KiB) and its report counters (~0.4
#: KiB): 2 GiB holds 1,048,576 origins
CACHE_ORIGIN_BYTES = 2048
#: the compiled rules' share of ``REP_CACHE_MAX_BYTES``: an eighth (256 MiB of 2 GiB)
COMPILED_SHARE = 8
#: the shortest robots.txt fetch lock; it is a third of ``REP_FETCH_TIMEOUT`` (10 s at 30 s),
#: renewed every third of itself while the fetch runs
LOCK_MIN = 1.0
#: redirect hops followed for robots.txt (RFC 9309 §2.3.1.2: at least five)
MAX_REDIRECTS = 5


def derived(config: RepSettings) -> dict[str, Any]:
    """The values made from the rows, not settings of their own."""
    store = config.store_choice
    report = config.report
    identity = config.identity_action
    policy = PolicyConfig(
        actions=config.status_actions,
        ttl=config.cache_ttl,
        pause_initial=config.pause_initial,
        pause_max=config.pause_max,
        retry_after_max=config.pause_max,
    )
    return {
        "policy": policy,
        "pushback": PushbackConfig(
            actions=config.page_status_actions,
            floor=min(PushbackConfig.floor, config.pause_max),
            pause_max=config.pause_max,
            block_after=config.block_after,
        ),
        "declared": Declared(config.uses, config.use_action == "drop", config.use_tokens),
        "disallowed_action": DROP,
        "requeue_parked": True,
        # shared whenever the store is (REP_STORE = 'redis'); memory and SQLite share nothing
        "crawl_delay_shared": True,
        "cache_compiled_origins": None,
        "max_redirects": MAX_REDIRECTS,
        # as long as a last good copy may stand in for an unreachable origin's robots.txt
        "store_retention": policy.unreachable_max_age,
        "crawl_delay_enabled": config.crawl_delay_max > 0,
        "worker_check_interval": config.worker_lease / 3,
        # the local cache's bounds, from its byte budget
        "cache_max_origins": max(1, config.cache_max_bytes // CACHE_ORIGIN_BYTES),
        "cache_compiled_bytes": max(1, config.cache_max_bytes // COMPILED_SHARE),
        "store": store.kind,
        "redis_url": store.redis_url,
        "redis_prefix": store.redis_prefix or REDIS_PREFIX,
        "sqlite_path": store.sqlite_path,
        "lock_timeout": max(LOCK_MIN, config.fetch_timeout / 3),
        "report_enabled": report is not False,
        "report_html": report if isinstance(report, str) else None,
        "identity_token_action": identity["token-missing"],
        "identity_change_action": identity["identity-changed"],
    }


#: not for users, a test's seam: a dict replacing values :func:`derived` makes, by attribute
#: (``"max_redirects"``) or a field of one (``"policy.min_ttl"``, ``"pushback.backoff_start"``)
TUNE = "_REP_TUNE"


def tuned(made: dict[str, Any], tune: Mapping[str, Any]) -> dict[str, Any]:
    """``made``, with the values :data:`TUNE` replaces."""
    for key, value in tune.items():
        attribute, _, field = key.partition(".")
        if attribute not in made:
            raise SettingError(f"{TUNE}: no value {attribute!r} to tune")
        made[attribute] = replace(made[attribute], **{field: value}) if field else value
    return made


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


def check_removed(get: Getter) -> None:
    """Raise :class:`SettingError` in one line if a removed name is set, naming what replaces it."""
    for name, instead in REMOVED.items():
        if get(name) is not None:
            raise SettingError(f"{name} was removed: {instead}")


#: ``REP_*`` names read outside the table: not for users, so not in it
INTERNAL = frozenset({"REP_CLOCK"})


def unknown_settings(names: Iterable[str]) -> list[tuple[str, str | None]]:
    """The ``REP_*`` names that are no setting, each with the closest known name, if any."""
    known = [row.name for row in SETTINGS]
    return [
        (name, next(iter(difflib.get_close_matches(name, known, n=1, cutoff=0.6)), None))
        for name in sorted(set(names))
        if name.startswith("REP_")
        and name not in DEFAULTS
        and name not in REMOVED
        and name not in INTERNAL
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
