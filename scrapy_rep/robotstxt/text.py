"""Text from robots.txt files made safe to print, log and store as UTF-8."""

from __future__ import annotations

import json
from typing import Any


def printable(text: str) -> str:
    """``text`` with every non-printable character but TAB escaped as Python writes it.

    A robots.txt line can carry ESC sequences, BEL, NUL, NEL, U+2028, bidi
    overrides or a no-break space; printed raw they recolour or retitle the
    terminal, split a log line so the next one starts with what the site
    chose, or hide what the line says. An octet of invalid UTF-8 (kept by the
    parser as a lone surrogate, which no UTF-8 writer accepts) is shown as the
    octet: ``printable("/a\\x1b[31m\\udcff")`` is ``'/a\\\\x1b[31m\\\\xff'``.
    Every path that prints, logs or records robots.txt text goes through here.
    """
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() or ch == "\t" else _escape(ch) for ch in text)


def _escape(ch: str) -> str:
    if "\udc80" <= ch <= "\udcff":  # surrogateescape: the invalid octet it stands for
        return f"\\x{ord(ch) - 0xDC00:02x}"
    return repr(ch)[1:-1]


def printable_json(value: Any, indent: int | None = 2) -> str:
    """``value`` as JSON whose every non-printable character is a JSON escape.

    ``json.dumps`` escapes C0 controls, but with ``ensure_ascii=False`` (kept
    so that text reads as written) NEL, U+2028, bidi overrides, C1 controls
    and lone surrogates pass raw: here each is written ``\\uXXXX``, so the
    output is printable and still the same JSON (``json.loads`` gives
    ``value`` back). For CLI output that carries site text.
    """
    text = json.dumps(value, indent=indent, ensure_ascii=False)
    # outside strings JSON is printable ASCII, spaces and the indent's newlines
    return "".join(ch if ch.isprintable() or ch == "\n" else _json_escape(ch) for ch in text)


def _json_escape(ch: str) -> str:
    code = ord(ch)
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    code -= 0x10000  # a surrogate pair, as JSON writes a character beyond the BMP
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"
