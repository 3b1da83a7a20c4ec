"""The Robots Exclusion Protocol (RFC 9309) as pure code: bytes and URLs in, answers out.

>>> robots = parse(b"User-agent: *\\nDisallow: /private\\n")
>>> robots.allowed("mybot", "https://example.com/private/x")
False
>>> print(robots.decide("mybot", "/private/x"))
disallowed by Disallow: /private (line 2) in group user-agent: * (line 1)
"""

from __future__ import annotations

import zlib
from bisect import bisect_right
from collections.abc import Iterable, Sequence
from functools import lru_cache
from typing import Any

from scrapy_rep.robotstxt.agent import InvalidProductToken, product_token, validate_token
from scrapy_rep.robotstxt.intervals import UNSETTLED
from scrapy_rep.robotstxt.matcher import RuleSet, first_of, is_robots_txt
from scrapy_rep.robotstxt.parser import (
    MAX_BYTES,
    Agents,
    Diagnostic,
    Group,
    Parsed,
    Rule,
    Signal,
    UsageRule,
    as_octets,
    parse_records,
)
from scrapy_rep.robotstxt.paths import PLAIN_OCTETS, ROBOTS_TXT, normalise, normalise_path, path_of

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


class Verdict:
    """Whether a URL may be crawled, and which rule and groups said so.

    ``groups`` is made when first read: the groups are not kept with a
    compiled file (see :class:`RobotsTxt`); ``has_groups`` and
    ``group_label`` answer without them.
    """

    __slots__ = ("_groups", "_robots", "allowed", "reason", "rule", "selection")

    def __init__(
        self,
        allowed: bool,
        rule: Rule | None,
        groups: tuple[Group, ...] | None,
        reason: str,
        selection: _Selection | None = None,
        robots: RobotsTxt | None = None,
    ) -> None:
        self.allowed = allowed
        #: the deciding rule; None when no rule matched (or for /robots.txt)
        self.rule = rule
        #: why, in one word: ``allow-rule``, ``disallow-rule``, ``no-matching-rule``,
        #: ``no-group`` or ``robots-txt`` (always allowed, RFC 9309 §2.2.2)
        self.reason = reason
        #: the token's selection, whose label is made once (every judged request shows it)
        self.selection = selection
        self._groups = groups
        self._robots = robots

    @property
    def groups(self) -> tuple[Group, ...]:
        """The groups merged for the token; empty when none applies."""
        if self._groups is None:
            if self._robots is None or self.selection is None:
                self._groups = ()
            else:
                self._groups = self._robots._groups_of(self.selection)
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


class _Selection:
    """The groups for one product token (by their place in the file), and their
    rules compiled on first use.

    Once ``compiled``, ``rules`` is the compiled rule set (an empty one,
    :data:`_NO_RULES`, when the groups have no rule that can match anything);
    None until then. ``label`` names the groups as a record does.
    """

    __slots__ = ("compiled", "delays", "indices", "label", "rules")

    def __init__(self, indices: tuple[int, ...]) -> None:
        self.indices = indices
        self.label: str | None = None
        self.compiled = False
        self.rules: RuleSet | None = None
        #: (token, seconds or None) pairs asked of crawl_delay, kept small
        self.delays: tuple[tuple[str, float | None], ...] = ()


#: the rule set of groups without a rule that can match: no bound, every URL allowed
#: (shared: rebasing it changes nothing)
_NO_RULES = RuleSet(())

#: the selections of a file no token has been asked of: one empty dict for all, never written
_NO_SELECTIONS: dict[str, _Selection] = {}

#: bodies up to this size are kept as they are when compacted, not compressed (zlib
#: saves little on them and costs a parse ~15 µs); a cache compresses every body
#: (:meth:`RobotsTxt.packed`)
SMALL_BODY = 1024


#: a parsed file's fixed bytes (the object, its counts), beside its body
FILE_BYTES = 600
#: bytes per group while its tokens and first line are kept (a tuple each, the tokens)
GROUP_BYTES = 240
#: bytes per octet of the body while the whole parse is kept (Rule objects, lines)
TREE_BYTES = 40


