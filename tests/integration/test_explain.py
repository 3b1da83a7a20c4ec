"""``scrapy-rep explain``: why a URL was downloaded, dropped or held, from the audit log."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import pytest_twisted

from scrapy_rep import cli
from scrapy_rep.cli.explain import explain
from scrapy_rep.core.policy import digest_of
from tests.support.audit import audited_crawl
from tests.support.fakesite import FakeSite, Reply

RULES = b"User-agent: *\nDisallow: /private\n"


@pytest_twisted.ensureDeferred
async def test_explain_answers_why_from_the_log(
    site: FakeSite, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a = site.add("a").robots(Reply(body=b"# rules\nUser-agent: *\nDisallow: /private\n"))
    no, yes = a.url_for("/private/x"), a.url_for("/open")
    await audited_crawl(tmp_path, [no, yes])
    log = str(tmp_path / "audit.jsonl")
    digest = digest_of(b"# rules\nUser-agent: *\nDisallow: /private\n")

    assert cli.main(["explain", log, no]) == 1
    out = capsys.readouterr().out
    assert "DISALLOW -> drop (disallow-rule), token testbot" in out
    assert "rule      disallow: /private (line 3)" in out
    assert "group     user-agent: * (line 2)" in out
    assert f"version {digest}, fetched " in out
    assert "line 3    Disallow: /private" in out  # quoted from the archive

    assert cli.main(["explain", log, yes]) == 0
    out = capsys.readouterr().out
    assert "ALLOW -> download (no-matching-rule)" in out
    assert "response  HTTP 200 from the target itself" in out

    # the archive moved: --archive finds the body again
    moved = tmp_path / "moved"
    os.rename(tmp_path / "archive", moved)
    _, lines = explain(log, no)
    assert not any(line.startswith("  line 3") for line in lines)
    _, lines = explain(log, no, str(moved))
    assert any(line.startswith("  line 3    Disallow: /private") for line in lines)

    # a URL the crawl never saw: exit 2, and the origin's URLs as a hint
    assert cli.main(["explain", log, a.url_for("/never")]) == 2
    err = capsys.readouterr().err
    assert "no record of" in err and no in err


@pytest_twisted.ensureDeferred
async def test_explain_tells_the_story_of_a_parked_request(site: FakeSite, tmp_path: Path) -> None:
    a = site.add("a").robots(Reply(status=503), Reply(body=RULES))
    url = a.url_for("/page")
    await audited_crawl(tmp_path, [url], REP_PAUSE_INITIAL=0.05)
    # a crashed crawl leaves a torn last line; explain reads around it
    with open(tmp_path / "audit.jsonl", "a", encoding="utf-8") as f:
        f.write('{"type": "decision", "url": ')

    action, lines = explain(str(tmp_path / "audit.jsonl"), url)
    history = "\n".join(lines[lines.index("  history") :])
    assert action == "download"
    steps = ["parked    origin-paused", "released", "allow -> download", "HTTP 200"]
    positions = [history.index(step) for step in steps]  # each one is there ...
    assert positions == sorted(positions)  # ... in this order
