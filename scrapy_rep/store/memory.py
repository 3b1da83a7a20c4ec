"""The in-process policy cache: LRU-bounded, parsed files shared by digest."""

from __future__ import annotations

from collections import OrderedDict

from scrapy_rep.policy import Policy
from scrapy_rep.robotstxt import RobotsTxt, parse


class PolicyCache:
    """Policies by origin, at most ``max_origins``; least recently used go first.

    Parsed files are kept by body digest, so origins serving one file (and
    spiders with different tokens) share one parse.
    """

    def __init__(self, max_origins: int = 100_000, max_parsed: int = 1_000) -> None:
        self.max_origins = max_origins
        self.max_parsed = max_parsed
        self._policies: OrderedDict[str, Policy] = OrderedDict()
        self._parsed: OrderedDict[str, RobotsTxt] = OrderedDict()
        self.evictions = 0

    def __len__(self) -> int:
        return len(self._policies)

    def get(self, origin: str) -> Policy | None:
        policy = self._policies.get(origin)
        if policy is not None:
            self._policies.move_to_end(origin)
        return policy

    def put(self, origin: str, policy: Policy) -> None:
        self._policies[origin] = policy
        self._policies.move_to_end(origin)
        while len(self._policies) > self.max_origins:
            self._policies.popitem(last=False)
            self.evictions += 1

    def forget(self, origin: str | None = None) -> None:
        """Drop one origin, or everything."""
        if origin is None:
            self._policies.clear()
        else:
            self._policies.pop(origin, None)

    def robots(self, policy: Policy) -> RobotsTxt | None:
        """The parsed file behind an ``ok`` policy, parsed once per digest."""
        if policy.body is None or policy.digest is None:
            return None
        robots = self._parsed.get(policy.digest)
        if robots is None:
            robots = self._parsed[policy.digest] = parse(policy.body)
            while len(self._parsed) > self.max_parsed:
                self._parsed.popitem(last=False)
        else:
            self._parsed.move_to_end(policy.digest)
        return robots
