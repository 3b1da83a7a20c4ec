"""What a robots.txt fetch outcome means for an origin: the status table, as data.

:func:`classify` names a fetch's outcome, :data:`DEFAULT_ACTIONS` maps it to an action and
:func:`next_policy` makes the new :class:`Policy`; the documentation's table comes from it.
"""

from __future__ import annotations

import email.utils
import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from enum import Enum

from scrapy_rep.core.fields import FIELD_OCTETS
from scrapy_rep.core.pause import ORIGIN_PAUSED, Backoff, PauseState
from scrapy_rep.robotstxt.text import printable


class Action(str, Enum):
    RULES = "rules"
    ALLOW = "allow"
    DISALLOW = "disallow"
    PAUSE = "pause"


class Status(str, Enum):
    """Where an origin stands; the ``policy_status`` of a decision record."""

    OK = "ok"  # rules from a robots.txt apply
    UNAVAILABLE = "unavailable"  # no usable file; everything allowed
    UNREACHABLE = "unreachable"  # complete disallow
    PAUSED = "paused"  # held; refetch at ``expires_at``
    UNRESOLVED = "unresolved"  # gave up pausing; requests are dropped until expiry


#: outcome -> action, the defaults (``REP_STATUS_ACTIONS`` overrides single rows)
DEFAULT_ACTIONS: Mapping[str, Action] = {
    "2xx": Action.RULES,
    "4xx": Action.ALLOW,
    "401": Action.PAUSE,
    "403": Action.PAUSE,
    "429": Action.PAUSE,
    "5xx": Action.PAUSE,
    "network": Action.PAUSE,
    "redirect-limit": Action.ALLOW,
    "3xx": Action.ALLOW,
    "excluded-redirect": Action.PAUSE,
}

#: outcomes after which a previous good copy may stand in (§2.3.1.4)
UNREACHABLE_OUTCOMES = frozenset({"5xx", "network", "excluded-redirect"})

#: a 304 to a conditional refetch renews the copy in hand (not a row of the table)
NOT_MODIFIED = "not-modified"


@dataclass(frozen=True, slots=True)
class FetchResult:
    """How one robots.txt fetch ended, redirects already followed."""

    url: str
    final_url: str
    status: int | None = None  # None: no HTTP response at all
    body: bytes = b""
    headers: Mapping[str, str] = field(default_factory=dict)  # lower-cased names
    error: str | None = None  # exception class name for network errors
    truncated: bool = False
    redirects: int = 0
    #: the last hop still redirected: more than 5 hops
    redirect_limit: bool = False
    #: the last hop was asked with the validators of the copy in hand (a 304 may answer)
    conditional: bool = False
    #: where the last hop redirected to, not followed: a site of REP_EXCLUDE, and its entry
    excluded: str | None = None


@dataclass(frozen=True)
class PolicyConfig:
    """The knobs of the status policy; see the settings reference."""

    actions: Mapping[str, Action] = field(default_factory=lambda: dict(DEFAULT_ACTIONS))
    ttl: float = 86_400.0
    min_ttl: float = 60.0
    pause_initial: float = 60.0
    pause_max: float = 3_600.0
    pause_max_tries: int = 5
    retry_after_max: float = 3_600.0
    use_stale: bool = True
    unreachable_max_age: float = 30 * 86_400.0

    @property
    def backoff(self) -> Backoff:
        """The pause's back-off; a 429's ``Retry-After`` within ``[1, retry_after_max]``."""
        return Backoff(
            self.pause_initial,
            2.0,
            self.pause_max,
            self.pause_max_tries,
            floor=1.0,
            hint_cap=self.retry_after_max,
        )