class RobotsTxt:
    """A parsed robots.txt. Immutable; answers for any product token.

    What a crawl keeps per origin is small. Until the first URL is judged
    (or :meth:`prepare`, which a crawl calls as the file arrives), the whole
    parse is held (groups, rules with their line numbers, Crawl-delay,
    Request-rate, Content-Usage and Content-Signal lines, sitemaps, licences,
    diagnostics); judging compiles the rules of the token's groups into a
    packed :class:`RuleSet` and lets the parse go,
    keeping the body, zlib-compressed once compacted (:meth:`compact`, unless
    it is under ``SMALL_BODY``): compressing costs ~20 µs whatever the size,
    as much as compiling a median file, and a compiled file is larger than
    its body anyway.
    Whatever asks for the parse later (``groups``, ``diagnostics``,
    ``sitemaps``, another token) gets it parsed again from that body, the
    same every time. Tokens that select the same
    groups share one compiled rule set.
    """

    __slots__ = (
        "__weakref__",
        "_agents",
        "_body",
        "_derived",
        "_group_lines",
        "_packed",
        "_selections",
        "_tree",
        "paced",
        "preference_lines",
        "size",
        "truncated",
    )

    def __init__(self, data: bytes | str, packed: bytes | None = None) -> None:
        data = as_octets(data)
        parsed = parse_records(data)
        self._tree: Parsed | None = parsed
        #: each group's product tokens: a token is selected without the parse (None once
        #: compacted: made again from the parse that compiling needs anyway)
        self._agents: tuple[tuple[str, ...], ...] | None = _agents_of(parsed)
        #: each group's first line, for naming the groups without the parse (the same)
        self._group_lines: tuple[int, ...] | None = _group_lines_of(parsed)
        #: the body until it is packed, then None
        self._body: bytes | None = data if packed is None else None
        self._packed = packed
        #: how many Content-Usage and Content-Signal lines the file has (0: it states
        #: no use preference, and judging need not look for one)
        lines = len(parsed.signals)
        paced = False
        for group in parsed.groups:
            lines += len(group.usage)
            for run in group.runs:
                lines += len(run.signals)
                paced = paced or run.crawl_delay is not None or run.request_interval is not None
        self.preference_lines = lines
        #: whether any group asks for a Crawl-delay or Request-rate (if not, asking for
        #: one needs no parse: most files are asked once the parse has gone)
        self.paced = paced
        #: octets of the body as given (before the 500 KiB cut)
        self.size = parsed.size
        self.truncated = parsed.truncated
        #: token -> its selection; the shared empty one until a token is selected
        self._selections: dict[str, _Selection] = _NO_SELECTIONS
        self._derived: dict[object, Any] | None = None

    @property
    def derived(self) -> dict[object, Any]:
        """What other layers work out from this file once, kept as long as the file
        (the use preferences a token's groups state: scrapy_rep.core.uses)."""
        if self._derived is None:
            self._derived = {}
        return self._derived

    # -- the parse, kept until the first compile, then made again when asked

    def _parsed(self) -> Parsed:
        tree = self._tree
        if tree is not None:
            return tree
        body = self._body if self._body is not None else zlib.decompress(self.packed())
        return parse_records(body)

    def packed(self) -> bytes:
        """The body, zlib-compressed (made once; a cache keeps this copy, not its own)."""
        if self._packed is None:
            assert self._body is not None
            self._packed = zlib.compress(self._body)
            self._body = None
        return self._packed

    def adopt(self, packed: bytes) -> None:
        """Keep ``packed`` (this body, compressed elsewhere) rather than compress it again."""
        if self._packed is None:
            self._packed, self._body = packed, None

    def compact(self) -> None:
        """Go back to the compact form: the body and a few counts, nothing compiled.

        The compiled rule sets, the token selections and what other layers
        derived from the file go; the next question selects and compiles
        again from the body and gets the same answer, rule, line and group.
        A cache calls this for the files it has not been asked about lately.
        """
        if self._body is not None and len(self._body) > SMALL_BODY:
            self.packed()
        self._tree = None
        self._agents = self._group_lines = None
        self._selections = _NO_SELECTIONS
        self._derived = None

    @property
    def footprint(self) -> int:
        """An upper estimate of the bytes this file holds now (for caches bounded by bytes).

        The body as kept (compressed once compacted), ``GROUP_BYTES`` per group while
        the groups' tokens are kept, ``TREE_BYTES`` per octet while the parse is, and
        each compiled rule set's :attr:`RuleSet.footprint
        <scrapy_rep.robotstxt.matcher.RuleSet.footprint>`. Cheap: no walk of the file.
        """
        size = FILE_BYTES + len(self._body if self._body is not None else self._packed or b"")
        if self._agents is not None:
            size += GROUP_BYTES * len(self._agents)
        if self._tree is not None:
            size += TREE_BYTES * self.size
        seen: list[int] = []
        for selection in self._selections.values():
            rules = selection.rules
            if rules is not None and rules is not _NO_RULES and id(rules) not in seen:
                seen.append(id(rules))
                size += rules.footprint
        return size

    @property
    def compiled(self) -> bool:
        """Whether some token's rules are compiled (the file is not in its compact form)."""
        return any(selection.compiled for selection in self._selections.values())

    @property
    def groups(self) -> tuple[Group, ...]:
        return tuple(self._parsed().groups)

    @property
    def sitemaps(self) -> tuple[str, ...]:
        """Absolute sitemap URLs, in file order (file-wide, RFC 9309 §2.2.4)."""
        return tuple(self._parsed().sitemaps)

    @property
    def diagnostics(self) -> tuple[Diagnostic, ...]:
        return tuple(self._parsed().diagnostics)

    @property
    def licenses(self) -> tuple[str, ...]:
        """RSL ``License:`` URLs, file-wide, in file order (recorded, not interpreted)."""
        return tuple(self._parsed().licenses)

    @property
    def signals(self) -> tuple[Signal, ...]:
        """``Content-Signal`` lines before the first group."""
        return tuple(self._parsed().signals)

    def groups_and_signals(self, token: str) -> tuple[tuple[Group, ...], tuple[Signal, ...]]:
        """:meth:`groups_for` and :meth:`signals` from one parse (what the use answers read)."""
        selection = self._select(token)
        tree = self._parsed()
        return self._groups_of(selection, tree), tuple(tree.signals)

    def _label_of(self, selection: _Selection) -> str:
        """The selection's groups named as :func:`_label` names them, without the parse
        (unless the file was compacted since)."""
        agents, lines = self._agents, self._group_lines
        if agents is None or lines is None:
            return _label(self._groups_of(selection))
        return (
            "; ".join(
                f"user-agent: {', '.join(agents[i]) or '(empty)'} (line {lines[i]})"
                for i in selection.indices
            )
            or "none"
        )

    def _groups_of(self, selection: _Selection, tree: Parsed | None = None) -> tuple[Group, ...]:
        groups = (tree or self._parsed()).groups
        return tuple([groups[i] for i in selection.indices])

    # -- selecting and compiling

    def _select(self, token: str) -> _Selection:
        """The token's selection; validates the token. Compiles nothing."""
        selection = self._selections.get(token)
        if selection is None:
            key = _token_key(token)
            selection = self._selections.get(key)
            if selection is None:
                agents = self._agents
                if agents is None:  # compacted: the parse is kept for the compile that follows
                    self._tree = tree = self._parsed()
                    agents = self._agents = _agents_of(tree)
                    self._group_lines = _group_lines_of(tree)
                named = [i for i, names in enumerate(agents) if key in names]
                chosen = tuple(named or [i for i, names in enumerate(agents) if "*" in names])
                if self._selections is _NO_SELECTIONS:
                    self._selections = {}
                    shared = None
                else:
                    # Tokens that select the same groups (often every token falls
                    # back to '*') share one selection, so one compiled rule set.
                    shared = next(
                        (s for s in self._selections.values() if s.indices == chosen), None
                    )
                selection = self._selections[key] = shared or _Selection(chosen)
            self._selections[token] = selection
        return selection

    def _matcher(self, token: str) -> _Selection:
        """The token's selection with its rules compiled."""
        selection = self._selections.get(token)
        if selection is None or not selection.compiled:
            selection = self._select(token)
        if not selection.compiled:
            groups = self._groups_of(selection)
            parsed: tuple[Sequence[str], Sequence[int]]
            if len(groups) == 1:
                parsed = groups[0].patterns, groups[0].codes
            else:
                parsed = (
                    [p for g in groups for p in g.patterns],
                    [c for g in groups for c in g.codes],
                )
            compiled = RuleSet((), keep=False, parsed=parsed)
            selection.rules = compiled if compiled else _NO_RULES
            selection.compiled = True
            self._tree = None  # the body is kept
        return selection

    def prepare(self, token: str) -> None:
        """Compile ``token``'s rules now, letting the parse go, rather than at the first
        judgement: a crawl compiles it anyway, and a parse kept that long outlives young
        collections into the old generation, bringing a full collection nearer."""
        self._matcher(token)

    def groups_for(self, token: str) -> tuple[Group, ...]:
        """All groups naming ``token`` (merged), else the ``*`` groups, else none."""
        return self._groups_of(self._select(token))

    def runs_for(self, token: str) -> tuple[Agents, ...]:
        """The runs of ``user-agent`` lines naming ``token`` in its groups (else ``*``'s).

        Crawl-delay, Request-rate and Content-Signal belong to a run, not to
        the whole group: a token gets only the lines written under its name.
        """
        return runs_in(self.groups_for(token), token)

    def decide(self, token: str, url: str) -> Verdict:
        """The answer for ``url`` (absolute, or a path) and the rule behind it."""
        selection = self._matcher(token)
        rules = selection.rules
        assert rules is not None  # compiled
        at = -1
        path = None
        if rules.bounds and not _to_normalise(rules, url):
            # as allowed(): a URL of the origin the bounds start with is bisected whole,
            # another's path needs no normalising either
            at = bisect_right(rules.bounds, url)
            if rules.answers[at] is not None:
                path = url[rules.cut :]
            else:
                at = -1
                start = rules.adopt(url)
                if start >= 0:
                    path = url[start:]
            if path is not None and rules.hexes and path.encode().translate(None, PLAIN_OCTETS):
                path = normalise_path(path)  # a raw ' ', '|'... for the wildcard rules
        if path is None:
            path = normalise_path(path_of(url))
        if is_robots_txt(path):
            return Verdict(True, None, None, "robots-txt", selection, self)
        rule = rules.match(path, at)
        if rule is not None:
            return Verdict(rule.allow, rule, None, f"{rule.directive}-rule", selection, self)
        reason = "no-matching-rule" if selection.indices else "no-group"
        return Verdict(True, None, None, reason, selection, self)

    def deciding_rule(self, token: str, path: str) -> Rule | None:
        """The rule that decides ``path`` (in :func:`normalise_path` form) for ``token``.

        :meth:`decide` without the answer built around it, for callers that
        judge one path for several tokens.
        """
        rules = self._matcher(token).rules
        return None if rules is None or is_robots_txt(path) else rules.match(path)

    def allowed(self, token: str, url: str) -> bool:
        """The fast path of :meth:`decide`."""
        try:
            rules = self._selections[token].rules
        except KeyError:
            rules = None
        if rules is None:
            rules = self._matcher(token).rules  # validates the token, compiles
            assert rules is not None
        # The usual URL is bisected whole: the rule set's bounds start with its origin
        # (RuleSet.rebase), and /robots.txt has an interval of its own. Escapes, a
        # fragment, non-ASCII (three C scans), or a raw ' ', '|'... and rules with %XX
        # escapes: the path is cut out and normalised first (_to_normalise, inlined:
        # a call here costs about a tenth of the usual answer).
        if (
            "%" in url
            or "#" in url
            or not url.isascii()
            or (rules.escaped and url.encode().translate(None, PLAIN_OCTETS))
        ):
            return _allows_url(rules, url)
        at = bisect_right(rules.bounds, url)
        answer = rules.answers[at]
        if answer is True or answer is False:
            return answer
        if answer is None:  # another origin's URL (or no rule set rebased on it yet)
            start = rules.adopt(url)
            if start < 0:
                return _allows_url(rules, url)
            path = url[start:]  # needs no normalising, as the URL
            if rules.hexes and path.encode().translate(None, PLAIN_OCTETS):
                path = normalise_path(path)  # but for the wildcard rules
            return path == ROBOTS_TXT or rules.allows(path)
        if answer is UNSETTLED:  # the interval's first URL
            answer = rules.settle(at)
            if answer is True or answer is False:
                return answer
        # Wildcard rules that may say otherwise than the plain rule: the first that
        # matches decides. Rules without an escape give the interval of a path with a
        # raw ' ', '|', ... the answer of its escaped form (see RuleSet.escaped); their
        # wildcards are tried on that, if a piece of theirs could tell (RuleSet.hexes).
        path = url[rules.cut :]
        if rules.hexes and path.encode().translate(None, PLAIN_OCTETS):
            path = normalise_path(path)  # one C pass, unlike a regex
        entry = first_of(path, answer[1])
        return answer[0] if entry is None else entry[1]

    def crawl_delay(self, token: str) -> float | None:
        """Seconds between requests the token's groups ask for (Crawl-delay, Request-rate).

        The largest ``Crawl-delay`` and ``Request-rate`` interval written
        under the token's own ``user-agent`` lines in its groups (``n/T`` is
        T/n seconds; a time window after the rate is ignored, so the rate
        applies all day). Cheap: compiles no rules, and the answer is kept
        with the token's selection.
        """
        if not self.paced:
            _token_key(token)  # validated all the same
            return None
        selection = self._select(token)
        for asked, delay in selection.delays:
            if asked == token:
                return delay
        delays = [
            delay
            for run in self.runs_for(token)
            for delay in (run.crawl_delay, run.request_interval)
            if delay is not None
        ]
        found = max(delays) if delays else None
        if len(selection.delays) < 4:
            selection.delays += ((token, found),)
        return found


