"""How much of one response header scrapy-rep reads: one bound for every header it reads.

A site chooses its headers, and a server may send megabytes of them: each
header the package reads (``X-Robots-Tag``, ``Robots-Tag``, ``Content-Usage``,
``Content-Signal``, ``tdm-reservation``, ``WWW-Authenticate``,
``crawler-price``, ``Link``, ``Retry-After``) is read through
:func:`field_lines`: its first :data:`FIELD_LINES` field lines, at most
:data:`FIELD_OCTETS` octets in all (Robots-Tag's draft asks a reader for at
least 8 KiB). What lies past the bound is not read, so reading a header costs
at most a constant times :data:`FIELD_OCTETS`, whatever the response carries.

A line that crosses the bound, and those after it, are not read: a directive
or a preference cut in the middle could say something else (``max-snippet:
200`` cut to ``max-snippet: 2``). Where only the start of a list matters (a
wall's challenges: whether one is ``License``), ``cut=True`` keeps the crossing
line's first octets instead.
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
    """The field lines of one header that are read: the first :data:`FIELD_LINES`, at most
    :data:`FIELD_OCTETS` in all (a ``str`` counts its characters, each one octet in
    Latin-1). The line that crosses the bound is left out, or with ``cut`` kept up to
    it; none after it is read."""
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
