"""The Robots Exclusion Protocol (RFC 9309) as pure code: bytes and URLs in, answers out.

>>> robots = parse(b"User-agent: *\\nDisallow: /private\\n")
>>> robots.allowed("mybot", "https://example.com/private/x")
False
>>> print(robots.decide("mybot", "/private/x"))
disallowed by Disallow: /private (line 2) in group user-agent: * (line 1)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from scrapy_rep.robotstxt.agent import InvalidProductToken, product_token, validate_token
from scrapy_rep.robotstxt.matcher import (
    _AUTHORITY,
    NOT_PLAIN,
    ROBOTS_TXT,
    RuleSet,
    is_robots_txt,
    normalise,
    normalise_path,
    path_of,
)
from scrapy_rep.robotstxt.parser import (
    MAX_BYTES,
    Agents,
    Diagnostic,
    Group,
    Rule,
    Signal,
    UsageRule,
    parse_records,
)

__all__ = [
    "MAX_BYTES",
    "Agents",
    "Diagnostic",
    "Group",
    "InvalidProductToken",
    "RobotsTxt",
    "Rule",
    "Signal",
    "UsageRule",
    "Verdict",
    "normalise",
    "normalise_path",
    "parse",
    "product_token",
    "validate_token",
]


@dataclass(frozen=True, slots=True)
class Verdict:
    """Whether a URL may be crawled, and which rule and groups said so."""

    allowed: bool
    #: the deciding rule; None when no rule matched (or for /robots.txt)
    rule: Rule | None
    #: the groups merged for the token; empty when none applies
    groups: tuple[Group, ...]
    #: why, in one word: ``allow-rule``, ``disallow-rule``, ``no-matching-rule``,
    #: ``no-group`` or ``robots-txt`` (always allowed, RFC 9309 §2.2.2)
    reason: str
    #: the token's selection, whose label is made once (every judged request shows it)
    selection: _Selection | None = field(default=None, compare=False, repr=False)

    @property
    def group_label(self) -> str:
        if self.selection is not None:
            return self.selection.label
        return _label(self.groups)

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


def _label(groups: tuple[Group, ...]) -> str:
    return "; ".join(map(str, groups)) or "none"


def _verdict(rule: Rule | None, selection: _Selection) -> Verdict:
    groups = selection.groups
    if rule is not None:
        return Verdict(rule.allow, rule, groups, f"{rule.directive}-rule", selection)
    return Verdict(True, None, groups, "no-matching-rule" if groups else "no-group", selection)


class _Selection:
    """The groups for one product token, and their rules compiled on first use.

    Once ``compiled``, ``match`` is the compiled rule set's ``match``, or None
    when the groups have no rule that can match anything (every URL allowed).
    """

    __slots__ = ("_compiled", "_label", "compiled", "groups", "match")

    def __init__(self, groups: tuple[Group, ...]) -> None:
        self.groups = groups
        self._label: str | None = None
        self._compiled: RuleSet | None = None
        self.compiled = False
        self.match: Callable[[str], Rule | None] | None = None

    @property
    def label(self) -> str:
        """The groups as a record names them, made on first use."""
        if self._label is None:
            self._label = _label(self.groups)
        return self._label

    @property
    def rules(self) -> RuleSet:
        """The merged rules of the groups, compiled now if not yet."""
        if self._compiled is None:
            compiled = self._compiled = RuleSet(r for g in self.groups for r in g.rules)
            self.match = compiled.match if compiled else None
            self.compiled = True
        return self._compiled


class RobotsTxt:
    """A parsed robots.txt. Immutable; answers for any product token.

    Kept for judging: the groups (rules with their line numbers, Crawl-delay,
    Request-rate, Content-Usage and Content-Signal lines), the sitemaps and
    licences, at most ``MAX_DIAGNOSTICS`` diagnostics, and
    per product token in use the selected groups and, once a URL is judged,
    their compiled rules (tokens that select the same groups share them).
    The body itself is not kept.
    """

    __slots__ = (
        "__weakref__",
        "_base",
        "_selections",
        "derived",
        "diagnostics",
        "groups",
        "licenses",
        "preference_lines",
        "signals",
        "sitemaps",
        "size",
        "truncated",
    )

    def __init__(self, data: bytes | str) -> None:
        parsed = parse_records(data)
        self.groups: tuple[Group, ...] = tuple(parsed.groups)
        #: absolute sitemap URLs, in file order (file-wide, RFC 9309 §2.2.4)
        self.sitemaps: tuple[str, ...] = tuple(parsed.sitemaps)
        self.diagnostics: tuple[Diagnostic, ...] = tuple(parsed.diagnostics)
        #: RSL ``License:`` URLs, file-wide, in file order (recorded, not interpreted)
        self.licenses: tuple[str, ...] = tuple(parsed.licenses)
        #: ``Content-Signal`` lines before the first group
        self.signals: tuple[Signal, ...] = tuple(parsed.signals)
        #: how many Content-Usage and Content-Signal lines the file has (0: it states
        #: no use preference, and judging need not look for one)
        self.preference_lines = len(self.signals) + sum(
            len(group.usage) + sum(len(run.signals) for run in group.runs) for group in self.groups
        )
        #: octets of the body as given (before the 500 KiB cut)
        self.size = parsed.size
        self.truncated = parsed.truncated
        self._selections: dict[str, _Selection] = {}
        #: what other layers work out from this file once, kept as long as the file
        #: (the use preferences a token's groups state: scrapy_rep.core.uses)
        self.derived: dict[object, Any] = {}
        #: ``scheme://authority/`` of the URL judged last (most URLs share it)
        self._base = ""

    def _select(self, token: str) -> _Selection:
        """The token's selection; validates the token. Compiles nothing."""
        selection = self._selections.get(token)
        if selection is None:
            key = validate_token(token).lower()
            selection = self._selections.get(key)
            if selection is None:
                named = tuple(g for g in self.groups if key in g.agents)
                chosen = named or tuple(g for g in self.groups if "*" in g.agents)
                # Tokens that select the same groups (often every token falls
                # back to '*') share one selection, so one compiled rule set.
                shared = next((s for s in self._selections.values() if s.groups == chosen), None)
                selection = self._selections[key] = shared or _Selection(chosen)
            self._selections[token] = selection
        return selection

    def _matcher(self, token: str) -> _Selection:
        """The token's selection with its rules compiled."""
        selection = self._selections.get(token) or self._select(token)
        if not selection.compiled:
            selection.rules  # noqa: B018 -- compiles, and sets ``match``
        return selection

    def groups_for(self, token: str) -> tuple[Group, ...]:
        """All groups naming ``token`` (merged), else the ``*`` groups, else none."""
        return self._select(token).groups

    def runs_for(self, token: str) -> tuple[Agents, ...]:
        """The runs of ``user-agent`` lines naming ``token`` in its groups (else ``*``'s).

        Crawl-delay, Request-rate and Content-Signal belong to a run, not to
        the whole group: a token gets only the lines written under its name.
        """
        groups = self._select(token).groups
        if not groups:
            return ()
        key = token.lower()
        if key not in groups[0].agents:  # none names the token: the '*' groups
            key = "*"
        return tuple(run for group in groups for run in group.runs_for(key))

    def decide(self, token: str, url: str) -> Verdict:
        """The answer for ``url`` (absolute, or a path) and the rule behind it."""
        selection = self._matcher(token)
        path = normalise_path(path_of(url))
        if is_robots_txt(path):
            return Verdict(True, None, selection.groups, "robots-txt", selection)
        match = selection.match
        return _verdict(None if match is None else match(path), selection)

    def deciding_rule(self, token: str, path: str) -> Rule | None:
        """The rule that decides ``path`` (in :func:`normalise_path` form) for ``token``.

        :meth:`decide` without the answer built around it, for callers that
        judge one path for several tokens.
        """
        match = self._matcher(token).match
        return None if match is None or is_robots_txt(path) else match(path)

    def allowed(self, token: str, url: str) -> bool:
        """The fast path of :meth:`decide`."""
        selection = self._selections.get(token)
        if selection is None or not selection.compiled:
            selection = self._matcher(token)  # validates the token, compiles
        match = selection.match
        if match is None:
            return True  # no rule can match
        # path_of and normalise_path, inlined: no Python call on the usual URL, whose
        # scheme and authority are those of the URL before (a file judges one origin)
        base = self._base
        if base and url.startswith(base):
            path = url[len(base) - 1 :]
        else:
            path = path_of(url)
            end = _AUTHORITY(url).end()  # type: ignore[union-attr]  # always matches
            self._base = url[: end + 1] if url[end : end + 1] == "/" else ""
        if NOT_PLAIN(path):  # '%', '#', non-ASCII, ...: the whole way
            path = normalise_path(path_of(url))
        if path == ROBOTS_TXT:
            return True
        rule = match(path)
        return rule is None or rule.allow

    def crawl_delay(self, token: str) -> float | None:
        """Seconds between requests the token's groups ask for (Crawl-delay, Request-rate).

        The largest ``Crawl-delay`` and ``Request-rate`` interval written
        under the token's own ``user-agent`` lines in its groups (``n/T`` is
        T/n seconds; a time window after the rate is ignored, so the rate
        applies all day). Cheap: compiles no rules.
        """
        delays = [
            delay
            for run in self.runs_for(token)
            for delay in (run.crawl_delay, run.request_interval)
            if delay is not None
        ]
        return max(delays) if delays else None


def parse(data: bytes | str) -> RobotsTxt:
    """Parse a robots.txt body. Never raises; problems are in ``.diagnostics``."""
    return RobotsTxt(data)
