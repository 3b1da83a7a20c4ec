"""Use preferences: what a site says its content may be used for, per use (docs/uses.md).

Each source (a ``Content-Usage`` rule or header, a ``Content-Signal`` line, a policy
token's group, TDMRep, ``noai``) gives a :class:`UseAnswer` per use with a source a
person can check; :func:`combine` merges them, any refusal winning.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, NoReturn

from scrapy_rep.core.structured import StructuredFieldError, Token, parse_dictionary
from scrapy_rep.robotstxt import Group, RobotsTxt, Rule, Signal, UsageRule
from scrapy_rep.robotstxt.matcher import RuleSet
from scrapy_rep.robotstxt.paths import normalise, normalise_path, path_of
from scrapy_rep.robotstxt.selection import runs_in
from scrapy_rep.robotstxt.text import ITEM_TEXT, clip, printable, summarise

#: what ``REP_USES`` may name: the aipref vocabulary's two labels and
#: Cloudflare's ``ai-input`` (its ``ai-train`` is ``train-ai``)
USES: tuple[str, ...] = ("train-ai", "ai-input", "search")
#: the labels a ``Content-Usage`` rule or header can state (aipref vocabulary);
#: any other label there, ``ai-input`` included, says nothing
AIPREF_LABELS: tuple[str, ...] = ("train-ai", "search")

Answer = Literal["allowed", "refused", "unknown"]
ALLOWED: Answer = "allowed"
REFUSED: Answer = "refused"
UNKNOWN: Answer = "unknown"
ANSWERS: tuple[Answer, ...] = (ALLOWED, REFUSED, UNKNOWN)

#: combining order: a refusal wins, then a grant, else unknown
_RANK = {REFUSED: 0, ALLOWED: 1, UNKNOWN: 2}


@dataclass(frozen=True, slots=True)
class UseAnswer:
    """One source's answer for one use, and where it was read."""

    use: str
    answer: Answer
    source: str  # a line a person can check
    #: this answer as a record carries it, made once (records share it: read-only)
    recorded: dict[str, str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "recorded", {"answer": self.answer, "source": self.source})


def combine(answers: Iterable[UseAnswer]) -> dict[str, UseAnswer]:
    """Per use: any refused wins, then any allowed, else unknown (aipref); the first of
    equal answers keeps its source."""
    best: dict[str, UseAnswer] = {}
    for answer in answers:
        held = best.get(answer.use)
        if held is None or _RANK[answer.answer] < _RANK[held.answer]:
            best[answer.use] = answer
    return best


def uses_field(answers: Mapping[str, UseAnswer]) -> dict[str, dict[str, str]]:
    """What a decision record / ``response.meta`` carries: ``{use: {"answer", "source"}}``."""
    return {use: answer.recorded for use, answer in answers.items()}


_Y, _N = Token("y"), Token("n")


def parse_usage_prefs(value: bytes) -> dict[str, bool] | None:
    """An aipref usage preference (``train-ai=n, search=y``) -> label -> allowed? Only the
    tokens ``y`` and ``n`` state something; None when the RFC 9651 Dictionary does not
    parse (every preference then unknown)."""
    try:
        members = parse_dictionary(value)
    except StructuredFieldError:
        return None
    return {
        label: member == _Y
        for label, member in members.items()
        if isinstance(member, Token) and member in (_Y, _N)
    }


#: Content-Signal keys -> uses (the aipref spelling ``train-ai`` read too: unmistakable)
_SIGNAL_USES = {
    "search": "search",
    "ai-input": "ai-input",
    "ai-train": "train-ai",
    "train-ai": "train-ai",
}
_SIGNAL_VALUES = {"yes": True, "no": False}
_SIGNAL_KEY_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789-_")
_SIGNAL_VALUE_CHARS = _SIGNAL_KEY_CHARS | frozenset(".")


def parse_content_signal(value: str) -> dict[str, bool] | None:
    """Cloudflare's ``search=yes, ai-train=no, ai-input=no`` -> use -> allowed?

    Lenient where the intent is plain (case, spaces, empty members, unknown keys and
    values skipped; a use given twice refused if either says ``no``); None (every use
    unknown) for a member without ``=``, an empty or odd key or value, or a path.
    """
    prefs: dict[str, bool] = {}
    for member in value.split(","):
        member = member.strip(" \t")
        if not member:
            continue
        key, equals, setting = member.partition("=")
        key, setting = key.strip(" \t").lower(), setting.strip(" \t").lower()
        if (
            not equals
            or not key
            or not setting
            or not _SIGNAL_KEY_CHARS.issuperset(key)
            or not _SIGNAL_VALUE_CHARS.issuperset(setting)
        ):
            return None
        use = _SIGNAL_USES.get(key)
        allowed = _SIGNAL_VALUES.get(setting)
        if use is None or allowed is None:
            continue
        prefs[use] = allowed and prefs.get(use, True)
    return prefs


