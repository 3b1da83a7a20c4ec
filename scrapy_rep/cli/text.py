"""Text from robots.txt files and logs, made safe to print on a terminal."""

from __future__ import annotations


def printable(text: str) -> str:
    """``text`` with every non-printable character escaped as Python writes it.

    A robots.txt line can carry ESC sequences, BEL, NUL, bidi overrides or a
    no-break space; printed raw they recolour or retitle the terminal, or hide
    what the line says. ``printable("/a\\x1b[31m")`` is ``'/a\\\\x1b[31m'``.
    """
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() else repr(ch)[1:-1] for ch in text)
