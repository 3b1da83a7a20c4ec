"""One crawler's side of a shared resolver of a well-known file (robots.txt, tdmrep.json):
its fetch for this crawler, and every new policy heard, whoever fetched it.
"""

from __future__ import annotations

from collections.abc import Callable

from scrapy_rep.core.policy import Conditional, FetchResult, Policy
from scrapy_rep.runtime.resolver import Fetch, FetchAbandoned, Resolver


class FileListener:
    """Fetches a resolver's file for this crawler; hears each new policy of the resolver."""

    def __init__(self, fetcher: Fetch, resolver: Resolver, closing: Callable[[], bool]) -> None:
        self.fetcher = fetcher
        self.resolver = resolver
        #: whether this crawler is closing: a fetch now is abandoned, not learnt from
        self.closing = closing
        #: origin -> this crawler's fetch result, until the policy it gives is recorded with it
        self._results: dict[str, FetchResult] = {}
        #: one object, so that a policy's ``fetched`` says by identity whether it was ours
        self.fetch: Fetch = self._fetch
        resolver.listeners.append(self)

    def leave(self) -> None:
        if self in self.resolver.listeners:
            self.resolver.listeners.remove(self)

    def before_fetch(self, origin: str) -> None:
        pass

    async def _fetch(self, origin: str, validators: Conditional | None = None) -> FetchResult:
        if self.closing():
            raise FetchAbandoned(origin)
        self.before_fetch(origin)
        result = await self.fetcher(origin, validators)
        if result.error and self.closing():
            raise FetchAbandoned(origin)  # cut short by our own close, not the site's fault
        self._results[origin] = result  # recorded with the policy it gives
        return result

    def on_policy(
        self, origin: str, old: Policy | None, new: Policy, fetched: Fetch | None
    ) -> None:
        here = fetched is self.fetch
        self.heard(origin, old, new, self._results.pop(origin, None) if here else None, here)

    def on_abandoned(self, origin: str) -> None:
        self.abandoned(origin, self._results.pop(origin, None))

    def heard(
        self, origin: str, old: Policy | None, new: Policy, result: FetchResult | None, here: bool
    ) -> None:
        """What a new policy means here; ``here``: this crawler's fetch (``result``) made it."""
        raise NotImplementedError

    def abandoned(self, origin: str, result: FetchResult | None) -> None:
        """What a fetch that ended without a policy means here (``result``: if ours)."""
        raise NotImplementedError
