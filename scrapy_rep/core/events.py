"""What happened in a crawl, as frozen values, for the sink's ``emit``.

Pure: URLs, policies and parse results, never a Scrapy object. Per-request answers are
not here: they go to ``Telemetry.judged`` / ``final`` with the record, allocating nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from scrapy_rep.core.pause import PauseState
from scrapy_rep.core.policy import FetchResult, Policy
from scrapy_rep.core.pushback import Pause
from scrapy_rep.robotstxt import Diagnostic

if TYPE_CHECKING:  # the parser stays out of a crawl that declares no use
    from scrapy_rep.core.tdmrep import TdmRules


@dataclass(frozen=True, slots=True)
class Parked:
    """A request held (``reason``: ``origin-paused``, ``origin-pending``, ...)."""

    origin: str
    url: str
    reason: str
    #: held for what a page said: that pause (the status, the page, ``Retry-After``)
    pause: PauseState | None = None


@dataclass(frozen=True, slots=True)
class Released:
    """A held request handed back to the scheduler (``reason``: why it was held)."""

    origin: str
    url: str
    reason: str = ""


@dataclass(frozen=True, slots=True)
class Paused:
    """An origin paused, for the cause its record says (``state.cause``): its robots.txt
    unreadable (``origin-paused``; ``policy``: the policy that paused it), or a page's 429,
    503, 401/403s or walls in a row (``page``: what the page side saw, a block's statuses
    and URLs). ``shared``: another worker of the cluster saw it."""

    origin: str
    state: PauseState
    policy: Policy | None = None
    page: Pause | None = None
    shared: bool = False


@dataclass(frozen=True, slots=True)
class Resumed:
    """An origin's pause (``state``, with its cause) ended: its requests go again (after a
    page's pause, one at first); ``policy``: robots.txt's new one, when it resumed it."""

    origin: str
    state: PauseState
    policy: Policy | None = None


@dataclass(frozen=True, slots=True)
class PageRefused:
    """A request whose response pushed back (``status``) is held again, not given up;
    ``unsent``: it waited on a download slot and was taken back before it was sent."""

    origin: str
    url: str
    status: int | None
    unsent: bool = False


@dataclass(frozen=True, slots=True)
class RequeuedFromDead:
    """Held requests of a dead worker (its lease expired) moved back into the shared queue.

    ``held``: per URL, what the dead worker recorded when it parked it
    (``core/decision.held_fields``), or None where it recorded nothing readable
    (an older version's record: the URL alone)."""

    worker: str
    urls: Sequence[str]
    held: Sequence[Mapping[str, Any] | None]


@dataclass(frozen=True, slots=True)
class CrawlDelaySet:
    """The Crawl-delay applied to an origin's requests for its current robots.txt body."""

    origin: str
    delay: float | None


@dataclass(frozen=True, slots=True)
class CrawlDelayCapped:
    """An origin asked for a Crawl-delay longer than ``REP_CRAWL_DELAY_MAX``: ``cap`` applies."""

    origin: str
    asked: float
    cap: float


@dataclass(frozen=True, slots=True)
class SlotDelayRaised:
    """A download slot's delay raised to a Crawl-delay floor (``slot``: Scrapy's slot key)."""

    slot: str
    delay: float


@dataclass(frozen=True, slots=True)
class DelayWaited:
    """A request waited ``seconds`` for its send time under the cluster's Crawl-delay."""

    seconds: float


@dataclass(frozen=True, slots=True)
class Fetched:
    """A robots.txt fetch this crawler made and the policy it gave (None: none came of it,
    its crawler closed); ``licenses``: the file's RSL ``License`` URLs."""

    origin: str
    result: FetchResult | None
    policy: Policy | None
    licenses: Sequence[str] = ()


@dataclass(frozen=True, slots=True)
class Reused:
    """A new policy this crawler did not fetch: another crawler's fetch, or the store's."""

    origin: str
    policy: Policy


@dataclass(frozen=True, slots=True)
class Standing:
    """Where an origin stands after a new policy that did not pause it (a pause is
    :class:`Paused`): unresolved, unreachable, unavailable, stale."""

    origin: str
    policy: Policy


@dataclass(frozen=True, slots=True)
class Parsed:
    """A robots.txt this crawler fetched, parsed: its problems."""

    origin: str
    diagnostics: Sequence[Diagnostic]


@dataclass(frozen=True, slots=True)
class PageUses:
    """A response's answer for each declared use, after its own signals."""

    origin: str | None
    url: str
    uses: dict[str, dict[str, str]]


@dataclass(frozen=True, slots=True)
class PageSaid:
    """What a response's page directives say that the crawl acts on: ``noindex``,
    ``nofollow`` (``said``: each with where it was said, for ``token``), and the
    ``unavailable_after`` values that are no date (ignored)."""

    url: str
    token: str
    noindex: bool
    nofollow: bool
    said: Sequence[str]
    invalid_dates: Sequence[str]


@dataclass(frozen=True, slots=True)
class NoindexItem:
    """An item of a ``noindex`` page (``said``: where): dropped, or ``kept`` by the settings."""

    url: str
    said: str
    kept: bool


@dataclass(frozen=True, slots=True)
class RobotsServedFromCache:
    """A spider's own robots.txt request (``SitemapSpider``) answered from the cache."""

    origin: str


@dataclass(frozen=True, slots=True)
class HeldRestored:
    """``count`` requests kept in the JOBDIR at the last stop sent to be judged again."""

    count: int


@dataclass(frozen=True, slots=True)
class HeldUnrecorded:
    """A held request that cannot be recorded in Redis (``error``: why; it is not
    serialisable): lost if its worker is killed."""

    url: str
    error: str


@dataclass(frozen=True, slots=True)
class ItemDropped:
    """An item the page middleware dropped for what its response says; with ``media``,
    a media pipeline's download failed for what its own response says."""

    url: str
    reason: str
    detail: str
    media: bool = False


@dataclass(frozen=True, slots=True)
class LicenceWall:
    """A response that is a licence or payment wall (:mod:`scrapy_rep.core.walls`);
    ``walled``: it was the ``REP_BLOCK_AFTER``-th refusal in a row, and blocked its
    origin; ``licenses``: the RSL ``License:`` URLs of the origin's robots.txt, shown
    beside it."""

    origin: str
    url: str
    wall: dict[str, Any]
    walled: bool
    licenses: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class TdmrepFetched:
    """A tdmrep.json fetch this crawler made and the policy it gave (None: none came of it);
    ``rules``: what the file says, None when it could not be read."""

    origin: str
    result: FetchResult | None
    policy: Policy | None
    rules: TdmRules | None = None


@dataclass(frozen=True, slots=True)
class IdentityMismatch:
    """A request leaving for the network under an identity it should not have
    (``core/identity.py``): ``reason`` ``token-missing`` or ``identity-changed``;
    ``action`` ``warn`` (sent) or ``drop``; ``first`` for the origin's first one."""

    origin: str
    url: str
    reason: str
    action: str
    user_agent: str
    detail: str
    first: bool


#: every event ``Telemetry.record`` takes
Event = (
    Parked
    | Released
    | Paused
    | Resumed
    | PageRefused
    | RequeuedFromDead
    | HeldRestored
    | HeldUnrecorded
    | CrawlDelaySet
    | CrawlDelayCapped
    | SlotDelayRaised
    | DelayWaited
    | Fetched
    | Reused
    | Standing
    | Parsed
    | PageUses
    | PageSaid
    | NoindexItem
    | RobotsServedFromCache
    | ItemDropped
    | LicenceWall
    | TdmrepFetched
    | IdentityMismatch
)
