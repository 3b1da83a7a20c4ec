"""The bounded map per-origin memory is kept in (``core/recent.py``)."""

from __future__ import annotations

from scrapy_rep.core.recent import Recent


def test_it_keeps_the_keys_written_last() -> None:
    kept: Recent[str, int] = Recent(2)
    for n, key in enumerate("abc"):
        kept.put(key, n)
    assert list(kept.items()) == [("b", 1), ("c", 2)]  # a, written longest ago, went


def test_a_key_written_again_is_the_newest() -> None:
    kept: Recent[str, int] = Recent(2)
    kept.put("a", 0)
    kept.put("b", 1)
    kept.put("a", 2)  # a again: b is now the oldest
    kept.put("c", 3)
    assert list(kept.items()) == [("a", 2), ("c", 3)]


def test_it_keeps_one_key_at_least() -> None:
    kept: Recent[str, int] = Recent(0)
    kept.put("a", 0)
    kept.put("b", 1)
    assert list(kept) == ["b"]
