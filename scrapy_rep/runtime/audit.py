"""The JSON Lines audit log, and the archive of robots.txt bodies it points into.

Record types (field ``type``):

- ``decision``: one per judged request, the :class:`~scrapy_rep.core.decision.Decision` fields;
- ``fetch``: one per robots.txt fetch: status, final URL, digest, ``archive`` path;
- ``parked`` / ``released`` / ``dropped``: a request held, handed back, or given up
  (``url``, ``origin``, ``reason``);
- ``response``: the target's own HTTP status (``target_status``) for a downloaded
  request, kept apart from the robots.txt status (``policy_http_status``);
- ``origin``: at close, the per-origin counters of :mod:`scrapy_rep.core.report`.

Lines are buffered and written whole, one ``write`` per batch to a file
opened for appending, so two crawlers sharing a path never split a line;
everything is flushed at close. ``scrapy-rep explain`` reads it back.
"""

from __future__ import annotations

import json
import os
import time
from typing import Any


class AuditLog:
    def __init__(self, path: str, buffer_records: int = 256) -> None:
        self.path = path
        folder = os.path.dirname(path)
        if folder:
            os.makedirs(folder, exist_ok=True)  # as PolicyArchive does for its directory
        self._file = open(path, "ab", buffering=0)  # noqa: SIM115 - closed in close()
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
