"""The JSON Lines audit log, and the archive of robots.txt bodies it points into.

Every record has ``type`` (one of ``scrapy_rep.reference.records.RECORDS``), ``at``
(epoch seconds) and ``crawl`` (which crawl wrote it: crawlers of one process, or scrapyd
jobs, may share a log; ``scrapy-rep report`` and ``explain`` keep one crawl's records apart).
Lines are buffered and written whole, one ``write`` per batch to a file
opened for appending, so two crawlers sharing a path never split a line;
everything is flushed at close. ``scrapy-rep explain`` reads it back.
"""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from scrapy_rep.robotstxt.text import MAX_RECORD, SHOWN_ITEMS, clip

#: the fields read as text: each a string (or absent, or null)
TEXT_FIELDS = (
    "type", "crawl", "url", "origin", "action", "reason", "rep_decision", "product_token",
    "detail", "group", "matched_rule", "collection_decision", "policy_status", "policy_url",
    "policy_final_url", "policy_digest", "resource_type", "page", "archive",
)  # fmt: skip
#: the fields read as times or durations: each a finite number a calendar can show
TIME_FIELDS = ("at", "started", "until", "fetched_at", "expires_at", "retry_after")
#: the fields read as lists
LIST_FIELDS = ("licenses", "diagnostics", "statuses")
#: 9999-12-31T23:59:59Z: no time of an audit log is later (nor earlier than its negative)
_LATEST = 253_402_300_799


def well_formed(record: Any) -> bool:
    """Whether ``record`` has the shape a crawl writes: a JSON object with a text ``type``,
    and each field the report's story, the report and ``explain`` read of the type they
    read it as.

    A log edited by hand, or written by another tool, can carry a ``type`` that is a
    list, an ``at`` that is infinite or a ``url`` that is a number: such a record is
    skipped (and counted by its reader), never a traceback.
    """
    if not isinstance(record, dict) or not isinstance(record.get("type"), str):
        return False
    for name in TEXT_FIELDS:
        value = record.get(name)
        if value is not None and not isinstance(value, str):
            return False
    for name in TIME_FIELDS:
        value = record.get(name)
        if value is not None and not (
            isinstance(value, (int, float))
            and not isinstance(value, bool)
            and math.isfinite(value)
            and abs(value) <= _LATEST
        ):
            return False
    for name in LIST_FIELDS:
        value = record.get(name)
        if value is not None and not isinstance(value, list):
            return False
    line = record.get("matched_line")
    if line is not None and (not isinstance(line, int) or isinstance(line, bool)):
        return False
    uses, licenses = record.get("uses"), record.get("licenses")
    if uses is not None and not (
        isinstance(uses, dict) and all(isinstance(a, dict) for a in uses.values())
    ):
        return False
    return licenses is None or all(isinstance(u, str) for u in licenses)


class AuditLog:
    def __init__(self, path: str, buffer_records: int = 256, crawl: str = "") -> None:
        self.path = path
        #: the ``crawl`` field of every record: this log's crawl among those sharing the file
        self.crawl = crawl
        folder = os.path.dirname(path)
        if folder:
            os.makedirs(folder, exist_ok=True)  # as PolicyArchive does for its directory
        self._file = open(path, "ab", buffering=0)  # noqa: SIM115 - closed in close()
        #: where this log's records begin in the file (earlier crawls may have appended)
        self.start = os.fstat(self._file.fileno()).st_size
        self._lines: list[str] = []
        self._buffer_records = buffer_records

    @property
    def closed(self) -> bool:
        return self._file.closed

    def write(self, kind: str, record: Mapping[str, Any]) -> None:
        if self._file.closed:
            return  # a late signal after close must not fail the crawl
        full = {"crawl": self.crawl, **record}
        line = json.dumps({"type": kind, "at": time.time(), **full}, default=str)
        if len(line) > MAX_RECORD:  # the sources summarise; this is the last line of defence
            line = bounded(kind, full, len(line))
        self._lines.append(line)
        if len(self._lines) >= self._buffer_records:
            self.flush()

    def flush(self) -> None:
        if self._lines and not self._file.closed:
            data = ("\n".join(self._lines) + "\n").encode("utf-8")
            self._lines.clear()
            self._file.write(data)

    def close(self) -> None:
        if not self._file.closed:
            self.flush()
            self._file.close()


