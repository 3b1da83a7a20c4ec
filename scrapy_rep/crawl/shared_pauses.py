"""A page's pause shared through the store: the cluster's (Redis) or the next run's (SQLite)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from scrapy_rep.core.pushback import PauseState
from scrapy_rep.runtime.store.base import Invalidated, SharedStore

logger = logging.getLogger(__name__)

#: what a crawler does with a pause the store holds (PageSignals.adopt): True if adopted
Adopt = Callable[[str, PauseState], bool]


class SharedPauses:
    """This crawler's page pauses saved in the shared store, and the store's adopted here.

    Its own class because sharing has a life apart from the pauses
    themselves: saves run in the background (a failure is logged, never
    raised into the crawl). Nothing is read as the spider opens: the store
    tells an origin's pause with its robots.txt policy, as the crawl first
    asks for the origin (a store of 60,000 pauses costs a new worker nothing
    at open), and another worker's pause as it is saved; one line at close
    says how many were honoured.
    """

    def __init__(self, shared: SharedStore) -> None:
        self.shared = shared
        #: pauses of the store (another worker's, an earlier crawl's) adopted here
        self.adopted = 0

    def listen(self, adopt: Adopt, lift: Invalidated) -> None:
        """Hear each pause the store tells (another worker's as it is saved, an origin's as
        it is first asked for): ``adopt`` it here; and each origin an operator forgets in
        the store (``scrapy-rep store forget``): ``lift`` its pause here."""

        def heard(origin: str, state: PauseState) -> None:
            if adopt(origin, state):
                self.adopted += 1

        self.shared.on_pause(heard)
        self.shared.on_invalidate(lift)

    def save(self, origin: str, state: PauseState) -> None:
        """Save a page's pause in the shared store (in the background; a failure is logged)."""
        task = asyncio.ensure_future(self.shared.save_pause(origin, state))
        task.add_done_callback(_log_store_failure)
        _BACKGROUND.add(task)
        task.add_done_callback(_BACKGROUND.discard)

    def summary(self) -> None:
        """The one line about the store's pauses, at close (none when none was adopted)."""
        if self.adopted:
            logger.info(
                "scrapy-rep: %(n)d page pauses of the shared store (other workers', earlier "
                "crawls') honoured, each read as its origin was first asked for",
                {"n": self.adopted},
            )


#: background saves of page pauses, kept until done
_BACKGROUND: set[asyncio.Future[None]] = set()


def _log_store_failure(task: asyncio.Future[None]) -> None:
    if not task.cancelled() and task.exception() is not None:
        logger.warning(
            "scrapy-rep: could not share a page pause through the store (%(error)s)",
            {"error": repr(task.exception())},
        )
