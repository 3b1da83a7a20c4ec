"""RFC 9651 Dictionary and List parsing, as the aipref values and ``Robots-Tag`` need it.

Whether the whole field parses matters (a failure makes every preference unknown), so
every bare item is checked by the RFC's algorithm; values are kept only as far as a
caller needs. Written by hand (no dependency); checked against ``http-sf`` by the tests.
"""

from __future__ import annotations

import base64
import binascii
import string

__all__ = ["StructuredFieldError", "Token", "parse_dictionary", "parse_list"]


class StructuredFieldError(ValueError):
    """The bytes are not an RFC 9651 Dictionary."""


class Token(str):
    """An RFC 9651 token (``y``, ``n``), told apart from a string ``"y"``."""

    __slots__ = ()


_LCALPHA = frozenset(string.ascii_lowercase)
_DIGIT = frozenset(string.digits)
_KEY_START = _LCALPHA | {"*"}
_KEY_CHAR = _LCALPHA | _DIGIT | frozenset("_-.*")
_TOKEN_START = frozenset(string.ascii_letters) | {"*"}
_TOKEN_CHAR = frozenset(string.ascii_letters + string.digits + "!#$%&'*+-.^_`|~:/")
_BASE64 = frozenset(string.ascii_letters + string.digits + "+/=")
_LCHEX = frozenset("0123456789abcdef")
_OWS = " \t"
#: printable ASCII: what a String or a Display String may hold unescaped
_VCHAR_SP = frozenset(chr(c) for c in range(0x20, 0x7F))


