"""The data the compiler, the sieve and the matcher share: an entry, a frame, an answer.

Imports no other module of the engine, so none of them imports another for its types.
"""

from __future__ import annotations

from typing import Protocol, TypeAlias

#: one wildcard, anchored or index.html rule: (weight, allow, minus its rule number, where its
#: key ends in the path, anchored, what follows the key: None if nothing (a literal
#: pattern), the piece after the one ``*`` (the usual wildcard), else all the pieces)
Entry = tuple[int, bool, int, int, bool, "str | tuple[str, ...] | None"]
#: a key open over an interval: (key, the heaviest plain rule as ``number << 1 | allow``
#: or -1, its weight or -1, the key's own entries, heaviest first, the frame above it
#: (None at the root), the heaviest entry of the key and those above it (or None), and
#: how many entries and pieces the key and those above it have).
#:
#: A frame never copies the entries of the frames above it (the root's wildcards would
#: be copied into every key: O(root × keys)); the chain of frames is walked instead
#: (:class:`~scrapy_rep.robotstxt.matcher.Chain`), or merged when it is small
#: (:data:`~scrapy_rep.robotstxt.intervals.MERGE_LIMIT`). Compiling stays linear in the
#: rules.
Frame = tuple[str, int, int, tuple[Entry, ...], "Frame | None", "Entry | None", int]


class Walk(Protocol):
    """Entries too many to merge, walked frame by frame for each path
    (:class:`~scrapy_rep.robotstxt.matcher.Chain`)."""

    def first(self, path: str) -> Entry | None:
        """The heaviest entry that matches ``path`` and outweighs the plain rule."""


#: an interval's answer: allowed or not, or (the plain rule's answer, entries to try:
#: a tuple, heaviest first, or a :class:`Walk` of them)
Answer: TypeAlias = "bool | tuple[bool, tuple[Entry, ...] | Walk]"
#: an interval's answer not worked out yet
#: (:meth:`RuleSet.settle <scrapy_rep.robotstxt.matcher.RuleSet.settle>`)
UNSETTLED: Answer = (False, ())
