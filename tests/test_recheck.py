"""The verdict ``scrapy-rep recheck`` gives an item from its decision record now (pure)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from scrapy_rep.core.decision import decision_record, excluded_site, unjudged
from scrapy_rep.core.recheck import ALLOWED, REFUSED, UNKNOWN, verdict

ORIGIN, URL = "https://a.example:443", "https://a.example/x"


def record(rep: str, action: str, reason: str, **extra: object) -> dict[str, object]:
    found = decision_record(ORIGIN, "mybot", URL, None, rep, "approved", action, reason, "d")
    return {**found, **extra}


def test_allowed_refused_and_unknown() -> None:
    assert verdict(record("allow", "download", "no-matching-rule")).verdict == ALLOWED
    refused = verdict(
        record("disallow", "drop", "disallow-rule", matched_rule="disallow: /x", matched_line=3)
    )
    assert (refused.verdict, refused.why) == (REFUSED, "disallow-rule: disallow: /x (line 3)")
    paused = unjudged(ORIGIN, "mybot", URL, None, "drop", "origin-paused", "503 for 60s")
    paused["policy_http_status"] = 503
    assert verdict(paused).verdict == UNKNOWN and "robots.txt 503" in verdict(paused).why


def test_a_refused_declared_use_refuses_even_when_recorded_only() -> None:
    uses = {"train-ai": {"answer": "refused", "source": "robots.txt line 3: Content-Usage"}}
    found = verdict(record("allow", "download", "no-matching-rule", uses=uses))
    assert found.verdict == REFUSED and found.why.startswith("use-refused: train-ai by robots.txt")


def test_an_excluded_site_and_a_rejected_collection_are_refused() -> None:
    excluded = excluded_site(ORIGIN, "mybot", URL, "a.example", None, "REP_EXCLUDE")
    assert verdict(excluded).verdict == REFUSED
    assert verdict(record("allow", "drop", "collection-rejected")).verdict == REFUSED


def test_a_large_feed_shows_its_progress_at_each_tenth(capsys: pytest.CaptureFixture[str]) -> None:
    from scrapy_rep.cli.recheck import _progress

    progress = _progress(2000, 40)
    for done in range(50, 2001, 50):  # an origin's URLs judged at a time
        progress(done)
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 10
    assert lines[0] == "recheck: 200 of 2000 URLs judged (40 origins)"
    assert lines[-1] == "recheck: 2000 of 2000 URLs judged (40 origins)"
    small = _progress(999, 3)
    small(999)
    assert capsys.readouterr().err == ""


def _read(path: Path, kind: str) -> list[Any]:
    from scrapy_rep.cli.recheck import _items

    return list(_items(str(path), kind))


def test_a_csv_field_longer_than_the_csv_modules_default_limit_is_read(tmp_path: Path) -> None:
    """A page's text of ~220 KB in a feed exported with ``scrapy crawl -O items.csv``."""
    feed = tmp_path / "items.csv"
    text = "word " * 44_000
    feed.write_text(f"url,text\r\nhttps://a.example/x,{text}\r\n", encoding="utf-8")
    assert _read(feed, "csv") == [{"url": "https://a.example/x", "text": text}]


def test_a_latin1_csv_is_read_and_written_back_byte_for_byte(tmp_path: Path) -> None:
    from scrapy_rep.cli.recheck import _dump

    feed = tmp_path / "items.csv"
    feed.write_bytes("url,title\r\nhttps://a.example/x,caf\xe9 cr\xe8me\r\n".encode("latin-1"))
    items = _read(feed, "csv")
    assert items[0]["url"] == "https://a.example/x"
    kept = tmp_path / "kept.csv"
    _dump(str(kept), "csv", items)
    assert kept.read_bytes() == feed.read_bytes()


def test_a_lone_surrogate_is_written_as_the_escape_it_was_read_from(tmp_path: Path) -> None:
    from scrapy_rep.cli.recheck import _dump

    feed = tmp_path / "items.jsonl"
    feed.write_text('{"url": "https://a.example/x", "t": "a\\ud800b"}\n', encoding="utf-8")
    items = _read(feed, "jsonl")
    for kind in ("jsonl", "json", "csv"):
        kept = tmp_path / f"kept.{kind}"
        _dump(str(kept), kind, items)
        assert "a\\ud800b" in kept.read_text(encoding="utf-8"), kind
    assert json.loads((tmp_path / "kept.jsonl").read_text()) == items[0]


@pytest.mark.parametrize("kind", ["jsonl", "json"])
def test_deep_nesting_is_a_one_line_input_error(kind: str, tmp_path: Path) -> None:
    from scrapy_rep.cli.recheck import _InputError

    deep = "[" * 100_000 + "]" * 100_000
    feed = tmp_path / f"items.{kind}"
    ok = '{"url": "https://a.example/x"}'
    feed.write_text(f"{ok}\n{deep}\n" if kind == "jsonl" else f"[{ok}, {deep}]")
    with pytest.raises(_InputError, match="nested too deep"):
        _read(feed, kind)


def test_a_line_longer_than_any_item_is_an_input_error_read_in_pieces(tmp_path: Path) -> None:
    """A sparse feed of zeros: said at once, never held whole."""
    from scrapy_rep.cli.recheck import LONGEST_ITEM, _InputError

    feed = tmp_path / "items.jsonl"
    with open(feed, "wb") as f:
        f.truncate(LONGEST_ITEM + 10)
    with pytest.raises(_InputError, match="line 1: longer than"):
        _read(feed, "jsonl")
    feed = tmp_path / "items.json"
    with open(feed, "wb") as f:
        f.truncate(LONGEST_ITEM + 10)
    with pytest.raises(_InputError, match="not a JSON array"):
        _read(feed, "json")


def test_an_output_that_cannot_be_written_is_said_before_anything_is_fetched(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from scrapy_rep import cli

    feed = tmp_path / "items.jsonl"
    feed.write_text('{"url": "http://127.0.0.1:9/x"}\n')
    missing = tmp_path / "no" / "such" / "kept.jsonl"
    assert cli.main(["recheck", str(feed), "-o", str(missing)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"scrapy-rep: error: cannot write {missing}: "), err
    assert len(err.splitlines()) == 1


def test_a_json_array_is_read_an_item_at_a_time_across_any_chunk_boundary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from scrapy_rep.cli import recheck
    from scrapy_rep.cli.recheck import _InputError

    monkeypatch.setattr(recheck, "JSON_CHUNK", 7)  # every item cut somewhere
    feed = tmp_path / "items.json"
    items = [1, 2.5e3, "a,]b", {"x": [1, {"y": "z"}]}, None, True, 123456789012345]
    items.append({"url": "https://a.example/x", "t": "w" * 100})
    feed.write_text(" [ " + " ,\n".join(json.dumps(item) for item in items) + " ]\n")
    assert _read(feed, "json") == items
    feed.write_text("[]")
    assert _read(feed, "json") == []
    for bad, said in [
        ("[1 2]", "item 2: not JSON (expected ',' or ']')"),
        ("[1,]", "item 2: not JSON"),
        ("[1, 2", "not JSON (the array is cut short)"),
        ("[1] x", "not JSON (more after the array's end)"),
        ("{}", "not a JSON array"),
    ]:
        feed.write_text(bad)
        with pytest.raises(_InputError, match=re.escape(said)):
            _read(feed, "json")
