"""What happened in a crawl, as frozen values, for the sink's ``emit``.

Pure: URLs, policies and parse results, never a Scrapy object. Per-request answers are
not here: they go to ``Telemetry.judged`` / ``final`` with the record, allocating nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from scrapy_rep.core.pause import PauseState
from scrapy_rep.core.policy import FetchResult, Policy
from scrapy_rep.core.pushback import Pause
from scrapy_rep.robotstxt import Diagnostic

if TYPE_CHECKING:  # the parser stays out of a crawl that declares no use
    from scrapy_rep.core.tdmrep import TdmRules


class Event:
    """The base of every event: a value the sink's handler of its class takes."""

    __slots__ = ()


@dataclass(frozen=True, slots=True)
class Parked(Event):
    """A request held (``reason``: ``origin-paused``, ``origin-pending``, ...)."""

    origin: str
    url: str
    reason: str
    #: held for what a page said: that pause (the status, the page, ``Retry-After``)
    pause: PauseState | None = None


@dataclass(frozen=True, slots=True)
class Released(Event):
    """A held request handed back to the scheduler (``reason``: why it was held)."""

    origin: str
    url: str
    reason: str = ""


@dataclass(frozen=True, slots=True)
class Paused(Event):
    """An origin paused for ``state.cause``: robots.txt (``policy``) or a page (``page``);
    ``shared``: another worker of the cluster saw it."""

    origin: str
    state: PauseState
    policy: Policy | None = None
    page: Pause | None = None
    shared: bool = False


@dataclass(frozen=True, slots=True)
class Resumed(Event):
    """An origin's pause ended; ``policy``: robots.txt's new one, when it resumed it."""

    origin: str
    state: PauseState
    policy: Policy | None = None


@dataclass(frozen=True, slots=True)
class PageRefused(Event):
    """A request whose response pushed back is held again; ``unsent``: taken back out of
    a download slot before it was sent."""

    origin: str
    url: str
    status: int | None
    unsent: bool = False


@dataclass(frozen=True, slots=True)
class CrawlDelaySet(Event):
    """The Crawl-delay applied to an origin's requests for its current robots.txt body."""

    origin: str
    delay: float | None


@dataclass(frozen=True, slots=True)
class CrawlDelayCapped(Event):
    """An origin asked for a Crawl-delay longer than ``REP_CRAWL_DELAY_MAX``: ``cap`` applies."""

    origin: str
    asked: float
    cap: float


@dataclass(frozen=True, slots=True)
class SlotDelayRaised(Event):
    """A download slot's delay raised to a Crawl-delay floor (``slot``: Scrapy's slot key)."""

    slot: str
    delay: float


@dataclass(frozen=True, slots=True)
class DelayWaited(Event):
    """A request waited ``seconds`` for its send time under the cluster's Crawl-delay."""

    seconds: float


@dataclass(frozen=True, slots=True)
class Fetched(Event):
    """A robots.txt fetch this crawler made and the policy it gave (None: it closed)."""

    origin: str
    result: FetchResult | None
    policy: Policy | None
    licenses: Sequence[str] = ()


@dataclass(frozen=True, slots=True)
class Reused(Event):
    """A new policy this crawler did not fetch: another crawler's fetch, or the store's."""

    origin: str
    policy: Policy


@dataclass(frozen=True, slots=True)
class Standing(Event):
    """Where an origin stands after a new policy that did not pause it."""

    origin: str
    policy: Policy


@dataclass(frozen=True, slots=True)
class Parsed(Event):
    """A robots.txt this crawler fetched, parsed: its problems."""

    origin: str
    diagnostics: Sequence[Diagnostic]


@dataclass(frozen=True, slots=True)
class PageSaid(Event):
    """What a response's page directives say that the crawl acts on, and where."""

    url: str
    token: str
    noindex: bool
    nofollow: bool
    said: Sequence[str]
    invalid_dates: Sequence[str]


@dataclass(frozen=True, slots=True)
class NoindexItem(Event):
    """An item of a ``noindex`` page (``said``: where): dropped, or ``kept`` by the settings."""

    url: str
    said: str
    kept: bool


@dataclass(frozen=True, slots=True)
class RobotsServedFromCache(Event):
    """A spider's own robots.txt request (``SitemapSpider``) answered from the cache."""

    origin: str


@dataclass(frozen=True, slots=True)
class LicenceWall(Event):
    """A licence or payment wall; ``walled``: the ``REP_BLOCK_AFTER``-th refusal in a row
    blocked its origin; ``licenses``: its robots.txt's RSL ``License:`` URLs."""

    origin: str
    url: str
    wall: dict[str, Any]
    walled: bool
    licenses: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class TdmrepFetched(Event):
    """A tdmrep.json fetch this crawler made, its policy and what the file says."""

    origin: str
    result: FetchResult | None
    policy: Policy | None
    rules: TdmRules | None = None


@dataclass(frozen=True, slots=True)
class IdentityMismatch(Event):
    """A request leaving under an identity it should not have (``core/identity.py``);
    ``first``: the origin's first one."""

    origin: str
    url: str
    reason: str
    action: str
    user_agent: str
    detail: str
    first: bool