def _to_normalise(rules: RuleSet, url: str) -> bool:
    """Must the URL's path be cut and normalised before its interval is looked for?
    (Escapes, a fragment, non-ASCII, or a raw ' ', '|'... and rules with escapes.)"""
    return (
        "%" in url
        or "#" in url
        or not url.isascii()
        or bool(rules.escaped and url.encode().translate(None, PLAIN_OCTETS))
    )


def _allows_url(rules: RuleSet, url: str) -> bool:
    """:meth:`RobotsTxt.allowed` of a URL to cut and normalise first."""
    path = normalise_path(path_of(url))
    return is_robots_txt(path) or rules.allows(path)


@lru_cache(maxsize=256)
def _token_key(token: str) -> str:
    """The token validated and lower-cased (the same string if it is already), once per
    token: every file a crawl parses is asked for the same few."""
    key = validate_token(token).lower()
    return token if key == token else key


def _agents_of(parsed: Parsed) -> tuple[tuple[str, ...], ...]:
    return tuple([tuple(group.agents) for group in parsed.groups])


def _group_lines_of(parsed: Parsed) -> tuple[int, ...]:
    return tuple([group.line for group in parsed.groups])


def runs_in(groups: tuple[Group, ...], token: str) -> tuple[Agents, ...]:
    """:meth:`RobotsTxt.runs_for` of groups already had from ``groups_for(token)``."""
    if not groups:
        return ()
    key = token.lower()
    if key not in groups[0].agents:  # none names the token: the '*' groups
        key = "*"
    return tuple(run for group in groups for run in group.runs_for(key))


def parse(data: bytes | str) -> RobotsTxt:
    """Parse a robots.txt body. Never raises; problems are in ``.diagnostics``."""
    return RobotsTxt(data)
