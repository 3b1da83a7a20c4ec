"""Text from robots.txt files made safe to print, log and store as UTF-8."""

from __future__ import annotations


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
