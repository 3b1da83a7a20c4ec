"""tdmrep.json per origin, through the robots.txt machinery: one fetch, one cache, one store.

A :class:`~scrapy_rep.runtime.resolver.Resolver` of its own gives the file
the robots.txt file's single flight, local cache (:class:`TdmCache`, the
parsed file kept with its policy), TTL and shared store (the same Redis or
SQLite store, keyed by the file's URL instead of the origin, so the two
never meet). Crawlers sharing a robots.txt resolver share this one too.

Its status table is its own (:data:`TDM_ACTIONS`): a 2xx is parsed; any
4xx (401, 403 and 429 included) and a redirect that leads nowhere mean no
reservation; a 5xx or a network error leaves every answer from the file
unknown until the next TTL. Nothing here ever pauses an origin.
"""

from __future__ import annotations

import asyncio
import weakref
from dataclasses import replace
from typing import Any

from scrapy_rep.core.policy import Action, Policy, PolicyConfig, Status
from scrapy_rep.core.tdmrep import NO_RULES, USE, WELL_KNOWN, TdmRules, parse_tdmrep, tdmrep_url
from scrapy_rep.core.uses import UNKNOWN, UseAnswer
from scrapy_rep.runtime.resolver import Fetch, Resolver
from scrapy_rep.runtime.store.memory import PolicyCache

#: outcome -> action for tdmrep.json: rules (parse), allow (no reservation), disallow (unknown)
TDM_ACTIONS = {
    "2xx": Action.RULES,
    "4xx": Action.ALLOW,
    "401": Action.ALLOW,
    "403": Action.ALLOW,
    "429": Action.ALLOW,
    "3xx": Action.ALLOW,
    "redirect-limit": Action.ALLOW,
    "5xx": Action.DISALLOW,
    "excluded-redirect": Action.DISALLOW,
    "network": Action.DISALLOW,
}


def tdm_config(robots: PolicyConfig) -> PolicyConfig:
    """The robots.txt policy knobs for tdmrep.json: same TTLs, a failure kept for one TTL."""
    return replace(
        robots,
        actions=dict(TDM_ACTIONS),
        pause_initial=robots.ttl,
        pause_max=robots.ttl,
        use_stale=False,  # a 5xx means "unknown", not "the file of yesterday"
    )


def tdm_key(origin: str) -> str:
    """The resolver's and the shared store's key for an origin's tdmrep.json."""
    return origin + WELL_KNOWN


def origin_of_key(key: str) -> str:
    return key[: -len(WELL_KNOWN)]


def tdmrep_url_of_key(key: str) -> str:
    return tdmrep_url(origin_of_key(key))


class TdmCache(PolicyCache):
    """A :class:`PolicyCache` whose bodies are tdmrep.json files."""

    WINDOW = False  # a parsed tdmrep.json has nothing to release: its footprint is counted

    def read(self, body: bytes) -> Any:
        return parse_tdmrep(body)

    def rules(self, policy: Policy) -> TdmRules | None:
        """The parsed file behind an ``ok`` policy."""
        parsed: Any = self.robots(policy)
        return parsed if isinstance(parsed, TdmRules) else None


#: robots.txt resolver -> its tdmrep.json resolver (shared by the same crawlers, gone with it)
_RESOLVERS: weakref.WeakKeyDictionary[Resolver, Resolver] = weakref.WeakKeyDictionary()


class TdmFiles:
    """The tdmrep.json answers of the origins a crawl visits."""

    def __init__(self, robots: Resolver) -> None:
        resolver = _RESOLVERS.get(robots)
        if resolver is None:
            resolver = _RESOLVERS[robots] = Resolver(
                TdmCache(robots.cache.max_origins),
                tdm_config(robots.config),
                robots.timers,
                shared=robots.shared,
                lock_ttl=robots.lock_ttl,
                poll_interval=robots.poll_interval,
                fetch_budget=robots.fetch_budget,
                url_of=tdmrep_url_of_key,
            )
            if robots.shared is not None:  # an operator's ``store forget`` reaches this cache too
                robots.shared.on_invalidate(resolver.cache.forget)
        self.resolver = resolver
        self.clock = robots.clock

    def fresh(self, origin: str) -> Policy | None:
        """The origin's tdmrep.json policy if it is fresh; no I/O."""
        policy = self.resolver.current(tdm_key(origin))
        return policy if policy is not None and policy.fresh(self.clock()) else None

    def fetch(self, origin: str, fetch: Fetch) -> asyncio.Task[Policy]:
        """The task that yields a new policy for the origin's file (started if none runs)."""
        return self.resolver.resolve(tdm_key(origin), fetch)

    def rules(self, policy: Policy) -> TdmRules | None:
        """What the file says: its rules (2xx), none (4xx), or None: unknown (5xx, network)."""
        if policy.status is Status.OK:
            cache = self.resolver.cache
            assert isinstance(cache, TdmCache)
            found = cache.rules(policy)
            return found if found is not None else NO_RULES
        if policy.status is Status.UNAVAILABLE:
            return NO_RULES
        return None

    def answer(self, policy: Policy, url: str) -> UseAnswer | None:
        """The file's ``train-ai`` answer for ``url``; None when the file says nothing of it.

        A file that could not be read (5xx, network) answers ``unknown``, so the
        record says why nothing is known.
        """
        rules = self.rules(policy)
        if rules is None:
            said = policy.http_status or policy.outcome
            return UseAnswer(USE, UNKNOWN, f"tdmrep.json {said}: unknown until refetched")
        return rules.answer(url)