@dataclass(frozen=True, slots=True)
class Policy:
    """An origin's standing after its latest robots.txt fetch."""

    status: Status
    outcome: str
    http_status: int | None
    fetched_at: float
    #: when the next fetch is due (for a paused origin: end of the pause)
    expires_at: float
    url: str
    final_url: str
    reason: str
    #: the robots.txt body the rules come from (``ok`` only; possibly a stale copy)
    body: bytes | None = None
    digest: str | None = None
    truncated: bool = False
    #: consecutive failed fetches
    failures: int = 0
    unreachable_since: float | None = None
    #: when the body in use was fetched, if it is a stale good copy
    stale_since: float | None = None
    #: the validators of the 200 the body came from, for a conditional refetch
    etag: str | None = None
    last_modified: str | None = None

    def fresh(self, now: float) -> bool:
        return now < self.expires_at

    def usable_copy(self) -> Policy | None:
        """This policy if it carries rules that a later failure may fall back on."""
        return self if self.status is Status.OK and self.body is not None else None

    def pause(self) -> PauseState | None:
        """The origin's pause if this policy pauses it; its end is the refetch."""
        if self.status is not Status.PAUSED:
            return None
        return PauseState(
            self.expires_at,
            ORIGIN_PAUSED,
            self.http_status or 0,
            self.url,
            None,
            self.failures,
            self.fetched_at,
        )


@dataclass(frozen=True, slots=True)
class Conditional:
    """The validators a refetch sends, and the URL they belong to (the last 200's)."""

    url: str
    etag: str | None
    last_modified: str | None

    def headers(self) -> dict[str, str]:
        asked = (("If-None-Match", self.etag), ("If-Modified-Since", self.last_modified))
        return {name: value for name, value in asked if value}


def conditional(previous: Policy | None) -> Conditional | None:
    """The validators of the copy a 304 to a refetch would renew, if it has any."""
    good = previous.usable_copy() if previous is not None else None
    if good is None or not (good.etag or good.last_modified):
        return None
    return Conditional(good.final_url, good.etag, good.last_modified)


def classify(result: FetchResult) -> str:
    """The outcome name of a fetch: the row of the status table it falls in."""
    if result.status is None:
        return "network"
    if result.excluded is not None:
        return "excluded-redirect"
    if result.redirect_limit:
        return "redirect-limit"
    code = result.status
    if code == 304 and result.conditional:
        return NOT_MODIFIED
    if 200 <= code < 300:
        return "2xx"
    if code in (401, 403, 429):
        return str(code)
    if code >= 500:
        return "5xx"
    if 300 <= code < 400:
        return "3xx"
    return "4xx"


def digest_of(body: bytes) -> str:
    return hashlib.sha256(body).hexdigest()[:32]


_MAX_AGE = re.compile(r"(?:^|,)\s*(s-maxage|max-age)\s*=\s*\"?([0-9]+)", re.I)
#: ASCII digits only (``str.isdigit()`` takes ``²``); ``float()`` reads 5,000 of them
_SECONDS = re.compile(r"[0-9]+")


def cache_lifetime(headers: Mapping[str, str], now: float) -> float | None:
    """Seconds the server lets us keep the file, from Cache-Control or Expires."""
    control = _field(headers, "cache-control")
    if re.search(r"(?:^|,)\s*(no-store|no-cache)\b", control, re.I):
        return 0.0
    ages = [float(m[2]) for m in _MAX_AGE.finditer(control)]
    if ages:
        return min(ages)
    expires = _field(headers, "expires")
    if expires:
        when = http_date(expires)
        return max(0.0, when - now) if when is not None else 0.0
    return None


def _field(headers: Mapping[str, str], name: str) -> str:
    """A header's value, or "" past the bound of every header read (``core/fields.py``)."""
    value = headers.get(name, "")
    return value if len(value) <= FIELD_OCTETS else ""


def retry_after(headers: Mapping[str, str], now: float) -> float | None:
    """Seconds from a Retry-After header (delta or HTTP date); None if absent or unreadable."""
    value = _field(headers, "retry-after").strip()
    if not value:
        return None
    if _SECONDS.fullmatch(value):
        return float(value)
    when = http_date(value)
    return None if when is None else max(0.0, when - now)


def http_date(value: str) -> float | None:
    """Epoch seconds of an HTTP date (``Sun, 06 Nov 1994 08:49:37 GMT``); None if unreadable."""
    try:
        return email.utils.parsedate_to_datetime(value).timestamp()
    except (TypeError, ValueError, IndexError, OverflowError, OSError):
        return None


def given_up_at(policy: Policy, config: PolicyConfig) -> float | None:
    """When a paused origin is given up if every fetch fails; None if not paused."""
    if policy.status is not Status.PAUSED:
        return None
    return policy.expires_at + config.backoff.left(policy.failures)


