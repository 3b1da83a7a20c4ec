"""What the reference matcher (``scrapy_rep.robotstxt.reference``) answers for a path.

Shared by the property tests and the differential test against Google's parser.
"""

from __future__ import annotations

from scrapy_rep.robotstxt.parser import Rule
from scrapy_rep.robotstxt.reference import _patterns, matches, reference_match


def reference(rule_list: list[Rule], path: str) -> tuple[int, bool] | None:
    """(weight, allow) of the rule the reference matcher chooses, or None."""
    rule = reference_match(rule_list, path)
    if rule is None:
        return None
    weight = max(len(p) for p in _patterns(rule) if matches(p, path))
    return weight, rule.allow
