"""The interface of a store shared between crawler processes (e.g. Redis)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from scrapy_rep.core.pause import PauseState
from scrapy_rep.core.policy import Policy

#: told a key an operator forgot (``None``: every key)
Invalidated = Callable[[str | None], None]
#: told an origin a worker paused for what a page said, and the pause
Paused = Callable[[str, PauseState], None]


class SharedStore(Protocol):
    """Facts per origin that every worker of a cluster sees: one record per origin, its
    policy (body included, never a verdict: each worker judges with its own token) and its
    page pause. The right to fetch robots.txt is a lease (``acquire``, ``renew``,
    ``unlock``): a dead worker blocks the others for one ``ttl`` at most."""

    async def load(self, origin: str) -> Policy | None:
        """The stored policy of ``origin``; its page pause, if one lasts, is told to the
        :meth:`on_pause` listeners from the same record."""

    async def save(self, origin: str, policy: Policy) -> None:
        """Replace the policy of ``origin``; its page pause (any worker's) stays."""

    async def acquire(self, origin: str, ttl: float) -> str | None:
        """A lock token if this worker may fetch now, else None."""

    async def renew(self, origin: str, token: str, ttl: float) -> bool:
        """Extend a held lock by ``ttl`` seconds (a lease); False if it was lost."""

    async def unlock(self, origin: str, token: str) -> None: ...

    def on_invalidate(self, listener: Invalidated) -> None:
        """Call ``listener(key)`` when an operator forgets keys (``scrapy-rep store``)."""

    async def save_pause(self, origin: str, state: PauseState) -> None:
        """Keep an origin's page pause in its record until it ends, and tell the workers
        listening (:meth:`on_pause`)."""

    async def load_pauses(self) -> dict[str, PauseState]:
        """Every page pause not over yet, by origin (the CLI's listing; a crawl never asks)."""

    def on_pause(self, listener: Paused) -> None:
        """Call ``listener(origin, state)`` when a worker saves a pause (Redis: any worker of
        the cluster; SQLite: a crawl of this process)."""

    async def close(self) -> None: ...
