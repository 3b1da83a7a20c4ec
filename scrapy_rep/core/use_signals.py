"""What a response itself says about use: its headers and its HTML head.

Pure (no Scrapy): header values, a body and the request-time answers in,
one :class:`~scrapy_rep.core.uses.UseAnswer` per declared use out. The
Scrapy side is :mod:`scrapy_rep.components.page`.

The response's signals, and how they meet the request-time answers
(robots.txt's Content-Usage and Content-Signal, policy tokens, tdmrep.json):

- the ``Content-Usage`` header (aipref, an RFC 9651 dictionary; its labels
  ``train-ai`` and ``search``): combined with the rest, so any ``n`` wins;
  a header that does not parse says nothing;
- the ``Content-Signal`` header (the robots.txt line's values, sent with
  the response: ``ai-train=no, search=yes``): read and combined the same
  way; a header that does not parse says nothing;
- TDMRep, one family resolved first, later sources overriding earlier ones:
  the tdmrep.json entry for the URL, then the ``tdm-reservation`` header,
  then ``<meta name="tdm-reservation">``; its one answer for ``train-ai``
  then joins the combine;
- ``noai`` in ``X-Robots-Tag``, ``Robots-Tag`` (a ``*`` or the token's member) or ``<meta
  name="robots">`` / ``<meta name="<token>">`` (with or without a ``<token>:`` prefix, read as the
  page directives are): refuses ``train-ai`` and ``ai-input``. ``noimageai`` does the same for a
  response that is an image (``Content-Type: image/*``); on a page it speaks of the page's images,
  not its text, and changes nothing.

A use nothing speaks of is ``unknown``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from scrapy_rep.core.directives import directive_list, head_metas, robots_tag_list
from scrapy_rep.core.fields import field_lines
from scrapy_rep.core.tdmrep import reservation_answer, reservation_value
from scrapy_rep.core.uses import (
    AIPREF_LABELS,
    ALLOWED,
    ANSWERS,
    REFUSED,
    Answer,
    UseAnswer,
    combine,
    parse_content_signal,
    parse_usage_prefs,
)

#: the uses ``noai`` (and ``noimageai`` on an image) refuses
NOAI_USES = ("train-ai", "ai-input")
#: how the sources of tdmrep.json's answers start
TDMREP_SOURCE = "tdmrep.json"
#: the source of an answer nothing gave
NOTHING_SAID = "nothing said"
#: a use -> its Content-Signal key as a source shows it (Cloudflare's spelling)
SIGNAL_KEYS = {"search": "search", "ai-input": "ai-input", "train-ai": "ai-train"}
_TDM_META = b"tdm-reservation"
_ANSWER: dict[str, Answer] = {answer: answer for answer in ANSWERS}


@dataclass(frozen=True, slots=True)
class ResponseSignals:
    """What one response says, before it meets the request-time answers."""

    #: Content-Usage and Content-Signal header answers, and noai's
    answers: tuple[UseAnswer, ...] = ()
    #: the TDMRep answer of the header or the meta tag (the later one), if either says one
    tdm: UseAnswer | None = None


NO_SIGNALS = ResponseSignals()


def response_signals(
    token: str,
    *,
    content_usage: Sequence[bytes] = (),
    content_signal: Sequence[bytes] = (),
    tdm_reservation: Sequence[bytes] = (),
    x_robots_tag: Sequence[bytes] = (),
    robots_tag: Sequence[bytes] = (),
    body: bytes | None = None,
    metas: Iterable[tuple[str, str]] | None = None,
    image: bool = False,
) -> ResponseSignals:
    """The use signals of one response; pass ``body`` only for HTML.

    ``metas`` instead of ``body``: the head's ``<meta>`` tags already read
    (:func:`~scrapy_rep.core.directives.head_metas` with :func:`meta_names`). Each header
    is read within the one bound of every header (:func:`~scrapy_rep.core.fields.field_lines`).
    """
    answers: list[UseAnswer] = []
    content_usage, content_signal = field_lines(content_usage), field_lines(content_signal)
    if content_usage:
        value = b", ".join(content_usage)
        prefs = parse_usage_prefs(value)
        for label in AIPREF_LABELS:
            if prefs is not None and label in prefs:
                said = "y" if prefs[label] else "n"
                answer: Answer = ALLOWED if prefs[label] else REFUSED
                answers.append(UseAnswer(label, answer, f"header Content-Usage: {label}={said}"))
    if content_signal:
        signal = b", ".join(content_signal).decode("latin-1")
        for use, allowed in (parse_content_signal(signal) or {}).items():
            said = f"header Content-Signal: {SIGNAL_KEYS[use]}={'yes' if allowed else 'no'}"
            answers.append(UseAnswer(use, ALLOWED if allowed else REFUSED, said))
    for raw in field_lines(x_robots_tag):
        _noai(token, raw.decode("latin-1"), "X-Robots-Tag", image, answers)
    for who, name, _argument in robots_tag_list(robots_tag, token) if robots_tag else ():
        if name == "noai" or (name == "noimageai" and image):
            said = f"Robots-Tag ({who}) {name}" if who else f"Robots-Tag {name}"
            answers.extend(UseAnswer(use, "refused", said) for use in NOAI_USES)
    tdm = None
    reserved = reservation_value(field_lines(tdm_reservation))
    if reserved is not None:
        tdm = reservation_answer(reserved, f"header tdm-reservation: {reserved}")
    if metas is None and body:
        metas = head_metas(body, meta_names(token))
    if metas is not None:
        tdm_contents = []
        for name, content in metas:
            if name == "tdm-reservation":
                tdm_contents.append(content)
            else:
                _noai(token, content, f'<meta name="{name}">', image, answers)
        reserved = reservation_value(tdm_contents)
        if reserved is not None:
            tdm = reservation_answer(
                reserved, f'<meta name="tdm-reservation" content="{reserved}">'
            )
    if not answers and tdm is None:
        return NO_SIGNALS
    return ResponseSignals(tuple(answers), tdm)


def meta_names(token: str) -> tuple[bytes, ...]:
    """The ``<meta>`` names both the page directives and the use signals read."""
    return (b"robots", token.lower().encode("ascii", "ignore") or b"robots", _TDM_META)


def _noai(token: str, value: str, where: str, image: bool, answers: list[UseAnswer]) -> None:
    for prefix, name, _argument in directive_list(value, token):
        if name == "noai" or (name == "noimageai" and image):
            said = f"{where} ({prefix}:) {name}" if prefix else f"{where} {name}"
            answers.extend(UseAnswer(use, "refused", said) for use in NOAI_USES)


def response_uses(
    uses: Iterable[str],
    before: Iterable[UseAnswer],
    tdm_file: UseAnswer | None,
    signals: ResponseSignals,
) -> dict[str, UseAnswer]:
    """Each declared use's answer for a response.

    ``before`` are the request-time answers other than tdmrep.json's;
    ``tdm_file`` is the tdmrep.json answer for the URL, which the response's
    own TDMRep signal (``signals.tdm``) overrides.
    """
    tdm = signals.tdm or tdm_file
    found = combine([*before, *signals.answers, *((tdm,) if tdm is not None else ())])
    return {use: found.get(use) or UseAnswer(use, "unknown", NOTHING_SAID) for use in uses}


def request_answers(
    uses: Mapping[str, Mapping[str, str]] | None,
) -> tuple[list[UseAnswer], UseAnswer | None]:
    """A decision record's ``uses`` -> (the answers other than tdmrep.json's, the file's).

    The request path combines robots.txt's answers first and the file's last,
    so a ``train-ai`` answer whose source is the file won against everything
    robots.txt said (which was then ``allowed`` at best), and an answer from
    robots.txt at least matched the file's. Either way, splitting the
    combined answer like this gives every response the answer it would get
    from the separate sources.
    """
    before: list[UseAnswer] = []
    tdm_file = None
    for use, said in (uses or {}).items():
        answer = _ANSWER.get(said.get("answer", ""))
        if answer is None:
            continue
        found = UseAnswer(use, answer, said.get("source", ""))
        if found.source.startswith(TDMREP_SOURCE):
            tdm_file = found
        else:
            before.append(found)
    return before, tdm_file
