"""The JSON Lines audit log, and the archive of robots.txt bodies it points into.

Every record has ``type`` (one of :data:`RECORDS`) and ``at`` (epoch seconds).
Lines are buffered and written whole, one ``write`` per batch to a file
opened for appending, so two crawlers sharing a path never split a line;
everything is flushed at close. ``scrapy-rep explain`` reads it back.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping
from typing import Any

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
    "parked": ("request held", "`url`, `origin`, `reason`"),
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
        "response a spider's callback got, with `REP_USES` set",
        "`url`, `origin`, `uses` (declared use -> `answer`, `source`: what `rep_use` says, "
        "and where it was said)",
    ),
    "item_dropped": (
        'item dropped for a use its response refuses (`REP_USE_ACTION = "drop"`)',
        "`url` (the response's), `reason` (`use-refused`), `detail` (the use, and where it "
        "was refused)",
    ),
    "tdmrep": (
        "tdmrep.json fetch (only with `train-ai` in `REP_USES`)",
        "the fields of `fetch`, `rules` (entries kept; null when the file could not be read: "
        "5xx, network) and `diagnostics` (what was not understood)",
    ),
    "origin": (
        "origin, at close",
        "the report's counters: `downloaded`, `dropped` (reason -> count), `parked`, "
        "`released`, `fetches` (made by this crawler), `reused` (policies another crawler "
        "or the shared store fetched), `status`, `crawl_delay`, `browser_allowed`, "
        "`browser_aborted` (reason -> count), `uses_refused` (use -> judged requests robots.txt "
        "refused it for)",
    ),
}


class AuditLog:
    def __init__(self, path: str, buffer_records: int = 256) -> None:
        self.path = path
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

    def write(self, kind: str, record: dict[str, Any]) -> None:
        if self._file.closed:
            return  # a late signal after close must not fail the crawl
        self._lines.append(json.dumps({"type": kind, "at": time.time(), **record}, default=str))
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
