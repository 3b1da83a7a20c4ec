"""Which groups a product token selects (RFC 9309 §2.2.1), and their rules compiled once.
A group is selected by its tokens alone, so a file can let its parse go; tokens that
select the same groups share one :class:`Selection`, so one compiled rule set."""

from __future__ import annotations

from functools import lru_cache

from scrapy_rep.robotstxt.agent import validate_token
from scrapy_rep.robotstxt.body import Body
from scrapy_rep.robotstxt.matcher import RuleSet
from scrapy_rep.robotstxt.parser import Agents, Group, Parsed

#: bytes per group while its tokens and first line are kept (a tuple each, the tokens)
GROUP_BYTES = 240


class Selection:
    """The groups for one product token (by their place in the file), and their rules
    compiled on first use: None until then, :data:`NO_RULES` when none can match
    anything. ``label`` names the groups as a record does."""

    __slots__ = ("delays", "indices", "label", "rules")

    def __init__(self, indices: tuple[int, ...]) -> None:
        self.indices = indices
        self.label: str | None = None
        self.rules: RuleSet | None = None
        #: (token, seconds or None) pairs asked of crawl_delay, kept small
        self.delays: tuple[tuple[str, float | None], ...] = ()


#: the rule set of groups without a rule that can match: no bound, every URL allowed
#: (shared: rebasing it changes nothing)
NO_RULES = RuleSet()


class Selections:
    """A file's selections by product token, made from its groups' tokens and first
    lines (kept without the parse), their rules compiled from the body's parse. A
    compacted file has none: the next question makes them again."""

    __slots__ = ("_body", "agents", "by_token", "chosen", "lines")

    def __init__(self, body: Body, parsed: Parsed) -> None:
        self._body = body
        #: each group's product tokens, and its first line (for naming the groups)
        self.agents = tuple([tuple(group.agents) for group in parsed.groups])
        self.lines = tuple([group.line for group in parsed.groups])
        #: the selections made, one per set of groups
        self.chosen: tuple[Selection, ...] = ()
        #: token (as asked, and lower-cased) -> its selection
        self.by_token: dict[str, Selection] = {}

    def select(self, token: str) -> Selection:
        """The token's selection: the groups naming it, else the ``*`` groups (it is
        validated). Compiles nothing."""
        by_token = self.by_token
        selection = by_token.get(token)
        if selection is None:
            key = token_key(token)
            selection = by_token.get(key)
            if selection is None:
                agents = self.agents
                named = [i for i, names in enumerate(agents) if key in names]
                indices = tuple(named or [i for i, names in enumerate(agents) if "*" in names])
                # tokens that select the same groups share a selection (and its rules)
                selection = next((c for c in self.chosen if c.indices == indices), None)
                if selection is None:
                    selection = Selection(indices)
                    self.chosen += (selection,)
                by_token[key] = selection
            by_token[token] = selection
        return selection

    def compile(self, token: str) -> Selection:
        """The token's selection with its groups' rules compiled, merged (then the parse
        goes; the body is kept)."""
        selection = self.select(token)
        if selection.rules is None:
            groups = self._body.groups(selection.indices)
            patterns = [pattern for group in groups for pattern in group.patterns]
            codes = [code for group in groups for code in group.codes]
            rules = RuleSet(parsed=(patterns, codes))
            selection.rules = rules if rules else NO_RULES
            self._body.drop_parse()
        return selection

    def label(self, indices: tuple[int, ...]) -> str:
        """The groups named as a record names them (``str`` of each group, joined)."""
        agents, lines = self.agents, self.lines
        return (
            "; ".join(
                f"user-agent: {', '.join(agents[i]) or '(empty)'} (line {lines[i]})"
                for i in indices
            )
            or "none"
        )

    def crawl_delay(self, token: str) -> float | None:
        """Seconds between requests the token's groups ask for, kept with its selection:
        the largest ``Crawl-delay`` or ``Request-rate`` interval (``n/T``: T/n seconds)
        under the token's own ``user-agent`` lines."""
        selection = self.select(token)
        for asked, delay in selection.delays:
            if asked == token:
                return delay
        delays = [
            delay
            for run in runs_in(self._body.groups(selection.indices), token)
            for delay in (run.crawl_delay, run.request_interval)
            if delay is not None
        ]
        found = max(delays) if delays else None
        if len(selection.delays) < 4:
            selection.delays += ((token, found),)
        return found

    @property
    def footprint(self) -> int:
        """``GROUP_BYTES`` per group, and each compiled rule set's footprint."""
        size = GROUP_BYTES * len(self.agents)
        for selection in self.chosen:
            if selection.rules is not None and selection.rules is not NO_RULES:
                size += selection.rules.footprint
        return size


@lru_cache(maxsize=256)
def token_key(token: str) -> str:
    """The token validated and lower-cased (the same string if it is already), once per
    token: every file a crawl parses is asked for the same few."""
    key = validate_token(token).lower()
    return token if key == token else key


def runs_in(groups: tuple[Group, ...], token: str) -> tuple[Agents, ...]:
    """The runs of ``user-agent`` lines naming ``token`` in ``groups`` (those selected
    for it; else ``*``'s): Crawl-delay, Request-rate and Content-Signal belong to a
    run, not to the whole group."""
    if not groups:
        return ()
    key = token.lower()
    if key not in groups[0].agents:  # none names the token: the '*' groups
        key = "*"
    return tuple(run for group in groups for run in group.runs if key in run.agents)
