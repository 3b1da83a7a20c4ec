"""RFC 9651 Dictionary and List parsing, as the aipref values and ``Robots-Tag`` need it.

Whether the whole field parses matters (a failure makes every preference unknown), so
every bare item is checked by the RFC's algorithm. Written by hand (no dependency);
checked against ``http-sf`` by the tests.
"""

from __future__ import annotations

import base64
import binascii
import re
from urllib.parse import unquote_to_bytes


class StructuredFieldError(ValueError):
    """The bytes are not an RFC 9651 Dictionary."""


class Token(str):
    """An RFC 9651 token (``y``, ``n``), told apart from a string ``"y"``."""

    __slots__ = ()


_NUMBER = r"-?[0-9]+(?:\.[0-9]*)?"
#: one group an alternative: the item's text, its kind the group's number (``lastindex``)
_BARE_ITEM = re.compile(
    rf"({_NUMBER})"  # 1: Integer or Decimal
    r'|"((?:[ !#-\[\]-~]|\\["\\])*)"'  # 2: String (printable ASCII, \" and \\ escaped)
    r"|([A-Za-z*][A-Za-z0-9!#$%&'*+.^_`|~:/-]*)"  # 3: Token
    r"|:([A-Za-z0-9+/=]*):"  # 4: Byte Sequence
    r"|\?([01])"  # 5: Boolean
    rf"|@({_NUMBER})"  # 6: Date
    r'|%"((?:[ !#$&-~]|%[0-9a-f]{2})*)"'  # 7: Display String (%xx: UTF-8 octets)
)
_KEY = re.compile(r"[a-z*][a-z0-9_.*-]*")
#: after a List's or a Dictionary's member: a comma, optional whitespace around it
_NEXT = re.compile(r"[ \t]*(,[ \t]*)?")
_ESCAPED = re.compile(r"\\(.)")


def _fail(what: str, at: int) -> StructuredFieldError:
    return StructuredFieldError(f"{what} at position {at}")


def _start(value: bytes) -> tuple[str, int]:
    """A field's text and its first member's position: ASCII only, leading spaces skipped."""
    try:
        text = value.decode("ascii")
    except UnicodeDecodeError:
        raise StructuredFieldError("not ASCII") from None
    return text, len(text) - len(text.lstrip(" "))


def _next_member(text: str, at: int) -> int:
    """After a member of a List or Dictionary: where the next one starts, or the end
    (RFC 9651 §4.2.1.2, §4.2.2: a comma between, optional whitespace, none trailing)."""
    found = _NEXT.match(text, at)
    assert found is not None  # it matches the empty string
    if found.end() == len(text) and not found[1]:
        return len(text)
    if not found[1] or found.end() == len(text):
        raise _fail("expected ',' and a member", found.end())
    return found.end()


def parse_dictionary(value: bytes) -> dict[str, object]:
    """Member key -> member value (RFC 9651 §4.2.2; a duplicate key keeps its last value,
    a member without one is ``True``, an inner list a ``list``); raises
    :class:`StructuredFieldError`."""
    text, at = _start(value)
    members: dict[str, object] = {}
    while at < len(text):
        key, at = _key(text, at)
        if text.startswith("=(", at):
            members[key], at = _inner_list(text, at + 1)
        elif text.startswith("=", at):
            members[key], at = _bare_item(text, at + 1)
            at = _parameters(text, at)
        else:
            members[key], at = True, _parameters(text, at)
        at = _next_member(text, at)
    return members


#: a List member: its value (an inner list is a ``list``) and its parameters, in order
Member = tuple[object, list[tuple[str, object]]]


def parse_list(value: bytes) -> list[Member]:
    """The members of an RFC 9651 List (§4.2.1), each with its parameters (key, value;
    ``True`` without one) as written: a duplicate key appears twice, for the caller to
    merge. Raises :class:`StructuredFieldError`."""
    text, at = _start(value)
    members: list[Member] = []
    while at < len(text):
        params: list[tuple[str, object]] = []
        found: object
        if text.startswith("(", at):
            found, at = _inner_list(text, at, params)
        else:
            found, at = _bare_item(text, at)
            at = _parameters(text, at, params)
        members.append((found, params))
        at = _next_member(text, at)
    return members


def _key(text: str, at: int) -> tuple[str, int]:
    key = _KEY.match(text, at)
    if key is None:
        raise _fail("a key must start with a-z or '*'", at)
    return key[0], key.end()


def _parameters(text: str, at: int, into: list[tuple[str, object]] | None = None) -> int:
    while text.startswith(";", at):
        key, at = _key(text, len(text) - len(text[at + 1 :].lstrip(" ")))
        value: object = True
        if text.startswith("=", at):
            value, at = _bare_item(text, at + 1)
        if into is not None:
            into.append((key, value))
    return at


def _inner_list(
    text: str, at: int, into: list[tuple[str, object]] | None = None
) -> tuple[list[object], int]:
    at += 1  # "("
    items: list[object] = []
    while at < len(text):
        at = len(text) - len(text[at:].lstrip(" "))
        if text.startswith(")", at):
            return items, _parameters(text, at + 1, into)
        item, at = _bare_item(text, at)
        at = _parameters(text, at)
        items.append(item)
        if not text.startswith((" ", ")"), at):
            raise _fail("expected ' ' or ')' in an inner list", at)
    raise _fail("an inner list without ')'", at)


def _bare_item(text: str, at: int) -> tuple[object, int]:
    item = _BARE_ITEM.match(text, at)
    if item is None:
        raise _fail("not an item", at)
    kind, found, end = item.lastindex, item[item.lastindex or 0], item.end()
    if kind in (1, 6):
        whole, dot, fraction = found.lstrip("-").partition(".")
        if len(whole) > (12 if dot else 15) or (dot and not 1 <= len(fraction) <= 3):
            raise _fail("a number out of RFC 9651's bounds", at)
        if kind == 6 and dot:
            raise _fail("a date must be an integer", at)
        number = float(f"{whole}.{fraction}") if dot else int(whole)
        return (-number if found[0] == "-" else number), end
    if kind == 2:
        return _ESCAPED.sub(r"\1", found), end
    if kind == 3:
        return Token(found), end
    if kind == 5:
        return found == "1", end
    try:
        if kind == 4:
            return base64.b64decode(found + "=" * (-len(found) % 4), validate=True), end
        return unquote_to_bytes(found).decode("utf-8"), end
    except (binascii.Error, ValueError):  # UnicodeDecodeError is a ValueError
        raise _fail("not base64, or not UTF-8", at) from None
