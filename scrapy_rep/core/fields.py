"""One bound for every response header scrapy-rep reads (a site may send megabytes): its
first :data:`FIELD_LINES` field lines, :data:`FIELD_OCTETS` octets in all (Robots-Tag's
draft asks for 8 KiB).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TypeVar

#: octets of one header's field lines read per response, in all
FIELD_OCTETS = 8 * 1024
#: field lines of one header read per response
FIELD_LINES = 64

_Line = TypeVar("_Line", str, bytes)


def field_lines(values: Iterable[_Line], *, cut: bool = False) -> list[_Line]:
    """The field lines of one header that are read (a ``str``'s characters are Latin-1
    octets). The line crossing the bound is left out, since a directive cut could say
    something else (``max-snippet: 200`` cut to ``max-snippet: 2``), or with ``cut`` kept up
    to it; none after it is read."""
    kept: list[_Line] = []
    budget = FIELD_OCTETS
    for value in values:
        if len(kept) == FIELD_LINES:
            break
        if len(value) > budget:
            if cut and budget:
                kept.append(value[:budget])
            break
        budget -= len(value)
        kept.append(value)
    return kept
