"""A page's pause shared through the store: the cluster's (Redis) or the next run's (SQLite)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from scrapy_rep.core.pushback import PauseState
from scrapy_rep.runtime.store.base import SharedStore

logger = logging.getLogger(__name__)

#: what a crawler does with a pause the store holds (PageSignals.adopt)
Adopt = Callable[[str, PauseState], None]


class SharedPauses:
    """This crawler's page pauses saved in the shared store, and the store's adopted here.

    Its own class because sharing has a life apart from the pauses
    themselves: saves run in the background (a failure is logged, never
    raised into the crawl), and what the store holds is read once, as the
    spider opens, before the first request is judged.
    """

    def __init__(self, shared: SharedStore) -> None:
        self.shared = shared

    def listen(self, adopt: Adopt) -> None:
        """Hear each pause another worker saves, as it is saved: ``adopt`` it here."""
        self.shared.on_pause(adopt)

    def save(self, origin: str, state: PauseState) -> None:
        """Save a page's pause in the shared store (in the background; a failure is logged)."""
        task = asyncio.ensure_future(self.shared.save_pause(origin, state))
        task.add_done_callback(_log_store_failure)
        _BACKGROUND.add(task)
        task.add_done_callback(_BACKGROUND.discard)

    async def load(self, adopt: Adopt) -> None:
        """The pauses the store holds (another worker's, or the last run's): honoured here."""
        if not hasattr(self.shared, "load_pauses"):
            return
        try:
            pauses = await self.shared.load_pauses()
        except Exception as exc:
            logger.warning(
                "scrapy-rep: could not read the page pauses of the shared store (%(error)s)",
                {"error": f"{type(exc).__name__}: {exc}"},
            )
            return
        for origin, state in pauses.items():
            adopt(origin, state)


#: background saves of page pauses, kept until done
_BACKGROUND: set[asyncio.Future[None]] = set()


def _log_store_failure(task: asyncio.Future[None]) -> None:
    if not task.cancelled() and task.exception() is not None:
        logger.warning(
            "scrapy-rep: could not share a page pause through the store (%(error)s)",
            {"error": repr(task.exception())},
        )
