"""The JSON Lines audit log, and the archive of robots.txt bodies it points into.

Every record has ``type`` (one of :data:`RECORDS`), ``at`` (epoch seconds) and
``crawl`` (which crawl wrote it: crawlers of one process, or scrapyd jobs, may share
a log; ``scrapy-rep report`` and ``explain`` keep one crawl's records apart).
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


#: record type -> (one per, fields besides ``type`` and ``at``): the reference's table
RECORDS: Mapping[str, tuple[str, str]] = {
    "decision": (
        "judged request; and every final answer, whoever made it: a held request dropped "
        "without a new judgement (`park-overflow`, `park-expired`, `spider-closed`, "
        "`unserializable`), a request dropped for a page's directives (`policy_status` `page`), "
        "a held request handed over at close (`action` `requeue`: pushed back into the shared "
        "scrapy-redis queue; `keep`: kept in the JOBDIR for the resumed crawl; `reason`: why "
        "it was held)",
        "the decision record",
    ),
    "fetch": (
        "robots.txt fetch",
        "`origin`, `url`, `final_url`, `status`, `http_status`, `outcome`, `fetched_at`, "
        "`expires_at`, `digest`, `size`, `truncated`, `reason`, `archive` (path in "
        "`REP_POLICY_ARCHIVE`, or null), `licenses` (the file's RSL `License` URLs)",
    ),
    "parked": (
        "request held",
        "`url`, `origin`, `reason`; held for a page's pause (`rate-limited`, "
        "`service-unavailable`, `blocked`) also `status`, `retry_after` (seconds read, or "
        "null), `page` (the page that said it), `until` (the pause's end)",
    ),
    "page_pause": (
        "origin paused for what a page said (429, 503; `blocked`: 401/403 in a row)",
        "`origin`, `cause` (`rate-limited`, `service-unavailable`, `blocked`), `status`, `url` "
        "(the page that said it), `retry_after` (seconds read, or null), `started`, `until` "
        "(the pause's end), `level` (pushbacks in a row), `statuses`, `first_url`, `last_url` "
        "(a block's refusals), `shared` (another worker saw it)",
    ),
    "page_resume": (
        "a page's pause ended (its requests go again, one in flight at first)",
        "`origin`, `cause`, `started`, `until`",
    ),
    "released": (
        "held request handed back to the scheduler",
        "`url`, `origin`, `reason` (why it was held)",
    ),
    "requeued": (
        "held request of a dead worker (its lease expired) this worker pushed back into the "
        "shared scrapy-redis queue, recorded by an older scrapy-rep without what a decision "
        "record needs (otherwise: a `decision` record, action `requeue`)",
        "`url`, `reason` (`worker-lease-expired`), `worker` (the dead worker's id)",
    ),
    "response": (
        "downloaded request",
        "`url` (the decision's), `origin`, `target_status` (the page's own HTTP status, kept "
        "apart from the robots.txt status), `response_url`",
    ),
    "subrequest": (
        "request a browser made while rendering a page (scrapy-playwright), one per URL "
        "judged: a redirect hop is a record of its own",
        "the decision record (`url`: the URL judged), `page`, `request_url` (the first URL "
        "of its redirect chain), `method`, `resource_type`, `hop`; with `REP_USES`, "
        "`page_use` (the page's own answer per use: `answer`, `source`)",
    ),
    "page_use": (
        "response a spider's callback got, or a media pipeline downloaded, with `REP_USES` set",
        "`url`, `origin`, `uses` (declared use -> `answer`, `source`: what `rep_use` says, "
        "and where it was said)",
    ),
    "item_dropped": (
        'item dropped for a use its response refuses (`REP_USE_ACTION = "drop"`) or for '
        "its page's `noindex`; a media pipeline's download failed for a use its response "
        "refuses",
        "`url` (the response's), `reason` (`use-refused`, `page-noindex`), `detail` (the "
        "use and where it was refused, or where `noindex` was said); `media` (true: a "
        "media pipeline's file, not an item)",
    ),
    "tdmrep": (
        "tdmrep.json fetch (only with `train-ai` in `REP_USES`)",
        "the fields of `fetch`, `rules` (entries kept; null when the file could not be read: "
        "5xx, network) and `diagnostics` (what was not understood)",
    ),
    "identity": (
        "request that left for the network under the wrong identity (`REP_IDENTITY_*`): "
        "its `User-Agent` without the product token, or another identity than the one its "
        "origin refused (403/429); a dropped one also has its `decision` record",
        "`origin`, `url`, `reason` (`token-missing`, `identity-changed`), `action` (`warn`: "
        "sent; `drop`), `user_agent`, `detail` (what changed, and the middlewares that may "
        "have changed it)",
    ),
    "origin": (
        "origin, at close",
        "the report's counters: `downloaded`, `dropped` (reason -> count), `parked`, "
        "`released`, `fetches` (made by this crawler), `reused` (policies another crawler "
        "or the shared store fetched), `status`, `crawl_delay`, `browser_allowed`, "
        "`browser_aborted` (reason -> count), `uses_refused` (use -> judged requests robots.txt "
        "refused it for), `walls` (licence or payment walls met), `wall` (what the last asked)",
    ),
    "licence_wall": (
        "response that is a licence or payment wall (`402`, or `401` with "
        "`WWW-Authenticate: License`): not retried, its items never produced",
        "`url`, `origin`, `kind` (`payment`, `licence`), `status`, `said` (one line), "
        "`server` (the licence server a `License` challenge names), `price` "
        "(`crawler-price`), `headers` (`www-authenticate`, `crawler-price`, `link`, as sent), "
        "`walled` (the `REP_BLOCK_AFTER`-th refusal in a row: the origin is held like a "
        "block from now), `licenses` (the origin's robots.txt RSL `License` URLs)",
    ),
}


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
