"""The Robots Exclusion Protocol (RFC 9309) as pure code: bytes and URLs in, answers out.

>>> robots = parse(b"User-agent: *\\nDisallow: /private\\n")
>>> robots.allowed("mybot", "https://example.com/private/x")
False
>>> print(robots.decide("mybot", "/private/x"))
disallowed by Disallow: /private (line 2) in group user-agent: * (line 1)
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable
from typing import Any

from scrapy_rep.robotstxt.agent import InvalidProductToken, product_token, validate_token
from scrapy_rep.robotstxt.body import Body
from scrapy_rep.robotstxt.intervals import UNSETTLED
from scrapy_rep.robotstxt.matcher import RuleSet, first_of
from scrapy_rep.robotstxt.parser import (
    MAX_BYTES,
    Diagnostic,
    Group,
    Rule,
    Signal,
    UsageRule,
    parse_records,
)
from scrapy_rep.robotstxt.paths import (
    ESCAPED_OCTETS,
    PLAIN_OCTETS,
    ROBOTS_TXT,
    as_octets,
    changed_escape,
    normalise_path,
    path_of,
)
from scrapy_rep.robotstxt.selection import Selection, Selections, token_key

__all__ = [
    "MAX_BYTES",
    "Diagnostic",
    "Group",
    "InvalidProductToken",
    "RobotsTxt",
    "Rule",
    "Signal",
    "UsageRule",
    "Verdict",
    "normalise_path",
    "parse",
    "product_token",
    "validate_token",
]


class Verdict:
    """Whether a URL may be crawled, and which rule and groups said so.

    ``groups`` is made when first read (a compiled file keeps none).
    """

    __slots__ = ("_groups", "_robots", "allowed", "reason", "rule", "selection")

    def __init__(
        self,
        allowed: bool,
        rule: Rule | None,
        groups: tuple[Group, ...] | None,
        reason: str,
        selection: Selection | None = None,
        robots: RobotsTxt | None = None,
    ) -> None:
        self.allowed = allowed
        self.rule = rule
        #: ``allow-rule``, ``disallow-rule``, ``no-matching-rule``, ``no-group``, ``robots-txt``
        self.reason = reason
        self.selection = selection
        self._groups = groups
        self._robots = robots

    @property
    def groups(self) -> tuple[Group, ...]:
        if self._groups is None:
            if self._robots is None or self.selection is None:
                self._groups = ()
            else:
                self._groups = self._robots._body.groups(self.selection.indices)
        return self._groups

    @property
    def has_groups(self) -> bool:
        if self.selection is not None:
            return bool(self.selection.indices)
        return bool(self.groups)

    @property
    def group_label(self) -> str:
        selection = self.selection
        if selection is not None:
            if selection.label is None and self._robots is not None:
                selection.label = self._robots._label_of(selection)
            if selection.label is not None:
                return selection.label
        return _label(self.groups)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Verdict):
            return NotImplemented
        return (self.allowed, self.rule, self.reason, self.groups) == (
            other.allowed,
            other.rule,
            other.reason,
            other.groups,
        )

    __hash__ = None  # type: ignore[assignment]  # groups are mutable

    def __repr__(self) -> str:
        return (
            f"Verdict(allowed={self.allowed!r}, rule={self.rule!r}, "
            f"groups={self.group_label!r}, reason={self.reason!r})"
        )

    def __str__(self) -> str:
        verb = "allowed" if self.allowed else "disallowed"
        if self.rule is None:
            return f"{verb}: {_EXPLAIN[self.reason]}"
        return f"{verb} by {self.rule} in group {self.group_label}"


_EXPLAIN = {
    "no-group": "no group applies",
    "no-matching-rule": "no rule matches",
    "robots-txt": "/robots.txt is always allowed",
}


def _label(groups: Iterable[Group]) -> str:
    return "; ".join(map(str, groups)) or "none"


#: the selections by token of a compacted file: one empty dict for all, never written
_NO_SELECTIONS: dict[str, Selection] = {}

#: a parsed file's fixed bytes (the object, its counts), beside its body
FILE_BYTES = 600


class RobotsTxt:
    """A parsed robots.txt. Immutable; answers for any product token. Judging compiles
    the token's rules and lets the parse go, keeping the body: whatever asks for the
    parse later gets it parsed again, the same every time."""

    __slots__ = (
        "__weakref__",
        "_body",
        "_by_token",
        "_derived",
        "_selections",
        "paced",
        "preference_lines",
        "size",
        "truncated",
    )

    def __init__(self, data: bytes | str, packed: bytes | None = None) -> None:
        data = as_octets(data)
        parsed = parse_records(data)
        self._body = Body(data, parsed, packed)
        # None once compacted; the dict by token held too: a warm question is one lookup
        self._selections: Selections | None = Selections(self._body, parsed)
        self._by_token: dict[str, Selection] = self._selections.by_token
        # without these lines, use preferences and Crawl-delay need no parse
        self.preference_lines = parsed.preference_lines
        self.paced = parsed.paced
        self.size = parsed.size  # octets as given (before the 500 KiB cut)
        self.truncated = parsed.truncated
        self._derived: dict[object, Any] | None = None

    @property
    def derived(self) -> dict[object, Any]:
        """What other layers work out from this file once, kept as long as the file."""
        if self._derived is None:
            self._derived = {}
        return self._derived

    def packed(self) -> bytes:
        return self._body.packed()

    def adopt(self, packed: bytes) -> None:
        """Keep ``packed`` (this body, compressed elsewhere) rather than compress it again."""
        self._body.adopt(packed)

    def compact(self) -> None:
        """Keep the body and a few counts only; the next question compiles again."""
        self._body.compact()
        self._selections = None
        self._by_token = _NO_SELECTIONS
        self._derived = None

    @property
    def footprint(self) -> int:
        """An upper estimate of the bytes this file holds now. Cheap."""
        made = self._selections
        return FILE_BYTES + self._body.footprint + (made.footprint if made else 0)

    @property
    def compiled(self) -> bool:
        made = self._selections
        return made is not None and any(chosen.rules is not None for chosen in made.chosen)

    @property
    def groups(self) -> tuple[Group, ...]:
        return tuple(self._body.parsed().groups)

    @property
    def sitemaps(self) -> tuple[str, ...]:
        """Absolute sitemap URLs, in file order (file-wide, RFC 9309 §2.2.4)."""
        return tuple(self._body.parsed().sitemaps)

    @property
    def diagnostics(self) -> tuple[Diagnostic, ...]:
        return tuple(self._body.parsed().diagnostics)

    @property
    def licenses(self) -> tuple[str, ...]:
        """RSL ``License:`` URLs, file-wide, in file order (recorded, not interpreted)."""
        return tuple(self._body.parsed().licenses)

    @property
    def signals(self) -> tuple[Signal, ...]:
        """``Content-Signal`` lines before the first group."""
        return tuple(self._body.parsed().signals)

    def groups_and_signals(self, token: str) -> tuple[tuple[Group, ...], tuple[Signal, ...]]:
        """:meth:`groups_for` and :meth:`signals` from one parse."""
        indices = self._selections_made().select(token).indices
        tree = self._body.parsed()
        return tuple([tree.groups[i] for i in indices]), tuple(tree.signals)

    def _selections_made(self) -> Selections:
        """The token selections, made again after :meth:`compact` (the parse kept for
        the compile that follows)."""
        made = self._selections
        if made is None:
            made = self._selections = Selections(self._body, self._body.keep_parse())
            self._by_token = made.by_token
        return made

    def _matcher(self, token: str) -> Selection:
        selection = self._by_token.get(token)
        if selection is None or selection.rules is None:
            selection = self._selections_made().compile(token)
        return selection

    def _label_of(self, selection: Selection) -> str:
        if self._selections is None:
            return _label(self._body.groups(selection.indices))
        return self._selections.label(selection.indices)

    def prepare(self, token: str) -> None:
        """Compile ``token``'s rules now: a parse kept until the first judgement outlives
        young collections into the old generation, bringing a full collection nearer."""
        self._matcher(token)

    def groups_for(self, token: str) -> tuple[Group, ...]:
        """All groups naming ``token`` (merged), else the ``*`` groups, else none."""
        return self._body.groups(self._selections_made().select(token).indices)

    def crawl_delay(self, token: str) -> float | None:
        """Seconds between requests the token's groups ask for. Compiles no rules."""
        if not self.paced:
            token_key(token)  # validated all the same
            return None
        return self._selections_made().crawl_delay(token)

    def decide(self, token: str, url: str) -> Verdict:
        """The answer for ``url`` (absolute, or a path) and the rule behind it."""
        selection = self._matcher(token)
        rules = selection.rules
        assert rules is not None  # compiled
        at, path = _located(rules, url)
        if path == ROBOTS_TXT:
            return Verdict(True, None, None, "robots-txt", selection, self)
        rule = rules.match(path, at)
        if rule is not None:
            return Verdict(rule.allow, rule, None, f"{rule.directive}-rule", selection, self)
        reason = "no-matching-rule" if selection.indices else "no-group"
        return Verdict(True, None, None, reason, selection, self)

    def deciding_rule(self, token: str, path: str) -> Rule | None:
        """:meth:`decide`'s rule alone, for a path in :func:`normalise_path` form."""
        rules = self._matcher(token).rules
        return None if rules is None or path == ROBOTS_TXT else rules.match(path)

    def allowed(self, token: str, url: str) -> bool:
        """The fast path of :meth:`decide`."""
        try:
            rules = self._by_token[token].rules
        except KeyError:
            rules = None
        if rules is None:
            rules = self._matcher(token).rules  # validates the token, compiles
            assert rules is not None
        # The usual URL is bisected whole (the bounds start with its origin): _located's
        # test, inlined (a call costs about a tenth of the usual answer).
        if not (
            "#" in url
            or not url.isascii()
            or ("%" in url and changed_escape(url))
            or (rules.escaped and url.encode().translate(None, ESCAPED_OCTETS))
        ):
            at = bisect_right(rules.bounds, url)
            answer = rules.answers[at]
            if answer is True or answer is False:
                return answer
            if answer is UNSETTLED:  # the interval's first URL
                answer = rules.settle(at)
                if answer is True or answer is False:
                    return answer
            if answer is not None:
                # wildcard rules that may outweigh the plain rule: the first match decides
                path = url[rules.cut :]
                if rules.hexes and path.encode().translate(None, PLAIN_OCTETS):
                    path = normalise_path(path)  # one C pass, unlike a regex
                entry = first_of(path, answer[1])
                return answer[0] if entry is None else entry[1]
            path = _located(rules, url)[1]  # another origin's (no rule set rebased on it yet)
        else:
            path = normalise_path(path_of(url))  # a URL normalising would change
        return path == ROBOTS_TXT or rules.allows(path)


def _located(rules: RuleSet, url: str) -> tuple[int, str]:
    """The interval of ``url``'s path in ``rules`` (-1: not looked for) and the path,
    normalised as :meth:`RuleSet.match` wants it."""
    if rules.bounds and not (
        "#" in url
        or not url.isascii()
        or ("%" in url and changed_escape(url))
        or (rules.escaped and url.encode().translate(None, ESCAPED_OCTETS))
    ):
        at = bisect_right(rules.bounds, url)
        if rules.answers[at] is not None:
            start = rules.cut
        else:
            at, start = -1, rules.adopt(url)
        if start >= 0:
            path = url[start:]
            if rules.hexes and path.encode().translate(None, PLAIN_OCTETS):
                path = normalise_path(path)  # a raw ' ', '|'... for the wildcard rules
            return at, path
    return -1, normalise_path(path_of(url))


def parse(data: bytes | str) -> RobotsTxt:
    """Parse a robots.txt body. Never raises; problems are in ``.diagnostics``."""
    return RobotsTxt(data)