#: the source of an answer no source gave
NO_PREFERENCE = "no preference stated"


@dataclass(frozen=True, slots=True)
class Declared:
    """What a crawl collects for (``REP_USES``) and how it treats a refusal. Only a
    declared use is answered ``unknown`` when nothing is said, or drops a request."""

    uses: tuple[str, ...] = ()
    #: ``REP_USE_ACTION``: drop a request whose robots.txt refuses a declared use
    drop: bool = False
    #: ``REP_USE_TOKENS``: use -> policy token
    tokens: Mapping[str, str] = field(default_factory=dict)
    #: each declared use unknown, for a request no robots.txt speaks for
    unknown: Mapping[str, UseAnswer] = field(init=False, repr=False, compare=False)
    #: is anything declared (a use or a policy token)? A plain attribute: judging reads it
    active: bool = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        unknown = {use: UseAnswer(use, UNKNOWN, NO_PREFERENCE) for use in self.uses}
        object.__setattr__(self, "unknown", unknown)
        object.__setattr__(self, "active", bool(self.uses or self.tokens))


NOTHING_DECLARED = Declared()


class _Shared(dict[str, dict[str, str]]):
    """A record's ``uses`` shared by the requests it answers, read-only: a new dict each
    is a measurable part of judging, for the garbage collector. Still a ``dict`` to
    readers, ``json`` and pickle."""

    __slots__ = ()

    def _read_only(self, *args: object, **kwargs: object) -> NoReturn:
        raise TypeError("a decision record's uses are shared: copy them to change them")

    __setitem__ = __delitem__ = setdefault = update = _read_only
    pop = popitem = clear = __ior__ = _read_only


#: the ``uses`` of a record for which nothing is declared or stated
NO_USES: dict[str, dict[str, str]] = _Shared()


def silent(declared: Declared, more: Iterable[UseAnswer] = ()) -> dict[str, dict[str, str]]:
    """The record for a request no robots.txt speaks for; ``more`` (TDMRep's) still counts."""
    if not declared.uses and not more:
        return NO_USES
    return uses_field(_answered(combine(more), declared))


def _answered(combined: Mapping[str, UseAnswer], declared: Declared) -> dict[str, UseAnswer]:
    """Each declared use (unknown if no source spoke), then every other use a source stated."""
    answers = {use: combined.get(use) or declared.unknown[use] for use in declared.uses}
    for use, answer in combined.items():
        if answer.answer != UNKNOWN and use not in answers:
            answers[use] = answer
    return answers


def shown(uses: Mapping[str, Mapping[str, str]]) -> list[str]:
    """A record's use answers as lines for a person: ``train-ai  refused  <source>``."""
    width = max((len(use) for use in uses), default=0)
    return [f"{use:<{width}}  {said['answer']:<8} {said['source']}" for use, said in uses.items()]


def refusal(answers: Mapping[str, dict[str, str]], declared: Declared) -> tuple[str, str] | None:
    """The first declared use a record refuses, and its source; None if none is refused."""
    for use in declared.uses:
        answer = answers.get(use)
        if answer is not None and answer["answer"] == REFUSED:
            return use, answer["source"]
    return None


def robots_record(
    robots: RobotsTxt,
    token: str,
    url: str,
    crawlable: bool,
    declared: Declared = NOTHING_DECLARED,
    more: Sequence[UseAnswer] = (),
) -> dict[str, dict[str, str]]:
    """The record of :func:`robots_answers`; made once per matching rule and shared
    when nothing else (a policy token, another source) counts."""
    if declared.tokens or more:
        return uses_field(robots_answers(robots, token, url, crawlable, declared, more))
    stated = _stated(robots, token)
    rule = None
    if stated.match is not None and crawlable:
        rule = stated.match(normalise_path(path_of(url)))
    key = (rule.line if rule is not None else 0, declared.uses)
    made = stated.records.get(key)
    if made is None:
        answers = robots_answers(robots, token, url, crawlable, declared)
        made = stated.records[key] = _Shared(uses_field(answers))
    return made


def robots_answers(
    robots: RobotsTxt,
    token: str,
    url: str,
    crawlable: bool,
    declared: Declared = NOTHING_DECLARED,
    more: Iterable[UseAnswer] = (),
) -> dict[str, UseAnswer]:
    """The use answers robots.txt gives for ``url`` (plus ``more``), combined: the
    Content-Usage rule that matches (none where the path is not ``crawlable``), the
    token's Content-Signal lines, and each policy token's group selection."""
    stated = _stated(robots, token)
    if stated.match is None and not stated.signals and not declared.tokens and not more:
        return dict(declared.unknown)
    answers: list[UseAnswer] = []
    path = None
    if stated.match is not None and crawlable:
        path = normalise_path(path_of(url))
        rule = stated.match(path)
        if rule is not None:
            answers.extend(stated.by_path[rule.line])
    answers.extend(stated.signals)
    for use, policy_token in declared.tokens.items():
        if path is None:
            path = normalise_path(path_of(url))
        answers.append(_policy_answer(robots, stated.policy, use, policy_token, path))
    answers.extend(more)
    return _answered(combine(answers), declared)