#: the longest line a reader takes for a record: no record is longer than ``MAX_RECORD``
#: (UTF-8 octets, with room for another version's); a longer line is skipped unread
LONGEST_LINE = 4 * MAX_RECORD
_PIECE = 1 << 16


@dataclass
class Skipped:
    """What a reader of the audit log passed over."""

    #: lines that are no JSON (a torn last line of a crashed crawl, another program's output)
    bad_lines: int = 0
    #: JSON that is no record of the shape a crawl writes: not an object, fields of the
    #: wrong types, nested too deep, or a line longer than any record
    malformed: int = 0

    @property
    def total(self) -> int:
        return self.bad_lines + self.malformed


def read_records(
    path: str, start: int = 0, crawl: str | None = None, skipped: Skipped | None = None
) -> Iterator[dict[str, Any]]:
    """The well-formed records of the audit log ``path``, from byte ``start`` on, as a stream.

    ``crawl``: only that crawl's records. What cannot be read is counted in ``skipped``,
    never an error; a line is never held longer than :data:`LONGEST_LINE`, so memory is
    flat in the log's size.
    """
    skipped = skipped if skipped is not None else Skipped()
    with open(path, "rb") as f:
        f.seek(start)
        while raw := f.readline(LONGEST_LINE + 1):
            if len(raw) > LONGEST_LINE and not raw.endswith(b"\n"):
                while (piece := f.readline(_PIECE)) and not piece.endswith(b"\n"):
                    pass  # the rest of a line longer than any record, read and let go
                skipped.malformed += 1
                continue
            if not raw.strip():
                continue
            try:
                record = json.loads(raw)
            except RecursionError:  # nested deeper than the decoder goes
                skipped.malformed += 1
                continue
            except ValueError:
                skipped.bad_lines += 1
                continue
            if not well_formed(record):
                skipped.malformed += 1
            elif crawl is None or record.get("crawl", "") == crawl:
                yield record


def bounded(kind: str, record: dict[str, Any], size: int) -> str:
    """The JSON line of a record longer than ``MAX_RECORD``, its text clipped to fit.

    Every string is clipped and every list cut to its first ``SHOWN_ITEMS``
    ("and M more"), at a budget halved until the line fits; ``clipped`` says
    how long the whole line was. A record that still does not fit keeps only
    what finds it again: its type, time, URL and origin (clipped too).
    """
    budget = MAX_RECORD // 4
    while budget >= 64:
        line = json.dumps(
            {"type": kind, "at": time.time(), **_clipped(record, budget), "clipped": size},
            default=str,
        )
        if len(line) <= MAX_RECORD:
            return line
        budget //= 2
    kept = {key: clip(str(record[key]), 1024) for key in ("url", "origin") if key in record}
    return json.dumps({"type": kind, "at": time.time(), **kept, "clipped": size})


def _clipped(value: Any, budget: int) -> Any:
    if isinstance(value, str):
        return clip(value, budget)
    if isinstance(value, dict):
        items = list(value.items())
        shown = {clip(str(k), budget): _clipped(v, budget) for k, v in items[: budget // 16 or 1]}
        if len(items) > len(shown):
            shown["…"] = f"and {len(items) - len(shown)} more"
        return shown
    if isinstance(value, (list, tuple)):
        cut = [_clipped(v, budget) for v in value[:SHOWN_ITEMS]]
        return [*cut, f"and {len(value) - SHOWN_ITEMS} more"] if len(value) > SHOWN_ITEMS else cut
    if isinstance(value, (int, float, bool)) or value is None:
        return value
    return clip(str(value), budget)


class PolicyArchive:
    """Each distinct robots.txt body once, as ``<dir>/<digest>.txt``.

    The digest is the policy's (``policy_digest`` in decision records), so
    ``explain`` can quote the line a decision rests on, long after the site
    changed its file.
    """

    def __init__(self, directory: str) -> None:
        self.directory = directory
        os.makedirs(directory, exist_ok=True)

    def path(self, digest: str) -> str:
        return os.path.join(self.directory, f"{digest}.txt")

    def keep(self, digest: str, body: bytes) -> str:
        """Store ``body`` unless a file for ``digest`` exists; return its path."""
        path = self.path(digest)
        if not os.path.exists(path):
            partial = f"{path}.{os.getpid()}.part"
            with open(partial, "wb") as f:
                f.write(body)
            os.replace(partial, path)  # readers never see half a file
        return path
