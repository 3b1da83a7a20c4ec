"""The matcher's specification: RFC 9309 §2.2.2-2.2.3 written the slow, obvious way.

Every rule is tried against the whole path; the heaviest match decides and
allow wins a tie. A rule's weight is the length of its normalised pattern
(``*`` and ``$`` included, as Google counts); a raw ``*`` matches any run of
characters, a trailing ``$`` anchors the end, ``%2A`` / ``%24`` are the
literal characters. Google's index.html rule: ``Allow: /d/index.htm…``
also allows ``/d/`` itself (as the pattern ``/d/$``).

:class:`~scrapy_rep.robotstxt.matcher.RuleSet` is the fast form of this;
the property tests check one against the other. This one is quadratic at
worst (a set of pattern positions per path character), never exponential,
and is not meant for the request path.
"""

from __future__ import annotations

from collections.abc import Iterable

from scrapy_rep.robotstxt.parser import Rule
from scrapy_rep.robotstxt.paths import normalise

#: a wildcard position in a compiled pattern (every other item is one character)
STAR = None


def reference_match(rules: Iterable[Rule], path: str) -> Rule | None:
    """The deciding rule for a path in ``normalise_path`` form, or None if none matches.

    Among rules of equal weight and kind, the first in file order.
    """
    best: Rule | None = None
    best_rank = (-1, False)
    for rule in rules:
        for pattern in _patterns(rule):
            rank = (len(pattern), rule.allow)
            if rank > best_rank and matches(pattern, path):
                best, best_rank = rule, rank
    return best


def _patterns(rule: Rule) -> list[str]:
    """The normalised pattern of a rule, and the directory Google's index.html rule adds."""
    pattern = normalise(rule.pattern)
    if not pattern.startswith(("/", "*")):
        return []  # matches nothing: Google anchors every pattern at the leading '/'
    patterns = [pattern]
    body = pattern[:-1] if pattern.endswith("$") else pattern
    slash = body.rfind("/")
    if rule.allow and body.startswith("/index.htm", slash):
        patterns.append(body[: slash + 1] + "$")
    return patterns


def matches(pattern: str, path: str) -> bool:
    """Does a normalised pattern match the path from its start (its end too, with ``$``)?"""
    anchored = pattern.endswith("$")
    items = _items(pattern[:-1] if anchored else pattern)
    end = len(items)
    states = _closure(items, {0})
    for char in path:
        if not anchored and end in states:
            return True  # the whole pattern matched a prefix of the path
        states = _closure(items, _step(items, states, char))
        if not states:
            return False
    return end in states


def _items(body: str) -> list[str | None]:
    """The pattern as characters and :data:`STAR`; ``%2A`` and ``%24`` are plain characters."""
    items: list[str | None] = []
    for n, piece in enumerate(body.split("*")):
        if n:
            items.append(STAR)
        items.extend(piece.replace("%2A", "*").replace("%24", "$"))
    return items


def _step(items: list[str | None], states: set[int], char: str) -> set[int]:
    """Positions after reading one path character."""
    after = set()
    for at in states:
        if at < len(items):
            item = items[at]
            if item is STAR:
                after.add(at)  # the star takes the character and may take more
            elif item == char:
                after.add(at + 1)
    return after


def _closure(items: list[str | None], states: set[int]) -> set[int]:
    """Add the positions past each star reached: a star may match nothing."""
    todo = list(states)
    while todo:
        at = todo.pop()
        if at < len(items) and items[at] is STAR and at + 1 not in states:
            states.add(at + 1)
            todo.append(at + 1)
    return states
