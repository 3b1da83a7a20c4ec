"""Fixtures for the SQLite store's tests: where its file goes and a plain connection to it."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from scrapy_rep.runtime.store.sqlite import SqliteStore


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "jobdir" / "rep-policies.sqlite"


@pytest.fixture
def raw(path: Path) -> Iterator[sqlite3.Connection]:
    """A plain connection for looking at the file (after a store made it)."""
    SqliteStore(path)  # creates the file; left to the garbage collector unclosed
    db = sqlite3.connect(path, isolation_level=None)
    try:
        yield db
    finally:
        db.close()
