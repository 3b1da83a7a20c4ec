"""The interface of a store shared between crawler processes (e.g. Redis)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from scrapy_rep.core.policy import Policy

#: told a key an operator forgot (``None``: every key)
Invalidated = Callable[[str | None], None]


class SharedStore(Protocol):
    """Facts per origin that every worker of a cluster sees.

    A worker judges with its own product token, so the store keeps the
    policy (body included), never a verdict. ``acquire`` gives one worker the
    right to fetch an origin's robots.txt until ``release``, or ``ttl`` seconds
    after the last ``acquire`` or ``renew``: a lease, so a dead worker blocks
    the others for one ``ttl`` at most.
    """

    async def load(self, origin: str) -> Policy | None: ...

    async def save(self, origin: str, policy: Policy) -> None: ...

    async def acquire(self, origin: str, ttl: float) -> str | None:
        """A lock token if this worker may fetch now, else None."""
        ...

    async def renew(self, origin: str, token: str, ttl: float) -> bool:
        """Extend a held lock by ``ttl`` seconds (a lease); False if it was lost."""
        ...

    async def release(self, origin: str, token: str) -> None: ...

    def on_invalidate(self, listener: Invalidated) -> None:
        """Call ``listener(key)`` when an operator forgets keys (``scrapy-rep store``)."""
        ...

    async def close(self) -> None: ...
