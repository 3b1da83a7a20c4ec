"""What the reference matcher (``scrapy_rep.robotstxt.reference``) answers for a path.

Shared by the property tests and the differential test against Google's parser, with
the rule lists the property tests draw.
"""

from __future__ import annotations

from hypothesis import strategies as st

from scrapy_rep.robotstxt.parser import Rule
from scrapy_rep.robotstxt.reference import _patterns, matches, reference_match


def reference(rule_list: list[Rule], path: str) -> tuple[int, bool] | None:
    """(weight, allow) of the rule the reference matcher chooses, or None."""
    rule = reference_match(rule_list, path)
    if rule is None:
        return None
    weight = max(len(p) for p in _patterns(rule) if matches(p, path))
    return weight, rule.allow


#: many rules sharing their first characters: long chains of keys that are prefixes of each other
HEADS = ["/", "/a", "/ab", "/abc", "/abcd", "/abd", "/b", "/ba", "/*", "/a*", "*"]
many_rules = st.lists(
    st.builds(
        Rule,
        st.booleans(),
        st.tuples(st.sampled_from(HEADS), st.text("abcd/*$.", max_size=6)).map("".join),
        st.integers(1, 1000),
    ),
    max_size=40,
)
