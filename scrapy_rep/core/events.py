"""A pause, a resume and a refused page, as frozen values for the sink's ``emit``: one
family for every cause of a pause, robots.txt's and a page's alike.

Pure: policies and pauses, never a Scrapy object. Everything else the sink hears by
direct call (``Telemetry.judged``, ``parked``, ``fetched``, ...), allocating nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

from scrapy_rep.core.pause import PauseState
from scrapy_rep.core.policy import Policy
from scrapy_rep.core.pushback import Pause


class Event:
    """The base of every event: a value the sink's handler of its class takes."""

    __slots__ = ()


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
