"""The SQLite store's file, without a crawl or a second process: WAL, schema version,
the codec's columns, and files that are not ours refused and left alone.

Everything else about the store: ``tests/integration/test_sqlite_store.py``.
"""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path

import pytest

from scrapy_rep.runtime.settings import SettingError
from scrapy_rep.runtime.store.codec import FIELDS, encode
from scrapy_rep.runtime.store.sqlite import SCHEMA_VERSION, SqliteStore
from tests.support import sqlite as sqlite_fixtures
from tests.support.policies import bare_policy, full_policy

path = sqlite_fixtures.path  # the fixtures, by their names here
raw = sqlite_fixtures.raw


def test_the_codec_names_every_field_it_writes() -> None:
    """The SQLite columns are the codec's FIELDS: a field written but not listed would be lost."""
    assert set(encode(full_policy(), saved_at=1.0)) == set(FIELDS)
    assert set(encode(bare_policy(), saved_at=1.0)) < set(FIELDS)


# -- the file: WAL, schema version, files that are not ours ----------------------------


def test_a_new_file_is_wal_and_versioned(path: Path, raw: sqlite3.Connection) -> None:
    assert raw.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    meta = dict(raw.execute("SELECT key, value FROM rep_meta").fetchall())
    assert meta == {"application": "scrapy-rep policy store", "schema_version": "3"}
    assert SCHEMA_VERSION == 3
    SqliteStore(path)  # an existing file of this version opens


def test_another_schema_version_is_refused(path: Path, raw: sqlite3.Connection) -> None:
    raw.execute("UPDATE rep_meta SET value = '4' WHERE key = 'schema_version'")
    with pytest.raises(SettingError) as refused:
        SqliteStore(path)
    message = str(refused.value)
    assert "REP_STORE" in message and str(path) in message
    assert "schema version 4" in message and "reads version 3" in message


def test_a_foreign_sqlite_file_is_refused_and_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "places.sqlite"
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE moz_places (url TEXT)")
    db.execute("INSERT INTO moz_places VALUES ('http://a/')")
    db.commit()
    db.close()
    with pytest.raises(SettingError) as refused:
        SqliteStore(path)
    message = str(refused.value)
    assert message.startswith("REP_STORE: ") and str(path) in message
    assert "something else (tables: moz_places)" in message
    db = sqlite3.connect(path)
    try:
        tables = db.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()
        assert tables == [("moz_places",)]  # nothing of ours was added
    finally:
        db.close()


def test_another_applications_meta_table_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "other.sqlite"
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE rep_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    db.commit()
    db.close()
    with pytest.raises(SettingError, match=r"REP_STORE: .* something else"):
        SqliteStore(path)


@pytest.mark.parametrize("size", [100, 8192])
def test_a_corrupt_file_is_refused_and_left_alone(tmp_path: Path, size: int) -> None:
    path = tmp_path / "garbage.sqlite"
    garbage = random.Random(size).randbytes(size)
    path.write_bytes(garbage)
    with pytest.raises(SettingError) as refused:
        SqliteStore(path)
    message = str(refused.value)
    assert message.startswith("REP_STORE: ") and str(path) in message
    assert "not a usable scrapy-rep policy store" in message
    assert path.read_bytes() == garbage


def test_an_unopenable_path_is_a_setting_error(tmp_path: Path) -> None:
    (tmp_path / "a-file").write_text("")
    with pytest.raises(SettingError, match="REP_STORE: cannot"):
        SqliteStore(tmp_path / "a-file" / "below-a-file.sqlite")
    with pytest.raises(SettingError, match=r"REP_STORE: .* does not exist"):
        SqliteStore(tmp_path / "missing.sqlite", create=False)
