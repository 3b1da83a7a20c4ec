"""tdmrep.json per origin, a well-known file as robots.txt is: one fetch, one cache, one store.

:data:`TDMREP` describes the file to a :class:`~scrapy_rep.runtime.resolver.Resolver`
of its own (:meth:`~scrapy_rep.runtime.resolver.Resolver.for_file`), which gives it the
robots.txt file's single flight, local cache (:class:`TdmCache`, the parsed file kept
with its policy), TTL and shared store (the same Redis or SQLite store, keyed by the
origin and the file's path, so the two never meet). Crawlers sharing a robots.txt
resolver share this one too.

Its status table is its own (:data:`TDM_ACTIONS`): a 2xx is parsed; any
4xx (401, 403 and 429 included) and a redirect that leads nowhere mean no
reservation; a 5xx or a network error leaves every answer from the file
unknown until the next TTL. Nothing here ever pauses an origin.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from scrapy_rep.core.policy import Action, Policy, PolicyConfig, Status
from scrapy_rep.core.tdmrep import NO_RULES, USE, WELL_KNOWN, TdmRules, parse_tdmrep, tdmrep_url
from scrapy_rep.core.uses import UNKNOWN, UseAnswer
from scrapy_rep.runtime.resolver import Resolver, WellKnownFile
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
    """The shared store's key for an origin's tdmrep.json."""
    return TDMREP.key(origin)


class TdmCache(PolicyCache):
    """A :class:`PolicyCache` whose bodies are tdmrep.json files."""

    def read(self, body: bytes) -> Any:
        return parse_tdmrep(body)

    def rules(self, policy: Policy) -> TdmRules | None:
        """The parsed file behind an ``ok`` policy."""
        parsed: Any = self.robots(policy)
        return parsed if isinstance(parsed, TdmRules) else None


#: the file, for a resolver of its own beside robots.txt's (:meth:`Resolver.for_file`)
TDMREP = WellKnownFile("tdmrep.json", tdmrep_url, WELL_KNOWN, tdm_config, TdmCache)


def tdm_rules(resolver: Resolver, policy: Policy) -> TdmRules | None:
    """What the file says: its rules (2xx), none (4xx), or None: unknown (5xx, network)."""
    if policy.status is Status.OK:
        cache = resolver.cache
        assert isinstance(cache, TdmCache)
        found = cache.rules(policy)
        return found if found is not None else NO_RULES
    if policy.status is Status.UNAVAILABLE:
        return NO_RULES
    return None


def tdm_answer(resolver: Resolver, policy: Policy, url: str) -> UseAnswer | None:
    """The file's ``train-ai`` answer for ``url``; None when the file says nothing of it.

    A file that could not be read (5xx, network) answers ``unknown``, so the
    record says why nothing is known.
    """
    rules = tdm_rules(resolver, policy)
    if rules is None:
        said = policy.http_status or policy.outcome
        return UseAnswer(USE, UNKNOWN, f"tdmrep.json {said}: unknown until refetched")
    return rules.answer(url)
