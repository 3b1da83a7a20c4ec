"""Which of a frame's many wildcard entries can match a path, found without trying each.

An entry can match only a path holding every piece of its pattern, so it is filed under
one rare three-octet gram of its longest piece (an anchored one under its last gram);
the path's grams name the entries worth trying. A pre-filter: the answers are unchanged.
"""

from __future__ import annotations

import math
from array import array

from scrapy_rep.robotstxt.intervals import Entry

#: the length of a gram: three octets tell most pieces apart and keep a path's set small
GRAM = 3
#: a long piece offers the grams of its first and last octets only (building the sieve
#: stays linear in the entries, however long their patterns)
_EDGE = 6
#: gram counts are kept in hashed buckets, at least this many per gram offered, at most
#: 65,536 (256 KiB, whatever the frame): a small frame zeroes a small array
_SPREAD = 4


def path_grams(path: str) -> set[str]:
    """Every gram of ``path`` (the set a URL's entries are looked up in)."""
    return set(map("".join, zip(path, path[1:], path[2:], strict=False)))


def _offered(piece: str) -> list[str]:
    """The grams an entry may be filed under: those of its piece's ends, the last first
    (a pattern's last octets tell it from its neighbours more often than its first,
    which name the directories they share)."""
    size = len(piece)
    if size > 2 * _EDGE:
        starts = [*range(size - GRAM, size - _EDGE - 1, -1), *range(_EDGE - GRAM + 1)]
        return [piece[at : at + GRAM] for at in starts]
    return [piece[at : at + GRAM] for at in range(size - GRAM, -1, -1)]


def _piece(entry: Entry) -> tuple[bool, str]:
    """How an entry is filed: by the end of the path (anchored, its last piece) or by a
    gram of its longest piece; a piece shorter than a gram: always tried."""
    after = entry[5]
    if after is None:
        return False, ""
    if isinstance(after, str):
        return entry[4] and len(after) >= GRAM, after
    if entry[4] and len(after[-1]) >= GRAM:
        return True, after[-1]
    return False, max(after, key=len)


class Sieve:
    """The entries of one frame filed by gram (made once per frame, when first walked)."""

    __slots__ = ("always", "ends", "filed", "useful")

    def __init__(self, entries: tuple[Entry, ...]) -> None:
        # How many entries offer each gram, counted in hashed buckets (approximate, in
        # at most 256 KiB whatever the grams): the rarest is the one to file under.
        mask = (1 << min(16, max(8, (_SPREAD * 2 * _EDGE * len(entries)).bit_length()))) - 1
        shared = array("I", bytes(4 * (mask + 1)))
        for entry in entries:
            end, piece = _piece(entry)
            if not end and len(piece) >= GRAM:
                for gram in _offered(piece):
                    shared[hash(gram) & mask] += 1
        ends: dict[str, list[Entry]] = {}
        filed: dict[str, list[Entry]] = {}
        always: list[Entry] = []
        for entry in entries:
            end, piece = _piece(entry)
            if end:
                ends.setdefault(piece[-GRAM:], []).append(entry)
            elif len(piece) < GRAM:
                always.append(entry)
            else:
                # the first of the rarest, ends first; always one of its own grams (a count
                # can pass the frame's size: "aaaa" offers "aaa" twice, buckets are shared)
                rarest, fewest = "", math.inf
                for gram in _offered(piece):
                    count = shared[hash(gram) & mask]
                    if count < fewest:
                        rarest, fewest = gram, count
                filed.setdefault(rarest, []).append(entry)
        #: the entries with no gram to be filed under, heaviest first
        self.always = tuple(always)
        #: last gram of the path -> the anchored entries filed under it, heaviest first
        self.ends = {gram: tuple(found) for gram, found in ends.items()}
        #: gram -> the entries filed under it, heaviest first
        self.filed = {gram: tuple(found) for gram, found in filed.items()}
        #: does it leave entries out? Not when most of them are always tried (the frame
        #: is then walked as it is)
        self.useful = 2 * len(always) < len(entries)

    def among(self, path: str, grams: set[str] | None) -> list[Entry]:
        """The entries that may match ``path``, heaviest first (as the frame lists them).

        ``grams``: the path's (:func:`path_grams`), needed when entries are filed by gram.
        """
        picked = list(self.always)
        ending = self.ends.get(path[-GRAM:])
        if ending is not None:
            picked += ending
        if grams is not None:
            filed = self.filed.get  # the path's grams are fewer than the filed ones
            for gram in grams:
                found = filed(gram)
                if found is not None:
                    picked += found
        if len(picked) > 1:
            picked.sort(reverse=True)
        return picked
