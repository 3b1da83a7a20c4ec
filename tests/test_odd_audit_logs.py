"""``scrapy-rep explain`` and ``scrapy-rep report`` on audit logs no crawl wrote: a record of
the wrong shape is skipped and counted, never a traceback; the log is read as a stream."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from scrapy_rep import cli
from scrapy_rep.report.html import write_report
from tests.support.memory import peak

URL, ORIGIN = "https://a.example/x", "https://a.example:443"
GOOD = {
    "type": "decision",
    "at": 1_700_000_000.0,
    "crawl": "c",
    "url": URL,
    "origin": ORIGIN,
    "action": "download",
    "rep_decision": "allow",
    "reason": "no-matching-rule",
    "product_token": "bot",
}
WALL = {"type": "licence_wall", "at": 1.0, "crawl": "c", "origin": ORIGIN, "url": URL}
PAUSE = {"type": "page_pause", "at": 1.0, "crawl": "c", "origin": ORIGIN, "url": URL}
DEEP = "[" * 100_000 + "]" * 100_000
#: one malformed line each: (name, the line)
MALFORMED = [
    ("type-list", json.dumps({**GOOD, "type": ["decision"]})),
    ("type-object", json.dumps({**GOOD, "type": {"decision": 1}})),
    ("type-number", json.dumps({**GOOD, "type": 3})),
    ("at-inf", json.dumps({**GOOD, "at": float("inf")})),
    ("at-nan", json.dumps({**GOOD, "at": float("nan")})),
    ("at-beyond-year-9999", json.dumps({**GOOD, "at": 1e300})),
    ("at-text", json.dumps({**GOOD, "at": "yesterday"})),
    ("at-bool", json.dumps({**GOOD, "at": True})),
    ("crawl-list", json.dumps({**GOOD, "crawl": [1]})),
    ("url-list", json.dumps({**GOOD, "url": [URL]})),
    ("origin-object", json.dumps({**GOOD, "origin": {"o": 1}})),
    ("uses-text", json.dumps({**GOOD, "uses": {"train-ai": "yes"}})),
    ("wall-wrong-types", json.dumps({**WALL, "status": [1], "asked": {"x": 1}, "url": 5})),
    ("wall-origin-list", json.dumps({**WALL, "origin": ["x"]})),
    ("pause-until-nan", json.dumps({**PAUSE, "started": 1.0, "until": float("nan")})),
    ("pause-started-inf", json.dumps({**PAUSE, "started": float("inf"), "until": 2.0})),
    ("pause-wrong-types", json.dumps({**PAUSE, "started": "x", "until": [1], "statuses": 5})),
    ("fetch-at-inf", json.dumps({**GOOD, "type": "fetch", "at": float("inf")})),
    ("deep-array", DEEP),
    ("deep-in-a-record", json.dumps(GOOD)[:-1] + ', "x": ' + DEEP + "}"),
    ("not-an-object", "[1, 2]"),
]


def _log(path: Path, *lines: str) -> str:
    path.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
    return str(path)


@pytest.mark.parametrize("line", [line for _, line in MALFORMED], ids=[n for n, _ in MALFORMED])
def test_explain_skips_and_counts_a_malformed_record(
    line: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = _log(tmp_path / "audit.jsonl", json.dumps(GOOD), line, json.dumps(GOOD))
    assert cli.main(["explain", log, URL]) == 0
    out, err = capsys.readouterr()
    assert out.startswith(URL) and "ALLOW" in out.upper()
    assert f"scrapy-rep: skipped 1 malformed records of {log}" in err


@pytest.mark.parametrize("line", [line for _, line in MALFORMED], ids=[n for n, _ in MALFORMED])
def test_report_skips_and_counts_a_malformed_record(
    line: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = _log(tmp_path / "audit.jsonl", json.dumps(GOOD), line, json.dumps(GOOD))
    out = tmp_path / "report.html"
    assert cli.main(["report", log, "-o", str(out)]) == 0
    err = capsys.readouterr().err
    assert f"scrapy-rep: skipped 1 malformed records of {log}" in err
    assert "2 records (2 downloaded" in err
    assert "1 lines of the log could not be read" in out.read_text(encoding="utf-8")


def test_a_line_longer_than_any_record_is_skipped_without_being_held(tmp_path: Path) -> None:
    log = tmp_path / "audit.jsonl"
    with open(log, "w", encoding="utf-8") as f:
        f.write(json.dumps(GOOD) + "\n")
        f.write('{"type": "decision", "detail": "' + "x" * 8_000_000 + '"}\n')
        f.write(json.dumps(GOOD) + "\n")
    most, story = peak(lambda: write_report(str(log), str(tmp_path / "report.html")))
    assert story.records == 2
    assert most < 4_000_000, most