def _policy_answer(
    robots: RobotsTxt,
    made: dict[tuple[str, str, int], UseAnswer],
    use: str,
    policy_token: str,
    path: str,
) -> UseAnswer:
    """The policy token's answer for ``path``; one answer per deciding rule, made once."""
    rule = robots.deciding_rule(policy_token, path)
    key = (use, policy_token, id(rule))  # rules live as long as the file: their id is theirs
    answer = made.get(key)
    if answer is None:
        verdict = robots.decide(policy_token, path)
        answer = made[key] = UseAnswer(
            use,
            ALLOWED if verdict.allowed else REFUSED,
            printable(
                f"policy token {policy_token}: {clip(str(verdict), 2 * ITEM_TEXT)}", keep_tab=False
            ),
        )
    return answer


@dataclass(frozen=True, slots=True)
class _Stated:
    """What one token's groups state, compiled once per parsed file and token."""

    #: the Content-Usage rules' ``match`` (a stand-in Rule per distinct path, on the line
    #: of its first rule), or None
    match: Callable[[str], Rule | None] | None
    by_path: Mapping[int, tuple[UseAnswer, ...]]  # stand-in's line -> answers, combined
    signals: tuple[UseAnswer, ...]
    #: (use, policy token, id of the deciding rule) -> answer, made on first use
    policy: dict[tuple[str, str, int], UseAnswer] = field(default_factory=dict)
    #: (the matching stand-in's line or 0, declared uses) -> record, made on first use
    records: dict[tuple[int, tuple[str, ...]], dict[str, dict[str, str]]] = field(
        default_factory=dict
    )


_KEY = "uses"


def _stated(robots: RobotsTxt, token: str) -> _Stated:
    stated: _Stated | None = robots.derived.get((_KEY, token))
    if stated is None:
        # a file without Content-Usage or Content-Signal lines (most) states nothing: no parse
        silent = robots.preference_lines == 0
        stated = _Stated(None, {}, ()) if silent else _compile(robots, token)
        robots.derived[(_KEY, token)] = stated
    return stated


def _compile(robots: RobotsTxt, token: str) -> _Stated:
    groups, preamble = robots.groups_and_signals(token)
    # Content-Usage: rules of one normalised path combine label by label.
    by_pattern: dict[str, list[tuple[Group, UsageRule]]] = {}
    for group in groups:
        for usage in group.usage:
            pattern = normalise(usage.pattern) if usage.pattern is not None else "/"
            by_pattern.setdefault(pattern, []).append((group, usage))
    stand_ins = [Rule(False, pattern, rules[0][1].line) for pattern, rules in by_pattern.items()]
    compiled = RuleSet(stand_ins)
    by_path = {
        rule.line: tuple(combine(_usage_answers(by_pattern[rule.pattern])).values())
        for rule in stand_ins
    }
    # Content-Signal: the token's own runs, else the lines before the first group.
    group_of = {id(run): group for group in groups for run in group.runs}
    own = [(group_of[id(run)], s) for run in runs_in(groups, token) for s in run.signals]
    lines: list[tuple[Group | None, Signal]] = list(own) or [(None, s) for s in preamble]
    signals = tuple(combine(_signal_answers(lines)).values())
    return _Stated(compiled.match if len(compiled) else None, by_path, signals)


def _usage_answers(rules: Iterable[tuple[Group, UsageRule]]) -> Iterable[UseAnswer]:
    for group, usage in rules:
        prefs = parse_usage_prefs(usage.prefs.encode("utf-8", "surrogateescape"))
        if not prefs:
            continue  # does not parse (every label unknown), or states nothing
        source = _source(usage.line, group, str(usage).rpartition(" (line ")[0])
        for label in AIPREF_LABELS:
            if label in prefs:
                yield UseAnswer(label, ALLOWED if prefs[label] else REFUSED, source)


def _signal_answers(lines: Iterable[tuple[Group | None, Signal]]) -> Iterable[UseAnswer]:
    for group, signal in lines:
        prefs = parse_content_signal(signal.value)
        if not prefs:
            continue
        source = _source(signal.line, group, f"Content-Signal: {signal.value}")
        for use, allowed in prefs.items():
            yield UseAnswer(use, ALLOWED if allowed else REFUSED, source)


def _source(line: int, group: Group | None, text: str) -> str:
    where = "before any group"
    if group is not None:  # as ``str(group)`` names it, its agents summarised (16,000 happen)
        agents = summarise(group.agents, ", ") if group.agents else "(empty)"
        where = f"in group user-agent: {agents} (line {group.line})"
    return printable(f"robots.txt line {line} {where}: {clip(text)}", keep_tab=False)