def next_policy(
    previous: Policy | None, result: FetchResult, now: float, config: PolicyConfig
) -> Policy:
    """The policy an origin gets from a fetch result. Pure."""
    outcome = classify(result)
    good = previous.usable_copy() if previous else None
    if outcome == NOT_MODIFIED:
        if good is not None:
            return _renewed(good, result, now, config)
        outcome = "3xx"  # no copy to renew (the resolver never asks without one)
    action = Action(config.actions.get(outcome, DEFAULT_ACTIONS.get(outcome, Action.PAUSE)))
    what = f"robots.txt {result.status or result.error or 'error'}"
    if result.excluded is not None:
        what += f" to {printable(result.excluded)}: not followed"

    def make(status: Status, expires_at: float, reason: str) -> Policy:
        return Policy(
            status, outcome, result.status, now, expires_at, result.url, result.final_url, reason
        )

    if action is Action.RULES or action is Action.ALLOW:
        ttl = _ttl(result, now, config)
        if action is Action.ALLOW:
            return make(Status.UNAVAILABLE, now + ttl, f"{what}: unavailable, everything allowed")
        return replace(
            make(Status.OK, now + ttl, f"{what}: rules apply"),
            body=result.body,
            digest=digest_of(result.body),
            truncated=result.truncated,
            etag=result.headers.get("etag") or None,
            last_modified=result.headers.get("last-modified") or None,
        )

    failures = (previous.failures if previous else 0) + 1
    unreachable = outcome in UNREACHABLE_OUTCOMES
    since = None
    if unreachable:
        since = previous.unreachable_since if previous and previous.unreachable_since else now
    pause = config.backoff
    retry_at = now + pause.wait(failures)

    def failed(status: Status, expires_at: float, reason: str) -> Policy:
        return replace(make(status, expires_at, reason), failures=failures, unreachable_since=since)

    if unreachable and since is not None and now - since >= config.unreachable_max_age:
        days = (now - since) / 86_400
        return failed(
            Status.UNAVAILABLE,
            retry_at,
            f"{what}: unreachable for {days:.0f} days, treated as unavailable (RFC 9309 §2.3.1.4)",
        )

    if unreachable and config.use_stale and good is not None:
        return replace(
            good,
            outcome=outcome,
            http_status=result.status,
            fetched_at=now,
            expires_at=retry_at,
            reason=f"{what}: using the last good copy (RFC 9309 §2.3.1.4)",
            failures=failures,
            unreachable_since=since,
            stale_since=good.stale_since or good.fetched_at,
        )

    if action is Action.DISALLOW:
        return failed(Status.UNREACHABLE, retry_at, f"{what}: complete disallow")
    if pause.gives_up(failures):
        return failed(
            Status.UNRESOLVED,
            now + config.pause_max,
            f"{what}: still failing after {failures} tries, giving up",
        )
    wait = pause.wait(failures)
    hint = retry_after(result.headers, now) if outcome == "429" else None
    if hint is not None:
        wait = pause.clamp(hint)
    return failed(
        Status.PAUSED,
        now + wait,
        f"{what}: paused for {wait:g}s (try {failures} of {config.pause_max_tries})",
    )


def _ttl(result: FetchResult, now: float, config: PolicyConfig) -> float:
    lifetime = cache_lifetime(result.headers, now)
    return config.ttl if lifetime is None else max(config.min_ttl, min(config.ttl, lifetime))


def _renewed(good: Policy, result: FetchResult, now: float, config: PolicyConfig) -> Policy:
    """The copy in hand, fresh again after a 304, with any validators it sends (RFC 9110)."""
    return replace(
        good,
        status=Status.OK,
        outcome=NOT_MODIFIED,
        http_status=result.status,
        fetched_at=now,
        expires_at=now + _ttl(result, now, config),
        reason=f"robots.txt {result.status}: not modified, rules apply",
        failures=0,
        unreachable_since=None,
        stale_since=None,
        etag=result.headers.get("etag") or good.etag,
        last_modified=result.headers.get("last-modified") or good.last_modified,
    )
