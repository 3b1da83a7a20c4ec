"""A parsed file's body as kept: whole while in use, zlib-compressed in the compact form;
what lets a file whose parse went (after its first compile) be parsed anew."""

from __future__ import annotations

import zlib

from scrapy_rep.robotstxt.parser import Group, Parsed, parse_records

#: bodies up to this size are not compressed when compacted (zlib saves little on them)
SMALL_BODY = 1024
#: bytes per octet of the body while the whole parse is kept (Rule objects, lines)
TREE_BYTES = 40


class Body:
    """The body, whole until packed, then zlib-compressed once (costing as much as
    compiling a median file: only the compact form or a shared cache pays for it); and
    the parse, if kept."""

    __slots__ = ("_data", "_packed", "_tree")

    def __init__(self, data: bytes, tree: Parsed | None, packed: bytes | None = None) -> None:
        #: the body until it is packed, then None
        self._data: bytes | None = data if packed is None else None
        self._packed = packed
        self._tree = tree

    def parsed(self) -> Parsed:
        tree = self._tree
        if tree is not None:
            return tree
        return parse_records(
            self._data if self._data is not None else zlib.decompress(self.packed())
        )

    def groups(self, indices: tuple[int, ...]) -> tuple[Group, ...]:
        groups = self.parsed().groups
        return tuple([groups[i] for i in indices])

    def keep_parse(self) -> Parsed:
        """The parse, kept until :meth:`drop_parse` (for a compile that follows)."""
        self._tree = tree = self.parsed()
        return tree

    def drop_parse(self) -> None:
        self._tree = None

    def packed(self) -> bytes:
        """The body, zlib-compressed once (a cache keeps this copy, not its own)."""
        if self._packed is None:
            assert self._data is not None
            self._packed = zlib.compress(self._data)
            self._data = None
        return self._packed

    def adopt(self, packed: bytes) -> None:
        if self._packed is None:
            self._packed, self._data = packed, None

    def compact(self) -> None:
        if self._data is not None and len(self._data) > SMALL_BODY:
            self.packed()
        self._tree = None

    @property
    def footprint(self) -> int:
        """The bytes of the body as kept, and ``TREE_BYTES`` per octet while the parse is."""
        size = len(self._data if self._data is not None else self._packed or b"")
        if self._tree is not None:
            size += TREE_BYTES * self._tree.size
        return size
