"""The JSON Lines audit log: one record per judged request and per robots.txt fetch.

Buffered writes, flushed at close, so logging costs the crawl little and
loses nothing. ``scrapy-rep explain`` reads it back.
"""

from __future__ import annotations

import json
from typing import IO, Any


class AuditLog:
    def __init__(self, path: str, buffer_records: int = 256) -> None:
        self.path = path
        self._file: IO[str] = open(path, "a", encoding="utf-8", buffering=1 << 16)  # noqa: SIM115
        self._pending = 0
        self._buffer_records = buffer_records

    def write(self, kind: str, record: dict[str, Any]) -> None:
        self._file.write(json.dumps({"type": kind, **record}, default=str) + "\n")
        self._pending += 1
        if self._pending >= self._buffer_records:
            self._file.flush()
            self._pending = 0

    def close(self) -> None:
        if not self._file.closed:
            self._file.flush()
            self._file.close()