class _Reader:
    """The input and a position in it: the RFC's ``input_string``, consumed left to right."""

    __slots__ = ("at", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        self.at = 0

    def peek(self) -> str:
        return self.text[self.at] if self.at < len(self.text) else ""

    def take(self) -> str:
        char = self.peek()
        if not char:
            raise StructuredFieldError("unexpected end of input")
        self.at += 1
        return char

    def skip(self, chars: str) -> None:
        text, at, end = self.text, self.at, len(self.text)
        while at < end and text[at] in chars:
            at += 1
        self.at = at

    def fail(self, what: str) -> StructuredFieldError:
        return StructuredFieldError(f"{what} at position {self.at}")


def _start(value: bytes) -> _Reader:
    """A reader at a field's first member: ASCII only, leading spaces skipped."""
    try:
        text = value.decode("ascii")
    except UnicodeDecodeError:
        raise StructuredFieldError("not ASCII") from None
    reader = _Reader(text)
    reader.skip(" ")
    return reader


def _next_member(reader: _Reader) -> bool:
    """After a member of a List or Dictionary: True at the next one, False at the end
    (RFC 9651 §4.2.1.2, §4.2.2: a comma between, optional whitespace, none trailing)."""
    reader.skip(_OWS)
    if not reader.peek():
        return False
    if reader.take() != ",":
        raise reader.fail("expected ','")
    reader.skip(_OWS)
    if not reader.peek():
        raise reader.fail("a trailing ','")
    return True


def parse_dictionary(value: bytes) -> dict[str, object]:
    """Member key -> member value (RFC 9651 §4.2.2); raises :class:`StructuredFieldError`.

    A duplicate key keeps its last value, as the RFC says. A member without a
    value is ``True``; an inner list is a ``list`` of its items' values.
    """
    reader = _start(value)
    members: dict[str, object] = {}
    while reader.peek():
        key = _key(reader)
        if reader.peek() == "=":
            reader.at += 1
            members[key] = _inner_list(reader) if reader.peek() == "(" else _item(reader)
        else:
            _parameters(reader)
            members[key] = True
        if not _next_member(reader):
            break
    reader.skip(" ")
    if reader.peek():  # pragma: no cover - the loop above consumes everything
        raise reader.fail("unexpected input")
    return members


#: a List member: its value (an inner list is a ``list``) and its parameters, in order
Member = tuple[object, list[tuple[str, object]]]


def parse_list(value: bytes) -> list[Member]:
    """The members of an RFC 9651 List (§4.2.1), each with its parameters (key, value).

    Raises :class:`StructuredFieldError`. A parameter without a value is
    ``True``; parameters are kept as written (a duplicate key appears twice:
    the caller decides, as the Robots-Tag draft merges them).
    """
    reader = _start(value)
    members: list[Member] = []
    while reader.peek():
        params: list[tuple[str, object]] = []
        if reader.peek() == "(":
            found: object = _inner_list(reader, params)
        else:
            found = _bare_item(reader)
            _parameters(reader, params)
        members.append((found, params))
        if not _next_member(reader):
            break
    return members


def _key(reader: _Reader) -> str:
    if reader.peek() not in _KEY_START or not reader.peek():
        raise reader.fail("a key must start with a-z or '*'")
    start = reader.at
    reader.at += 1
    text, end = reader.text, len(reader.text)
    while reader.at < end and text[reader.at] in _KEY_CHAR:
        reader.at += 1
    return text[start : reader.at]


def _parameters(reader: _Reader, into: list[tuple[str, object]] | None = None) -> None:
    while reader.peek() == ";":
        reader.at += 1
        reader.skip(" ")
        key = _key(reader)
        value: object = True
        if reader.peek() == "=":
            reader.at += 1
            value = _bare_item(reader)
        if into is not None:
            into.append((key, value))


def _item(reader: _Reader) -> object:
    value = _bare_item(reader)
    _parameters(reader)
    return value


def _inner_list(reader: _Reader, into: list[tuple[str, object]] | None = None) -> list[object]:
    reader.at += 1  # "("
    items: list[object] = []
    while reader.peek():
        reader.skip(" ")
        if reader.peek() == ")":
            reader.at += 1
            _parameters(reader, into)
            return items
        items.append(_item(reader))
        if reader.peek() not in (" ", ")") or not reader.peek():
            raise reader.fail("expected ' ' or ')' in an inner list")
    raise reader.fail("an inner list without ')'")


def _bare_item(reader: _Reader) -> object:
    char = reader.peek()
    if char == "-" or (char and char in _DIGIT):
        return _number(reader)
    if char == '"':
        return _string(reader)
    if char and char in _TOKEN_START:
        return _token(reader)
    if char == ":":
        return _byte_sequence(reader)
    if char == "?":
        return _boolean(reader)
    if char == "@":
        reader.at += 1
        number = _number(reader)
        if not isinstance(number, int):
            raise reader.fail("a date must be an integer")
        return number
    if char == "%":
        return _display_string(reader)
    raise reader.fail("not an item")


def _number(reader: _Reader) -> int | float:
    sign = 1
    if reader.peek() == "-":
        reader.at += 1
        sign = -1
    if not reader.peek() or reader.peek() not in _DIGIT:
        raise reader.fail("a number must start with a digit")
    start = reader.at
    decimal = False
    text, end = reader.text, len(reader.text)
    while reader.at < end:
        char = text[reader.at]
        if char in _DIGIT:
            reader.at += 1
        elif char == "." and not decimal:
            if reader.at - start > 12:
                raise reader.fail("too many integer digits in a decimal")
            decimal = True
            reader.at += 1
        else:
            break
        if reader.at - start > (16 if decimal else 15):
            raise reader.fail("a number too long")
    number = text[start : reader.at]
    if not decimal:
        return sign * int(number)
    fraction = number.partition(".")[2]
    if not fraction or len(fraction) > 3:
        raise reader.fail("a decimal needs 1 to 3 fractional digits")
    return sign * float(number)


def _string(reader: _Reader) -> str:
    reader.at += 1  # '"'
    chars: list[str] = []
    while True:
        char = reader.take()
        if char == "\\":
            escaped = reader.take()
            if escaped not in ('"', "\\"):
                raise reader.fail("only '\"' and '\\' may be escaped")
            chars.append(escaped)
        elif char == '"':
            return "".join(chars)
        elif char not in _VCHAR_SP:
            raise reader.fail("a control character in a string")
        else:
            chars.append(char)


def _token(reader: _Reader) -> Token:
    start = reader.at
    reader.at += 1
    text, end = reader.text, len(reader.text)
    while reader.at < end and text[reader.at] in _TOKEN_CHAR:
        reader.at += 1
    return Token(text[start : reader.at])


def _byte_sequence(reader: _Reader) -> bytes:
    reader.at += 1  # ":"
    end = reader.text.find(":", reader.at)
    if end < 0:
        raise reader.fail("a byte sequence without its closing ':'")
    content = reader.text[reader.at : end]
    reader.at = end + 1
    if not _BASE64.issuperset(content):
        raise reader.fail("not base64 in a byte sequence")
    try:
        return base64.b64decode(content + "=" * (-len(content) % 4), validate=True)
    except (binascii.Error, ValueError):
        raise reader.fail("not base64 in a byte sequence") from None


def _boolean(reader: _Reader) -> bool:
    reader.at += 1  # "?"
    char = reader.take()
    if char not in ("0", "1"):
        raise reader.fail("a boolean is ?0 or ?1")
    return char == "1"


def _display_string(reader: _Reader) -> str:
    reader.at += 1  # "%"
    if reader.take() != '"':
        raise reader.fail("a display string starts with '%\"'")
    octets = bytearray()
    while True:
        char = reader.take()
        if char not in _VCHAR_SP:
            raise reader.fail("a control character in a display string")
        if char == "%":
            digits = reader.take() + reader.take()
            if not _LCHEX.issuperset(digits):
                raise reader.fail("a display string escape is %xx, lower-case hex")
            octets.append(int(digits, 16))
        elif char == '"':
            try:
                return octets.decode("utf-8")
            except UnicodeDecodeError:
                raise reader.fail("a display string that is not UTF-8") from None
        else:
            octets.append(ord(char))
