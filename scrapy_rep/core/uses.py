"""Use preferences: what a site says its content may be used for, per use.

robots.txt answers *may this robot fetch this URL*; a use preference
answers *may what is fetched be used for this*: training AI models
(``train-ai``), feeding them at answer time (``ai-input``), a search index
(``search``). Each source a site may use — a ``Content-Usage`` rule or
header (IETF aipref), a ``Content-Signal`` line (Cloudflare), a policy
token's robots.txt group, TDMRep, ``noai`` — gives a :class:`UseAnswer`
per use, with the source a person can check; :func:`combine` merges them
(any refusal wins) and :func:`record` is what a decision record carries
under the ``"uses"`` key.

Pure: the parsers here read values already cut out of a file or header.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Literal

from scrapy_rep.core.structured import StructuredFieldError, Token, parse_dictionary

__all__ = [
    "AIPREF_LABELS",
    "ALLOWED",
    "ANSWERS",
    "REFUSED",
    "UNKNOWN",
    "USES",
    "Answer",
    "UseAnswer",
    "combine",
    "parse_content_signal",
    "parse_usage_prefs",
    "record",
]

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
    #: a line a person can check, e.g. ``robots.txt line 7 in group
    #: user-agent: * : Content-Signal: ai-train=no`` or ``header Content-Usage: train-ai=n``
    source: str


def combine(answers: Iterable[UseAnswer]) -> dict[str, UseAnswer]:
    """Per use: any refused wins, then any allowed, else unknown (the aipref combining rule).

    The winning answer keeps its source; among equal answers the first one
    given does. A use no answer mentions is not in the result.
    """
    best: dict[str, UseAnswer] = {}
    for answer in answers:
        held = best.get(answer.use)
        if held is None or _RANK[answer.answer] < _RANK[held.answer]:
            best[answer.use] = answer
    return best


def record(answers: Mapping[str, UseAnswer]) -> dict[str, dict[str, str]]:
    """What a decision record / ``response.meta`` carries: ``{use: {"answer", "source"}}``."""
    return {
        use: {"answer": answer.answer, "source": answer.source} for use, answer in answers.items()
    }


_Y, _N = Token("y"), Token("n")


def parse_usage_prefs(value: bytes) -> dict[str, bool] | None:
    """An aipref usage preference (``train-ai=n, search=y``) -> label -> allowed?

    The value is an RFC 9651 Dictionary read as bytes. A member whose value
    is the token ``y`` is True, ``n`` False; any other value (a string, a
    number, a bare key) states nothing, so it is left out, as are parameters.
    Every label is returned; keeping only :data:`AIPREF_LABELS` is the
    caller's. None when the dictionary does not parse (an upper-case key, a
    trailing comma, ...): the vocabulary then makes every preference unknown.
    """
    try:
        members = parse_dictionary(value)
    except StructuredFieldError:
        return None
    prefs: dict[str, bool] = {}
    for label, member in members.items():
        if isinstance(member, Token):
            if member == _Y:
                prefs[label] = True
            elif member == _N:
                prefs[label] = False
    return prefs


#: Content-Signal keys -> uses (Cloudflare's ``ai-train``; the aipref
#: spelling ``train-ai`` read the same, being unmistakable)
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

    Read leniently where the intent is plain, strictly where it is not:

    - members are ``key=value`` separated by commas, spaces allowed around
      both; empty members (a trailing comma) are skipped;
    - keys and values are case-insensitive (``AI-Train=No``);
    - ``yes`` is True and ``no`` False; any other value (``use=reference``,
      ``ai-train=maybe``) states nothing for that key;
    - unknown keys are ignored; ``ai-train`` and ``train-ai`` both mean
      ``train-ai``; a use given twice is refused if either says ``no``.

    None (malformed: every use unknown) when a member has no ``=``, an empty
    or odd key or value, or the value starts with a path (``/images/
    ai-train=no``: no published definition says what that means).
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
